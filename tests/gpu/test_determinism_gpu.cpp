// Reproducibility on the GPU (deterministic mode is the default: reductions in a fixed order, no
// floating-point atomics): CG, block CG and LOBPCG run twice on the same input give bitwise-identical
// solutions, eigenvalues and eigenvectors, including on matrices large enough for the
// nonzero-balanced SpMV kernels with carries between blocks. Host twin:
// tests/solvers/test_determinism_host.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}
}  // namespace

TEST_CASE("Determinism GPU: CG and block CG twice on the same input are bitwise identical") {
  std::vector<CsrMatrix<double>> mats = {test::load("bcsstk06"), test::load("1138_bus"),
                                         test::spd_from(random_power_law(200000, 8, 3000, 7)), laplacian_3d(48, 48, 48)};
  for (std::size_t m = 0; m < mats.size(); ++m) {
    CAPTURE(m);
    const auto& A = mats[m];  // m == 2: skewed rows (nonzero-balanced SpMV)
    const auto b = test::random_vector(A.rows());
    for (PrecondKind p : {PrecondKind::Jacobi, PrecondKind::Chebyshev}) {
      SolveOptions o;
      o.backend = Backend::Cuda;
      o.precond.kind = p;
      o.cg.max_iters = 300;  // converged or not, both runs must agree bit for bit
      std::vector<double> x1, x2;
      const auto r1 = solve(A, b, x1, o);
      const auto r2 = solve(A, b, x2, o);
      CHECK(r1.status == r2.status);
      CHECK(r1.iterations == r2.iterations);
      CHECK(bitwise_equal(x1, x2));
      CHECK(bitwise_equal(r1.residual_history, r2.residual_history));
    }
    if (m < 2) {
      SolveOptions o;
      o.backend = Backend::Cuda;
      const auto B = test::random_vector(std::size_t(A.rows()) * 4);
      std::vector<double> X1, X2;
      const auto b1 = solve_block(A, B, 4, X1, o);
      const auto b2 = solve_block(A, B, 4, X2, o);
      CHECK(b1.iterations == b2.iterations);
      CHECK(bitwise_equal(X1, X2));
    }
  }
}

TEST_CASE("Determinism GPU: LOBPCG twice on the same input gives bitwise-identical eigenpairs") {
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    const auto A = which == 0 ? laplacian_2d(120, 100) : test::load("bcsstk06");
    EigOptions o;
    o.backend = Backend::Cuda;
    o.lobpcg.k = 6;
    o.lobpcg.tol = 1e-8;
    o.lobpcg.max_iters = 400;
    o.lobpcg.which = which == 0 ? EigWhich::Smallest : EigWhich::Largest;
    const auto e1 = eigensolve(A, nullptr, o);
    const auto e2 = eigensolve(A, nullptr, o);
    CHECK(e1.status == e2.status);
    CHECK(e1.iterations == e2.iterations);
    CHECK(bitwise_equal(e1.eigenvalues, e2.eigenvalues));
    CHECK(bitwise_equal(e1.eigenvectors, e2.eigenvectors));
    CHECK(bitwise_equal(e1.residual_norms, e2.residual_norms));
  }
}
