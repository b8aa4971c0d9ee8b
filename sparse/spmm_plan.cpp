#include "sparse/spmm_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "sparse/cuda/spmm_common.hpp"
#include "sparse/cuda/spmm_launch.hpp"
#include "sparse/cuda/timing.hpp"
#include "sparse/spmm_select.hpp"

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

}  // namespace detail

namespace {

std::atomic<std::uint64_t> g_spmm_plans_created{0};

/// Largest N accepted (keeps every column index and chunk bound far from int32 overflow).
constexpr index_t kMaxSpmmN = index_t(1) << 24;

template <class T>
struct Workspace {
  DeviceArray<index_t> unit_row, unit_nnz, splits;
  DeviceArray<T> carries;
  detail::SpmmWorkspaceView view;
};

/// Partition and carries of a nonzero-balanced configuration (empty for the row kernels).
template <class T>
std::unique_ptr<Workspace<T>> make_workspace(const SpmmConfig& c, const CsrMatrix<T>& A, index_t N) {
  auto w = std::make_unique<Workspace<T>>();
  if (!is_nnz_balanced(c.algorithm)) return w;
  const auto p = detail::spmm_partition_host(A.row_ptr().data(), A.rows(), A.nnz(), c.items_per_warp);
  w->unit_row = DeviceArray<index_t>(p.unit_row.size());
  w->unit_row.upload(p.unit_row.data(), p.unit_row.size());
  w->unit_nnz = DeviceArray<index_t>(p.unit_nnz.size());
  w->unit_nnz.upload(p.unit_nnz.data(), p.unit_nnz.size());
  if (!p.splits.empty()) {
    w->splits = DeviceArray<index_t>(p.splits.size());
    w->splits.upload(p.splits.data(), p.splits.size());
  }
  w->carries = DeviceArray<T>(std::size_t(2) * std::size_t(p.units) * std::size_t(N));
  w->view.units = p.units;
  w->view.unit_row = w->unit_row.data();
  w->view.unit_nnz = w->unit_nnz.data();
  w->view.num_splits = p.num_splits();
  w->view.splits = w->splits.data();
  w->view.carries = w->carries.data();
  return w;
}

template <class T>
constexpr const char* precision_name() {
  return sizeof(T) == 8 ? "double" : "float";
}

}  // namespace

template <class T>
struct SpmmPlan<T>::State {
  StructureFingerprint fingerprint;
  index_t n = 0;
  RowStats stats;
  SpmmConfig config;
  SpmmSelection selection;
  std::unique_ptr<Workspace<T>> workspace;
};

template <class T>
bool SpmmPlan<T>::vector_aligned(const T* X, index_t ldx) {
  constexpr int VW = detail::kSpmmVecWidth<T>;
  return reinterpret_cast<std::uintptr_t>(X) % 16 == 0 && ldx % VW == 0;
}

template <class T>
SpmmPlan<T>::SpmmPlan(const CsrMatrix<T>& A, index_t N, const SpmmPlanOptions& o) {
  KRYSP_REQUIRE(N >= 1 && N <= kMaxSpmmN, "SpmmPlan: N = ", N, " (must be in [1, ", kMaxSpmmN, "])");
  auto s = std::make_shared<State>();
  s->fingerprint = A.fingerprint();
  s->n = N;
  // Structure only: host_view() would download a device-borrowed matrix's values for nothing.
  s->stats = row_stats(CsrView<T>{A.rows(), A.cols(), A.nnz(), A.row_ptr().data(), A.col_idx().data(), nullptr});
  s->selection.rule = choose_spmm_rule(s->stats, N, int(sizeof(T)));
  const CsrView<T> dA = A.device_view();  // upload now, not inside the first apply

  if (o.force) {
    s->config = complete_spmm_config(o.forced, N, int(sizeof(T)), s->stats);
    std::string why;
    KRYSP_REQUIRE(is_valid(s->config, &why), "SpmmPlan: forced configuration ", s->config.to_string(),
                  " is invalid: ", why);
    s->selection.source = SpmmSelection::Source::Forced;
  } else if (o.select == SpmmPlanOptions::Select::Tune) {
    const index_t ldx = o.ldx > 0 ? o.ldx : N, ldy = o.ldy > 0 ? o.ldy : N;
    KRYSP_REQUIRE(ldx >= N && ldy >= N, "SpmmPlan: tuning leading dimensions ldx = ", ldx, ", ldy = ", ldy,
                  " must be >= N = ", N);
    constexpr int VW = detail::kSpmmVecWidth<T>;
    const bool x_vec = ldx % VW == 0;  // cudaMalloc memory is 256-byte aligned
    SpmmTuneKey key;
    key.fingerprint = s->fingerprint;
    key.precision = precision_name<T>();
    key.gpu = cached_device_name();
    key.n = N;
    key.x_vec = x_vec;
    std::optional<SpmmTuneCache> cache;
    if (o.use_cache) {
      cache.emplace(o.cache_dir);
      s->selection.cache_file = cache->file();
      if (auto e = cache->lookup(key)) {
        s->config = e->config;
        s->selection.source = SpmmSelection::Source::Cache;
        s->selection.chosen_ms = e->ms;
      }
    }
    if (s->selection.source != SpmmSelection::Source::Cache) {
      const auto t0 = std::chrono::steady_clock::now();
      DeviceArray<T> X(std::max<std::size_t>(1, std::size_t(A.cols()) * std::size_t(ldx)));
      DeviceArray<T> Y(std::max<std::size_t>(1, std::size_t(A.rows()) * std::size_t(ldy)));
      detail::spmm_fill_device(X.data(), X.size(), 0x5eed);
      const std::vector<SpmmConfig> cands = spmm_candidates(s->stats, N, int(sizeof(T)));
      std::vector<std::unique_ptr<Workspace<T>>> ws;
      std::vector<std::function<void()>> runs;
      for (const SpmmConfig& c : cands) {
        ws.push_back(make_workspace(c, A, N));
        const detail::SpmmWorkspaceView view = ws.back()->view;
        runs.push_back([&, c, view] {
          detail::spmm_device<T>(c, dA, N, view, T(1), X.data(), ldx, T(0), Y.data(), ldy, x_vec);
        });
      }
      const std::vector<double> ms = time_device_interleaved_ms(runs, std::max(0, o.tune_warmup),
                                                                std::max(1, o.tune_reps), spmm_rule::kTunePruneFactor);
      double best = -1;
      for (std::size_t i = 0; i < cands.size(); ++i) {
        s->selection.candidates.push_back({cands[i], ms[i]});
        if (best < 0 || ms[i] < best) {
          best = ms[i];
          s->config = cands[i];
        }
      }
      s->selection.source = SpmmSelection::Source::Tuned;
      s->selection.chosen_ms = best;
      s->selection.tuning_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (cache && cache->enabled()) cache->store({key, s->config, best});
    }
  } else {
    s->config = s->selection.rule;
    s->selection.source = SpmmSelection::Source::Rule;
  }
  s->workspace = make_workspace(s->config, A, N);
  state_ = std::move(s);
  ++g_spmm_plans_created;
}

template <class T>
void SpmmPlan<T>::apply(const CsrMatrix<T>& A, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy) const {
  KRYSP_REQUIRE(state_, "SpmmPlan::apply: the plan is empty (default-constructed)");
  KRYSP_REQUIRE(A.fingerprint() == state_->fingerprint, "SpmmPlan::apply: plan was made for matrix ",
                state_->fingerprint.to_string(), " but was given ", A.fingerprint().to_string());
  const index_t N = state_->n;
  KRYSP_REQUIRE(ldx >= N, "SpmmPlan::apply: ldx = ", ldx, " < N = ", N);
  KRYSP_REQUIRE(ldy >= N, "SpmmPlan::apply: ldy = ", ldy, " < N = ", N);
  if (A.rows() == 0) return;
  KRYSP_REQUIRE(Y != nullptr, "SpmmPlan::apply: Y is null");
  KRYSP_REQUIRE(A.nnz() == 0 || X != nullptr, "SpmmPlan::apply: X is null");
  detail::spmm_device(state_->config, A.device_view(), N, state_->workspace->view, alpha, X, ldx, beta, Y, ldy,
                      vector_aligned(X, ldx));
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
