#include "krysp/sparse/spmm_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_policy.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/early_loads.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"
#include "krysp/sparse/spmm_choose.hpp"
#include "krysp/sparse/spmm_panels.hpp"
#include "krysp/sparse/spmm_prepared.hpp"
#include "krysp/sparse/spmm_select.hpp"

namespace krysp {

const char* to_string(SpmmSelection::Source s) {
  switch (s) {
    case SpmmSelection::Source::Rule: return "rule";
    case SpmmSelection::Source::Forced: return "forced";
    case SpmmSelection::Source::Tuned: return "tuned";
    case SpmmSelection::Source::Cache: return "cache";
  }
  return "unknown";
}

namespace detail {

SpmmPartition spmm_partition_host(const index_t* row_ptr, index_t rows, index_t nnz, index_t K) {
  KRYSP_REQUIRE(K >= 1, "SpMM partition: items per unit K = ", K, " (must be at least 1)");
  SpmmPartition p;
  p.items_per_unit = K;
  const std::int64_t total = std::int64_t(rows) + nnz;
  const std::int64_t units = (total + K - 1) / K;
  KRYSP_REQUIRE(units <= kMaxIndex, "SpMM partition: ", units, " units do not fit in index_t (K = ", K, ")");
  p.units = index_t(units);
  p.unit_row.resize(std::size_t(units) + 1);
  p.unit_nnz.resize(std::size_t(units) + 1);
  for (std::int64_t u = 0; u <= units; ++u) {
    const MergeCoord c = merge_path_search(std::min(u * K, total), row_ptr, rows, nnz);
    p.unit_row[std::size_t(u)] = c.row;
    p.unit_nnz[std::size_t(u)] = c.nnz;
  }
  // Split rows: the unit consuming a row's end holds it in its head slot when the row started in
  // an earlier unit; its first unit is the first whose end coordinate is on that row.
  for (index_t u = 1; u < p.units; ++u) {
    const index_t i0 = p.unit_row[u], k0 = p.unit_nnz[u], i1 = p.unit_row[u + 1];
    if (i0 < i1 && row_ptr[i0] < k0) {
      const auto first = p.unit_row.begin() + 1;
      const index_t us = index_t(std::lower_bound(first, first + u, i0) - first);
      p.splits.push_back(i0);
      p.splits.push_back(us);
      p.splits.push_back(u);
    }
  }
  return p;
}

std::vector<index_t> spmm_long_pieces_host(const index_t* row_ptr, index_t rows, index_t long_min, index_t piece_nnz) {
  KRYSP_REQUIRE(long_min >= 0 && piece_nnz >= 1, "SpMM long rows: threshold ", long_min, ", piece of ", piece_nnz,
                " nonzeros (must be >= 0 and >= 1)");
  std::vector<index_t> out;
  for (index_t r = 0; r < rows; ++r) {
    const std::int64_t b = row_ptr[r], len = std::int64_t(row_ptr[r + 1]) - b;
    if (len <= long_min) continue;
    const std::int64_t count = (len + piece_nnz - 1) / piece_nnz, per = (len + count - 1) / count;
    const std::int64_t first = std::int64_t(out.size() / 5);
    KRYSP_REQUIRE(first + count <= kMaxIndex, "SpMM long rows: more than ", kMaxIndex, " pieces");
    for (std::int64_t q = 0; q < count; ++q) {
      const std::int64_t lo = std::min(len, q * per), hi = std::min(len, lo + per);
      for (std::int64_t v : {std::int64_t(r), b + lo, b + hi, first, count}) out.push_back(index_t(v));
    }
  }
  return out;
}

}  // namespace detail

namespace {

std::atomic<std::uint64_t> g_spmm_plans_created{0};

/// Largest N accepted (keeps every column index and chunk bound far from int32 overflow).
constexpr index_t kMaxSpmmN = index_t(1) << 24;

}  // namespace

template <class T>
struct SpmmPlan<T>::State {
  StructureFingerprint fingerprint;
  index_t n = 0;
  RowStats stats;
  SpmmConfig config;
  SpmmSelection selection;
  DevicePolicy device;                      // of the device the plan was made on: rules and launch thresholds
  std::unique_ptr<detail::SpmmWorkspace<T>> workspace;  // unsplit
  std::unique_ptr<detail::SpmmPanels<T>> panels;        // config.panels > 1
  /// The last apply(): A.values_stamp() of the values it read (0: none yet) and its stream.
  mutable std::atomic<std::uint64_t> last_stamp{0};
  mutable std::atomic<void*> last_stream{nullptr};
};

template <class T>
bool SpmmPlan<T>::vector_aligned(const T* X, index_t ldx) {
  constexpr int VW = detail::kSpmmVecWidth<T>;
  return reinterpret_cast<std::uintptr_t>(X) % 16 == 0 && ldx % VW == 0;
}

template <class T>
SpmmPlan<T>::SpmmPlan(const CsrMatrix<T>& A, index_t N, const SpmmPlanOptions& o) {
  KRYSP_REQUIRE(N >= 1 && N <= kMaxSpmmN, "SpmmPlan: N = ", N, " (must be in [1, ", kMaxSpmmN, "])");
  // The choice (rule, forced, cache or timing: spmm_choose.hpp) on the device's policy, queried
  // once per device; then the data its configuration needs.
  detail::SpmmChoice<T> choice = detail::SpmmChooser<T>(A, N, device_policy()).choose(o);
  auto s = std::make_shared<State>();
  s->fingerprint = A.fingerprint();
  s->n = N;
  s->stats = choice.stats;
  s->device = choice.device;
  s->config = choice.config;
  s->selection = std::move(choice.selection);
  detail::SpmmPrepared<T> prepared = detail::prepare_spmm(A, N, s->config, std::move(choice.panels));
  s->workspace = std::move(prepared.workspace);
  s->panels = std::move(prepared.panels);
  state_ = std::move(s);
  ++g_spmm_plans_created;
}

template <class T>
void SpmmPlan<T>::apply(const CsrMatrix<T>& A, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy,
                        DeviceStream stream) const {
  KRYSP_REQUIRE(state_, "SpmmPlan::apply: the plan is empty (default-constructed)");
  KRYSP_REQUIRE(A.fingerprint() == state_->fingerprint, "SpmmPlan::apply: plan was made for matrix ",
                state_->fingerprint.to_string(), " but was given ", A.fingerprint().to_string());
  const index_t N = state_->n;
  check_spmm_operands("SpmmPlan::apply", A, N, X, ldx, static_cast<const T*>(Y), ldy);
  if (A.rows() == 0) return;
  // Early matrix loads (before waiting for the kernel ahead on the stream; early_loads.hpp) only
  // for tracked values that the last apply() read, on its stream: its kernels waited for
  // everything before them there, the writer of those values included, and let the next kernel
  // start only then (release_next_kernel). New values may come from a kernel still running
  // (notify_values_changed), and on another stream the kernel ahead may be their writer, so the
  // first apply() after a change, or on another stream, waits first; untracked values (a
  // device-borrowed matrix without promise_notify) may have changed unnotified, so every apply()
  // waits first. Remembered once launched.
  const std::uint64_t stamp = A.values_stamp();
  const bool tracked = A.values_tracked();
  bool early = spmm_may_load_early({tracked, state_->last_stamp.load(std::memory_order_relaxed) == stamp,
                                    state_->last_stream.load(std::memory_order_relaxed) == stream.handle,
                                    overlapped_launch()});
  if (state_->panels) {
    // the gather kernel, when it runs, has just written the panels' values: no early loads
    if (state_->panels->refresh(A, stamp, tracked, stream)) early = false;
    state_->panels->apply(
        state_->config, {{}, N, {}, alpha, X, ldx, beta, Y, ldy, vector_aligned(X, ldx), early, state_->device}, stream);
  } else {
    detail::spmm_device<T>(state_->config,
                        {A.device_view(), N, state_->workspace->view, alpha, X, ldx, beta, Y, ldy,
                         vector_aligned(X, ldx), early, state_->device},
                        stream);
  }
  state_->last_stamp.store(stamp, std::memory_order_relaxed);
  state_->last_stream.store(stream.handle, std::memory_order_relaxed);
}

template <class T>
bool SpmmPlan<T>::may_load_early(const CsrMatrix<T>& A, DeviceStream stream) const {
  if (!state_ || A.fingerprint() != state_->fingerprint) return false;
  return spmm_may_load_early({A.values_tracked(),
                              state_->last_stamp.load(std::memory_order_relaxed) == A.values_stamp(),
                              state_->last_stream.load(std::memory_order_relaxed) == stream.handle,
                              overlapped_launch()});
}

template <class T>
index_t SpmmPlan<T>::n() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  return state_->n;
}
template <class T>
const SpmmConfig& SpmmPlan<T>::config() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  return state_->config;
}
template <class T>
const RowStats& SpmmPlan<T>::stats() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  return state_->stats;
}
template <class T>
const StructureFingerprint& SpmmPlan<T>::fingerprint() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  return state_->fingerprint;
}
template <class T>
const SpmmSelection& SpmmPlan<T>::selection() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  return state_->selection;
}
template <class T>
int SpmmPlan<T>::launches_per_apply() const {
  KRYSP_REQUIRE(state_, "SpmmPlan: the plan is empty");
  if (state_->panels) {
    int n = 0;
    for (const auto& w : state_->panels->ws) n += 1 + (w->view.num_splits > 0 ? 1 : 0);
    return n;
  }
  return 1 + (state_->workspace->view.num_splits > 0 ? 1 : 0);
}
template <class T>
bool SpmmPlan<T>::matches(const CsrMatrix<T>& A, index_t N) const {
  return state_ && A.fingerprint() == state_->fingerprint && N == state_->n;
}
template <class T>
std::uint64_t SpmmPlan<T>::plans_created() {
  return g_spmm_plans_created.load();
}

template class SpmmPlan<double>;
template class SpmmPlan<float>;

}  // namespace krysp
