// LOBPCG on the CUDA backend: its kernels against the host twins, and whole runs against the host
// backend, LAPACK (small matrices) and the analytic spectrum of the Laplacian (large ones).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/solvers/cuda/cuda_eig_ops.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

/// LAPACK's eigenvalues (ascending) of the densified A, or of (A, B).
std::vector<double> dense_eigs(const CsrMatrix<double>& A, const CsrMatrix<double>* B = nullptr) {
  const index_t n = A.rows();
  auto densify = [n](const CsrMatrix<double>& M) {
    std::vector<double> D(std::size_t(n) * n, 0.0);
    for (index_t i = 0; i < n; ++i)
      for (index_t k = M.row_ptr()(i); k < M.row_ptr()(i + 1); ++k)
        D[std::size_t(M.col_idx()(k)) * n + i] = M.values()(k);
    return D;
  };
  std::vector<double> w;
  const std::vector<double> DB = B ? densify(*B) : std::vector<double>();
  REQUIRE(lobpcg_detail::dense_eigenvalues(n, densify(A), B ? &DB : nullptr, w));
  return w;
}

/// The nx·ny eigenvalues of the 5-point Dirichlet Laplacian, ascending.
std::vector<double> laplacian_2d_eigs(index_t nx, index_t ny) {
  std::vector<double> w;
  for (index_t i = 1; i <= nx; ++i)
    for (index_t j = 1; j <= ny; ++j)
      w.push_back(4 - 2 * std::cos(i * M_PI / (nx + 1)) - 2 * std::cos(j * M_PI / (ny + 1)));
  std::sort(w.begin(), w.end());
  return w;
}

/// The normwise test these cases were written for (tolerances down to 1e-10, below the Relative
/// default's rounding floor on bcsstk06); tests/gpu/test_trust_gpu.cpp tests the default.
EigOptions options(Backend be, index_t k, EigWhich which, double tol, PrecondKind pc) {
  EigOptions o;
  o.backend = be;
  o.lobpcg.convergence = EigConvergence::Norm;
  o.lobpcg.k = k;
  o.lobpcg.which = which;
  o.lobpcg.tol = tol;
  o.lobpcg.max_iters = 3000;
  o.precond.kind = pc;
  return o;
}

/// max_j ‖A·x_j − λ_j·B·x_j‖ / ‖x_j‖ recomputed on the host.
double max_true_residual(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigResult& r) {
  double worst = 0;
  std::vector<double> x(r.n), ax(r.n), bx(r.n);
  for (index_t j = 0; j < r.k; ++j) {
    for (index_t i = 0; i < r.n; ++i) x[i] = r.eigenvectors[std::size_t(i) * r.k + j];
    A.multiply_host(x.data(), ax.data());
    if (B) B->multiply_host(x.data(), bx.data());
    else bx = x;
    for (index_t i = 0; i < r.n; ++i) ax[i] -= r.eigenvalues[j] * bx[i];
    worst = std::max(worst, test::norm2(ax) / test::norm2(x));
  }
  return worst;
}

}  // namespace

TEST_CASE("CudaEigOps: residual kernel and random fill match the host twins") {
  const auto A = laplacian_2d(150, 201);  // n = 30150: many blocks of the residual kernel
  const index_t n = A.rows();
  HostEigOps host(A, nullptr, nullptr);
  for (index_t b : {1, 3, 12, 37, 64, 256}) {
    CAPTURE(b);
    CudaEigOps dev(A, nullptr, nullptr, std::max<index_t>(3 * b, 1));
    const index_t ld = b + 3, ldr = b + 1;
    const auto AX = test::random_vector(std::size_t(n) * ld), BX = test::random_vector(std::size_t(n) * ld),
               X = test::random_vector(std::size_t(n) * ld);
    std::vector<double> lambda(b);
    std::vector<index_t> dest(b);
    for (index_t j = 0; j < b; ++j) {
      lambda[j] = 0.5 + j;
      dest[j] = j % 3 == 1 ? -1 : (b - 1 - j);  // scattered, some columns not written
    }
    DeviceArray<double> dAX(AX.size()), dBX(BX.size()), dX(X.size()), dR(std::size_t(n) * ldr);
    dAX.upload(AX.data(), AX.size());
    dBX.upload(BX.data(), BX.size());
    dX.upload(X.data(), X.size());
    std::vector<double> R0(std::size_t(n) * ldr, 7.0);
    dR.upload(R0.data(), R0.size());
    for (bool same : {false, true}) {  // BX == X is the B = I case: X is read once
      CAPTURE(same);
      std::vector<double> rr_h(b), xx_h(b), rr_d(b), xx_d(b), Rh = R0, Rd(R0.size());
      host.residuals(b, AX.data(), ld, same ? X.data() : BX.data(), ld, X.data(), ld, lambda.data(), dest.data(),
                     Rh.data(), ldr, rr_h.data(), xx_h.data());
      dev.residuals(b, dAX.data(), ld, same ? dX.data() : dBX.data(), ld, dX.data(), ld, lambda.data(), dest.data(),
                    dR.data(), ldr, rr_d.data(), xx_d.data());
      dR.download(Rd.data(), Rd.size());
      for (index_t j = 0; j < b; ++j) {
        CHECK(rr_d[j] == doctest::Approx(rr_h[j]).epsilon(1e-12));
        CHECK(xx_d[j] == doctest::Approx(xx_h[j]).epsilon(1e-12));
      }
      double err = 0;
      for (std::size_t i = 0; i < Rh.size(); ++i) err = std::max(err, std::abs(Rh[i] - Rd[i]));
      CHECK(err <= 1e-13 * (b + 1));  // including the untouched 7.0 entries
    }
    DeviceArray<double> dF(std::size_t(n) * ld);
    dF.zero();
    dev.fill_random(b, dF.data() + 1, ld, 12345, 5);
    std::vector<double> Fh(std::size_t(n) * ld, 0.0), Fd(Fh.size());
    host.fill_random(b, Fh.data() + 1, ld, 12345, 5);
    dF.download(Fd.data(), Fd.size());
    CHECK(Fd == Fh);  // bitwise: one definition of the generator
  }
}

TEST_CASE("CudaEigOps: gram_pair is two grams in one wait; back-to-back combines with the same coefficients") {
  const auto A = laplacian_2d(40, 50);
  const index_t n = A.rows(), b = 7, ld = 10;
  HostEigOps host(A, nullptr, nullptr);
  CudaEigOps dev(A, nullptr, nullptr, 3 * b);
  const auto X = test::random_vector(std::size_t(n) * ld), Y = test::random_vector(std::size_t(n) * ld);
  DeviceArray<double> dX(X.size()), dY(Y.size());
  dX.upload(X.data(), X.size());
  dY.upload(Y.data(), Y.size());
  // Different blocks, offsets and shapes in the two products.
  std::vector<double> C1(5 * 7), C2(7 * 3), H1(C1.size()), H2(C2.size());
  dev.gram_pair(dX.data(), ld, 5, dY.data() + 1, ld, 7, C1.data(), dY.data(), ld, 7, dX.data() + 2, ld, 3, C2.data());
  host.gram(X.data(), ld, 5, Y.data() + 1, ld, 7, H1.data());
  host.gram(Y.data(), ld, 7, X.data() + 2, ld, 3, H2.data());
  for (std::size_t k = 0; k < C1.size(); ++k) CHECK(C1[k] == doctest::Approx(H1[k]).epsilon(1e-12).scale(n));
  for (std::size_t k = 0; k < C2.size(); ++k) CHECK(C2[k] == doctest::Approx(H2[k]).epsilon(1e-12).scale(n));

  // The same coefficients several times in a row (X·C, A·X·C, ... in LOBPCG), across a gram (the
  // ring restarts), then new values in the same host array: every combine uses its own values.
  DeviceArray<double> dZ(std::size_t(n) * ld);
  dZ.zero();
  std::vector<double> Zh(std::size_t(n) * ld, 0.0), C(std::size_t(b) * b), G(std::size_t(b) * b);
  for (int rep = 0; rep < 12; ++rep) {
    if (rep % 3 == 0)
      for (std::size_t k = 0; k < C.size(); ++k) C[k] = 0.01 * double((rep * 5 + int(k) * 3) % 13) - 0.06;
    const double* src = rep % 2 ? X.data() : Y.data();
    const double* dsrc = rep % 2 ? dX.data() : dY.data();
    host.combine(src, ld, b, C.data(), 1.0, 0.5, Zh.data(), ld, b);
    dev.combine(dsrc, ld, b, C.data(), 1.0, 0.5, dZ.data(), ld, b);
    if (rep == 4) dev.gram(dX.data(), ld, b, dZ.data(), ld, b, G.data());
  }
  std::vector<double> Zd(Zh.size());
  dZ.download(Zd.data(), Zd.size());
  double err = 0;
  for (std::size_t k = 0; k < Zd.size(); ++k) err = std::max(err, std::abs(Zd[k] - Zh[k]));
  CHECK(err <= 1e-12);
}

TEST_CASE("LOBPCG cuda: SuiteSparse SPD matrices, smallest (Jacobi) and largest, against LAPACK and the host") {
  for (const char* name : {"bcsstk04", "bcsstk06", "lund_a", "gr_30_30", "662_bus", "Trefethen_2000"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto w = dense_eigs(A);
    const index_t k = std::min<index_t>(8, A.rows() / 6);
    for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
      CAPTURE(to_string(which));
      const PrecondKind pc = which == EigWhich::Smallest ? PrecondKind::Jacobi : PrecondKind::None;
      const auto g = eigensolve(A, nullptr, options(Backend::Cuda, k, which, 1e-10, pc));
      const auto h = eigensolve(A, nullptr, options(Backend::Host, k, which, 1e-10, pc));
      CAPTURE(g.iterations);
      CAPTURE(h.iterations);
      REQUIRE(g.status == EigStatus::Converged);
      CHECK(g.backend == "cuda");
      for (index_t j = 0; j < k; ++j) {
        const double want = which == EigWhich::Smallest ? w[j] : w[w.size() - 1 - j];
        CHECK(std::abs(g.eigenvalues[j] - want) <= 1e-8 * std::abs(want));
        CHECK(std::abs(g.eigenvalues[j] - h.eigenvalues[j]) <= 1e-8 * std::abs(want));
      }
      const double anorm = std::max(std::abs(w.front()), std::abs(w.back()));
      CHECK(max_true_residual(A, nullptr, g) <= 2e-10 * anorm * 1.01);
      // same start, same algorithm: the iteration counts differ only through rounding (which can
      // flip an SVQB drop or a soft-locking decision on the ill-conditioned ones)
      MESSAGE(name, " ", to_string(which), ": ", g.iterations, " iterations on the GPU, ", h.iterations, " on the host");
      CHECK(std::abs(g.iterations - h.iterations) <= std::max<index_t>(20, h.iterations / 2));
    }
  }
}

TEST_CASE("LOBPCG cuda: generalized bcsstk07/bcsstm07 with constraints, against dsygvd") {
  const auto A = test::load("bcsstk07"), B = test::load("bcsstm07");
  const auto w = dense_eigs(A, &B);
  for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(to_string(which));
    auto o = options(Backend::Cuda, 6, which, 1e-10, PrecondKind::Jacobi);
    o.precond_from_b = which == EigWhich::Largest;  // Jacobi of B for the largest pairs
    const auto g = eigensolve(A, &B, o);
    REQUIRE(g.status == EigStatus::Converged);
    for (index_t j = 0; j < 6; ++j) {
      const double want = which == EigWhich::Smallest ? w[j] : w[w.size() - 1 - j];
      CHECK(std::abs(g.eigenvalues[j] - want) <= 1e-8 * std::abs(want));
    }
  }
  // Y = the two lowest eigenvectors: the next six eigenvalues, and YᵀB·X = 0
  const auto r0 = eigensolve(A, &B, options(Backend::Cuda, 2, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi));
  REQUIRE(r0.converged());
  const index_t n = A.rows();
  std::vector<double> Y(std::size_t(n) * 2);
  for (index_t j = 0; j < 2; ++j)
    for (index_t i = 0; i < n; ++i) Y[std::size_t(j) * n + i] = r0.eigenvectors[std::size_t(i) * 2 + j];
  const auto g = eigensolve(A, &B, options(Backend::Cuda, 6, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi), {},
                            {n, 2, Y.data()});
  REQUIRE(g.converged());
  for (index_t j = 0; j < 6; ++j) CHECK(std::abs(g.eigenvalues[j] - w[j + 2]) <= 1e-8 * w[j + 2]);
  std::vector<double> x(n), bx(n);
  for (index_t j = 0; j < 6; ++j) {
    for (index_t i = 0; i < n; ++i) x[i] = g.eigenvectors[std::size_t(i) * 6 + j];
    B.multiply_host(x.data(), bx.data());
    for (index_t c = 0; c < 2; ++c) {
      double s = 0, yy = 0;
      for (index_t i = 0; i < n; ++i) {
        s += Y[std::size_t(c) * n + i] * bx[i];
        yy += Y[std::size_t(c) * n + i] * Y[std::size_t(c) * n + i];
      }
      CHECK(std::abs(s) <= 1e-10 * std::sqrt(yy) * test::norm2(bx));
    }
  }
}

TEST_CASE("LOBPCG cuda: Chebyshev-preconditioned smallest pairs match the host and LAPACK") {
  for (const char* name : {"494_bus", "bcsstk06"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto w = dense_eigs(A);
    const auto g = eigensolve(A, nullptr, options(Backend::Cuda, 8, EigWhich::Smallest, 1e-10, PrecondKind::Chebyshev));
    const auto h = eigensolve(A, nullptr, options(Backend::Host, 8, EigWhich::Smallest, 1e-10, PrecondKind::Chebyshev));
    MESSAGE(std::string(name), " chebyshev: ", g.iterations, " iterations on the GPU, ", h.iterations, " on the host");
    REQUIRE(g.converged());
    CHECK(g.preconditioner == "chebyshev");
    for (index_t j = 0; j < 8; ++j) CHECK(std::abs(g.eigenvalues[j] - w[j]) <= 1e-8 * w[j]);
    CHECK(max_true_residual(A, nullptr, g) <= 2e-10 * w.back() * 1.01);
  }
}

TEST_CASE("LOBPCG cuda: 2-D Laplacian 300 x 300 (90,000 rows), k = 8 both ends, against the analytic spectrum") {
  const index_t nx = 300;
  const auto A = laplacian_2d(nx, nx);
  const auto w = laplacian_2d_eigs(nx, nx);
  for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(to_string(which));
    // smallest: Chebyshev (what `krysp eigs` picks), through its SpMM plans per block width
    auto o = options(Backend::Cuda, 8, which, 1e-8,
                     which == EigWhich::Smallest ? PrecondKind::Chebyshev : PrecondKind::None);
    o.lobpcg.max_iters = 5000;
    const auto g = eigensolve(A, nullptr, o);
    CAPTURE(g.iterations);
    MESSAGE("laplace2d 300^2 ", to_string(which), ": ", g.iterations, " iterations, ", g.solve_seconds, " s, ",
            1e3 * g.seconds / std::max<index_t>(1, g.iterations), " ms/iteration");
    REQUIRE(g.converged());
    for (index_t j = 0; j < 8; ++j) {
      const double want = which == EigWhich::Smallest ? w[j] : w[w.size() - 1 - j];
      // ‖r‖ ≤ 1e-8·(‖A‖ₑ+|λ|) ≈ 8e-8 bounds |Δλ| by ‖r‖²/gap ≈ 2e-11 (gap ≥ 3π²/301²): 1e-7 of λ₁ = 2.2e-4
      CHECK(std::abs(g.eigenvalues[j] - want) <= 1e-6 * std::abs(want));
    }
    CHECK(max_true_residual(A, nullptr, g) <= 2e-8 * 8 * 1.01);
  }
}
