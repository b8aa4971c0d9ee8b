// Bad input through the library API (docs/reliability.md, "Bad input"): every case is either a clear
// InputError naming the problem, or a status in the report — never a crash, a hang or garbage.
// The command-line side of the same table is tested by the cli_bad_* tests (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
SolveOptions host(PrecondKind p = PrecondKind::Jacobi) {
  SolveOptions o;
  o.backend = Backend::Host;
  o.precond.kind = p;
  return o;
}
EigOptions host_eigs(index_t k) {
  EigOptions o;
  o.backend = Backend::Host;
  o.lobpcg.k = k;
  return o;
}
// 3 x 3, diagonally dominant, A(1,2) = 1 but A(2,1) = -1.
CsrMatrix<double> nonsymmetric() {
  return CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2, 0, 1}, {0, 1, 2, 1, 0}, {4.0, 4.0, 4.0, 1.0, -1.0});
}
// 1-D Laplacian with Neumann ends (n x n): symmetric positive semi-definite, A*1 = 0.
CsrMatrix<double> neumann_laplacian(index_t n) {
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < n; ++i) {
    I.push_back(i), J.push_back(i), V.push_back(i == 0 || i == n - 1 ? 1.0 : 2.0);
    if (i + 1 < n) {
      I.push_back(i), J.push_back(i + 1), V.push_back(-1.0);
      I.push_back(i + 1), J.push_back(i), V.push_back(-1.0);
    }
  }
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}
bool all_finite(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}
}  // namespace

TEST_CASE("Bad input: a non-square matrix is refused by CG, block CG and LOBPCG") {
  const auto R = CsrMatrix<double>::from_triplets(3, 4, {0, 1, 2}, {0, 1, 2}, {1.0, 1.0, 1.0});
  std::vector<double> b(3, 1.0), x;
  CHECK_THROWS_WITH_AS(solve(R, b, x, host()), doctest::Contains("3x4, not square"), InputError);
  std::vector<double> B(6, 1.0), X;
  CHECK_THROWS_WITH_AS(solve_block(R, B, 2, X, host()), doctest::Contains("3x4, not square"), InputError);
  CHECK_THROWS_WITH_AS(eigensolve(R, nullptr, host_eigs(1)), doctest::Contains("not square"), InputError);
}

TEST_CASE("Bad input: a non-symmetric matrix is refused up front by CG, block CG and LOBPCG, naming the entry") {
  const auto A = nonsymmetric();
  std::vector<double> b = {1.0, 2.0, 3.0}, x;
  const auto msg = doctest::Contains("A is not symmetric: A(1,2) = 1 but A(2,1) = -1");
  CHECK_THROWS_WITH_AS(solve(A, b, x, host()), msg, InputError);
  CHECK_THROWS_WITH_AS(CgSolver(A, host()), msg, InputError);
  std::vector<double> B(6, 1.0), X;
  CHECK_THROWS_WITH_AS(solve_block(A, B, 2, X, host()), msg, InputError);
  CHECK_THROWS_WITH_AS(eigensolve(A, nullptr, host_eigs(1)), msg, InputError);
  // A structurally non-symmetric matrix (the mirror is not stored at all).
  const auto S = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 1}, {0, 1, 0}, {2.0, 2.0, 0.5});
  std::vector<double> b2 = {1.0, 1.0};
  CHECK_THROWS_WITH_AS(solve(S, b2, x, host()), doctest::Contains("A(1,2) is not stored"), InputError);
  // The check can be switched off; then CG runs and reports what it finds (here it converges on
  // this diagonally dominant matrix, which is why the check is on by default).
  auto o = host();
  o.check_symmetry = false;
  x.clear();
  CHECK_NOTHROW(solve(A, b, x, o));
  // Differences at rounding level are not asymmetry.
  const auto N = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 0, 1}, {0, 1, 1, 0}, {2.0, 2.0, 0.5, 0.5 + 1e-15});
  x.clear();
  CHECK(solve(N, b2, x, host()).converged());
}

TEST_CASE("Bad input: indefinite matrices are reported by CG as not SPD; LOBPCG handles them") {
  // [[1, 2], [2, 1]]: eigenvalues 3 and -1; b = (1, -1) gives p'Ap < 0 at once.
  const auto A = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 0, 1}, {0, 1, 1, 0}, {1.0, 1.0, 2.0, 2.0});
  std::vector<double> b = {1.0, -1.0}, x;
  const auto rep = solve(A, b, x, host(PrecondKind::None));
  CHECK(rep.status == SolveStatus::NotSpd);
  CHECK(all_finite(x));
  std::vector<double> B = {1.0, -1.0, 1.0, -1.0}, X;
  const auto brep = solve_block(A, B, 2, X, host(PrecondKind::None));
  CHECK_FALSE(brep.converged());
  CHECK(all_finite(X));
  // A symmetric indefinite matrix is fine for LOBPCG (standard problem): smallest = -1.
  const auto L = laplacian_2d(6, 6);  // shift it to make it indefinite: L - 4 I
  std::vector<double> vals(L.values().data(), L.values().data() + L.nnz());
  for (index_t i = 0; i < L.rows(); ++i)
    for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k)
      if (L.col_idx()(k) == i) vals[k] -= 4.0;
  auto M = CsrMatrix<double>::from_arrays(L.rows(), L.cols(),
                                          {L.row_ptr().data(), L.row_ptr().data() + L.rows() + 1},
                                          {L.col_idx().data(), L.col_idx().data() + L.nnz()}, vals);
  auto eo = host_eigs(2);
  eo.lobpcg.tol = 1e-8;
  const auto er = eigensolve(M, nullptr, eo);
  REQUIRE(er.converged());
  const double pi = std::acos(-1.0);
  const double lmin = 4 * std::pow(std::sin(pi / 14), 2) * 2 - 4;  // 2-D Dirichlet, h = 1/7
  CHECK(er.eigenvalues[0] == doctest::Approx(lmin).epsilon(1e-8));
  CHECK(er.eigenvalues[0] < 0);
}

TEST_CASE("Bad input: singular matrices: consistent b converges, inconsistent b does not, no exception") {
  const auto A = neumann_laplacian(20);
  std::vector<double> xs(20), b(20), x;
  for (int i = 0; i < 20; ++i) xs[i] = std::sin(0.3 * i);
  A.multiply_host(xs.data(), b.data());  // in the range of A
  auto rep = solve(A, b, x, host(PrecondKind::None));
  CHECK(rep.converged());
  CHECK(test::true_relative_residual(A, b, x) <= 1e-7);
  std::vector<double> e1(20, 0.0);
  e1[0] = 1;  // not orthogonal to the null space (1, ..., 1): no solution
  auto o = host(PrecondKind::None);
  o.cg.max_iters = 500;
  x.clear();
  rep = solve(A, e1, x, o);
  CHECK_FALSE(rep.converged());
  CHECK(rep.true_relative_residual > 1e-3);
}

TEST_CASE("Bad input: a zero or missing diagonal entry is an error with Jacobi, naming the entry") {
  // A(2,2) not stored, and a row with no entries at all.
  const auto Z = CsrMatrix<double>::from_triplets(3, 3, {0, 2, 1, 0, 2, 1}, {0, 2, 0, 1, 1, 2},
                                                  {4.0, 4.0, 1.0, 1.0, 1.0, 1.0});
  std::vector<double> b = {1.0, 1.0, 1.0}, x;
  CHECK_THROWS_WITH_AS(solve(Z, b, x, host(PrecondKind::Jacobi)), doctest::Contains("Jacobi: diagonal entry A(2,2) = 0"),
                       InputError);
  const auto E = CsrMatrix<double>::from_triplets(3, 3, {0, 2}, {0, 2}, {4.0, 4.0});
  CHECK_THROWS_WITH_AS(solve(E, b, x, host(PrecondKind::Jacobi)), doctest::Contains("A(2,2) = 0"), InputError);
  const auto Zexplicit = CsrMatrix<double>::from_triplets(2, 2, {0, 1}, {0, 1}, {4.0, 0.0});
  std::vector<double> b2 = {1.0, 1.0};
  CHECK_THROWS_WITH_AS(solve(Zexplicit, b2, x, host(PrecondKind::Jacobi)), doctest::Contains("A(2,2) = 0"),
                       InputError);
  // Without a preconditioner, a row with no entries and b = 0 there converges (x stays 0 there).
  std::vector<double> bz = {4.0, 0.0, 4.0};
  x.clear();
  const auto rep = solve(E, bz, x, host(PrecondKind::None));
  CHECK(rep.converged());
  CHECK(x[1] == 0.0);
}

TEST_CASE("Bad input: NaN or Inf in A, b or x0 is a non-finite status, never an exception or a hang") {
  const auto A = test::load("bcsstk01");
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {std::nan(""), inf, -inf}) {
    CAPTURE(bad);
    auto b = test::random_vector(A.rows());
    b[3] = bad;
    std::vector<double> x;
    CHECK(solve(A, b, x, host()).status == SolveStatus::NonFinite);
    b[3] = 1;
    x.assign(A.rows(), 0.0);
    x[7] = bad;
    const SolveReport rx = solve(A, b, x, host());
    CHECK(rx.status == SolveStatus::NonFinite);
    CHECK_FALSE(std::isfinite(rx.true_relative_residual));  // not a 0 that reads as a perfect answer
    // x0 finite but so large that r0's squares overflow: the same, for CG and each block column.
    std::fill(x.begin(), x.end(), 1e200);
    const SolveReport rh = solve(A, b, x, host());
    CHECK(rh.status == SolveStatus::NonFinite);
    CHECK_FALSE(std::isfinite(rh.true_relative_residual));
    std::vector<double> B2(b), X2(2 * std::size_t(A.rows()), 1e200);
    B2.insert(B2.end(), b.begin(), b.end());
    for (const ColumnResult& c : solve_block(A, B2, 2, X2, host()).columns) {
      CHECK(c.status == SolveStatus::NonFinite);
      CHECK_FALSE(std::isfinite(c.true_relative_residual));
    }
    std::vector<double> vals(A.values().data(), A.values().data() + A.nnz());
    vals[10] = bad;
    auto Abad = CsrMatrix<double>::from_arrays(A.rows(), A.cols(),
                                               {A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1},
                                               {A.col_idx().data(), A.col_idx().data() + A.nnz()}, vals);
    x.clear();
    CHECK(solve(Abad, b, x, host(PrecondKind::None)).status == SolveStatus::NonFinite);
    std::vector<double> B(2 * std::size_t(A.rows()), 1.0), X;
    B[5] = bad;
    const auto brep = solve_block(A, B, 2, X, host());
    CHECK_FALSE(brep.columns[0].converged());
    CHECK(brep.columns[0].status == SolveStatus::NonFinite);
    auto er = eigensolve(Abad, nullptr, host_eigs(1));
    CHECK(er.status == EigStatus::NonFinite);
  }
}

TEST_CASE("Bad input: empty (0 x 0) and 1 x 1 matrices, and rows with no entries") {
  const CsrMatrix<double> E0;  // 0 x 0
  std::vector<double> b, x;
  CHECK_THROWS_WITH_AS(solve(E0, b, x, host()), doctest::Contains("empty"), InputError);
  CHECK_THROWS_WITH_AS(eigensolve(E0, nullptr, host_eigs(1)), doctest::Contains("empty"), InputError);
  const auto One = CsrMatrix<double>::from_triplets(1, 1, {0}, {0}, {4.0});
  std::vector<double> b1 = {2.0};
  x.clear();
  const auto rep = solve(One, b1, x, host());
  CHECK(rep.converged());
  CHECK(x[0] == doctest::Approx(0.5));
  // LOBPCG needs 3b <= n: a 1 x 1 problem is solved densely (dense_eigensolve.hpp); k = 2 is refused.
  const EigReport er = eigensolve(One, nullptr, host_eigs(1));
  CHECK(er.converged());
  CHECK(er.solver == "dense-dsyevd");
  REQUIRE(er.eigenvalues.size() == 1);
  CHECK(er.eigenvalues[0] == 4.0);
  CHECK_THROWS_WITH_AS(eigensolve(One, nullptr, host_eigs(2)),
                       doctest::Contains("k = 2 eigenpairs requested, but A is 1 x 1"), InputError);
}

TEST_CASE("Bad input: no GPU: auto falls back to the host, cuda is a DeviceError") {
  CHECK(resolve_backend(Backend::Host) == Backend::Host);
  if (cuda_device_available()) {
    CHECK(resolve_backend(Backend::Auto) == Backend::Cuda);
    CHECK(resolve_backend(Backend::Cuda) == Backend::Cuda);
  } else {
    CHECK(resolve_backend(Backend::Auto) == Backend::Host);
    CHECK_THROWS_WITH_AS(resolve_backend(Backend::Cuda), doctest::Contains("no CUDA device is available"),
                         DeviceError);
    const auto A = test::load("bcsstk01");
    std::vector<double> b(A.rows(), 1.0), x;
    SolveOptions o;
    o.backend = Backend::Cuda;
    CHECK_THROWS_AS(solve(A, b, x, o), DeviceError);
    CHECK(x.empty());  // nothing was touched
    o.backend = Backend::Auto;
    const auto rep = solve(A, b, x, o);
    CHECK(rep.converged());
    CHECK(rep.backend == "host");
  }
}
