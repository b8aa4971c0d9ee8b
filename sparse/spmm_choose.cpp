// The SpMM plan's choice (spmm_choose.hpp): rule, forced, cache or timing.
#include "krysp/sparse/spmm_choose.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/early_loads.hpp"
#include "krysp/sparse/spmm_panels.hpp"

namespace krysp::detail {

namespace {

/// Per-call times of the tuning candidates. Several back-to-back calls per sample where one call
/// is short, as a solver issues them (one call per event pair measured latency, which ranked
/// latency-bound candidates differently: SpmmRuleParams::tune_sample_ms), replayed from a CUDA graph
/// (SpmmRuleParams::tune_graph_max_calls) so that host submission does not hide the GPU time; the
/// candidates round-robin. Plain launches when a capture fails.
std::vector<double> time_candidates(const std::vector<std::function<void(DeviceStream)>>& runs, int reps, int warmup,
                                    const SpmmRuleParams& p) {
  std::vector<std::function<void()>> plain;
  for (const auto& r : runs) plain.push_back([&r] { r(DeviceStream{}); });
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
SpmmChooser<T>::SpmmChooser(const CsrMatrix<T>& A, index_t N, const DevicePolicy& device, const SpmmRuleParams& params)
    : A_(A), N_(N), params_(params) {
  // Structure only: host_view() would download a device-borrowed matrix's values for nothing.
  choice_.stats = A.row_stats();
  choice_.device = device;
  choice_.selection.rule = choose_spmm_rule(device, choice_.stats, N, int(sizeof(T)), params_);
  A.device_view();  // upload now, not inside the first apply
  // Column panels where X outgrows L2 and the gathers are scattered (spmm_panels.hpp). The split
  // holds a copy of the structure and values, nnz·(8 + sizeof(T)) bytes and P row offset arrays:
  // the rule splits only where that takes at most a quarter of the free device memory.
  auto split_fits = [&](int P) {
    std::size_t free_bytes = 0, total = 0;
    cuda_memory_info(free_bytes, total);
    const double bytes = double(A.nnz()) * (8 + sizeof(T)) + 4.0 * P * (double(A.rows()) + 1);
    return bytes <= 0.25 * double(free_bytes);
  };
  if (const int P = choose_spmm_panels(A.row_ptr().data(), A.col_idx().data(), A.rows(), A.cols(), N,
                                       int(sizeof(T)), device.l2_bytes, params_.panel);
      P > 1 && split_fits(P)) {
    choice_.selection.rule = choose_spmm_rule(device, first_panel_stats(P), N, int(sizeof(T)), params_);
    choice_.selection.rule.panels = P;
  }
}

template <class T>
RowStats SpmmChooser<T>::first_panel_stats(int P) const {
  return spmm_first_panel_stats(A_.row_ptr().data(), A_.col_idx().data(), A_.rows(), A_.cols(), P);
}

template <class T>
SpmmPanels<T>& SpmmChooser<T>::panels_of(int P) {
  auto& pn = choice_.panels;
  if (!pn || pn->split.panels != P) pn = std::make_unique<SpmmPanels<T>>(A_, P);
  pn->refresh(A_, A_.values_stamp(), true);  // now, unless this split holds these values already
  return *pn;
}

template <class T>
SpmmChoice<T> SpmmChooser<T>::choose(const SpmmPlanOptions& o) {
  if (o.force) {
    force(o.forced);
  } else if (o.select == SpmmPlanOptions::Select::Tune) {
    params_.tune_launch = params_.tune_launch || o.tune_launch;
    tune(o);
  } else {
    choice_.config = choice_.selection.rule;
    choice_.selection.source = SpmmSelection::Source::Rule;
  }
  return std::move(choice_);
}

template <class T>
void SpmmChooser<T>::force(const SpmmConfig& forced) {
  const index_t N = N_;
  const index_t most = std::min<index_t>(kMaxSpmmPanels, std::max<index_t>(1, A_.cols()));
  KRYSP_REQUIRE(forced.panels >= 0 && forced.panels <= most, "SpmmPlan: forced configuration asks for ",
                forced.panels, " panels (at most ", most, " for ", A_.cols(), " columns)");
  SpmmConfig& c = choice_.config;
  c = complete_spmm_config(forced, N, int(sizeof(T)),
                           forced.panel_count() > 1 ? first_panel_stats(forced.panels) : choice_.stats, params_);
  std::string why;
  KRYSP_REQUIRE(is_valid(c, &why), "SpmmPlan: forced configuration ", c.to_string(), " is invalid: ", why);
  KRYSP_REQUIRE(spmm_runs_at(c, N, int(sizeof(T))), "SpmmPlan: forced configuration ", c.to_string(),
                " cannot run at N = ", N,
                " (long rows cut, or four vectors a lane, need VDL with one column lane and N <= per_lane * ",
                kSpmmVecWidth<T>, ")");
  choice_.selection.source = SpmmSelection::Source::Forced;
}

template <class T>
void SpmmChooser<T>::tune(const SpmmPlanOptions& o) {
  const CsrMatrix<T>& A = A_;
  const index_t N = N_;
  SpmmSelection& sel = choice_.selection;
  const DevicePolicy& device = choice_.device;
  const index_t ldx = o.ldx > 0 ? o.ldx : N, ldy = o.ldy > 0 ? o.ldy : N;
  KRYSP_REQUIRE(ldx >= N && ldy >= N, "SpmmPlan: tuning leading dimensions ldx = ", ldx, ", ldy = ", ldy,
                " must be >= N = ", N);
  constexpr int VW = kSpmmVecWidth<T>;
  const bool x_vec = ldx % VW == 0;  // cudaMalloc memory is 256-byte aligned
  SpmmTuneKey key;
  key.fingerprint = A.fingerprint();
  key.precision = precision_name<T>();
  key.gpu = cached_device_name();
  key.n = N;
  key.x_vec = x_vec;
  std::optional<SpmmTuneCache> cache;
  if (o.use_cache) {
    cache.emplace(o.cache_dir);
    sel.cache_file = cache->file();
    if (auto e = cache->lookup(key)) {
      choice_.config = e->config;
      sel.source = SpmmSelection::Source::Cache;
      sel.chosen_ms = e->ms;
      return;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const CsrView<T> dA = A.device_view();
  DeviceArray<T> X(std::max<std::size_t>(1, std::size_t(A.cols()) * std::size_t(ldx)));
  DeviceArray<T> Y(std::max<std::size_t>(1, std::size_t(A.rows()) * std::size_t(ldy)));
  spmm_fill_device(X.data(), X.size(), 0x5eed);
  std::vector<SpmmConfig> cands = spmm_candidates(device, choice_.stats, N, int(sizeof(T)), params_);
  // The candidates run as apply() does from its second call on: with early matrix loads where
  // apply() would load early (tracked values), and an untracked panel split gathering its values
  // before every product.
  const bool tracked = A.values_tracked();
  const bool early = spmm_may_load_early({tracked, true, true, overlapped_launch()});
  std::vector<std::unique_ptr<SpmmWorkspace<T>>> ws;
  std::vector<std::function<void(DeviceStream)>> runs;
  for (const SpmmConfig& c : cands) {
    ws.push_back(make_spmm_workspace(c, A, N));
    const SpmmWorkspaceView view = ws.back()->view;
    runs.push_back([&, c, view](DeviceStream st) {
      spmm_device<T>(c, {dA, N, view, T(1), X.data(), ldx, T(0), Y.data(), ldy, x_vec, early, device}, st);
    });
  }
  if (sel.rule.panel_count() > 1) {  // the rule's panel split against the unsplit candidates
    const SpmmConfig c = sel.rule;
    cands.push_back(c);
    SpmmPanels<T>& pn = panels_of(c.panels);
    pn.set_config(c, N);
    runs.push_back([&, c](DeviceStream st) {
      const bool gathered = pn.refresh(A, A.values_stamp(), tracked, st);
      pn.apply(c, {{}, N, {}, T(1), X.data(), ldx, T(0), Y.data(), ldy, x_vec, early && !gathered, device}, st);
    });
  }
  // With early loads, the split's gather (panels_of) must be complete before the first candidate
  // starts.
  cuda_synchronize();
  const std::vector<double> ms =
      time_candidates(runs, std::max(1, o.tune_reps), std::max(0, o.tune_warmup), params_);
  double best = -1;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    sel.candidates.push_back({cands[i], ms[i]});
    if (best < 0 || ms[i] < best) {
      best = ms[i];
      choice_.config = cands[i];
    }
  }
  sel.source = SpmmSelection::Source::Tuned;
  sel.chosen_ms = best;
  sel.tuning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (cache && cache->enabled()) cache->store({key, choice_.config, best});
}

template class SpmmChooser<double>;
template class SpmmChooser<float>;

}  // namespace krysp::detail
