// Reproducibility on the host backend: the same input solved twice gives bitwise-identical
// results (CG solution and residual history; LOBPCG eigenvalues and eigenvectors). The GPU twin is
// tests/gpu/test_determinism_gpu.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
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

TEST_CASE("Determinism host: CG and block CG twice on the same input are bitwise identical") {
  for (const char* name : {"bcsstk06", "1138_bus", "power-law"}) {
    CAPTURE(name);
    const auto A = std::string(name) == "power-law" ? test::spd_from(random_power_law(20000, 8, 500, 7))
                                                    : test::load(name);
    const auto b = test::random_vector(A.rows());
    SolveOptions o;
    o.backend = Backend::Host;
    std::vector<double> x1, x2;
    const auto r1 = solve(A, b, x1, o);
    const auto r2 = solve(A, b, x2, o);
    REQUIRE(r1.converged());
    CHECK(r1.iterations == r2.iterations);
    CHECK(bitwise_equal(x1, x2));
    CHECK(bitwise_equal(r1.residual_history, r2.residual_history));

    const auto B = test::random_vector(std::size_t(A.rows()) * 3);
    std::vector<double> X1, X2;
    const auto b1 = solve_block(A, B, 3, X1, o);
    const auto b2 = solve_block(A, B, 3, X2, o);
    REQUIRE(b1.converged());
    CHECK(b1.iterations == b2.iterations);
    CHECK(bitwise_equal(X1, X2));
  }
}

TEST_CASE("Determinism host: LOBPCG twice on the same input gives bitwise-identical eigenpairs") {
  const auto A = laplacian_2d(30, 20);
  EigOptions o;
  o.backend = Backend::Host;
  o.lobpcg.k = 4;
  o.lobpcg.tol = 1e-8;
  const auto e1 = eigensolve(A, nullptr, o);
  const auto e2 = eigensolve(A, nullptr, o);
  REQUIRE(e1.converged());
  CHECK(e1.iterations == e2.iterations);
  CHECK(bitwise_equal(e1.eigenvalues, e2.eigenvalues));
  CHECK(bitwise_equal(e1.eigenvectors, e2.eigenvectors));
  CHECK(bitwise_equal(e1.residual_norms, e2.residual_norms));
}
