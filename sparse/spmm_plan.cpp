#include "krysp/sparse/spmm_plan.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
#include "krysp/sparse/spmm_panels.hpp"
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

template <class T>
struct Workspace {
  DeviceArray<index_t> unit_row, unit_nnz, splits, pieces;
  DeviceArray<T> carries, piece_sums;
  DeviceArray<unsigned> tickets;
  detail::SpmmWorkspaceView view;
};

/// The long-row pieces of a row kernel with long_row (spmm_long_pieces_host), their sums and
/// tickets (zeroed here; each call leaves them zero).
template <class T>
void add_long_pieces(Workspace<T>& w, const SpmmConfig& c, const index_t* row_ptr, index_t rows, index_t N) {
  const bool vdl = is_vdl(c.algorithm);
  const std::vector<index_t> p =
      detail::spmm_long_pieces_host(row_ptr, rows, c.long_row, detail::spmm_long_piece_nnz(vdl, c.subwarp));
  if (p.empty()) return;
  const index_t pieces = index_t(p.size() / 5);
  const index_t chunk = detail::spmm_chunk_columns(vdl, c.subwarp, c.col_lanes, c.per_lane, detail::kSpmmVecWidth<T>);
  const std::size_t tickets = std::size_t(pieces) * std::size_t(detail::spmm_column_tiles(N, chunk));
  w.pieces = DeviceArray<index_t>(p.size());
  w.pieces.upload(p.data(), p.size());
  w.piece_sums = DeviceArray<T>(std::size_t(pieces) * std::size_t(N));
  w.tickets = DeviceArray<unsigned>(tickets);
  w.tickets.zero();
  w.view.long_min = c.long_row;
  w.view.num_pieces = pieces;
  w.view.pieces = w.pieces.data();
  w.view.tickets = w.tickets.data();
  w.view.piece_sums = w.piece_sums.data();
}

/// Partition and carries of a nonzero-balanced configuration, or the long-row pieces of a row
/// kernel (empty for the other row kernels), for the CSR structure with host offsets row_ptr.
template <class T>
std::unique_ptr<Workspace<T>> make_workspace(const SpmmConfig& c, const index_t* row_ptr, index_t rows, index_t nnz,
                                             index_t N) {
  auto w = std::make_unique<Workspace<T>>();
  if (c.long_row > 0) add_long_pieces(*w, c, row_ptr, rows, N);
  if (!is_nnz_balanced(c.algorithm)) return w;
  const auto p = detail::spmm_partition_host(row_ptr, rows, nnz, c.items_per_warp);
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
std::unique_ptr<Workspace<T>> make_workspace(const SpmmConfig& c, const CsrMatrix<T>& A, index_t N) {
  return make_workspace<T>(c, A.row_ptr().data(), A.rows(), A.nnz(), N);
}

/// A column split of the matrix on the device (spmm_panels.hpp): each panel a CSR view into the
/// split's arrays, with the workspace of the panels' kernel. The values are gathered from the
/// matrix, again whenever apply() sees other values (another array or a values change), and
/// before every product where krysp does not track the values (spmm_panels_gather).
template <class T>
struct Panels {
  SpmmPanelSplit split;  // host side: offsets for the workspaces, statistics of panel 0
  DeviceArray<index_t> row_ptr, col_idx, source;
  DeviceArray<T> values;
  std::uint64_t gathered_stamp = 0;  // A.values_stamp() of the values gathered (0: none yet)
  std::vector<CsrView<T>> views;
  std::vector<std::unique_ptr<Workspace<T>>> ws;

  Panels(const CsrMatrix<T>& A, int P)
      : split(spmm_panel_split(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), P)) {
    row_ptr = DeviceArray<index_t>(split.row_ptr.size());
    row_ptr.upload(split.row_ptr.data(), split.row_ptr.size());
    col_idx = DeviceArray<index_t>(std::max<std::size_t>(1, split.col_idx.size()));
    col_idx.upload(split.col_idx.data(), split.col_idx.size());
    source = DeviceArray<index_t>(std::max<std::size_t>(1, split.source.size()));
    source.upload(split.source.data(), split.source.size());
    values = DeviceArray<T>(std::max<std::size_t>(1, split.source.size()));
    for (int p = 0; p < P; ++p) {
      const index_t b = split.start[std::size_t(p)], e = split.start[std::size_t(p) + 1];
      views.push_back({A.rows(), A.cols(), e - b, row_ptr.data() + split.row_ptr_offset(p), col_idx.data() + b,
                       values.data() + b});
    }
  }
  /// Panel p's structure with host offsets (values null): for row statistics and partitions.
  CsrView<T> host_view(int p) const {
    const index_t b = split.start[std::size_t(p)];
    return {views[std::size_t(p)].rows, views[std::size_t(p)].cols, views[std::size_t(p)].nnz,
            split.row_ptr.data() + split.row_ptr_offset(p), split.col_idx.data() + b, nullptr};
  }
  /// The panels' workspaces for configuration c (one kernel for all panels).
  void set_config(const SpmmConfig& c, index_t N) {
    ws.clear();
    for (int p = 0; p < split.panels; ++p) {
      const CsrView<T> h = host_view(p);
      ws.push_back(make_workspace<T>(c, h.row_ptr, h.rows, h.nnz, N));
    }
  }
  /// Gathers the values from A's device arrays unless they are tracked (`tracked`:
  /// A.values_tracked()) and those gathered last (`stamp`: A.values_stamp()); true when it did (the
  /// gather kernel writes the panels' values).
  bool refresh(const CsrMatrix<T>& A, std::uint64_t stamp, bool tracked, DeviceStream stream = {}) {
    if (!spmm_panels_gather(tracked, stamp == gathered_stamp)) return false;
    detail::spmm_gather_values(A.device_view().values, source.data(), index_t(split.source.size()), values.data(),
                               stream);
    gathered_stamp = stamp;
    return true;
  }
  /// Y = alpha·A·X + beta·Y, panel after panel (the first scales Y by beta, the others add to it);
  /// `a` without its matrix and workspace (each panel's own).
  void apply(const SpmmConfig& c, detail::SpmmArgs<T> a, DeviceStream stream) const {
    const T beta = a.beta;
    for (std::size_t p = 0; p < views.size(); ++p) {
      a.A = views[p];
      a.ws = ws[p]->view;
      a.beta = p == 0 ? beta : T(1);
      detail::spmm_device(c, a, stream);
    }
  }
};

/// Per-call times of the tuning candidates. Several back-to-back calls per sample where one call
/// is short, as a solver issues them (one call per event pair measured latency, which ranked
/// latency-bound candidates differently: SpmmRuleParams::tune_sample_ms), replayed from a CUDA graph
/// (SpmmRuleParams::tune_graph_max_calls) so that host submission does not hide the GPU time; the
/// candidates round-robin. Plain launches when a capture fails.
std::vector<double> time_candidates(const std::vector<std::function<void(DeviceStream)>>& runs, int reps, int warmup) {
  std::vector<std::function<void()>> plain;
  for (const auto& r : runs) plain.push_back([&r] { r(DeviceStream{}); });
  const SpmmRuleParams p{};  // the tuned defaults
  const double first_ms = time_device_ms(plain.front(), 1, 1);
  const int calls = int(std::clamp(p.tune_sample_ms / std::max(first_ms, 1e-4), 1.0, double(p.tune_graph_max_calls)));
  std::vector<std::unique_ptr<CapturedCalls>> graphs;
  std::vector<std::function<void()>> replays;
  for (const auto& r : runs) {
    graphs.push_back(std::make_unique<CapturedCalls>(r, calls));
    if (!graphs.back()->ok())
      return time_device_auto_interleaved_ms(plain, p.tune_sample_ms, reps, warmup, p.tune_prune_factor);
    replays.push_back([g = graphs.back().get()] { g->launch(); });
  }
  std::vector<double> ms =
      time_device_auto_interleaved_ms(replays, p.tune_sample_ms, reps, warmup, p.tune_prune_factor);
  for (double& m : ms) m /= calls;
  return ms;
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
  DevicePolicy device;                      // of the device the plan was made on: rules and launch thresholds
  std::unique_ptr<Workspace<T>> workspace;  // unsplit
  std::unique_ptr<Panels<T>> panels;        // config.panels > 1
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
  auto s = std::make_shared<State>();
  s->fingerprint = A.fingerprint();
  s->n = N;
  // Structure only: host_view() would download a device-borrowed matrix's values for nothing.
  s->stats = A.row_stats();
  s->device = device_policy();  // queried once per device; the rules and launches take it as data
  s->selection.rule = choose_spmm_rule(s->device, s->stats, N, int(sizeof(T)));
  const CsrView<T> dA = A.device_view();  // upload now, not inside the first apply
  // Column panels where X outgrows L2 and the gathers are scattered (spmm_panels.hpp); the split
  // is made once, for the rule's panel count or a forced or cached one.
  auto panels_of = [&](int P) -> Panels<T>& {
    if (!s->panels || s->panels->split.panels != P) s->panels = std::make_unique<Panels<T>>(A, P);
    s->panels->refresh(A, A.values_stamp(), true);  // now, unless this split holds these values already
    return *s->panels;
  };
  // The split holds a copy of the structure and values, nnz·(8 + sizeof(T)) bytes and P row offset
  // arrays: the rule splits only where that takes at most a quarter of the free device memory.
  auto split_fits = [&](int P) {
    std::size_t free_bytes = 0, total = 0;
    cuda_memory_info(free_bytes, total);
    const double bytes = double(A.nnz()) * (8 + sizeof(T)) + 4.0 * P * (double(A.rows()) + 1);
    return bytes <= 0.25 * double(free_bytes);
  };
  // A split's kernel is chosen, or completed, from the rows of its first panel.
  auto first_panel_stats = [&](int P) {
    return spmm_first_panel_stats(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), P);
  };
  if (const int P = choose_spmm_panels(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), N,
                                       int(sizeof(T)), s->device.l2_bytes);
      P > 1 && split_fits(P)) {
    s->selection.rule = choose_spmm_rule(s->device, first_panel_stats(P), N, int(sizeof(T)));
    s->selection.rule.panels = P;
  }

  if (o.force) {
    const index_t most = std::min<index_t>(kMaxSpmmPanels, std::max<index_t>(1, A.cols()));
    KRYSP_REQUIRE(o.forced.panels >= 0 && o.forced.panels <= most, "SpmmPlan: forced configuration asks for ",
                  o.forced.panels, " panels (at most ", most, " for ", A.cols(), " columns)");
    s->config = complete_spmm_config(o.forced, N, int(sizeof(T)),
                                     o.forced.panel_count() > 1 ? first_panel_stats(o.forced.panels) : s->stats);
    std::string why;
    KRYSP_REQUIRE(is_valid(s->config, &why), "SpmmPlan: forced configuration ", s->config.to_string(),
                  " is invalid: ", why);
    KRYSP_REQUIRE(spmm_runs_at(s->config, N, int(sizeof(T))), "SpmmPlan: forced configuration ", s->config.to_string(),
                  " cannot run at N = ", N,
                  " (long rows cut, or four vectors a lane, need VDL with one column lane and N <= per_lane * ",
                  detail::kSpmmVecWidth<T>, ")");
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
      std::vector<SpmmConfig> cands = spmm_candidates(s->device, s->stats, N, int(sizeof(T)));
      // The candidates run as apply() does from its second call on: with early matrix loads where
      // apply() would load early (tracked values), and an untracked panel split gathering its
      // values before every product.
      const bool tracked = A.values_tracked();
      const bool early = spmm_may_load_early({tracked, true, true, overlapped_launch()});
      std::vector<std::unique_ptr<Workspace<T>>> ws;
      std::vector<std::function<void(DeviceStream)>> runs;
      for (const SpmmConfig& c : cands) {
        ws.push_back(make_workspace(c, A, N));
        const detail::SpmmWorkspaceView view = ws.back()->view;
        runs.push_back([&, c, view](DeviceStream st) {
          detail::spmm_device<T>(c, {dA, N, view, T(1), X.data(), ldx, T(0), Y.data(), ldy, x_vec, early, s->device},
                                 st);
        });
      }
      if (s->selection.rule.panel_count() > 1) {  // the rule's panel split against the unsplit candidates
        const SpmmConfig c = s->selection.rule;
        cands.push_back(c);
        Panels<T>& pn = panels_of(c.panels);
        pn.set_config(c, N);
        runs.push_back([&, c](DeviceStream st) {
          const bool gathered = pn.refresh(A, A.values_stamp(), tracked, st);
          pn.apply(c, {{}, N, {}, T(1), X.data(), ldx, T(0), Y.data(), ldy, x_vec, early && !gathered, s->device}, st);
        });
      }
      // With early loads, the split's gather (panels_of) must be complete before the first
      // candidate starts.
      cuda_synchronize();
      const std::vector<double> ms = time_candidates(runs, std::max(1, o.tune_reps), std::max(0, o.tune_warmup));
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
  if (s->config.panel_count() > 1) {
    panels_of(s->config.panels).set_config(s->config, N);
  } else {
    s->panels.reset();  // made for the rule or tuning, not chosen
    s->workspace = make_workspace(s->config, A, N);
  }
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
