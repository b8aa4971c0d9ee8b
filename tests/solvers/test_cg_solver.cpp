// CgSolver: a solver bound to one matrix, reused across solves and value updates.
#include <doctest/doctest.h>

#include "krysp/base/error.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("CgSolver host: repeated solves, warm start, value update keeps the structure") {
  auto A = laplacian_2d(20, 20);
  SolveOptions o;
  o.backend = Backend::Host;
  CgSolver solver(A, o);
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  const auto r1 = solver.solve(b, x);
  REQUIRE(r1.converged());
  const auto r2 = solver.solve(b, x);  // warm start from the solution: nothing left to do
  CHECK(r2.converged());
  CHECK(r2.iterations <= 1);

  // Scale A by 2: same structure; the solution halves.
  std::vector<double> vals(A.values().data(), A.values().data() + A.nnz());
  for (auto& v : vals) v *= 2;
  solver.update_values(vals);
  std::vector<double> y;
  const auto r3 = solver.solve(b, y);
  REQUIRE(r3.converged());
  CHECK(test::true_relative_residual(A, b, y) <= 1e-7);
  for (std::size_t i = 0; i < y.size(); i += 37) CHECK(y[i] == doctest::Approx(x[i] / 2).epsilon(1e-6));
  CHECK_THROWS_AS(solver.update_values(std::vector<double>(3, 1.0)), InputError);
}

TEST_CASE("CgSolver host: value changes made on the matrix (any copy) are seen by the next solve") {
  auto A = laplacian_2d(16, 12);
  SolveOptions o;
  o.backend = Backend::Host;
  CgSolver solver(A, o);
  CHECK(solver.preconditioner_setups() == 1);
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  REQUIRE(solver.solve(b, x).converged());
  REQUIRE(solver.solve(b, x).converged());
  CHECK(solver.preconditioner_setups() == 1);  // nothing changed: nothing set up again

  // set_values on the caller's copy, not through the solver: same storage, same version.
  std::vector<double> vals(A.values().data(), A.values().data() + A.nnz());
  for (index_t i = 0; i < A.rows(); ++i)  // a non-uniform diagonal shift: Jacobi must follow
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      if (A.col_idx()(k) == i) vals[k] += 1 + i % 5;
  A.set_values(vals);
  std::vector<double> y;
  const auto r = solver.solve(b, y);
  REQUIRE(r.converged());
  CHECK(solver.preconditioner_setups() == 2);
  CHECK(test::true_relative_residual(A, b, y) <= 1e-7);
  std::vector<double> z;
  const auto fresh = CgSolver(A, o).solve(b, z);  // a solver made on the new values: same run
  CHECK(fresh.iterations == r.iterations);
  CHECK(z == y);

  // Writes through the host view, declared with notify_values_changed.
  for (index_t k = 0; k < A.nnz(); ++k) A.values()(k) *= 2;
  A.notify_values_changed();
  std::vector<double> w;
  REQUIRE(solver.solve(b, w).converged());
  CHECK(solver.preconditioner_setups() == 3);
  for (std::size_t i = 0; i < w.size(); i += 17) CHECK(w[i] == doctest::Approx(y[i] / 2).epsilon(1e-6));
  CHECK(solver.matrix().values_version() == A.values_version());
}

TEST_CASE("CgSolver host: a structure change needs a new solver; preconditioners refuse another structure") {
  const auto A = laplacian_2d(10, 10);
  const auto B = laplacian_2d(10, 11);
  SolveOptions o;
  o.backend = Backend::Host;
  CgSolver solver(A, o);
  // update_values keeps the structure: a value array for another structure is refused
  CHECK_THROWS_AS(solver.update_values(std::vector<double>(std::size_t(B.nnz()), 1.0)), InputError);
  CHECK(solver.preconditioner_setups() == 1);
  for (PrecondKind pk : {PrecondKind::Jacobi, PrecondKind::Chebyshev, PrecondKind::BlockJacobi}) {
    CAPTURE(to_string(pk));
    PrecondOptions po;
    po.kind = pk;
    const auto M = make_host_preconditioner(A, po);
    REQUIRE(M);
    CHECK(M->matches(A));
    CHECK_FALSE(M->matches(B));
  }
  std::vector<double> x;
  const auto b = test::random_vector(B.rows());
  CHECK_THROWS_AS(solver.solve(b, x), InputError);  // b sized for B: refused, naming the sizes
  CHECK(CgSolver(B, o).solve(b, x).converged());    // the documented way: a new solver
}
