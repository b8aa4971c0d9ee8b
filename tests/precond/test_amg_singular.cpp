// AMG-CG on consistent singular (semidefinite) systems: no-flux diffusion, A·1 = 0, b = A·x* in
// A's range. The coarsest matrix is singular to rounding; its zero pivot must be pinned
// (amg::kAmgPinNoise), not inverted (CG broke down) nor refused (the set-up called A
// indefinite). Checked outside the solver: the true residual, and x − x* a constant (the
// solution is unique up to A's null space).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "krysp/solvers/solve.hpp"
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
    // x − x* = shift·1 + error; the error, measured without the shift, is small.
    double shift = 0;
    for (std::size_t i = 0; i < n; ++i) shift += (x[i] - xs[i]) / double(n);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      err += (x[i] - xs[i] - shift) * (x[i] - xs[i] - shift);
      norm += xs[i] * xs[i];
    }
    MESSAGE("error without the constant ", std::sqrt(err / norm), ", ", r.iterations, " iterations");
    CHECK(std::sqrt(err / norm) <= 1e-5);
  }
}
