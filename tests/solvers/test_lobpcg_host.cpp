// LOBPCG on the host backend against LAPACK's dense eigensolvers (dsyevd / dsygvd on the densified
// matrices), on real SuiteSparse SPD matrices, generated and hand-made spectra (repeated and
// clustered eigenvalues), the generalized problem, constraints, preconditioning, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "krysp/base/error.hpp"
#include "krysp/io/hdf5_result.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/solvers/small_dense.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

std::vector<double> densify(const CsrMatrix<double>& A) {  // column-major
  const index_t n = A.rows();
  std::vector<double> D(std::size_t(n) * n, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      D[std::size_t(A.col_idx()(k)) * n + i] = A.values()(k);
  return D;
}

/// LAPACK eigenvalues (ascending) of A, or of (A, B); cached per matrix name.
const std::vector<double>& reference_eigs(const std::string& key, const CsrMatrix<double>& A,
                                          const CsrMatrix<double>* B = nullptr) {
  static std::map<std::string, std::vector<double>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  // eigenvalues only (jobz 'N'): with the reference BLAS, eigenvectors of n = 2000 are slow
  std::vector<double> w;
  const std::vector<double> DB = B ? densify(*B) : std::vector<double>();
  REQUIRE(lobpcg_detail::dense_eigenvalues(A.rows(), densify(A), B ? &DB : nullptr, w));
  return cache[key] = w;
}

/// These cases test the basis handling, constraints and preconditioners at tol 1e-10 with the
/// normwise test (EigConvergence::Norm), as they were written: the Relative default is below its
/// rounding floor there on bcsstk06 (ε·κ ≈ 1e-9). test_trust_host.cpp tests the default.
EigOptions host_options(index_t k, EigWhich which, double tol, PrecondKind pc) {
  EigOptions o;
  o.backend = Backend::Host;
  o.lobpcg.convergence = EigConvergence::Norm;
  o.lobpcg.k = k;
  o.lobpcg.which = which;
  o.lobpcg.tol = tol;
  o.lobpcg.max_iters = 3000;
  o.precond.kind = pc;
  return o;
}

/// Column j of the row-major n × k eigenvector block.
std::vector<double> column(const EigResult& r, index_t j) {
  std::vector<double> x(r.n);
  for (index_t i = 0; i < r.n; ++i) x[i] = r.eigenvectors[std::size_t(i) * r.k + j];
  return x;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> mul(const CsrMatrix<double>& A, const std::vector<double>& x) {
  std::vector<double> y(x.size());
  A.multiply_host(x.data(), y.data());
  return y;
}

/// ‖A·x_j − λ_j·B·x_j‖ recomputed here, for every pair.
std::vector<double> true_residuals(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigResult& r) {
  std::vector<double> out(r.k);
  for (index_t j = 0; j < r.k; ++j) {
    const auto x = column(r, j);
    auto ax = mul(A, x);
    const auto bx = B ? mul(*B, x) : x;
    for (std::size_t i = 0; i < ax.size(); ++i) ax[i] -= r.eigenvalues[j] * bx[i];
    out[j] = test::norm2(ax);
  }
  return out;
}

/// max |x_iᵀ·B·x_j − δ_ij|
double orthonormality_error(const CsrMatrix<double>* B, const EigResult& r) {
  double e = 0;
  for (index_t i = 0; i < r.k; ++i) {
    const auto xi = column(r, i);
    const auto bxi = B ? mul(*B, xi) : xi;
    for (index_t j = 0; j < r.k; ++j) e = std::max(e, std::abs(dot(column(r, j), bxi) - (i == j)));
  }
  return e;
}

/// Every eigenvalue to `rel` against the reference, residuals from scratch within the tolerance's
/// promise, B-orthonormal eigenvectors, and reported residual norms that match ours.
void check_against_reference(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigResult& r,
                             const std::vector<double>& ref, EigWhich which, double rel, double tol) {
  REQUIRE(r.status == EigStatus::Converged);
  REQUIRE(r.eigenvalues.size() == std::size_t(r.k));
  const double anorm = std::max(std::abs(ref.front()), std::abs(ref.back()));
  const auto res = true_residuals(A, B, r);
  for (index_t j = 0; j < r.k; ++j) {
    CAPTURE(j);
    const double want = which == EigWhich::Smallest ? ref[j] : ref[ref.size() - 1 - j];
    CHECK(std::abs(r.eigenvalues[j] - want) <= rel * std::abs(want));
    // converged: ‖r‖ ≤ tol·(‖A‖ₑ + |λ|‖B‖ₑ)‖x‖ with ‖A‖ₑ ≤ ‖A‖₂ etc.; for B = I that is ≤ 2·tol·‖A‖₂·‖x‖
    if (!B) CHECK(res[j] <= 2 * tol * anorm * test::norm2(column(r, j)) * 1.01);
    CHECK(r.relative_residuals[j] <= tol);
    CHECK(std::abs(res[j] - r.residual_norms[j]) <= 1e-6 * anorm * test::norm2(column(r, j)) + 1e-3 * res[j]);
  }
  CHECK(orthonormality_error(B, r) <= 1e-10);
  CHECK(r.history_rows == r.iterations + 1);
  CHECK(r.history.size() == std::size_t(r.history_rows) * r.k);
}

}  // namespace

TEST_CASE("LOBPCG host: smallest (Jacobi) and largest eigenvalues of SuiteSparse SPD matrices match LAPACK to 1e-8") {
  // cond(A) from 2e2 (gr_30_30) to 8e6 (bcsstk06): smallest pairs need Jacobi to converge in a few
  // hundred iterations; largest ones converge fast unpreconditioned. (Trefethen_2000 is in the GPU
  // suite: its dense reference takes 10 s with the reference LAPACK here.)
  for (const char* name : {"bcsstk01", "bcsstk02", "bcsstk04", "bcsstk05", "bcsstk06", "lund_a", "bcsstm07", "gr_30_30",
                           "662_bus"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto& ref = reference_eigs(name, A);
    const index_t k = std::min<index_t>(8, A.rows() / 6);
    for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
      CAPTURE(to_string(which));
      const auto o = host_options(k, which, 1e-10, which == EigWhich::Smallest ? PrecondKind::Jacobi : PrecondKind::None);
      const auto r = eigensolve(A, nullptr, o);
      CAPTURE(r.iterations);
      check_against_reference(A, nullptr, r, ref, which, 1e-8, 1e-10);
      CHECK(r.block_size == default_block_size(k, A.rows()));
    }
  }
}

TEST_CASE("LOBPCG host: largest pairs through sigma*I - A (spectral flip, Chebyshev) match LAPACK to 1e-8") {
  for (const char* name : {"bcsstk02", "bcsstk05", "lund_a", "gr_30_30", "662_bus"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto& ref = reference_eigs(name, A);
    const index_t k = std::min<index_t>(8, A.rows() / 6);
    auto o = host_options(k, EigWhich::Largest, 1e-10, PrecondKind::Chebyshev);
    o.spectral_flip = true;
    const auto r = eigensolve(A, nullptr, o);
    CAPTURE(r.iterations);
    CHECK(r.preconditioner.find("sigma") != std::string::npos);  // the flip was taken
    check_against_reference(A, nullptr, r, ref, EigWhich::Largest, 1e-8, 1e-10);
  }
  // Without it, the same options give the same eigenvalues (the flip changes the path, not the answer).
  const auto A = test::load("gr_30_30");
  auto o = host_options(6, EigWhich::Largest, 1e-10, PrecondKind::None);
  const auto plain = eigensolve(A, nullptr, o);
  o.spectral_flip = true;
  o.precond.kind = PrecondKind::Chebyshev;
  const auto flipped = eigensolve(A, nullptr, o);
  REQUIRE(plain.eigenvalues.size() == flipped.eigenvalues.size());
  for (std::size_t i = 0; i < plain.eigenvalues.size(); ++i)
    CHECK(flipped.eigenvalues[i] == doctest::Approx(plain.eigenvalues[i]).epsilon(1e-9));
}

TEST_CASE("LOBPCG host: spectral flip on a matrix without stored diagonal (path graph, exact eigenvalues)") {
  // Adjacency of the path on n vertices: eigenvalues 2·cos(πj/(n+1)), j = 1..n; no diagonal entry
  // is stored, so σI − A must insert every one.
  const index_t n = 60;
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i + 1 < n; ++i) {
    I.insert(I.end(), {i, i + 1});
    J.insert(J.end(), {i + 1, i});
    V.insert(V.end(), {1.0, 1.0});
  }
  const auto A = CsrMatrix<double>::from_triplets(n, n, I, J, V);
  auto o = host_options(4, EigWhich::Largest, 1e-10, PrecondKind::Chebyshev);
  o.spectral_flip = true;
  const auto r = eigensolve(A, nullptr, o);
  REQUIRE(r.status == EigStatus::Converged);
  const double pi = std::acos(-1.0);
  for (index_t j = 0; j < 4; ++j) CHECK(r.eigenvalues[j] == doctest::Approx(2 * std::cos(pi * (j + 1) / (n + 1))).epsilon(1e-8));
}

TEST_CASE("LOBPCG host: generalized bcsstk07 x = lambda bcsstm07 x against LAPACK dsygvd") {
  const auto A = test::load("bcsstk07"), B = test::load("bcsstm07");
  const auto& ref = reference_eigs("bcsstk07/bcsstm07", A, &B);
  for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(to_string(which));
    // Jacobi of A for the smallest pairs, of B for the largest (M⁻¹ ≈ B⁻¹: ~70 iterations instead of ~1500)
    auto o = host_options(6, which, 1e-10, PrecondKind::Jacobi);
    o.precond_from_b = which == EigWhich::Largest;
    const auto r = eigensolve(A, &B, o);
    CAPTURE(r.iterations);
    check_against_reference(A, &B, r, ref, which, 1e-8, 1e-10);
    // the backward-error promise, with the true norms (‖A‖₂ ≥ λ_max(A) for SPD A; ‖B‖₂ likewise)
    const auto& wa = reference_eigs("bcsstk07", A);
    const auto& wb = reference_eigs("bcsstm07", B);
    const auto res = true_residuals(A, &B, r);
    for (index_t j = 0; j < r.k; ++j)
      CHECK(res[j] <= 1e-10 * (wa.back() + std::abs(r.eigenvalues[j]) * wb.back()) * test::norm2(column(r, j)) * 1.01);
  }
}

TEST_CASE("LOBPCG host: B = I gives the standard problem's eigenpairs") {
  const auto A = test::load("bcsstk02");
  const auto I = CsrMatrix<double>::from_triplets(A.rows(), A.rows(), [&] {
    std::vector<index_t> v(A.rows());
    for (index_t i = 0; i < A.rows(); ++i) v[i] = i;
    return v;
  }(), [&] {
    std::vector<index_t> v(A.rows());
    for (index_t i = 0; i < A.rows(); ++i) v[i] = i;
    return v;
  }(), std::vector<double>(A.rows(), 1.0));
  const auto o = host_options(5, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
  const auto r1 = eigensolve(A, nullptr, o), r2 = eigensolve(A, &I, o);
  REQUIRE(r1.converged());
  REQUIRE(r2.converged());
  for (index_t j = 0; j < 5; ++j) CHECK(r2.eigenvalues[j] == doctest::Approx(r1.eigenvalues[j]).epsilon(1e-10));
}

TEST_CASE("LOBPCG host: repeated eigenvalues (block-diagonal with 30 equal blocks) and cut multiplets") {
  SUBCASE("every wanted eigenvalue has multiplicity 30") {
    // 30 copies of the 1-D Laplacian of size 10: eigenvalues 2 − 2cos(iπ/11), each 30 times.
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (index_t blk = 0; blk < 30; ++blk)
      for (index_t i = 0; i < 10; ++i) {
        const index_t r = blk * 10 + i;
        I.push_back(r), J.push_back(r), V.push_back(2.0);
        if (i > 0) I.push_back(r), J.push_back(r - 1), V.push_back(-1.0);
        if (i < 9) I.push_back(r), J.push_back(r + 1), V.push_back(-1.0);
      }
    const auto A = CsrMatrix<double>::from_triplets(300, 300, I, J, V);
    for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
      CAPTURE(to_string(which));
      const auto r = eigensolve(A, nullptr, host_options(8, which, 1e-10, PrecondKind::None));
      const double want = which == EigWhich::Smallest ? 2 - 2 * std::cos(M_PI / 11) : 2 - 2 * std::cos(10 * M_PI / 11);
      REQUIRE(r.converged());
      for (index_t j = 0; j < 8; ++j) CHECK(std::abs(r.eigenvalues[j] - want) <= 1e-10 * want);
      CHECK(orthonormality_error(nullptr, r) <= 1e-10);  // 8 orthonormal vectors of the 30-dimensional eigenspace
      for (double res : true_residuals(A, nullptr, r)) CHECK(res <= 1e-9);
    }
  }
  SUBCASE("2-D Laplacian: pairs λ_ij = λ_ji, k = 7 cuts the pair (1,3),(3,1)") {
    const auto A = laplacian_2d(24, 24);
    const auto& ref = reference_eigs("lap2d_24", A);
    for (index_t k : {7, 8}) {
      CAPTURE(k);
      const auto r = eigensolve(A, nullptr, host_options(k, EigWhich::Smallest, 1e-10, PrecondKind::None));
      check_against_reference(A, nullptr, r, ref, EigWhich::Smallest, 1e-8, 1e-10);
      CHECK(std::abs(r.eigenvalues[1] - r.eigenvalues[2]) <= 1e-10);  // a double eigenvalue, found twice
    }
  }
  SUBCASE("a tight cluster (gaps 1e-9) next to distinct values") {
    const index_t n = 200;
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (index_t i = 0; i < n; ++i) {
      const double d = i < 5 ? 1.0 + 1e-9 * i : 2.0 + i;
      I.push_back(i), J.push_back(i), V.push_back(d);
      if (i + 1 < n) {  // weak coupling keeps the eigenvectors from being unit vectors
        I.push_back(i), J.push_back(i + 1), V.push_back(1e-3);
        I.push_back(i + 1), J.push_back(i), V.push_back(1e-3);
      }
    }
    const auto A = CsrMatrix<double>::from_triplets(n, n, I, J, V);
    const auto& ref = reference_eigs("cluster", A);
    const auto r = eigensolve(A, nullptr, host_options(6, EigWhich::Smallest, 1e-12, PrecondKind::None));
    check_against_reference(A, nullptr, r, ref, EigWhich::Smallest, 1e-12, 1e-12);
  }
}

TEST_CASE("LOBPCG host: every fallback of the basis handling, forced, still gives the right pairs") {
  const auto A = test::load("bcsstk05");
  const auto& ref = reference_eigs("bcsstk05", A);
  SUBCASE("SVQB for every orthonormalization pass (Cholesky QR refused)") {
    auto o = host_options(6, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
    o.lobpcg.basis.chol_cond_max = 0;
    const auto r = eigensolve(A, nullptr, o);
    check_against_reference(A, nullptr, r, ref, EigWhich::Smallest, 1e-8, 1e-10);
    CHECK(r.svqb_passes >= 2 * r.iterations);
  }
  SUBCASE("every Rayleigh–Ritz step ill-conditioned: P dropped, then the basis reduced by SVQB") {
    auto o = host_options(6, EigWhich::Largest, 1e-10, PrecondKind::None);
    o.lobpcg.basis.rr_cond_max = 0.5;  // below any condition number
    const auto r = eigensolve(A, nullptr, o);
    check_against_reference(A, nullptr, r, ref, EigWhich::Largest, 1e-8, 1e-10);
    CHECK(r.p_restarts >= r.iterations - 1);  // every step that had a P
    CHECK(r.reduced_rr >= r.iterations);
  }
  SUBCASE("an aggressive drop tolerance (1e-6 of the largest Gram eigenvalue)") {
    auto o = host_options(6, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
    o.lobpcg.basis.drop = 1e-6;
    o.lobpcg.basis.chol_cond_max = 1e4;
    const auto r = eigensolve(A, nullptr, o);
    check_against_reference(A, nullptr, r, ref, EigWhich::Smallest, 1e-8, 1e-10);
  }
}

TEST_CASE("LOBPCG host: k close to n/3 (block size = n/3: the basis is the whole space)") {
  for (const char* name : {"bcsstk02", "lund_a"}) {  // n = 66 and 147
    CAPTURE(name);
    const auto A = test::load(name);
    const index_t k = A.rows() / 3 - 1;
    const auto& ref = reference_eigs(name, A);
    auto o = host_options(k, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
    CHECK(default_block_size(k, A.rows()) == A.rows() / 3);
    const auto r = eigensolve(A, nullptr, o);
    CAPTURE(r.iterations);
    check_against_reference(A, nullptr, r, ref, EigWhich::Smallest, 1e-8, 1e-10);
    o.lobpcg.k = A.rows() / 3;  // b = k = n/3 exactly
    o.lobpcg.which = EigWhich::Largest;
    const auto r2 = eigensolve(A, nullptr, o);
    check_against_reference(A, nullptr, r2, ref, EigWhich::Largest, 1e-8, 1e-10);
  }
}

TEST_CASE("LOBPCG host: a block size too large for n, k < 1 and bad shapes are refused clearly") {
  const auto A = test::load("bcsstk01");  // n = 48
  auto o = host_options(17, EigWhich::Smallest, 1e-8, PrecondKind::None);
  o.lobpcg.block_size = 17;  // given: refused (without it, a dense solve: the next test case)
  try {
    eigensolve(A, nullptr, o);
    FAIL("k = 17 on n = 48 was accepted");
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find("block size 17 is too large for n = 48") != std::string::npos);
    CHECK(m.find("3*b = 51") != std::string::npos);
  }
  o.lobpcg.block_size = 0;
  o.lobpcg.k = 49;
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o), doctest::Contains("k = 49 eigenpairs requested, but A is 48 x 48"),
                       InputError);
  o.lobpcg.k = 4;
  o.lobpcg.block_size = 20;
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o), doctest::Contains("block size 20 is too large for n = 48"), InputError);
  o.lobpcg.block_size = 3;
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o), doctest::Contains("block size 3 is smaller than k = 4"), InputError);
  o.lobpcg.block_size = 0;
  o.lobpcg.k = 0;
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o), doctest::Contains("k must be at least 1"), InputError);
  o.lobpcg.k = 4;
  // 3b + c ≤ n with constraints
  const std::vector<double> y(48 * 40, 1.0);
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o, {}, {48, 40, y.data()}),
                       doctest::Contains("block size 4 is too large for n = 48: the basis [X W P] needs 3*b + "
                                         "constraints = 52 <= n columns (k = 4, constraints = 40)"),
                       InputError);
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o, {}, {47, 2, y.data()}), doctest::Contains("constraint block is 47x2"),
                       InputError);
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o, {47, 2, y.data()}), doctest::Contains("x0 is 47x2"), InputError);
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o, {48, 7, y.data()}), doctest::Contains("x0 has 7 columns"), InputError);
  const auto B = test::load("bcsstk02");
  CHECK_THROWS_WITH_AS(eigensolve(A, &B, o), doctest::Contains("B is 66x66 but A is 48x48"), InputError);
  const auto R = test::load("rajat19");  // non-symmetric
  CHECK_THROWS_WITH_AS(eigensolve(R, nullptr, host_options(2, EigWhich::Largest, 1e-6, PrecondKind::None)),
                       doctest::Contains("A is not symmetric"), InputError);
  const auto rect = CsrMatrix<double>::from_triplets(40, 50, {0}, {0}, {1.0});
  CHECK_THROWS_WITH_AS(eigensolve(rect, nullptr, o), doctest::Contains("A is 40x50, not square"), InputError);
  o.lobpcg.tol = 0;
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, o), doctest::Contains("tol = 0"), InputError);
}

TEST_CASE("LOBPCG host: k pairs that leave no room for the basis (3k > n): the whole spectrum densely") {
  // As SciPy's lobpcg does: where the caller fixed no block size nor constraints, dense LAPACK.
  const auto A = test::load("bcsstk01");  // n = 48
  for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(std::string(to_string(which)));
    auto o = host_options(17, which, 1e-8, PrecondKind::Jacobi);
    o.lobpcg.convergence = EigConvergence::Relative;
    o.backend = Backend::Cuda;  // no device needed: the dense solve runs on the host
    const EigReport r = eigensolve(A, nullptr, o);
    CHECK(r.solver == "dense-dsyevd");
    CHECK(r.backend == "host");
    CHECK(r.verification.rfind("passed", 0) == 0);
    check_against_reference(A, nullptr, r, reference_eigs("bcsstk01", A), which, 1e-10, 1e-8);
    CHECK(orthonormality_error(nullptr, r) <= 1e-12);
  }
  // The spectral flip serves LOBPCG's largest pairs; a dense solve needs none, and takes them as asked.
  {
    auto o = host_options(17, EigWhich::Largest, 1e-8, PrecondKind::Chebyshev);
    o.lobpcg.convergence = EigConvergence::Relative;
    o.spectral_flip = true;
    const EigReport r = eigensolve(A, nullptr, o);
    CHECK(r.solver == "dense-dsyevd");
    check_against_reference(A, nullptr, r, reference_eigs("bcsstk01", A), EigWhich::Largest, 1e-10, 1e-8);
  }
  // A·x = λ·B·x: bcsstk07 with its mass matrix bcsstm07 (n = 420), k = 150: B-orthonormal vectors.
  const auto K7 = test::load("bcsstk07"), M7 = test::load("bcsstm07");
  auto o = host_options(150, EigWhich::Smallest, 1e-6, PrecondKind::None);
  const EigReport g = eigensolve(K7, &M7, o);
  CHECK(g.solver == "dense-dsygvd");
  check_against_reference(K7, &M7, g, reference_eigs("bcsstk07/bcsstm07", K7, &M7), EigWhich::Smallest, 1e-9, 1e-6);
  CHECK(orthonormality_error(&M7, g) <= 1e-10);
  // What LAPACK cannot do is a status, never a wrong answer: an indefinite B (positive diagonal).
  const auto two = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 1, 0}, {0, 1, 0, 1}, {1.0, 1.0, 2.0, 2.0});
  const auto one = CsrMatrix<double>::from_triplets(2, 2, {0, 1}, {0, 1}, {1.0, 3.0});
  o.lobpcg.k = 1;
  CHECK(eigensolve(one, &two, o).status == EigStatus::NotPositiveDefinite);
  // A tolerance below what double precision allows for these pairs: stagnated, not converged.
  o.lobpcg.convergence = EigConvergence::Relative;
  o.lobpcg.tol = 1e-20;
  o.lobpcg.k = 17;
  CHECK(eigensolve(A, nullptr, o).status == EigStatus::Stagnated);
}

TEST_CASE("LOBPCG host: B not positive definite is reported, not iterated on") {
  const index_t n = 200;
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < n; i += 2) {  // 2 × 2 blocks [1 2; 2 1]: eigenvalues 3 and −1, diagonal positive
    for (index_t a = 0; a < 2; ++a)
      for (index_t c = 0; c < 2; ++c) I.push_back(i + a), J.push_back(i + c), V.push_back(a == c ? 1.0 : 2.0);
  }
  const auto B = CsrMatrix<double>::from_triplets(n, n, I, J, V);
  const auto A = laplacian_2d(10, 20);
  const auto r = eigensolve(A, &B, host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::None));
  CHECK(r.status == EigStatus::NotPositiveDefinite);
  // a non-positive diagonal entry is caught before iterating
  std::vector<double> V2 = V;
  V2[0] = -1;
  const auto B2 = CsrMatrix<double>::from_triplets(n, n, I, J, V2);
  CHECK_THROWS_WITH_AS(eigensolve(A, &B2, host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::None)),
                       doctest::Contains("B(1,1) = -1"), InputError);
  // Slightly indefinite (the 2-D Laplacian 30 x 30 minus 0.05 I: λmin −0.03, the diagonal 3.95): LOBPCG's
  // B-Gram matrices stay SPD on its search space, and it converged to pairs of a pencil that has one at
  // −141 it never found. B's Cholesky factor refuses it first.
  const auto L = laplacian_2d(30, 30);
  std::vector<index_t> I3, J3;
  std::vector<double> V3;
  for (index_t i = 0; i < L.rows(); ++i)
    for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k)
      I3.push_back(i), J3.push_back(L.col_idx()(k)), V3.push_back(L.values()(k) - (L.col_idx()(k) == i ? 0.05 : 0.0));
  const auto B3 = CsrMatrix<double>::from_triplets(L.rows(), L.rows(), I3, J3, V3);
  const auto r3 = eigensolve(L, &B3, host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::Jacobi));
  CHECK(r3.status == EigStatus::NotPositiveDefinite);
  CHECK(r3.status_note.find("Cholesky") != std::string::npos);
}

TEST_CASE("LOBPCG host: constraints (deflation): eigenvectors B-orthogonal to Y to 1e-10") {
  SUBCASE("standard: Y = the 3 lowest eigenvectors gives eigenvalues 4..k+3") {
    const auto A = test::load("bcsstk05");
    const auto& ref = reference_eigs("bcsstk05", A);
    const auto o = host_options(3, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
    const auto r0 = eigensolve(A, nullptr, o);
    REQUIRE(r0.converged());
    std::vector<double> Y(std::size_t(A.rows()) * 3);  // column-major
    for (index_t j = 0; j < 3; ++j)
      for (index_t i = 0; i < A.rows(); ++i) Y[std::size_t(j) * A.rows() + i] = r0.eigenvectors[std::size_t(i) * 3 + j];
    auto o2 = host_options(5, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
    const auto r = eigensolve(A, nullptr, o2, {}, {A.rows(), 3, Y.data()});
    REQUIRE(r.converged());
    CHECK(r.constraints == 3);
    for (index_t j = 0; j < 5; ++j) CHECK(std::abs(r.eigenvalues[j] - ref[j + 3]) <= 1e-8 * ref[j + 3]);
    for (index_t j = 0; j < 5; ++j)
      for (index_t c = 0; c < 3; ++c) {
        std::vector<double> y(Y.begin() + std::size_t(c) * A.rows(), Y.begin() + std::size_t(c + 1) * A.rows());
        CHECK(std::abs(dot(y, column(r, j))) <= 1e-10 * test::norm2(y));
      }
  }
  SUBCASE("generalized, random constraints (not orthonormal, one dependent column)") {
    const auto A = test::load("bcsstk07"), B = test::load("bcsstm07");
    const index_t n = A.rows(), c = 4;
    std::vector<double> Y = test::random_vector(std::size_t(n) * c);
    for (index_t i = 0; i < n; ++i) Y[std::size_t(3) * n + i] = Y[i] - 2 * Y[std::size_t(n) + i];  // y3 = y0 − 2y1
    auto o = host_options(4, EigWhich::Largest, 1e-10, PrecondKind::Jacobi);
    o.precond_from_b = true;
    const auto r = eigensolve(A, &B, o, {}, {n, c, Y.data()});
    REQUIRE(r.converged());
    CHECK(r.constraints == 3);  // the dependent column was dropped
    for (index_t j = 0; j < 4; ++j) {
      const auto bx = mul(B, column(r, j));
      for (index_t cc = 0; cc < c; ++cc) {
        std::vector<double> y(Y.begin() + std::size_t(cc) * n, Y.begin() + std::size_t(cc + 1) * n);
        CHECK(std::abs(dot(y, bx)) <= 1e-10 * test::norm2(y) * test::norm2(bx));
      }
    }
    for (double res : true_residuals(A, &B, r)) CHECK(std::isfinite(res));
    // Nearly dependent: y3 = y0 − 2y1 plus a fresh direction 1e-9 of its size. The span is not
    // determined to rounding; LOBPCG would drop that direction and return its eigenvector as a
    // wanted pair. It is refused instead.
    const std::vector<double> fresh = test::random_vector(std::size_t(n));
    const std::vector<double> y3(Y.begin() + std::ptrdiff_t(3) * n, Y.begin() + std::ptrdiff_t(4) * n);
    const double size = 1e-9 * test::norm2(y3) / test::norm2(fresh);
    for (index_t i = 0; i < n; ++i) Y[std::size_t(3) * n + i] += size * fresh[std::size_t(i)];
    CHECK_THROWS_WITH_AS(eigensolve(A, &B, o, {}, {n, c, Y.data()}), doctest::Contains("constraint column 4 is within"),
                         InputError);
  }
}

TEST_CASE("LOBPCG host: Jacobi preconditioning converges in far fewer iterations on an ill-conditioned matrix") {
  const auto A = test::load("lund_a");  // cond 2.8e6, diagonal spanning 5 orders of magnitude
  const auto& ref = reference_eigs("lund_a", A);
  const auto plain = eigensolve(A, nullptr, host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::None));
  const auto jac = eigensolve(A, nullptr, host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::Jacobi));
  REQUIRE(plain.converged());
  REQUIRE(jac.converged());
  MESSAGE("lund_a k=4 tol 1e-8: ", plain.iterations, " iterations without, ", jac.iterations, " with Jacobi");
  CHECK(jac.iterations * 4 < plain.iterations);
  for (index_t j = 0; j < 4; ++j) CHECK(std::abs(jac.eigenvalues[j] - ref[j]) <= 1e-6 * ref[j]);
}

TEST_CASE("LOBPCG host: Chebyshev preconditioning (krysp eigs' default for smallest); fallback when it cannot be set up") {
  for (const char* name : {"494_bus", "bcsstk06", "gr_30_30"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto& ref = reference_eigs(name, A);
    const auto jac = eigensolve(A, nullptr, host_options(8, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi));
    const auto cheb = eigensolve(A, nullptr, host_options(8, EigWhich::Smallest, 1e-10, PrecondKind::Chebyshev));
    MESSAGE(std::string(name), " k=8 tol 1e-10: ", jac.iterations, " iterations with Jacobi, ", cheb.iterations, " with Chebyshev");
    check_against_reference(A, nullptr, cheb, ref, EigWhich::Smallest, 1e-8, 1e-10);
    CHECK(cheb.preconditioner == "chebyshev");
    CHECK(cheb.iterations * 2 < jac.iterations);
  }
  const auto A = test::load("bcsstk05");
  auto o = host_options(4, EigWhich::Smallest, 1e-8, PrecondKind::Chebyshev);
  o.precond.cheb_eig_steps = 1;  // the λmax estimate cannot settle in one Lanczos step
  CHECK_THROWS_AS(eigensolve(A, nullptr, o), Error);
  o.precond_fallback = true;
  const auto r = eigensolve(A, nullptr, o);
  CHECK(r.converged());
  CHECK(r.preconditioner == "jacobi");
  CHECK(r.precond_note.find("chebyshev could not be set up") != std::string::npos);
}

TEST_CASE("LOBPCG host: x0 = exact eigenvectors converges at once; runs are reproducible; progress and history") {
  const auto A = test::load("bcsstk04");
  const auto o = host_options(4, EigWhich::Smallest, 1e-10, PrecondKind::Jacobi);
  const auto r = eigensolve(A, nullptr, o);
  REQUIRE(r.converged());
  const auto again = eigensolve(A, nullptr, o);
  CHECK(again.iterations == r.iterations);
  CHECK(again.eigenvalues == r.eigenvalues);        // same seed, same arithmetic: bitwise
  CHECK(again.eigenvectors == r.eigenvectors);
  std::vector<double> X0(std::size_t(A.rows()) * 4);  // column-major
  for (index_t j = 0; j < 4; ++j)
    for (index_t i = 0; i < A.rows(); ++i) X0[std::size_t(j) * A.rows() + i] = r.eigenvectors[std::size_t(i) * 4 + j];
  auto o2 = o;
  index_t calls = 0, last_iter = -1;
  o2.lobpcg.progress = [&](const EigProgress& p) {
    ++calls;
    CHECK(p.iteration >= last_iter);
    CHECK(p.k == 4);
    last_iter = p.iteration;
  };
  const auto warm = eigensolve(A, nullptr, o2, {A.rows(), 4, X0.data()});
  REQUIRE(warm.converged());
  CHECK(warm.iterations <= 3);
  CHECK(calls >= warm.iterations + 1);
  for (index_t j = 0; j < 4; ++j) CHECK(warm.eigenvalues[j] == doctest::Approx(r.eigenvalues[j]).epsilon(1e-12));
  // the history's last row is the final relative residuals; its first row the starting block's
  CHECK(r.history_rows == r.iterations + 1);
  for (index_t j = 0; j < 4; ++j) CHECK(r.history[std::size_t(r.history_rows - 1) * 4 + j] == r.relative_residuals[j]);
  CHECK(r.history[0] > 1e-6);
}

TEST_CASE("LOBPCG host: not converging within max_iters returns the best pairs with status max-iterations") {
  const auto A = test::load("bcsstk06");
  auto o = host_options(4, EigWhich::Smallest, 1e-12, PrecondKind::None);
  o.lobpcg.max_iters = 5;
  const auto r = eigensolve(A, nullptr, o);
  CHECK(r.status == EigStatus::MaxIterations);
  CHECK(r.iterations == 5);
  CHECK(r.eigenvalues.size() == 4);
  CHECK(r.eigenvectors.size() == std::size_t(A.rows()) * 4);
  CHECK(orthonormality_error(nullptr, r) <= 1e-10);
  const auto res = true_residuals(A, nullptr, r);
  for (index_t j = 0; j < 4; ++j) CHECK(res[j] == doctest::Approx(r.residual_norms[j]).epsilon(1e-6));
}

TEST_CASE("LOBPCG small dense: SVQB drops dependent directions, Cholesky QR handles the well conditioned") {
  using namespace lobpcg_detail;
  // Gram of [v, 2v, w]: rank 2
  const std::vector<double> G = {1, 2, 0, 2, 4, 0, 0, 0, 1};
  const auto oc = ortho_coefficients(3, G);
  CHECK(oc.used_svqb);
  CHECK(oc.rank == 2);
  const auto KtGK = dense::at_b(3, 2, 2, oc.K, dense::a_b(3, 3, 2, G, oc.K));
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 2; ++j) CHECK(KtGK[cm(i, j, 2)] == doctest::Approx(i == j ? 1.0 : 0.0).epsilon(1e-12));
  const std::vector<double> G2 = {4, 1, 1, 3};
  const auto oc2 = ortho_coefficients(2, G2);
  CHECK_FALSE(oc2.used_svqb);
  CHECK(oc2.rank == 2);
  const std::vector<double> Gneg = {1, 0, 0, -1};
  CHECK(ortho_coefficients(2, Gneg).indefinite);
  const std::vector<double> Gnan = {1, NAN, NAN, 1};
  CHECK_FALSE(ortho_coefficients(2, Gnan).finite);
  // Rayleigh–Ritz with a singular B-Gram: reduced path; without reduction, reported
  const std::vector<double> GA = {1, 0, 0, 0, 2, 0, 0, 0, 3}, GB = {1, 1, 0, 1, 1, 0, 0, 0, 1};
  CHECK_FALSE(rayleigh_ritz(3, GA, GB, false, 1, false).ok);
  const auto rs = rayleigh_ritz(3, GA, GB, false, 2, true);
  CHECK(rs.ok);
  CHECK(rs.reduced);
  CHECK(rs.rank == 2);
}

TEST_CASE("krysp eigs: end to end on bcsstk01, HDF5 contents and exit codes") {
  const std::string cli = KRYSP_CLI_PATH;
  if (!std::ifstream(cli).good()) {
    MESSAGE("krysp program not built (", cli, "): skipped");
    return;
  }
  const std::string data = KRYSP_TEST_DATA, out = "lobpcg_cli_test.h5";
  std::remove(out.c_str());
  auto run = [&](const std::string& a) {
    const int rc = std::system((cli + " eigs " + a + " > lobpcg_cli_test.log 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  CHECK(run(data + "/bcsstk01.mtx -k 4 --tol 1e-9 --backend host --out " + out) == 0);
  const auto w = io::read_hdf5_dataset(out, "eigenvalues");
  REQUIRE(w.shape == std::vector<std::size_t>{4});
  const auto A = test::load("bcsstk01");
  const auto& ref = reference_eigs("bcsstk01", A);
  for (index_t j = 0; j < 4; ++j) CHECK(std::abs(w.data[j] - ref[j]) <= 1e-7 * ref[j]);
  CHECK(io::read_hdf5_dataset(out, "eigenvectors").shape == std::vector<std::size_t>{48, 4});
  CHECK(io::read_hdf5_dataset(out, "residual_norms").shape == std::vector<std::size_t>{4});
  const auto h = io::read_hdf5_dataset(out, "history");
  const auto iters = std::get<std::int64_t>(io::read_hdf5_attribute(out, "iterations"));
  CHECK(h.shape == std::vector<std::size_t>{std::size_t(iters) + 1, 4});
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "converged")) == 1);
  CHECK(std::get<std::string>(io::read_hdf5_attribute(out, "which")) == "smallest");
  CHECK(std::get<std::string>(io::read_hdf5_attribute(out, "convergence_test")) == "rel");
  CHECK(std::get<std::string>(io::read_hdf5_attribute(out, "verification")).rfind("passed", 0) == 0);
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "verify_restarts")) == 0);
  CHECK(std::get<std::string>(io::read_hdf5_attribute(out, "backend")) == "host");
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "n")) == 48);
  CHECK(std::get<double>(io::read_hdf5_attribute(out, "tol")) == 1e-9);
  CHECK(std::get<double>(io::read_hdf5_attribute(out, "elapsed_seconds")) >= 0);
  // not converged: exit 1, the best pairs still written
  std::remove(out.c_str());
  CHECK(run(data + "/bcsstk06.mtx -k 4 --tol 1e-14 --max-iters 3 --precond none --backend host --quiet --out " + out) ==
        1);
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "converged")) == 0);
  CHECK(io::read_hdf5_dataset(out, "eigenvalues").shape == std::vector<std::size_t>{4});
  // bad input: exit 2
  CHECK(run(data + "/bcsstk01.mtx -k 49 --backend host") == 2);  // k > n (3k > n alone is solved densely)
  CHECK(run(data + "/bcsstk01.mtx -k 4 --block-size 17 --backend host") == 2);
  CHECK(run(data + "/bcsstk01.mtx -k 0 --backend host") == 2);
  CHECK(run(data + "/bcsstk01.mtx --backend host") == 2);
  CHECK(run(data + "/bcsstk01.mtx -k 2 --which middle --backend host") == 2);
  CHECK(run(data + "/bcsstk01.mtx -k 2 --B " + data + "/bcsstk02.mtx --backend host") == 2);
  CHECK(run(data + "/bcsstk07.mtx -k 3 --B " + data + "/bcsstm07.mtx --which largest --backend host --quiet") == 0);
  // x0 and constraints from dense files; an indefinite B (positive diagonal) is bad input
  const auto L = laplacian_2d(10, 20);
  io::write_matrix_market("lobpcg_cli_A.mtx", L);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < 200; i += 2)
    for (index_t a = 0; a < 2; ++a)
      for (index_t c = 0; c < 2; ++c) I.push_back(i + a), J.push_back(i + c), V.push_back(a == c ? 1.0 : 2.0);
  io::write_matrix_market("lobpcg_cli_Bbad.mtx", CsrMatrix<double>::from_triplets(200, 200, I, J, V));
  const auto X0 = test::random_vector(200 * 2), Y = test::random_vector(200 * 1);
  io::write_dense_matrix_market("lobpcg_cli_x0.mtx", 200, 2, X0.data());
  io::write_dense_matrix_market("lobpcg_cli_y.mtx", 200, 1, Y.data());
  CHECK(run("lobpcg_cli_A.mtx -k 3 --x0 lobpcg_cli_x0.mtx --constraints lobpcg_cli_y.mtx --backend host --quiet") == 0);
  CHECK(run("lobpcg_cli_A.mtx -k 3 --x0 " + data + "/bcsstk01.mtx --backend host --quiet") == 2);  // 48 rows
  CHECK(run("lobpcg_cli_A.mtx -k 3 --B lobpcg_cli_Bbad.mtx --backend host --quiet") == 2);
  std::ifstream log("lobpcg_cli_test.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("not symmetric positive definite") != std::string::npos);
  for (const char* f : {"lobpcg_cli_A.mtx", "lobpcg_cli_Bbad.mtx", "lobpcg_cli_x0.mtx", "lobpcg_cli_y.mtx"})
    std::remove(f);
  std::remove(out.c_str());
  std::remove("lobpcg_cli_test.log");
}
