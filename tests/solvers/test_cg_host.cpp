// CG on the host backend: convergence on real SuiteSparse SPD matrices, checked by the true
// residual, and every breakdown status.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "krysp/base/error.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/solve.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
SolveOptions host_options(PrecondKind pc = PrecondKind::Jacobi) {
  SolveOptions o;
  o.backend = Backend::Host;
  o.precond.kind = pc;
  o.cg.rtol = 1e-8;
  return o;
}
}  // namespace

TEST_CASE("CG host: reaches rtol 1e-8 on SuiteSparse SPD matrices (true residual)") {
  for (const auto& name : test::spd_matrices()) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto b = test::random_vector(A.rows(), 0.5, 1.5);
    std::vector<double> x;
    const auto rep = solve(A, b, x, host_options());
    CHECK(rep.status == SolveStatus::Converged);
    CHECK(rep.iterations > 0);
    CHECK(rep.true_relative_residual <= 1e-8 * 10);  // recursive residual may drift from the true one a little
    CHECK(test::true_relative_residual(A, b, x) == doctest::Approx(rep.true_relative_residual).epsilon(1e-3));
    CHECK(rep.residual_history.size() == std::size_t(rep.iterations) + 1);
    CHECK(rep.residual_history.back() <= 1e-8 * rep.b_norm);
  }
}

TEST_CASE("CG host: without a preconditioner on a well-conditioned matrix, and from b = A*1") {
  const auto A = test::load("lund_a");  // cond ~ 3e6: plain CG converges
  std::vector<double> ones(A.rows(), 1.0), b(A.rows()), x;
  A.multiply_host(ones.data(), b.data());
  auto o = host_options(PrecondKind::None);
  const auto rep = solve(A, b, x, o);
  REQUIRE(rep.status == SolveStatus::Converged);
  CHECK(rep.true_relative_residual <= 1e-7);
  double err = 0;
  for (double xi : x) err = std::max(err, std::abs(xi - 1.0));
  CHECK(err < 1e-2);
}

TEST_CASE("CG host: the residual history decreases overall and starts at |b| for x0 = 0") {
  const auto A = test::load("bcsstk01");
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  const auto rep = solve(A, b, x, host_options());
  REQUIRE(rep.converged());
  CHECK(rep.residual_history.front() == doctest::Approx(test::norm2(b)).epsilon(1e-12));
  CHECK(rep.residual_history.back() < 1e-8 * rep.residual_history.front());
}

TEST_CASE("CG host: max iterations is a status, not an exception") {
  const auto A = test::load("bcsstk02");
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  auto o = host_options();
  o.cg.max_iters = 3;
  const auto rep = solve(A, b, x, o);
  CHECK(rep.status == SolveStatus::MaxIterations);
  CHECK(rep.iterations == 3);
  CHECK(rep.true_relative_residual > 1e-8);
}

TEST_CASE("CG host: atol stops early") {
  const auto A = test::load("bcsstk01");
  const auto b = test::random_vector(A.rows());
  std::vector<double> x;
  auto o = host_options();
  o.cg.rtol = 0;
  o.cg.atol = 1e-3 * test::norm2(b);
  const auto rep = solve(A, b, x, o);
  CHECK(rep.converged());
  CHECK(rep.residual_history.back() <= o.cg.atol);
  CHECK(rep.relative_residual > 1e-8);
}

TEST_CASE("CG host: an indefinite matrix is reported as not SPD") {
  // diag(1, -1, 2) with b = e2: the first direction has p'Ap = -1
  const auto A = CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2}, {0, 1, 2}, {1.0, -1.0, 2.0});
  std::vector<double> b = {0.0, 1.0, 0.0}, x;
  const auto rep = solve(A, b, x, host_options(PrecondKind::None));
  CHECK(rep.status == SolveStatus::NotSpd);
  for (double xi : x) CHECK(std::isfinite(xi));
}

TEST_CASE("CG host: NaN in b is reported as non-finite") {
  const auto A = test::load("bcsstk01");
  auto b = test::random_vector(A.rows());
  b[5] = std::nan("");
  std::vector<double> x;
  const auto rep = solve(A, b, x, host_options());
  CHECK(rep.status == SolveStatus::NonFinite);
}

TEST_CASE("CG host: NaN in A is reported as non-finite") {
  const auto A = CsrMatrix<double>::from_triplets(3, 3, {0, 1, 2, 0}, {0, 1, 2, 2}, {2.0, 2.0, 2.0, std::nan("")});
  std::vector<double> b = {1.0, 2.0, 3.0}, x;
  const auto rep = solve(A, b, x, host_options(PrecondKind::None));
  CHECK(rep.status == SolveStatus::NonFinite);
}

TEST_CASE("CG host: b = 0 gives x = 0 at once; x0 equal to the solution needs no iteration") {
  const auto A = test::load("bcsstk01");
  std::vector<double> b(A.rows(), 0.0), x = test::random_vector(A.rows());
  auto rep = solve(A, b, x, host_options());
  CHECK(rep.converged());
  CHECK(rep.iterations == 0);
  for (double xi : x) CHECK(xi == 0.0);

  std::vector<double> ones(A.rows(), 1.0), b1(A.rows());
  A.multiply_host(ones.data(), b1.data());
  rep = solve(A, b1, ones, host_options());
  CHECK(rep.converged());
  CHECK(rep.iterations == 0);
}

TEST_CASE("CG host: exact convergence (r = 0) is not mistaken for a breakdown") {
  // Identity: CG converges exactly in one step, then p'Ap = 0 and r'z = 0.
  const auto A = CsrMatrix<double>::from_triplets(4, 4, {0, 1, 2, 3}, {0, 1, 2, 3}, {1.0, 1.0, 1.0, 1.0});
  std::vector<double> b = {1.0, 2.0, 3.0, 4.0}, x;
  auto o = host_options(PrecondKind::None);
  o.cg.rtol = 0;  // only r = 0 satisfies it
  const auto rep = solve(A, b, x, o);
  CHECK(rep.converged());
  for (int i = 0; i < 4; ++i) CHECK(x[i] == doctest::Approx(b[i]));
}

TEST_CASE("CG host: bad input is an InputError naming the problem") {
  const auto A = test::load("bcsstk01");
  std::vector<double> b(10, 1.0), x;
  CHECK_THROWS_WITH_AS(solve(A, b, x, host_options()), doctest::Contains("b has 10 entries"), InputError);
  const auto R = CsrMatrix<double>::from_triplets(2, 3, {0, 1}, {0, 1}, {1.0, 1.0});
  std::vector<double> b2(2, 1.0);
  CHECK_THROWS_WITH_AS(solve(R, b2, x, host_options()), doctest::Contains("not square"), InputError);
  const auto Z = CsrMatrix<double>::from_triplets(2, 2, {0, 1, 0}, {0, 0, 1}, {1.0, 1.0, 1.0});  // A(2,2) missing
  CHECK_THROWS_WITH_AS(solve(Z, b2, x, host_options()), doctest::Contains("A(2,2)"), InputError);
}

TEST_CASE("CG host: the check interval does not change the answer (converged iterate is frozen)") {
  const auto A = test::load("bcsstk05");
  const auto b = test::random_vector(A.rows());
  auto o = host_options();
  std::vector<double> x1, x16;
  o.cg.check_every = 1;
  const auto r1 = solve(A, b, x1, o);
  o.cg.check_every = 16;
  const auto r16 = solve(A, b, x16, o);
  REQUIRE(r1.converged());
  CHECK(r1.iterations == r16.iterations);
  CHECK(x1 == x16);
  CHECK(r1.residual_history == r16.residual_history);
  CHECK(r1.steps == r1.iterations);  // a check after every step: none past convergence
  CHECK(r16.steps >= r16.iterations);
  CHECK(r16.steps < r16.iterations + 16);
  CHECK(r16.checks < r1.checks);
}

TEST_CASE("cg_next_chunk: doubling up to K, then half what the last interval's rate needs") {
  // No rate yet: 1, then twice the last interval, at most K.
  CHECK(cg_next_chunk(0, 16, 0.0, 1.0, 1e-8) == 1);
  CHECK(cg_next_chunk(1, 16, 0.0, 1.0, 1e-8) == 2);
  CHECK(cg_next_chunk(8, 16, 0.0, 1.0, 1e-8) == 16);
  CHECK(cg_next_chunk(16, 16, 0.0, 1.0, 1e-8) == 16);
  CHECK(cg_next_chunk(5, 1, 1.0, 0.5, 1e-8) == 1);  // K = 1: every step
  // 10× a step (1 → 1e-4 in 4); 1e-4 → 3e-7 needs 2.52, so 3 steps: half of that, 2.
  CHECK(cg_next_chunk(4, 16, 1.0, 1e-4, 3e-7) == 2);
  // 10× in 8 steps (1 → 0.1); 0.1 → 2e-3 needs 13.6, so 14 (< 2·16): half, 7.
  CHECK(cg_next_chunk(8, 16, 1.0, 0.1, 2e-3) == 7);
  // Needs 32 or more: the doubling rule alone.
  CHECK(cg_next_chunk(8, 16, 1.0, 0.5, 1e-8) == 16);
  // Growing, flat, already below the tolerance, or NaN: the doubling rule.
  CHECK(cg_next_chunk(4, 16, 1.0, 2.0, 1e-8) == 8);
  CHECK(cg_next_chunk(4, 16, 1.0, 1.0, 1e-8) == 8);
  CHECK(cg_next_chunk(4, 16, 1.0, 1e-9, 1e-8) == 8);
  CHECK(cg_next_chunk(4, 16, std::nan(""), 0.5, 1e-8) == 8);
}

TEST_CASE("CG host: AMG-PCG converging in a few dozen steps runs at most one past convergence") {
  // bcsstk06 from b = ones converges in 35 iterations: fixed intervals of 16 would launch 48 steps
  // (13 frozen, each a product and a V-cycle on the GPU). Deterministic on the host.
  const auto A = test::load("bcsstk06");
  const std::vector<double> b(std::size_t(A.rows()), 1.0);
  std::vector<double> x;
  const auto r = solve(A, b, x, host_options(PrecondKind::Amg));
  REQUIRE(r.converged());
  CHECK(test::true_relative_residual(A, b, x) <= 1e-8);
  CHECK(r.steps >= r.iterations);
  CHECK(r.steps <= r.iterations + 1);
  CHECK(r.checks <= 16);
}

TEST_CASE("residual_rounding_floor: eps * || |A| |x| || / |b|, by hand") {
  const auto A = CsrMatrix<double>::from_triplets(2, 2, {0, 0, 1, 1}, {0, 1, 0, 1}, {2.0, -1.0, -1.0, 2.0});
  const double x[2] = {1.0, -3.0};  // |A|·|x| = (2 + 3, 1 + 6) = (5, 7)
  CHECK(residual_rounding_floor(A, x, 2.0) ==
        doctest::Approx(std::numeric_limits<double>::epsilon() * std::sqrt(74.0) / 2).epsilon(1e-15));
  CHECK(residual_rounding_floor(A, x, 0.0) == 0.0);
  // Converged solves do not report it.
  std::vector<double> b = {1.0, 1.0}, y;
  const SolveReport r = solve(A, b, y, SolveOptions{});
  CHECK(r.converged());
  CHECK(r.residual_floor == 0.0);
}
