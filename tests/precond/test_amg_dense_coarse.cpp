// AmgOptions::dense_coarse_rows on the host: at kAmgAuto off there (the GPU's default is
// test_amg_dense_coarse_gpu.cpp); given, it ends the hierarchy at the first level below level 0
// with at most that many rows, never at A itself; out-of-range values are InputErrors; PCG with it
// converges by the residual recomputed outside the solver.
#include <doctest/doctest.h>

#include <string>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("AMG dense_coarse_rows: off by default on the host, given it ends the hierarchy below level 0") {
  const auto A = test::load("1138_bus");  // levels 1138 / 312 / 49 by the host's default
  const HostAmg<double> by_default(A, AmgOptions{});
  AmgOptions off;
  off.dense_coarse_rows = 0;
  const HostAmg<double> deep(A, off);
  REQUIRE(by_default.info().levels.size() == 3);
  CHECK(deep.info().levels.size() == 3);
  CHECK(deep.info().levels.back().rows == by_default.info().levels.back().rows);

  // 1200 rows: level 0 (1138 rows) is still coarsened, level 1 (312) is the coarsest.
  AmgOptions dense;
  dense.dense_coarse_rows = 1200;
  const HostAmg<double> two(A, dense);
  REQUIRE(two.info().levels.size() == 2);
  CHECK(two.info().levels[1].rows == by_default.info().levels[1].rows);
  CHECK(two.info().coarse_direct);
  CHECK(two.info().stop_reason.find("dense coarse solve below level 0") != std::string::npos);
  const auto solved = test::amg_pcg(A, dense);
  CAPTURE(solved.preconditioner);
  CHECK(solved.true_residual <= 1e-8);
  CHECK(solved.preconditioner.find("2 levels") != std::string::npos);

  // Below the level-1 size it changes nothing.
  dense.dense_coarse_rows = 300;
  CHECK(HostAmg<double>(A, dense).info().levels.size() == 3);
}

TEST_CASE("AMG dense_coarse_rows: out of range is an InputError that names it") {
  for (index_t bad : {index_t(-2), kAmgMaxDenseRows + 1}) {
    CAPTURE(bad);
    PrecondOptions o;
    o.kind = PrecondKind::Amg;
    o.amg.dense_coarse_rows = bad;
    CHECK_THROWS_WITH_AS(validate(o), doctest::Contains("amg.dense_coarse_rows"), InputError);
  }
  for (index_t good : {index_t(kAmgAuto), index_t(0), kAmgMaxDenseRows}) {
    PrecondOptions o;
    o.kind = PrecondKind::Amg;
    o.amg.dense_coarse_rows = good;
    CHECK_NOTHROW(validate(o));
  }
}
