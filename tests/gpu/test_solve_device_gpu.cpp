// Solves on vectors in device memory (solve_device, CgSolver::solve_device): the answer checked by
// b − A·x recomputed on the host and against the host-vector solve, warm starts, b and x
// aliased, the host backend through device vectors, and clear errors for bad pointers and sizes.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "gpu/device_vectors.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
SolveOptions on_gpu() {
  SolveOptions o;
  o.backend = Backend::Cuda;
  return o;
}
}  // namespace

TEST_CASE("solve_device: device vectors in, the same answer as the host-vector solve") {
  const auto A = test::load("bcsstk06");
  const index_t n = A.rows();
  const auto b = test::random_vector(std::size_t(n));
  DeviceArray<double> db = test::uploaded(b), dx(b.size());
  SolveOptions o = on_gpu();
  o.cg.rtol = 1e-10;
  const SolveReport r = solve_device(A, db.data(), dx.data(), n, o, true);
  REQUIRE(r.converged());
  const auto x = test::download(dx);
  CHECK(test::true_relative_residual(A, b, x) <= 1e-10 * 1.01);
  std::vector<double> xh;
  const SolveReport rh = solve(A, b, xh, o);  // the same solver on host vectors
  CHECK(rh.iterations == r.iterations);
  CHECK(x == xh);  // same backend, same kernels, same order: bitwise
  CHECK(test::download(db) == b);  // b is only read
}

TEST_CASE("CgSolver::solve_device: warm start, aliased b and x, and the host backend") {
  const auto A = laplacian_2d(40, 40);
  const index_t n = A.rows();
  const auto b = test::random_vector(std::size_t(n));
  DeviceArray<double> db = test::uploaded(b), dx(b.size());
  const SolveOptions o = on_gpu();
  CgSolver solver(A, o);
  const SolveReport cold = solver.solve_device(db.data(), dx.data(), n, true);
  REQUIRE(cold.converged());
  const SolveReport warm = solver.solve_device(db.data(), dx.data(), n);  // x0 = the solution
  CHECK(warm.converged());
  CHECK(warm.iterations <= 1);
  // b and x the same array: x0 = b, the solution overwrites it
  DeviceArray<double> dbx = test::uploaded(b);
  const SolveReport same = solver.solve_device(dbx.data(), dbx.data(), n);
  CHECK(same.converged());
  CHECK(test::true_relative_residual(A, b, test::download(dbx)) <= o.cg.rtol * 1.01);
  // the host backend on device vectors (through host memory)
  SolveOptions oh = o;
  oh.backend = Backend::Host;
  DeviceArray<double> dxh(b.size());
  const SolveReport host = solve_device(A, db.data(), dxh.data(), n, oh, true);
  CHECK(host.converged());
  CHECK(host.backend == std::string("host"));
  CHECK(test::true_relative_residual(A, b, test::download(dxh)) <= o.cg.rtol * 1.01);
}

TEST_CASE("CgSolver::solve_device: a b near 1e-305 or 1e300 and a zero b (squares out of range)") {
  const auto A = laplacian_2d(30, 30);
  const index_t n = A.rows();
  CgSolver solver(A, on_gpu());
  for (int e : {-1010, 1000}) {
    CAPTURE(e);
    std::vector<double> b = test::random_vector(std::size_t(n));
    for (double& v : b) v = std::ldexp(v, e);
    DeviceArray<double> db = test::uploaded(b), dx(b.size());
    const SolveReport r = solver.solve_device(db.data(), dx.data(), n, true);
    CHECK(r.converged());
    std::vector<double> x = test::download(dx), bs = b;  // the residual on b·2^−e, x·2^−e: no squares out of range
    for (double& v : x) v = std::ldexp(v, -e);
    for (double& v : bs) v = std::ldexp(v, -e);
    CHECK(test::true_relative_residual(A, bs, x) <= 1.01e-8);
  }
  const std::size_t un = std::size_t(n);
  DeviceArray<double> zero(un), dx(un);
  zero.zero();
  const SolveReport z = solver.solve_device(zero.data(), dx.data(), n, true);
  CHECK(z.converged());
  for (double v : test::download(dx)) CHECK(v == 0.0);
}

TEST_CASE("solve_device: host pointers, null pointers and wrong sizes are InputErrors naming the argument") {
  const auto A = laplacian_2d(10, 10);
  const index_t n = A.rows();
  std::vector<double> hb(static_cast<std::size_t>(n), 1.0), hx(static_cast<std::size_t>(n));
  DeviceArray<double> db = test::uploaded(hb), dx(hb.size());
  CgSolver solver(A, on_gpu());
  CHECK_THROWS_WITH_AS(solver.solve_device(hb.data(), dx.data(), n), doctest::Contains("solve_device: b = "),
                       InputError);
  CHECK_THROWS_WITH_AS(solver.solve_device(db.data(), hx.data(), n), doctest::Contains("solve_device: x = "),
                       InputError);
  CHECK_THROWS_WITH_AS(solver.solve_device(nullptr, dx.data(), n), doctest::Contains("b is a null pointer"),
                       InputError);
  CHECK_THROWS_WITH_AS(solver.solve_device(db.data(), dx.data(), n - 1), doctest::Contains("99 entries"),
                       InputError);
}
