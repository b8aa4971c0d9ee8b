// AMG-CG on consistent singular (semidefinite) systems, b = A·x* in A's range: no-flux diffusion
// (A·1 = 0) and a floating elastic body (six rigid-body modes). The coarsest matrix is singular
// to rounding; its zero pivots must be pinned (amg::kAmgPinNoise), not inverted (CG broke down,
// or took twice the iterations) nor refused (the set-up called A indefinite). Checked outside
// the solver: the true residual, and x − x* in A's null space (the solution is unique up to it).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "krysp/precond/amg.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond_test_util.hpp"

using namespace krysp;

TEST_CASE("AMG-CG on a consistent Neumann problem pins the coarse zero pivot and converges") {
  test::check_neumann_amg(Backend::Host);
}

TEST_CASE("AMG-CG on a floating elastic body: the rigid-body modes' pivots pinned, converged") {
  // No face clamped: A's null space is the six rigid-body modes.
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
  test::check_floating_body_amg(A, xyz, R, Backend::Host);
}

TEST_CASE("LOBPCG with AMG on a singular Neumann problem: the zero eigenvalue and the next, analytic") {
  test::check_neumann_smallest_pairs(Backend::Host);
}
