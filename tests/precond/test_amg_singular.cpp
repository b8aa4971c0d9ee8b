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
  // 60 × 60 with contrast 1e6: the zero pivot lies in a row of coefficient 1, but the rounding
  // of the island's 1e6 entries reaches it: only the matrix-wide noise level n·ε·max a_ii pins it.
  for (const auto& [m, contrast] : {std::pair<index_t, double>{30, 1.0}, {60, 1.0}, {60, 1e6}}) {
    CAPTURE(m);
    CAPTURE(contrast);
    const CsrMatrix<double> A = test::neumann_diffusion_2d(m, contrast);
    test::check_singular_amg(A, AmgOptions{}, std::vector<double>(std::size_t(A.rows()), 1.0), 1,
                             "with 1 pivot zero to rounding pinned", 11, Backend::Host);
  }
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
  // The coarse space holds the translations exactly (unit vectors, b = 3), or all six modes (the
  // coordinates): as many zero pivots.
  test::check_singular_amg(A, AmgOptions{}, R, 6, "with 3 pivots zero to rounding pinned", 3, Backend::Host);
  AmgOptions rigid;
  rigid.coordinates = xyz;
  rigid.coordinate_dim = 3;
  test::check_singular_amg(A, rigid, R, 6, "with 6 pivots zero to rounding pinned", 3, Backend::Host);
}

TEST_CASE("LOBPCG with AMG on a singular Neumann problem: the zero eigenvalue and the next, analytic") {
  test::check_neumann_smallest_pairs(Backend::Host);
}
