#include "krysp/precond/cuda/device_chebyshev.hpp"

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/cuda/device_diagonal.hpp"
#include "krysp/precond/cuda/device_lanczos.hpp"
#include "krysp/precond/cuda/diagonal_kernels.hpp"

namespace krysp {

namespace {
/// Lanczos on S = D^{-1/2}·A·D^{-1/2} on the GPU through A's SpMV plan. Reductions: one partial
/// per block, summed by one thread of the last block to finish, in block order (bitwise the
/// host's std::accumulate of the same partials). α, β and ‖v‖ stay in device memory (ab_ = β_{−1},
/// α_0, β_0, α_1, β_1, ...), where the next kernels read them, so a batch of steps is queued at
/// once and downloaded with one synchronisation. Four launches a step: v = w/β_{j−1} with
/// u = D^{-1/2}·v, the SpMV w = A·u, α (w = D^{-1/2}·w − β·v_prev, then wᵀv) and β (w −= α·v, then
/// ‖w‖), each reduction finished inside its own launch; three on small matrices, where β's last
/// block does the first one's work for the next step.
template <class T>
class DeviceLanczos final : public detail::DeviceLanczosLoop<T> {
  using Loop = detail::DeviceLanczosLoop<T>;
  using Loop::n_, Loop::s_, Loop::v_, Loop::w_, Loop::u_, Loop::partials_;

 public:
  /// s: D^{-1/2} (n entries, taken over); at most max_steps steps are run.
  DeviceLanczos(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, DeviceArray<T> s, int max_steps)
      : Loop(A.rows(), max_steps, std::move(s)), A_(A), plan_(plan) {
    if (max_steps == 0) return;  // λmax given: nothing to run
    // Launch-bound matrices (a step costs its launches, not its bytes): longer batches, fewer waits.
    small_ = std::int64_t(A.nnz()) <= kSmallNnz;
    tail_ = n_ <= detail::kLanczosAdvanceInBlockMax;
  }
  void start() override {
    // ‖v‖; with tail_ also v /= ‖v‖, u = D^{-1/2} v (else step 0's lanczos_advance does that)
    detail::lanczos_start_fused<T>(n_, v_.data(), partials_.data(), this->ticket(), this->norm(),
                                   tail_ ? s_.data() : nullptr, u_.data());
    this->step_ = 0;
  }
  /// Four steps a batch (the first batch: until the settling test may first stop the run): at
  /// most three SpMVs wasted past the stop, against two synchronisations saved per step. On a
  /// small matrix a step is 3-4 launches (~10-15 us) and a wait ~30 us: 8 steps a batch, 16 first
  /// (few runs settle in fewer).
  int batch() const override { return small_ ? 8 : kBatch; }
  int first_batch() const override { return small_ ? 16 : kBatch; }

 private:
  void step(const double* d, double* a, double* b) override {
    // v /= d; u = D^{-1/2} v (with tail_: done by the last launch's last block)
    if (!tail_) detail::lanczos_advance<T>(n_, d, v_.data(), s_.data(), u_.data());
    plan_.apply(A_, T(1), u_.data(), T(0), w_.data());  // w = A u
    detail::lanczos_alpha_fused<T>(n_, s_.data(), w_.data(), d, this->v_prev(), v_.data(), partials_.data(),
                                   this->ticket(), a);
    detail::lanczos_beta_fused<T>(n_, a, v_.data(), w_.data(), partials_.data(), this->ticket(), b,
                                  tail_ ? s_.data() : nullptr, u_.data());
  }
  static constexpr int kBatch = 4;
  static constexpr std::int64_t kSmallNnz = std::int64_t(1) << 20;
  const CsrMatrix<T>& A_;
  const SpmvPlan<T>& plan_;
  bool small_ = false;
  bool tail_ = false;  // n ≤ kLanczosAdvanceInBlockMax: lanczos_advance done by the reductions' last blocks
};

/// Leading dimension of the work blocks: N rounded up to 4 entries, so every row starts on a
/// 16-byte boundary (the SpMM plan's vector loads need it) for fp32 and fp64 alike.
index_t work_ld(index_t N) { return (N + 3) / 4 * 4; }
}  // namespace

template <class T, class S>
DeviceChebyshev<T, S>::DeviceChebyshev(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const PrecondOptions& o,
                                       int step)
    : Preconditioner<T>(A.rows(), MemorySpace::Device), fingerprint_(A.fingerprint()) {
  validate(o);
  KRYSP_REQUIRE(plan.valid() && plan.matches(A), "Chebyshev: the SpMV plan was not made for this matrix");
  KRYSP_REQUIRE(step == kChebyshevStepAuto || step == -1 || step == 0 || step == 2 || step == 4 || step == 8 ||
                    step == 16 || step == 32,
                "Chebyshev: fused step kernel ", step, " is not -2 (auto), -1 (unfused), 0 (stream) or 2..32 lanes");
  // D⁻¹, D^{-1/2} (Lanczos only) and the Gershgorin bound on the GPU: no host pass over A.
  const bool estimate = !(o.cheb_lambda_max > 0);
  DeviceChebyshevScaling<T> scaling = device_chebyshev_scaling(A, estimate);
  const std::size_t n = std::size_t(A.rows());
  const int lanczos_steps = estimate ? o.cheb_eig_steps : 0;
  if constexpr (std::is_same_v<S, T>) {
    dinv_ = std::move(scaling.inv);
    A.device_view();  // make sure the copy below shares A's device mirror instead of making its own
    As_ = A;
    plan_ = plan;
    DeviceLanczos<T> lanczos(A, plan, std::move(scaling.inv_sqrt), lanczos_steps);
    info_ = chebyshev_interval(o, scaling.gershgorin, lanczos, A.rows());
  } else {
    // The fp32 copy first: values converted on the GPU; row offsets and column indices are A's
    // own device arrays (shared, not copied); its SpMV plan copied from A's (same structure: no
    // second row-statistics pass). Lanczos then runs on it in fp32: half the bytes per step of
    // the fp64 run, and λmax needs only ~1e-3 (the settling test) before the 1.1 boost and the
    // Gershgorin cap. The estimate differs from the fp64 host's by fp32 rounding.
    dinv_ = DeviceArray<S>(n);
    detail::convert_values(n, scaling.inv.data(), dinv_.data());
    const CsrView<T> dA = A.device_view();
    values_s_ = DeviceArray<S>(std::size_t(A.nnz()));
    detail::convert_values(std::size_t(A.nnz()), dA.values, values_s_.data());
    As_ = CsrMatrix<S>::with_structure_of(A, values_s_.data());
    As_.promise_notify();  // krysp's own array, written once above and never again: early loads are safe
    plan_ = SpmvPlan<S>(As_, plan);
    DeviceArray<S> inv_sqrt;
    if (estimate) {
      inv_sqrt = DeviceArray<S>(n);
      detail::convert_values(n, scaling.inv_sqrt.data(), inv_sqrt.data());
      scaling.inv_sqrt = DeviceArray<T>();
    }
    DeviceLanczos<S> lanczos(As_, plan_, std::move(inv_sqrt), lanczos_steps);
    info_ = chebyshev_interval(o, scaling.gershgorin, lanczos, A.rows());
  }
  coef_ = chebyshev_coefficients(info_.lambda_min, info_.lambda_max, info_.degree);
  step_ = step != kChebyshevStepAuto ? step : o.cheb_fused ? choose_chebyshev_step(plan.config(), plan.stats()) : -1;
  if (info_.degree > 1) {
    u_ = DeviceArray<S>(n);
    v_ = DeviceArray<S>(n);
    // w holds A·x_k for the unfused step, r converted to S for the fused one (fp32, degree >= 3).
    // apply_block(1, ...) with the unfused path needs it too: kept whenever it may be used.
    w_ = DeviceArray<S>(n);
  }
}

template <class T, class S>
void DeviceChebyshev<T, S>::run_fused(const T* R, index_t ldr, T* Z, index_t ldz) const {
  const index_t n = index_t(dinv_.size());
  const S* dinv = dinv_.data();
  const int d = info_.degree;  // >= 2
  const CsrView<S> dA = As_.device_view();
  S* const u = u_.data();
  S* const spare = v_.data();
  // With an fp32 polynomial and two or more steps, r is converted once (4 bytes a row per step).
  const bool split = !std::is_same_v<S, T> && d >= 3;
  S* const rs = split ? w_.data() : nullptr;
  if (split)
    detail::cheb_first_split<T, S>(n, S(coef_.c0), dinv, R, ldr, u, rs);
  else
    detail::cheb_first<T, S, S>(n, 1, S(coef_.c0), dinv, R, ldr, u, 1);  // x_1
  // The steps, from the residual as given (const T*) or as converted (const S*).
  auto steps = [&](const auto* r, index_t ld_r) {
    using RT = std::remove_const_t<std::remove_pointer_t<decltype(r)>>;
    S* cur = u;
    S* prev = nullptr;  // x_0 = 0
    for (int k = 1; k < d; ++k) {
      const S c1 = S(coef_.c1[k - 1]), c2 = S(coef_.c2[k - 1]);
      if (k == d - 1) {  // the last step writes the result, in T
        detail::cheb_fused_step<RT, S, T>(dA, step_, c1, c2, dinv, r, ld_r, cur, prev, Z, ldz);
      } else {
        // x_{k+1} overwrites x_{k−1} (allowed: each row reads its own entry first), or goes to the
        // spare array while x_0 = 0; never x_k, which every row gathers from.
        S* out = prev ? prev : spare;
        detail::cheb_fused_step<RT, S, S>(dA, step_, c1, c2, dinv, r, ld_r, cur, prev, out, 1);
        prev = cur;
        cur = out;
      }
    }
  };
  if (split)
    steps(rs, 1);
  else
    steps(R, ldr);
}

template <class T, class S>
template <class Mul>
void DeviceChebyshev<T, S>::run(index_t N, const T* R, index_t ldr, T* Z, index_t ldz, S* u, S* v, S* w, index_t ld,
                                Mul spmv) const {
  const index_t n = index_t(dinv_.size());
  const S* dinv = dinv_.data();
  const int d = info_.degree;
  if (d == 1) {
    detail::cheb_first<T, S, T>(n, N, S(coef_.c0), dinv, R, ldr, Z, ldz);
    return;
  }
  detail::cheb_first<T, S, S>(n, N, S(coef_.c0), dinv, R, ldr, u, ld);  // x_1
  S* cur = u;
  S* prev = nullptr;  // x_0 = 0
  for (int k = 1; k < d; ++k) {
    spmv(cur, w);  // w = A·x_k
    const S c1 = S(coef_.c1[k - 1]), c2 = S(coef_.c2[k - 1]);
    if (k == d - 1) {  // the last step writes the result, in T
      detail::cheb_step<T, S, T>(n, N, c1, c2, dinv, R, ldr, w, ld, cur, ld, prev, ld, Z, ldz);
    } else {  // x_{k+1} overwrites x_{k−1} (or goes to the spare array while x_0 = 0)
      S* out = prev ? prev : v;
      detail::cheb_step<T, S, S>(n, N, c1, c2, dinv, R, ldr, w, ld, cur, ld, prev, ld, out, ld);
      prev = cur;
      cur = out;
    }
  }
}

template <class T, class S>
void DeviceChebyshev<T, S>::apply(const T* r, T* z) const {
  if (step_ >= 0 && info_.degree > 1 && dinv_.size() > 0) return run_fused(r, 1, z, 1);
  run(1, r, 1, z, 1, u_.data(), v_.data(), w_.data(), 1,
      [&](const S* x, S* y) { plan_.apply(As_, S(1), x, S(0), y); });
}

template <class T, class S>
void DeviceChebyshev<T, S>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Chebyshev: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  if (N == 0 || dinv_.size() == 0) return;
  if (N == 1 && step_ >= 0 && info_.degree > 1) return run_fused(R, ldr, Z, ldz);
  if (N == 1 || info_.degree == 1) {  // the SpMV path (work vectors), or no product at all
    run(N, R, ldr, Z, ldz, u_.data(), v_.data(), w_.data(), 1,
        [&](const S* x, S* y) { plan_.apply(As_, S(1), x, S(0), y); });
    return;
  }
  auto it = block_plans_.find(N);
  if (it == block_plans_.end()) it = block_plans_.emplace(N, SpmmPlan<S>(As_, N)).first;  // once per width
  const SpmmPlan<S>& plan = it->second;
  const index_t ld = work_ld(N);
  if (ld > block_ld_) {  // the widest block so far: grow the shared work blocks (free first)
    bu_ = DeviceArray<S>();
    bv_ = DeviceArray<S>();
    bw_ = DeviceArray<S>();
    const std::size_t size = dinv_.size() * std::size_t(ld);
    bu_ = DeviceArray<S>(size);
    bv_ = DeviceArray<S>(size);
    bw_ = DeviceArray<S>(size);
    block_ld_ = ld;
  }
  run(N, R, ldr, Z, ldz, bu_.data(), bv_.data(), bw_.data(), ld,
      [&](const S* x, S* y) { plan.apply(As_, S(1), x, ld, S(0), y, ld); });
}

template class DeviceChebyshev<double, double>;
template class DeviceChebyshev<double, float>;
template class DeviceChebyshev<float, float>;

}  // namespace krysp
