#include "krysp/precond/cuda/device_dist_chebyshev.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/cuda/device_diagonal.hpp"
#include "krysp/precond/cuda/device_lanczos.hpp"

namespace krysp {

namespace detail {
double dist_gershgorin(const DistCsrMatrix& A, double local) {
  const auto L = A.local_block().host_view(), O = A.off_block().host_view();
  double g = local;
  for (index_t i = 0; i < A.rows(); ++i) {
    if (O.row_ptr[i + 1] == O.row_ptr[i]) continue;  // the local bound has this row already
    double d = 0, sum = 0;
    for (index_t k = L.row_ptr[i]; k < L.row_ptr[i + 1]; ++k) {
      if (L.col_idx[k] == i) d = L.values[k];
      sum += std::abs(L.values[k]);
    }
    for (index_t k = O.row_ptr[i]; k < O.row_ptr[i + 1]; ++k) sum += std::abs(O.values[k]);
    g = std::max(g, sum / d);  // NaN in g stays NaN (std::max returns its first argument then)
    if (!std::isfinite(sum)) g = sum;
  }
  return g;
}

double dist_gershgorin_max(const Communicator& comm, double mine) {
  double g = 0;
  for (double v : comm.allgather(mine)) {
    if (!std::isfinite(v)) return v;  // chebyshev_interval names it
    g = std::max(g, v);
  }
  return g;
}

void check_dist_chebyshev_diagonal(const DistCsrMatrix& A) {
  const auto L = A.local_block().host_view();
  for (index_t i = 0; i < A.rows(); ++i) {
    double d = 0;
    for (index_t k = L.row_ptr[i]; k < L.row_ptr[i + 1]; ++k)
      if (L.col_idx[k] == i) d = L.values[k];
    if (!(std::isfinite(d) && d > 0))
      KRYSP_THROW(InputError, "Chebyshev: diagonal entry ", d, " in row ", A.first_row() + i + 1, ": ",
                  kChebyshevNeeds);
  }
}
}  // namespace detail

namespace {
/// Lanczos on S = D^{-1/2}·A·D^{-1/2} over the distributed device operator: the steps of
/// DeviceChebyshev's one-GPU Lanczos (chebyshev_kernels.hpp), each reduction summed over the ranks
/// in rank order on the device (Communicator::sum_device) before the next launch reads it. α, β
/// and ‖v‖ stay in device memory (ab_ = β_{−1}, α_0, β_0, α_1, ...), so a batch of steps is queued
/// at once and downloaded with one synchronisation; every rank downloads the same sums, decides
/// the same, and so asks for the same steps (each step is collective: a halo exchange, two sums).
class DeviceDistLanczos final : public detail::DeviceLanczosLoop<double> {
 public:
  /// s: D^{-1/2} on this rank's rows (taken over); at most max_steps steps are run.
  DeviceDistLanczos(const DeviceDistCsr& A, DeviceArray<double> s, int max_steps)
      : DeviceLanczosLoop(A.rows(), max_steps, std::move(s)), A_(A), comm_(A.matrix().comm()),
        first_(A.matrix().first_row()) {
    if (max_steps == 0) return;  // λmax given: nothing to run
    ab_.zero();
  }
  void start() override {
    detail::lanczos_start_partial<double>(n_, first_, v_.data(), partials_.data(), ticket(), norm());
    total_root(norm());
    step_ = 0;
  }
  /// Four steps a batch (the first: the steps before the settling test may stop the run), as the
  /// one-GPU Lanczos on large matrices: at most three products wasted past the stop.
  int batch() const override { return 4; }

 private:
  void step(const double* d, double* a, double* b) override {
    detail::lanczos_advance<double>(n_, d, v_.data(), s_.data(), u_.data());
    A_.apply(u_.data(), w_.data());  // w = A u, halo included
    detail::lanczos_alpha_fused<double>(n_, s_.data(), w_.data(), d, v_prev(), v_.data(), partials_.data(), ticket(),
                                        a);
    comm_.sum_device(a, 1);
    detail::lanczos_beta_partial<double>(n_, a, v_.data(), w_.data(), partials_.data(), ticket(), b);
    total_root(b);
  }
  // *x = sqrt(Σ over ranks of *x), on the device.
  void total_root(double* x) const {
    comm_.sum_device(x, 1);
    detail::lanczos_root(x);
  }

  const DeviceDistCsr& A_;
  const Communicator& comm_;
  std::int64_t first_;
};

/// Leading dimension of the work blocks: N rounded up to 4 entries, so that every row starts on
/// a 16-byte boundary (the SpMM plans' vector loads need it).
index_t work_ld(index_t N) { return (N + 3) / 4 * 4; }

/// D⁻¹, D^{-1/2} (when Lanczos runs) and this rank's Gershgorin bound, on the GPU for the local
/// block; a bad diagonal is rethrown naming its global row (the device's names the local one).
DeviceChebyshevScaling<double> dist_scaling(const DistCsrMatrix& A, bool with_sqrt) {
  DeviceChebyshevScaling<double> s;
  try {
    s = device_chebyshev_scaling(A.local_block(), with_sqrt);
  } catch (const InputError&) {
    detail::check_dist_chebyshev_diagonal(A);  // throws with the global row
    throw;
  }
  s.gershgorin = detail::dist_gershgorin(A, s.gershgorin);
  return s;
}
}  // namespace

DeviceDistChebyshev::DeviceDistChebyshev(const DeviceDistCsr& A, const PrecondOptions& o)
    : Preconditioner<double>(A.rows(), MemorySpace::Device), A_(A) {
  const DistCsrMatrix& D = A.matrix();
  const Communicator& comm = D.comm();
  const bool estimate = !(o.cheb_lambda_max > 0);
  DeviceChebyshevScaling<double> scaling;
  comm.collective([&] {
    validate(o);
    scaling = dist_scaling(D, estimate);
  });
  const double gershgorin = detail::dist_gershgorin_max(comm, scaling.gershgorin);
  dinv_ = std::move(scaling.inv);
  {
    DeviceDistLanczos lanczos(A, std::move(scaling.inv_sqrt), estimate ? o.cheb_eig_steps : 0);
    // Every rank sees the same α, β (summed in rank order), so every rank decides the same: an
    // Error here is thrown on every rank alike.
    const index_t n = index_t(std::min<std::int64_t>(D.global_rows(), kMaxIndex));
    info_ = chebyshev_interval(o, gershgorin, lanczos, n);
  }  // Lanczos' vectors are freed before the polynomial's are made
  coef_ = chebyshev_coefficients(info_.lambda_min, info_.lambda_max, info_.degree);
  if (info_.degree > 1) {
    comm.collective([&] {
      const std::size_t m = std::size_t(A.rows());
      u_ = DeviceArray<double>(m);
      v_ = DeviceArray<double>(m);
      w_ = DeviceArray<double>(m);
    });
  }
}

template <class Mul>
void DeviceDistChebyshev::run(index_t N, const double* R, index_t ldr, double* Z, index_t ldz, double* u, double* v,
                              double* w, index_t ld, Mul product) const {
  const index_t m = index_t(dinv_.size());
  const double* dinv = dinv_.data();
  const int d = info_.degree;
  if (d == 1) {
    detail::cheb_first<double, double, double>(m, N, coef_.c0, dinv, R, ldr, Z, ldz);
    return;
  }
  detail::cheb_first<double, double, double>(m, N, coef_.c0, dinv, R, ldr, u, ld);  // x_1
  double* cur = u;
  double* prev = nullptr;  // x_0 = 0
  for (int k = 1; k < d; ++k) {
    product(cur, w);  // w = A·x_k, halo included (collective)
    const double c1 = coef_.c1[k - 1], c2 = coef_.c2[k - 1];
    // The last step writes the result; the others write x_{k+1} over x_{k−1} (or into the spare
    // array while x_0 = 0), never over x_k, which the next product reads.
    double* out = k == d - 1 ? Z : prev ? prev : v;
    const index_t ldo = k == d - 1 ? ldz : ld;
    detail::cheb_step<double, double, double>(m, N, c1, c2, dinv, R, ldr, w, ld, cur, ld, prev, ld, out, ldo);
    prev = cur;
    cur = out;
  }
}

void DeviceDistChebyshev::apply(const double* r, double* z) const {
  run(1, r, 1, z, 1, u_.data(), v_.data(), w_.data(), 1, [&](const double* x, double* y) { A_.apply(x, y); });
}

void DeviceDistChebyshev::apply_block(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Chebyshev: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  if (N == 0) return;  // N is the same on every rank: no rank is left in a halo exchange
  if (N == 1 || info_.degree == 1) {
    run(N, R, ldr, Z, ldz, u_.data(), v_.data(), w_.data(), 1, [&](const double* x, double* y) { A_.apply(x, y); });
    return;
  }
  const index_t ld = work_ld(N);
  if (ld > block_ld_) {  // the widest block so far: grow the shared work blocks (free first)
    bu_ = DeviceArray<double>();
    bv_ = DeviceArray<double>();
    bw_ = DeviceArray<double>();
    const std::size_t size = dinv_.size() * std::size_t(ld);
    bu_ = DeviceArray<double>(size);
    bv_ = DeviceArray<double>(size);
    bw_ = DeviceArray<double>(size);
    block_ld_ = ld;
  }
  run(N, R, ldr, Z, ldz, bu_.data(), bv_.data(), bw_.data(), ld,
      [&](const double* X, double* Y) { A_.apply_block(N, X, ld, Y, ld); });
}

}  // namespace krysp
