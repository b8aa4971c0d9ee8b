#include "krysp/precond/cuda/device_amg.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <utility>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg_adaptive.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/sparse/cuda/timing.hpp"

namespace krysp {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Leading dimension of the work blocks: N rounded up to 4 entries, so every row starts on a
/// 16-byte boundary (the SpMM plans' vector loads need it), as DeviceChebyshev's.
index_t work_ld(index_t N) { return (N + 3) / 4 * 4; }

/// Work arrays a level's V-cycle pass uses: r, e, u, v, w, and x, b below level 0.
constexpr int kWorkArrays = 7;
int work_arrays(std::size_t l) { return l == 0 ? kWorkArrays - 2 : kWorkArrays; }
/// gpu_amg_setup's max_complexity for a set-up that is not to stop early.
constexpr double kNoComplexityCap = std::numeric_limits<double>::infinity();

/// A's entries a row, rounded up (at least 1).
template <class T>
int mean_row(const CsrMatrix<T>& A) {
  return A.rows() > 0 ? int(std::max<std::int64_t>(1, (std::int64_t(A.nnz()) + A.rows() - 1) / A.rows())) : 1;
}

template <class T>
CsrMatrix<T> to_matrix(const amg::Csr<T>& C) {
  return CsrMatrix<T>::from_arrays(C.rows, C.cols, C.row_ptr, C.col_idx, C.values);
}

template <class T>
std::size_t matrix_bytes(index_t rows, index_t nnz) {
  return (std::size_t(rows) + 1 + std::size_t(nnz)) * sizeof(index_t) + std::size_t(nnz) * sizeof(T);
}
}  // namespace

template <class T>
DeviceAmg<T>::DeviceAmg(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const AmgOptions& o)
    : Preconditioner<T>(A.rows(), MemorySpace::Device) {
  KRYSP_REQUIRE(plan.valid() && plan.matches(A), "AMG: the SpMV plan was not made for this matrix");
  {
    PrecondOptions po;
    po.kind = PrecondKind::Amg;
    po.amg = o;
    validate(po);
  }
  // kAmgAuto resolved here, so the GPU set-up receives concrete numbers. The statistics are
  // counted on the device (the set-up reads A's device arrays anyway; a device matrix's values
  // are not downloaded), once per values version of A.
  // The V-cycle runs here, where a larger coarsest level pays; the host set-up below takes it too.
  const AmgOptions given = amg::vcycle_on_device(o);
  opt_ = amg::resolve_auto(A, given, &auto_choice_, true);
  fingerprint_ = A.fingerprint();
  plan0_ = plan;
  if (detail::gpu_amg_setup_applies(A, opt_)) {
    const auto t0 = Clock::now();
    // Level 0's work for adapt's second set-up, recorded where the augmenting may follow (the
    // explicit cycles, or the auto rule's on a structural matrix): elsewhere its copies would only
    // cost time and memory.
    const bool auto_structural = opt_.adaptive_cycles == kAmgAuto &&
                                 (auto_choice_.positive_fraction < 0 || auto_choice_.structural);
    const bool may_augment = amg::may_adapt(opt_) && (opt_.adaptive_cycles > 0 || auto_structural);
    const std::shared_ptr<detail::GpuLevel0Seed> seed = may_augment ? detail::make_level0_seed() : nullptr;
    gpu_ = std::make_unique<detail::GpuAmgHierarchy<T>>(detail::gpu_amg_setup(
        A, opt_, false, nullptr, true, true, &coarse_solver(), &auto_choice_, kNoComplexityCap, seed.get()));
    adopt(A);
    const AmgInfo& first = gpu_->info;
    const amg::AdaptivePlan adapt_plan = amg::adaptive_plan(A, opt_, first.levels[0].block_size,
                                                            first.levels[0].lambda_estimate, first.levels.size(),
                                                            auto_choice_, true);
    keep_choice();
    if (adapt_plan.cycles > 0) adapt(A, adapt_plan, t0, seed.get());
    return;
  }
  // The set-up, on the host: it resolves `o` from the count memoised above (the same choice) and
  // reports it in its summary.
  host_ = std::make_unique<HostAmg<T>>(A, given);
  upload(A);
}

template <class T>
DeviceAmg<T>::~DeviceAmg() = default;

template <class T>
std::size_t DeviceAmg<T>::bytes_needed() const {
  const auto data = host_->level_data();
  std::size_t bytes = 0;
  for (std::size_t l = 0; l < data.size(); ++l) {
    const auto& d = data[l];
    if (l > 0) bytes += matrix_bytes<T>(d.n, d.nnz);
    if (d.P) bytes += matrix_bytes<T>(d.P->rows, d.P->nnz()) + matrix_bytes<T>(d.R->rows, d.R->nnz());
    bytes += std::size_t(d.n) * sizeof(T) * std::size_t(1 + work_arrays(l));
  }
  const std::size_t nc = std::size_t(data.back().n);
  if (!host_->coarse_factor().empty()) {
    bytes += nc * nc * sizeof(double);
    const index_t nl = data.size() >= 2 ? data[data.size() - 2].n : 0;
    if (detail::amg_dense_correction(data.size(), nl)) bytes += std::size_t(nl) * std::size_t(nl) * sizeof(double);
  }
  return bytes;
}

template <class T>
void DeviceAmg<T>::adapt(const CsrMatrix<T>& A, const amg::AdaptivePlan& plan,
                         std::chrono::steady_clock::time_point t0, detail::GpuLevel0Seed* seed) {
  // amg::run_adaptive_cycles' operations on the device: X, R, Z row-major n × K, the V-cycle on
  // all K columns at once (apply_block), the K × K algebra on the host.
  struct Ops {
    const DeviceAmg& M;
    index_t n;
    int K;
    DeviceArray<T> X, R, Z;
    void residual() { M.mul(M.levels_[0].A, K, T(-1), X.data(), K, T(0), R.data(), K, {}); }
    std::vector<double> gram() {
      std::vector<double> G(std::size_t(K) * std::size_t(K));
      detail::amg_block_gram<T>(n, K, X.data(), R.data(), G.data());
      for (double& g : G) g = -g;  // XᵀA·X = −XᵀR
      return G;
    }
    void transform(const std::vector<double>& C) {
      detail::amg_block_transform<T>(n, K, C.data(), X.data());
      detail::amg_block_transform<T>(n, K, C.data(), R.data());
    }
    void correct() {
      M.apply_block(K, R.data(), K, Z.data(), K);
      detail::amg_add<T>(n, K, Z.data(), K, X.data(), K);
    }
  };
  const index_t n = A.rows();
  const int K = plan.vectors;
  const std::size_t size = std::size_t(n) * std::size_t(K);
  std::vector<T> x;
  amg::AdaptOutcome out;
  // Where the first hierarchy is slow, its smoothers go to kAmgSlowDegree for a few more cycles,
  // and the second hierarchy is set up at that degree, as HostAmg::adapt does; a first hierarchy
  // that comes back does so at its own degree.
  std::vector<ChebyshevCoefficients> first_coef;
  const int first_degree = opt_.smoother_degree;
  const auto restore_degree = [&] {
    for (std::size_t l = 0; l < first_coef.size(); ++l) levels_[l].coef = first_coef[l];
    if (!first_coef.empty()) graphs_.clear();  // captured at the other degree
    opt_.smoother_degree = first_degree;
    auto_choice_.slow_cycles = 0;
  };
  try {
    const std::vector<double> start = amg::adaptive_start_block(n, gpu_->info.levels[0].block_size, plan);
    x.assign(start.begin(), start.end());
    Ops ops{*this, n, K, DeviceArray<T>(size), DeviceArray<T>(size), DeviceArray<T>(size)};
    ops.X.upload(x.data(), size);
    out = amg::run_adaptive_cycles(ops, plan);
    if (amg::slow_augmenting(plan, out.keep, auto_choice_, gpu_->info.levels[0].block_size, out.factor, opt_)) {
      for (Level& L : levels_) {
        first_coef.push_back(L.coef);
        L.coef = amg::at_degree(L.coef, kAmgSlowDegree);
      }
      opt_.smoother_degree = kAmgSlowDegree;
      graphs_.clear();  // captured at the first degree
      amg::AdaptivePlan more = plan;
      more.cycles = kAmgSlowCycles;
      more.conditional = false;
      auto_choice_.slow_cycles = amg::run_adaptive_cycles(ops, more).cycles;
    }
    ops.X.download(x.data(), size);
  } catch (const DeviceError&) {
    if (!plan.conditional) throw;  // asked for: say that it does not fit
    out = amg::AdaptOutcome{};     // the auto rule's: the first hierarchy stays
  }
  auto_choice_.adapt_vectors = K;
  auto_choice_.adapt_factor = out.factor;
  // The cycles' V-cycle graph and block work arrays go: a solve makes its own.
  graphs_.clear();
  for (Level& L : levels_) L.block = DeviceArray<T>();
  block_ld_ = 0;
  block_bytes_ = 0;
  AmgOptions adapted = opt_;
  if (!out.keep || !amg::adopt_adapted_vectors(x, K, adapted)) {
    restore_degree();
    auto_choice_.adapt_discarded_cycles = out.cycles;
    keep_choice();
    return;
  }
  const AmgOptions first = opt_;
  const double seconds = since(t0);
  opt_ = adapted;
  auto_choice_.adapted_cycles = out.cycles;
  // The auto rule's first hierarchy is set aside whole, as on the host: where the second is worse
  // or does not fit, it comes back without a third set-up. An explicit plan keeps the second
  // whatever it costs, so the first goes before it is built: the peak stays one hierarchy.
  std::unique_ptr<detail::GpuAmgHierarchy<T>> kept_gpu;
  std::vector<Level> kept_levels;
  DeviceArray<double> kept_inv, kept_correction;
  const std::size_t kept_bytes = upload_bytes_;
  if (plan.conditional) {
    kept_gpu = std::move(gpu_);
    kept_levels = std::move(levels_);
    kept_inv = std::move(coarse_inv_);
    kept_correction = std::move(correction_);
  }
  drop_levels();
  gpu_.reset();
  bool worse = false;
  try {
    // The auto rule's set-up stops where its complexity passes the cap augmented_worse sets, as
    // HostAmg's does: bcsstk08's nearly dense level 1 needs no level below it to be set aside.
    const double cap = plan.conditional ? kAmgAugmentMaxComplexityGrowth * kept_gpu->info.operator_complexity
                                        : kNoComplexityCap;
    gpu_ = std::make_unique<detail::GpuAmgHierarchy<T>>(
        detail::gpu_amg_setup(A, opt_, false, nullptr, true, true, &coarse_solver(), &auto_choice_, cap, seed));
    keep_choice();
    worse = plan.conditional && (gpu_->capped || amg::augmented_worse(kept_gpu->info.operator_complexity,
                                                                      kept_gpu->info.stalled, gpu_->info));
  } catch (const DeviceError&) {
    if (!plan.conditional) throw;
    worse = true;  // the auto rule's second hierarchy does not fit: the first did
  }
  if (worse) {
    drop_levels();  // the second, if it was built
    gpu_ = std::move(kept_gpu);
    levels_ = std::move(kept_levels);
    coarse_inv_ = std::move(kept_inv);
    correction_ = std::move(kept_correction);
    upload_bytes_ = kept_bytes;
    opt_ = first;
    restore_degree();
    auto_choice_.theta_retries = gpu_->info.auto_choice.theta_retries;  // the first set-up's
    auto_choice_.adapted_cycles = 0;
    auto_choice_.adapt_discarded_cycles = out.cycles;
    gpu_->info.auto_choice = auto_choice_;
    gpu_->info.setup_seconds = since(t0);
    return;
  }
  gpu_->info.adaptive_seconds = seconds;
  gpu_->info.setup_seconds += seconds;
  adopt(A);
}

template <class T>
void DeviceAmg<T>::drop_levels() {
  graphs_.clear();  // they point into the arrays below
  levels_.clear();
  coarse_inv_ = DeviceArray<double>();
  correction_ = DeviceArray<double>();
  block_ld_ = 0;
  block_bytes_ = 0;
}

template <class T>
void DeviceAmg<T>::upload(const CsrMatrix<T>& A) {
  const auto t0 = Clock::now();
  drop_levels();
  upload_bytes_ = 0;
  // Counted against the GPU's memory before anything is allocated: a clear error, not a failure
  // halfway through the levels.
  const std::size_t need = bytes_needed();
  std::size_t free_bytes = 0, total_bytes = 0;
  cuda_memory_info(free_bytes, total_bytes);
  const std::size_t avail = free_bytes + device_bytes_cached();
  if (need > avail)
    KRYSP_THROW(DeviceError, "AMG: the hierarchy (", host_->levels().size(), " levels, operator complexity ",
                host_->info().operator_complexity, ") needs ", need, " bytes of GPU memory, but only ", avail,
                " are free (of ", total_bytes, "); use --backend host, a larger coarse_size, or a smaller problem");
  const std::size_t before = device_bytes_allocated();
  try {
    const auto data = host_->level_data();
    A.device_view();  // the copy below shares A's device mirror instead of making its own
    for (std::size_t l = 0; l < data.size(); ++l) {
      const AmgLevelData<T>& d = data[l];
      Level L;
      L.n = d.n;
      if (l == 0) {
        L.A.A = A;
        L.A.plan = plan0_;
      } else {
        L.A.A = CsrMatrix<T>::from_arrays(d.n, d.n, std::vector<index_t>(d.row_ptr, d.row_ptr + d.n + 1),
                                          std::vector<index_t>(d.col_idx, d.col_idx + d.nnz),
                                          std::vector<T>(d.values, d.values + d.nnz));
        L.A.plan = SpmvPlan<T>(L.A.A);
      }
      if (d.P) {
        L.P.A = to_matrix(*d.P);
        L.P.plan = SpmvPlan<T>(L.P.A);
        L.R.A = to_matrix(*d.R);
        L.R.plan = SpmvPlan<T>(L.R.A);
      }
      L.dinv = DeviceArray<T>(d.dinv->size());
      L.dinv.upload(d.dinv->data(), d.dinv->size());
      L.coef = *d.coef;
      upload_blocks(L, d);
      L.step = choose_chebyshev_step(L.A.plan.config(), L.A.plan.stats());
      L.mean_row = mean_row(L.A.A);
      L.vec = DeviceArray<T>(std::size_t(d.n) * std::size_t(work_arrays(l)));
      levels_.push_back(std::move(L));
    }
    set_coarse(host_->coarse_factor());
  } catch (const DeviceError& e) {
    drop_levels();
    KRYSP_THROW(DeviceError, "AMG: uploading the hierarchy (", need, " bytes estimated) failed: ", e.what());
  }
  const std::size_t after = device_bytes_allocated();
  upload_bytes_ = after > before ? after - before : 0;
  cuda_synchronize();
  upload_seconds_ = since(t0);
}

template <class T>
void DeviceAmg<T>::adopt(const CsrMatrix<T>& A) {
  const auto t0 = Clock::now();
  drop_levels();
  const std::size_t before = device_bytes_allocated();
  // AmgOptions::profile_setup: this adoption's phases after the set-up's (synchronised).
  auto t = Clock::now();
  auto mark = [&](int level, const char* name) {
    if (!opt_.profile_setup) return;
    cuda_synchronize();
    const auto now = Clock::now();
    gpu_->info.setup_phases.push_back(AmgSetupPhase{level, name, std::chrono::duration<double>(now - t).count(), 1});
    t = now;
  };
  if (opt_.profile_setup) {
    cuda_synchronize();
    t = Clock::now();
  }
  A.device_view();
  for (std::size_t l = 0; l < gpu_->levels.size(); ++l) {
    detail::GpuAmgLevel<T>& g = gpu_->levels[l];
    Level L;
    L.n = g.n;
    L.A.A = l == 0 ? A : g.A;
    L.A.plan = l == 0 ? plan0_ : SpmvPlan<T>(g.A);
    mark(int(l), "adopt: SpMV plan of A_l");
    if (l + 1 < gpu_->levels.size()) {
      L.P.A = g.P;
      L.P.plan = SpmvPlan<T>(g.P);
      L.R.A = g.R;
      L.R.plan = SpmvPlan<T>(g.R);
      mark(int(l), "adopt: SpMV plans of P, R");
    }
    L.dinv = std::move(g.dinv);
    L.coef = g.coef;
    L.smoother_block = g.block;
    L.binv = std::move(g.binv);
    L.step = choose_chebyshev_step(L.A.plan.config(), L.A.plan.stats());
    L.mean_row = mean_row(L.A.A);
    L.vec = DeviceArray<T>(std::size_t(g.n) * std::size_t(work_arrays(l)));
    levels_.push_back(std::move(L));
    mark(int(l), "adopt: Chebyshev step choice, work vectors");
  }
  // The hierarchy's own arrays (allocated by the set-up) plus what was made here.
  std::size_t held = gpu_->coarse_factor.size() * sizeof(double);
  if (gpu_->coarse_factor.size() > 0) {
    set_coarse(std::move(gpu_->coarse_factor));
    mark(int(levels_.size()) - 1, "adopt: coarse inverse");
  }
  for (const auto& g : gpu_->levels)
    for (const auto* m : {&g.a, &g.p, &g.r})
      held += (m->row_ptr.size() + m->col_idx.size()) * sizeof(index_t) + m->values.size() * sizeof(T);
  if (gpu_->plan) held += detail::plan_device_bytes(*gpu_->plan);  // what update_values reuses
  for (const Level& L : levels_) held += (L.dinv.size() + L.binv.size()) * sizeof(T);  // made by the set-up
  const std::size_t after = device_bytes_allocated();
  upload_bytes_ = held + (after > before ? after - before : 0);
  cuda_synchronize();
  upload_seconds_ = since(t0);
}

template <class T>
const AmgInfo& DeviceAmg<T>::info() const {
  return gpu_ ? gpu_->info : host_->info();
}

template <class T>
const HostAmg<T>& DeviceAmg<T>::host() const {
  KRYSP_REQUIRE(host_ != nullptr, "AMG: this hierarchy was set up on the GPU; there is no host copy");
  return *host_;
}

template <class T>
void DeviceAmg<T>::upload_blocks(Level& L, const AmgLevelData<T>& d) {
  L.smoother_block = d.smoother_block;
  if (L.smoother_block == 1) {
    L.binv = DeviceArray<T>();
    return;
  }
  if (L.binv.size() != d.binv->size()) L.binv = DeviceArray<T>(d.binv->size());
  L.binv.upload(d.binv->data(), d.binv->size());
}

template <class T>
void DeviceAmg<T>::upload_values(const CsrMatrix<T>& A) {
  const auto t0 = Clock::now();
  graphs_.clear();  // they hold the old coefficients
  const auto data = host_->level_data();
  levels_[0].A.A = A;  // A may be another matrix object of the same structure
  A.device_view();
  for (std::size_t l = 0; l < data.size(); ++l) {
    const AmgLevelData<T>& d = data[l];
    Level& L = levels_[l];
    if (l > 0) L.A.A.set_values(std::vector<T>(d.values, d.values + d.nnz));
    if (d.P) {
      L.P.A.set_values(d.P->values);
      L.R.A.set_values(d.R->values);
    }
    L.dinv.upload(d.dinv->data(), d.dinv->size());
    L.coef = *d.coef;
    upload_blocks(L, d);
  }
  set_coarse(host_->coarse_factor());
  cuda_synchronize();
  upload_seconds_ = since(t0);
}

template <class T>
bool DeviceAmg<T>::update_values(const CsrMatrix<T>& A) {
  KRYSP_REQUIRE(matches(A), "AMG: update_values needs the structure the hierarchy was set up for");
  graphs_.clear();  // they hold the old coefficients and arrays
  if (gpu_) {  // the GPU set-up again, aggregates and tentative prolongators kept (numeric only)
    const auto t0 = Clock::now();
    const AmgInfo before = gpu_->info;
    // The new numbers come in arrays of the same patterns: copied into the level matrices on the
    // device, so their structures, checks and SpMV plans stay (no download, no new plans).
    detail::GpuAmgHierarchy<T> fresh =
        detail::gpu_amg_setup(A, opt_, false, gpu_->plan, false, true, &coarse_solver(), &auto_choice_);
    bool same = fresh.levels.size() == levels_.size() && fresh.coarse_factor.size() == coarse_inv_.size();
    for (std::size_t l = 0; same && l < levels_.size(); ++l) {
      const auto& g = fresh.levels[l];
      const Level& L = levels_[l];
      const bool next = l + 1 < levels_.size();
      same = g.n == L.n && (l == 0 || g.a.nnz == L.A.A.nnz()) &&
             (!next || (g.p.nnz == L.P.A.nnz() && g.r.nnz == L.R.A.nnz()));
    }
    if (same) {
      levels_[0].A.A = A;  // A may be another matrix object of the same structure
      A.device_view();
      for (std::size_t l = 0; l < levels_.size(); ++l) {
        auto& g = fresh.levels[l];
        Level& L = levels_[l];
        if (l > 0) L.A.A.set_values_device(g.a.values.data());
        if (l + 1 < levels_.size()) {
          L.P.A.set_values_device(g.p.values.data());
          L.R.A.set_values_device(g.r.values.data());
        }
        L.dinv = std::move(g.dinv);
        L.coef = g.coef;
        L.smoother_block = g.block;
        L.binv = std::move(g.binv);
      }
      set_coarse(std::move(fresh.coarse_factor));
      gpu_->info = fresh.info;
      cuda_synchronize();
    } else {  // cannot happen with the plan kept; set up again in full rather than fail
      levels_.clear();
      gpu_.reset();
      gpu_ = std::make_unique<detail::GpuAmgHierarchy<T>>(
          detail::gpu_amg_setup(A, opt_, false, nullptr, true, true, &coarse_solver(), &auto_choice_));
      adopt(A);
    }
    keep_choice();  // the choice of the first set-up, kept
    gpu_->info.setup_seconds = before.setup_seconds;
    gpu_->info.adaptive_seconds = before.adaptive_seconds;
    gpu_->info.resetups = before.resetups + 1;
    gpu_->info.resetup_seconds = since(t0);
    return true;
  }
  const int resetups = host_->info().resetups;
  host_->update_values(A);
  // The numeric path keeps every pattern; a fallback to a full set-up (a coarse pattern changed)
  // may change the levels themselves: then upload everything again.
  bool same = host_->info().resetups == resetups + 1 && host_->levels().size() == levels_.size() &&
              host_->coarse_factor().size() == coarse_inv_.size();
  if (same) {
    const auto data = host_->level_data();
    for (std::size_t l = 0; same && l < data.size(); ++l) {
      const Level& L = levels_[l];
      same = data[l].n == L.n && (l == 0 || data[l].nnz == L.A.A.nnz()) && bool(data[l].P) == L.P.plan.valid() &&
             (!data[l].P || (data[l].P->nnz() == L.P.A.nnz() && data[l].R->nnz() == L.R.A.nnz()));
    }
  }
  if (same)
    upload_values(A);
  else
    upload(A);
  return true;
}

template <class T>
std::string DeviceAmg<T>::summary() const {
  if (gpu_) {  // HostAmg::summary's form, from the GPU set-up's info
    const AmgInfo& in = gpu_->info;
    std::string s = detail::concat("amg(", in.levels.size(), in.levels.size() == 1 ? " level" : " levels", ", rows ");
    for (std::size_t l = 0; l < in.levels.size(); ++l) s += detail::concat(l ? "/" : "", in.levels[l].rows);
    char buf[224];
    std::snprintf(buf, sizeof buf, ", operator complexity %.2f, grid complexity %.2f, ", in.operator_complexity,
                  in.grid_complexity);
    s += buf;
    s += amg::describe_choice(opt_, auto_choice_) + amg::describe_block_smoother(in);
    s += detail::concat(", b ", in.levels[0].block_size, ", mis2, coarsest ", in.levels.back().rows, " rows by ",
                        amg::describe_coarse_solve(in));
    if (in.stalled) s += "; " + in.stop_reason;
    std::snprintf(buf, sizeof buf, "; set up on the GPU in %.3g s", in.setup_seconds);
    s += buf;
    if (in.resetups > 0) {
      std::snprintf(buf, sizeof buf, ", numeric re-set-up on the GPU in %.3g s", in.resetup_seconds);
      s += buf;
    }
    std::snprintf(buf, sizeof buf, "; %s, %zu bytes of GPU memory)", vcycle_note().c_str(), device_bytes());
    return s + buf;
  }
  std::string s = host_->summary();
  if (!s.empty() && s.back() == ')') s.pop_back();
  char buf[224];
  std::snprintf(buf, sizeof buf, "; set up on the host in %.3g s, %s, %zu bytes of GPU memory)",
                host_->info().setup_seconds, vcycle_note().c_str(), device_bytes());
  return s + buf;
}

template <class T>
std::string DeviceAmg<T>::vcycle_note() const {
  if (correction_.size() == 0) return "V-cycle on the GPU";
  return detail::concat("V-cycle on the GPU (level ", levels_.size() - 2, "'s coarse correction as one dense product)");
}

template <class T>
typename DeviceAmg<T>::Work DeviceAmg<T>::work(std::size_t l, T* base, index_t ld) const {
  const std::size_t stride = std::size_t(levels_[l].n) * std::size_t(ld);
  Work W;
  W.ld = ld;
  T** slots[kWorkArrays] = {&W.r, &W.e, &W.u, &W.v, &W.w, &W.x, &W.b};
  for (int k = 0; k < work_arrays(l); ++k) *slots[k] = base + std::size_t(k) * stride;
  return W;
}

template <class T>
void DeviceAmg<T>::mul(const Mat& M, index_t N, T alpha, const T* x, index_t ldx, T beta, T* y, index_t ldy,
                       DeviceStream s) const {
  if (N == 1 && ldx == 1 && ldy == 1) {
    M.plan.apply(M.A, alpha, x, beta, y, s);
    return;
  }
  auto it = M.spmm.find(N);
  if (it == M.spmm.end()) it = M.spmm.emplace(N, SpmmPlan<T>(M.A, N)).first;  // once per width
  it->second.apply(M.A, alpha, x, ldx, beta, y, ldy, s);
}

template <class T>
void DeviceAmg<T>::smooth_correction(const Level& L, const Work& W, index_t N, const T* r, index_t ldr, T* e,
                                     index_t lde, DeviceStream s) const {
  const AmgOptions& o = opt_;
  const T* dinv = L.dinv.data();
  if (o.smoother == AmgSmoother::L1Jacobi) {
    detail::cheb_first<T, T, T>(L.n, N, T(1), dinv, r, ldr, e, lde, s);  // e = D_l1⁻¹·r
    return;
  }
  // Chebyshev from a zero guess, HostAmg::smooth_correction's recurrence: in D⁻¹A, or in D_b⁻¹A
  // with node blocks (fused on vectors too; on blocks of right-hand sides A·x_k goes through w).
  const int d = o.smoother_degree;
  const T c0 = T(L.coef.c0);
  const T* binv = L.binv.data();
  auto first = [&](T* x, index_t ldx) {
    if (L.smoother_block > 1) detail::amg_node_first<T>(L.n, N, L.smoother_block, c0, binv, r, ldr, x, ldx, s);
    else detail::cheb_first<T, T, T>(L.n, N, c0, dinv, r, ldr, x, ldx, s);
  };
  if (d == 1) {
    first(e, lde);
    return;
  }
  const index_t ld = W.ld;
  T* cur = W.u;
  T* prev = nullptr;
  first(cur, ld);
  if (N == 1 && ld == 1 && (L.step >= 0 || L.smoother_block > 1)) {
    // Vectors: each step one kernel, A_l·x_k never stored.
    const CsrView<T> dA = L.A.A.device_view();
    for (int k = 1; k < d; ++k) {
      const T c1 = T(L.coef.c1[std::size_t(k - 1)]), c2 = T(L.coef.c2[std::size_t(k - 1)]);
      if (k == d - 1) {
        fused_step(L, dA, c1, c2, r, ldr, cur, prev, e, lde, s);
      } else {  // x_{k+1} overwrites x_{k−1} (or the spare array); never x_k, which rows gather from
        T* out = prev ? prev : W.v;
        fused_step(L, dA, c1, c2, r, ldr, cur, prev, out, 1, s);
        prev = cur;
        cur = out;
      }
    }
    return;
  }
  for (int k = 1; k < d; ++k) {
    mul(L.A, N, T(1), cur, ld, T(0), W.w, ld, s);  // w = A·x_k
    const T c1 = T(L.coef.c1[std::size_t(k - 1)]), c2 = T(L.coef.c2[std::size_t(k - 1)]);
    // x_{k+1} overwrites x_{k−1}, or goes to the spare array; the last one to e
    T* out = k == d - 1 ? e : prev ? prev : W.v;
    const index_t ldo = k == d - 1 ? lde : ld;
    if (L.smoother_block > 1)
      detail::amg_node_step<T>(L.n, N, L.smoother_block, c1, c2, binv, r, ldr, W.w, ld, cur, ld, prev, ld, out, ldo, s);
    else
      detail::cheb_step<T, T, T>(L.n, N, c1, c2, dinv, r, ldr, W.w, ld, cur, ld, prev, ld, out, ldo, s);
    prev = cur;
    cur = out;
  }
}

template <class T>
void DeviceAmg<T>::fused_step(const Level& L, const CsrView<T>& dA, T c1, T c2, const T* r, index_t ldr, const T* x,
                              const T* xp, T* y, index_t ldy, DeviceStream s) const {
  if (L.smoother_block > 1)
    detail::amg_node_fused_step<T>(dA, L.mean_row, L.smoother_block, c1, c2, L.binv.data(), r, ldr, x, xp, y, ldy, s);
  else
    detail::cheb_fused_step<T, T, T>(dA, L.step, c1, c2, L.dinv.data(), r, ldr, x, xp, y, ldy, s);
}

template <class T>
void DeviceAmg<T>::sweep(const Level& L, const Work& W, index_t N, const T* b, index_t ldb, T* x, index_t ldx,
                         DeviceStream s) const {
  if (N == 1 && W.ld == 1 && ldx == 1 && (L.step >= 0 || L.smoother_block > 1)) {
    // Vectors: the smoother's recurrence run on x itself, x_{k+1} = x_k + c1·(x_k − x_{k−1}) +
    // c2·D⁻¹(b − A·x_k) from x_0 = x (x_1 without the c1 term). x_k − x_0 follows the recurrence
    // from zero on r = b − A·x_0, so this is x + S·r (the branch below) without r, e or the add:
    // one fused kernel a step, 2 launches for degree 2 instead of 5.
    const bool l1 = opt_.smoother == AmgSmoother::L1Jacobi;
    const int d = l1 ? 1 : opt_.smoother_degree;
    const CsrView<T> dA = L.A.A.device_view();
    fused_step(L, dA, T(0), l1 ? T(1) : T(L.coef.c0), b, ldb, x, nullptr, W.u, 1, s);
    T* cur = W.u;
    T* prev = x;
    T* spare = W.v;
    // x_{k+1} overwrites x_{k−1} (read only at its own row), never x_k, which rows gather from;
    // so the steps write u, x, u, x, ... and an even degree ends in x. An odd degree sends steps 2
    // and 3 to the spare array (u, v, x, v, x, ...) and ends in x too: no copy.
    for (int k = 1; k < d; ++k) {
      const T c1 = T(L.coef.c1[std::size_t(k - 1)]), c2 = T(L.coef.c2[std::size_t(k - 1)]);
      T* out = d % 2 == 1 && k <= 2 ? spare : prev;
      fused_step(L, dA, c1, c2, b, ldb, cur, prev, out, 1, s);
      if (out == spare) spare = prev;
      prev = cur;
      cur = out;
    }
    if (cur != x) detail::amg_copy<T, T>(L.n, 1, cur, 1, x, 1, s);  // degree 1
    return;
  }
  residual(L, W, N, b, ldb, x, ldx, s);
  smooth_correction(L, W, N, W.r, W.ld, W.e, W.ld, s);
  detail::amg_add<T>(L.n, N, W.e, W.ld, x, ldx, s);
}

template <class T>
void DeviceAmg<T>::residual(const Level& L, const Work& W, index_t N, const T* b, index_t ldb, const T* x,
                            index_t ldx, DeviceStream s) const {
  if (N == 1 && ldb == 1 && ldx == 1 && W.ld == 1 && L.step >= 0) {
    detail::fused_residual<T>(L.A.A.device_view(), L.step, b, x, W.r, s);  // the fused step's rows and lanes
    return;
  }
  detail::amg_copy<T, T>(L.n, N, b, ldb, W.r, W.ld, s);
  mul(L.A, N, T(-1), x, ldx, T(1), W.r, W.ld, s);  // r = b − A·x
}

template <class T>
void DeviceAmg<T>::keep_choice() {
  auto_choice_.theta_retries = gpu_->info.auto_choice.theta_retries;  // counted by the set-up
  gpu_->info.auto_choice = auto_choice_;
}

template <class T>
detail::AmgCoarseSolver& DeviceAmg<T>::coarse_solver() {
  if (!coarse_) coarse_ = std::make_unique<detail::AmgCoarseSolver>();
  return *coarse_;
}

template <class T>
void DeviceAmg<T>::set_coarse(const std::vector<double>& factor) {
  if (coarse_inv_.size() != factor.size()) coarse_inv_ = DeviceArray<double>(factor.size());
  if (!factor.empty()) coarse_inv_.upload(factor.data(), factor.size());
  invert_coarse();
}

template <class T>
void DeviceAmg<T>::set_coarse(DeviceArray<double>&& factor) {
  coarse_inv_ = std::move(factor);
  invert_coarse();
}

template <class T>
void DeviceAmg<T>::invert_coarse() {
  if (coarse_inv_.size() == 0) {
    correction_ = DeviceArray<double>();
    return;
  }
  coarse_solver().invert(levels_.back().n, coarse_inv_.data());
  const std::size_t L = levels_.size();
  if (!detail::amg_dense_correction(L, L >= 2 ? levels_[L - 2].n : 0)) {
    correction_ = DeviceArray<double>();
    return;
  }
  const Level& F = levels_[L - 2];
  const std::size_t nn = std::size_t(F.n) * std::size_t(F.n);
  if (correction_.size() != nn) correction_ = DeviceArray<double>(nn);
  const CsrView<T> p = F.P.A.device_view();
  coarse_->correction<T>(F.n, levels_.back().n, p.row_ptr, p.col_idx, p.values, coarse_inv_.data(),
                         correction_.data());
}

template <class T>
void DeviceAmg<T>::coarse_solve(std::size_t l, const Work& W, index_t N, const T* b, index_t ldb, T* x,
                                index_t ldx, DeviceStream s) const {
  const Level& L = levels_[l];
  if (coarse_inv_.size() == 0) {  // smoothed: two sweeps from zero, as on the host
    smooth_correction(L, W, N, b, ldb, x, ldx, s);
    sweep(L, W, N, b, ldb, x, ldx, s);
    return;
  }
  // In double, as the host's two triangular solves: x = A_c⁻¹·b.
  detail::amg_dense_apply<T>(L.n, coarse_inv_.data(), N, b, ldb, x, ldx, false, s);
}

template <class T>
void DeviceAmg<T>::vcycle(std::size_t l, const std::vector<Work>& W, index_t N, const T* b, index_t ldb, T* x,
                          index_t ldx, DeviceStream s) const {
  const Level& L = levels_[l];
  const Work& w = W[l];
  if (l + 1 == levels_.size()) {
    coarse_solve(l, w, N, b, ldb, x, ldx, s);
    return;
  }
  const int sweeps = opt_.sweeps;
  const Work& wc = W[l + 1];
  smooth_correction(L, w, N, b, ldb, x, ldx, s);  // pre-smoothing from x = 0: the first sweep is S·b
  for (int k = 1; k < sweeps; ++k) sweep(L, w, N, b, ldb, x, ldx, s);
  residual(L, w, N, b, ldb, x, ldx, s);
  if (l + 2 == levels_.size() && correction_.size() > 0) {
    detail::amg_dense_apply<T>(L.n, correction_.data(), N, w.r, w.ld, x, ldx, true, s);  // x += P·A_c⁻¹·R·r
  } else {
    mul(L.R, N, T(1), w.r, w.ld, T(0), wc.b, wc.ld, s);  // b_c = R·r
    vcycle(l + 1, W, N, wc.b, wc.ld, wc.x, wc.ld, s);
    mul(L.P, N, T(1), wc.x, wc.ld, T(1), x, ldx, s);  // x += P·x_c
  }
  for (int k = 0; k < sweeps; ++k) sweep(L, w, N, b, ldb, x, ldx, s);  // the same sweeps: M⁻¹ symmetric
}

template <class T>
void DeviceAmg<T>::run_vcycle(const GraphKey& key, const std::vector<Work>& W, index_t N, const T* r, index_t ldr,
                              T* z, index_t ldz) const {
  auto cycle = [&](DeviceStream s) { vcycle(0, W, N, r, ldr, z, ldz, s); };
  // A graph replays the device pointers it was captured with: level 0's matrix arrays (the
  // caller's A, which may have been uploaded again) must still be those.
  const CsrView<T> a0 = levels_[0].A.A.device_view();
  if (a0.row_ptr != graph_a0_.row_ptr || a0.col_idx != graph_a0_.col_idx || a0.values != graph_a0_.values) {
    graphs_.clear();
    graph_a0_ = a0;
  }
  if (graphs_.size() >= kMaxGraphs && graphs_.count(key) == 0) graphs_.clear();
  GraphEntry& g = graphs_[key];
  if (g.graph) return g.graph->launch();
  // The first call runs as it is (it makes the SpMM plans of a new width and loads the kernels);
  // the second captures the V-cycle, so a solver's fixed vectors pay the host's launches once.
  if (g.failed || g.calls++ == 0) return cycle(DeviceStream{});
  g.graph = std::make_unique<CapturedCalls>(cycle, 1);
  if (g.graph->ok()) return g.graph->launch();
  g.graph.reset();
  g.failed = true;
  cycle(DeviceStream{});
}

template <class T>
std::size_t DeviceAmg<T>::graphs() const {
  std::size_t n = 0;
  for (const auto& [key, g] : graphs_) n += g.graph != nullptr;
  return n;
}

template <class T>
void DeviceAmg<T>::apply(const T* r, T* z) const {
  if (levels_.empty() || levels_[0].n == 0) return;
  std::vector<Work> W;
  for (std::size_t l = 0; l < levels_.size(); ++l) W.push_back(work(l, levels_[l].vec.data(), 1));
  run_vcycle(GraphKey{r, z, 1, 1, 1}, W, 1, r, 1, z, 1);
}

template <class T>
void DeviceAmg<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "AMG: apply_block with N = ", N, ", ldr = ", ldr, ", ldz = ", ldz);
  if (N == 0 || levels_.empty() || levels_[0].n == 0) return;
  if (N == 1 && ldr == 1 && ldz == 1) return apply(R, Z);
  const index_t ld = work_ld(N);
  if (ld > block_ld_) {  // the widest block so far: grow every level's work block (free first)
    graphs_.clear();     // they write the old work arrays
    std::size_t bytes = 0;
    for (std::size_t l = 0; l < levels_.size(); ++l) {
      levels_[l].block = DeviceArray<T>();
      bytes += std::size_t(levels_[l].n) * std::size_t(ld) * std::size_t(work_arrays(l)) * sizeof(T);
    }
    block_ld_ = 0;
    block_bytes_ = 0;
    try {
      for (std::size_t l = 0; l < levels_.size(); ++l)
        levels_[l].block = DeviceArray<T>(std::size_t(levels_[l].n) * std::size_t(ld) * std::size_t(work_arrays(l)));
    } catch (const DeviceError& e) {
      for (const Level& L : levels_) L.block = DeviceArray<T>();
      KRYSP_THROW(DeviceError, "AMG: the work blocks of apply_block for ", N, " columns (", bytes,
                  " bytes of GPU memory) do not fit: ", e.what());
    }
    block_ld_ = ld;
    block_bytes_ = bytes;
  }
  std::vector<Work> W;
  for (std::size_t l = 0; l < levels_.size(); ++l)
    W.push_back(work(l, levels_[l].block.data(), block_ld_));
  run_vcycle(GraphKey{R, Z, N, ldr, ldz}, W, N, R, ldr, Z, ldz);
}

template class DeviceAmg<double>;
template class DeviceAmg<float>;

}  // namespace krysp
