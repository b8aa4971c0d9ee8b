// Load on the host backend: many consecutive solves through the library API with matrices of
// changing sizes and kinds; every one must converge with a small true residual. The GPU twin
// (tests/gpu/test_soak_gpu.cpp) runs 1,000 solves and checks that device memory returns to its
// starting level.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
/// The i-th matrix of the soak sequence: sizes and kinds change from one solve to the next.
CsrMatrix<double> soak_matrix(int i) {
  const index_t s = index_t(3 + (i * 7) % 23);  // 3..25
  switch (i % 3) {
    case 0: return laplacian_2d(s, s + i % 5);
    case 1: return laplacian_3d(s / 3 + 1, s / 4 + 2, 3);
    default: return laplacian_2d(s * 2 + 1, 2);
  }
}
}  // namespace

TEST_CASE("Soak host: 300 consecutive solves (solve() and CgSolver) on matrices of changing sizes") {
  int converged = 0;
  for (int i = 0; i < 300; ++i) {
    const auto A = soak_matrix(i);
    const auto b = test::random_vector(A.rows());
    SolveOptions o;
    o.backend = Backend::Host;
    o.precond.kind = i % 2 ? PrecondKind::Jacobi : PrecondKind::None;
    std::vector<double> x;
    SolveReport rep;
    if (i % 4 == 3) {
      CgSolver solver(A, o);
      rep = solver.solve(b, x);
    } else {
      rep = solve(A, b, x, o);
    }
    CAPTURE(i);
    CAPTURE(A.rows());
    if (rep.converged() && test::true_relative_residual(A, b, x) <= 1e-7) ++converged;
  }
  CHECK(converged == 300);
}
