#include "precond/cuda/device_chebyshev.hpp"

#include <cmath>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "precond/cuda/chebyshev_kernels.hpp"
#include "precond/cuda/scale_rows.hpp"

namespace krysp {

namespace {
/// Lanczos on S = D^{-1/2}·A·D^{-1/2} on the GPU through A's SpMV plan. Reductions: one partial
/// per block, summed in block order by one device thread (deterministic, and the same sum the
/// host's std::accumulate gives). α, β and the start norm stay on the device (scal_), so steps()
/// queues a whole batch of steps and waits once, for its α's and β's.
template <class T>
class DeviceLanczos final : public LanczosOperator {
 public:
  DeviceLanczos(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const std::vector<T>& dinv)
      : A_(A), plan_(plan), n_(A.rows()) {
    std::vector<T> s(dinv.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = T(std::sqrt(double(dinv[i])));
    s_ = DeviceArray<T>(s.size());
    s_.upload(s.data(), s.size());
    for (auto* a : {&v_, &vp_, &w_, &u_}) *a = DeviceArray<T>(s.size());
    partials_ = DeviceArray<double>(std::size_t(detail::lanczos_grid(A.rows())));
    reserve(8);
  }
  void start() override {
    scal_.zero();  // slot 0: β of the step before the first = 0
    detail::lanczos_start(n_, v_.data(), partials_.data());
    detail::lanczos_finish(n_, partials_.data(), false, scal_.data() + 1);  // vᵀv (slot 1 is free until α_0)
    detail::lanczos_scale(n_, scal_.data() + 1, true, v_.data());         // v /= √(vᵀv)
    vp_.zero();
  }
  // One step at a time (batch() > 1, so lanczos_largest uses steps(); these serve other callers).
  double alpha(double beta) override {
    detail::copy_to_device(scal_.data(), &beta, sizeof(double));
    queue_alpha(scal_.data(), scal_.data() + 1);
    return get(1);
  }
  double beta(double alpha) override {
    detail::copy_to_device(scal_.data() + 1, &alpha, sizeof(double));
    queue_beta(scal_.data() + 1, scal_.data() + 2);
    return get(2);
  }
  void advance(double beta) override {
    detail::copy_to_device(scal_.data() + 2, &beta, sizeof(double));
    queue_advance(scal_.data() + 2);
  }
  int batch() const override { return 4; }
  /// Slot 0 holds β of the step before (written by start() or the previous batch: beta_prev);
  /// step j writes α_j to slot 1 + 2j and β_j to slot 2 + 2j.
  void steps(int count, double /*beta_prev: slot 0 already holds it*/, double* alpha, double* beta) override {
    if (count <= 0) return;
    reserve(count);
    for (int j = 0; j < count; ++j) {
      double* a = scal_.data() + 1 + 2 * j;
      queue_alpha(a - 1, a);
      queue_beta(a, a + 1);
      queue_advance(a + 1);
    }
    host_.resize(2 * std::size_t(count));
    detail::copy_to_host(host_.data(), scal_.data() + 1, host_.size() * sizeof(double));  // the one wait
    for (int j = 0; j < count; ++j) {
      alpha[j] = host_[2 * std::size_t(j)];
      beta[j] = host_[2 * std::size_t(j) + 1];
    }
    detail::copy_device_to_device(scal_.data(), scal_.data() + 2 * count, sizeof(double));  // β for the next batch
  }

 private:
  /// Room for batches of `count` steps (slot 0 is kept).
  void reserve(int count) {
    const std::size_t need = 2 * std::size_t(count) + 1;
    if (scal_.size() >= need) return;
    DeviceArray<double> bigger(need);
    if (scal_.size() > 0) detail::copy_device_to_device(bigger.data(), scal_.data(), sizeof(double));
    scal_ = std::move(bigger);
  }
  /// w = S·v − β·v_prev (β = *beta); *alpha = wᵀv.
  void queue_alpha(const double* beta, double* alpha) {
    detail::scale_rows<T>(n_, 1, s_.data(), v_.data(), 1, u_.data(), 1);  // u = D^{-1/2} v
    plan_.apply(A_, T(1), u_.data(), T(0), w_.data());                    // w = A u
    detail::lanczos_alpha(n_, s_.data(), w_.data(), beta, vp_.data(), v_.data(), partials_.data());
    detail::lanczos_finish(n_, partials_.data(), false, alpha);
  }
  /// w −= α·v (α = *alpha); *beta = ‖w‖.
  void queue_beta(const double* alpha, double* beta) {
    detail::lanczos_beta(n_, alpha, v_.data(), w_.data(), partials_.data());
    detail::lanczos_finish(n_, partials_.data(), true, beta);
  }
  /// v_prev = v; v = w/β (β = *beta).
  void queue_advance(const double* beta) {
    detail::lanczos_scale(n_, beta, false, w_.data());
    std::swap(vp_, v_);  // v_prev = v
    std::swap(v_, w_);   // v = w/β; the old v_prev becomes the next w
  }
  double get(int slot) {
    double x = 0;
    detail::copy_to_host(&x, scal_.data() + slot, sizeof(double));  // synchronises
    return x;
  }
  const CsrMatrix<T>& A_;
  const SpmvPlan<T>& plan_;
  index_t n_;
  DeviceArray<T> s_, v_, vp_, w_, u_;
  DeviceArray<double> partials_, scal_;
  std::vector<double> host_;
};

/// Leading dimension of the work blocks: N rounded up to 4 entries, so every row starts on a
/// 16-byte boundary (the SpMM plan's vector loads need it) for fp32 and fp64 alike.
index_t work_ld(index_t N) { return (N + 3) / 4 * 4; }
}  // namespace

template <class T, class S>
DeviceChebyshev<T, S>::DeviceChebyshev(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const PrecondOptions& o)
    : fingerprint_(A.fingerprint()) {
  validate(o);
  KRYSP_REQUIRE(plan.valid() && plan.matches(A), "Chebyshev: the SpMV plan was not made for this matrix");
  double gershgorin = 0;
  const std::vector<T> dinv = chebyshev_scaling(A, &gershgorin);
  {
    DeviceLanczos<T> lanczos(A, plan, dinv);
    info_ = chebyshev_interval(o, gershgorin, lanczos, A.rows());
  }
  coef_ = chebyshev_coefficients(info_.lambda_min, info_.lambda_max, info_.degree);
  const std::size_t n = dinv.size();
  std::vector<S> dinv_s(dinv.begin(), dinv.end());
  dinv_ = DeviceArray<S>(n);
  dinv_.upload(dinv_s.data(), n);
  if constexpr (std::is_same_v<S, T>) {
    A.device_view();  // make sure the copy below shares A's device mirror instead of making its own
    As_ = A;
    plan_ = plan;
  } else {
    As_ = with_value_type<S>(A);
    plan_ = SpmvPlan<S>(As_);
  }
  if (info_.degree > 1) {
    u_ = DeviceArray<S>(n);
    v_ = DeviceArray<S>(n);
    w_ = DeviceArray<S>(n);
  }
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
  run(1, r, 1, z, 1, u_.data(), v_.data(), w_.data(), 1,
      [&](const S* x, S* y) { plan_.apply(As_, S(1), x, S(0), y); });
}

template <class T, class S>
void DeviceChebyshev<T, S>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Chebyshev: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  if (N == 0 || dinv_.size() == 0) return;
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
