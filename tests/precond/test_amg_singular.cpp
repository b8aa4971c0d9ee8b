// AMG-CG on consistent singular (semidefinite) systems, b = A·x* in A's range: no-flux diffusion
// (A·1 = 0) and a floating elastic body (six rigid-body modes). The coarsest matrix is singular
// to rounding; its zero pivots must be pinned (amg::kAmgPinNoise), not inverted (CG broke down,
// or took twice the iterations) nor refused (the set-up called A indefinite). Checked outside
// the solver: the true residual, and x − x* in A's null space (the solution is unique up to it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "krysp/precond/amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond_test_util.hpp"

using namespace krysp;

TEST_CASE("AMG-CG on a consistent Neumann problem pins the coarse zero pivot and converges") {
  struct Case {
    index_t m;
    double contrast;
  };
  // 60 × 60 with contrast 1e6: the zero pivot lies in a row of coefficient 1, but the rounding
  // of the island's 1e6 entries reaches it: only the matrix-wide noise level n·ε·max a_ii pins it.
  for (const Case c : {Case{30, 1.0}, Case{60, 1.0}, Case{60, 1e6}}) {
    CAPTURE(c.m);
    CAPTURE(c.contrast);
    const CsrMatrix<double> A = test::neumann_diffusion_2d(c.m, c.contrast);
    const std::size_t n = std::size_t(A.rows());
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> xs(n), b(n), x;
    for (double& v : xs) v = u(rng);
    A.multiply_host(xs.data(), b.data());
    SolveOptions o;
    o.backend = Backend::Host;
    o.precond.kind = PrecondKind::Amg;
    o.cg.rtol = 1e-8;
    const SolveReport r = solve(A, b, x, o);
    CHECK(r.status == SolveStatus::Converged);
    CHECK(r.iterations <= 30);
    CHECK(r.preconditioner.find("pivot zero to rounding pinned") != std::string::npos);
    CHECK(test::true_relative_residual(A, b, x) <= 1e-8);
    const double err = test::error_modulo(x, xs, std::vector<double>(n, 1.0), 1);  // x* up to a constant
    MESSAGE("error without the constant ", err, ", ", r.iterations, " iterations");
    CHECK(err <= 1e-5);
  }
}

TEST_CASE("AMG-CG on a floating elastic body: the rigid-body modes' pivots pinned, converged") {
  // No face clamped: A's null space is the six rigid-body modes. b = A·x* is consistent; the
  // answer is x* up to a rigid-body motion, which is projected out before the error is measured.
  std::vector<double> xyz;
  const CsrMatrix<double> A = elasticity_3d(6, 6, 6, 0.3, &xyz, false);
  const std::size_t n = std::size_t(A.rows());
  const std::vector<double> R = amg::rigid_body_modes(xyz, 3, A.rows());  // n × 6, row-major
  for (std::size_t k = 0; k < 6; ++k) {  // the generator's body floats: A·r_k = 0 to rounding
    std::vector<double> r(n), ar(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = R[i * 6 + k];
    A.multiply_host(r.data(), ar.data());
    double most = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) most = std::max(most, std::abs(ar[i])), scale = std::max(scale, std::abs(r[i]));
    CHECK(most <= 1e-12 * scale);
  }
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> xs(n), b(n);
  for (double& v : xs) v = u(rng);
  A.multiply_host(xs.data(), b.data());
  for (const bool modes : {false, true}) {
    CAPTURE(modes);
    SolveOptions o;
    o.backend = Backend::Host;
    o.precond.kind = PrecondKind::Amg;
    if (modes) {
      o.precond.amg.coordinates = xyz;
      o.precond.amg.coordinate_dim = 3;
    }
    o.cg.rtol = 1e-8;
    std::vector<double> x;
    const SolveReport r = solve(A, b, x, o);
    CHECK(r.status == SolveStatus::Converged);
    // The coarse space holds the translations exactly (unit vectors), or all six modes: as many
    // zero pivots.
    CHECK(r.preconditioner.find(modes ? "with 6 pivots zero to rounding pinned" : "with 3 pivots zero to rounding pinned") !=
          std::string::npos);
    CHECK(test::true_relative_residual(A, b, x) <= 1e-8);
    const double err = test::error_modulo(x, xs, R, 6);
    MESSAGE(std::string(modes ? "rigid-body modes" : "unit vectors"), ": ", r.iterations,
            " iterations, error without the rigid motion ", err, "; ", r.preconditioner);
    CHECK(err <= 1e-5);
  }
}

TEST_CASE("LOBPCG with AMG on a singular Neumann problem: the zero eigenvalue and the next, analytic") {
  test::check_neumann_smallest_pairs(Backend::Host);
}
