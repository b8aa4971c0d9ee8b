// AmgOptions::dense_coarse_rows on the host: at kAmgAuto off there (the GPU's default, as
// amg::vcycle_on_device resolves it, is test_amg_dense_coarse_gpu.cpp's); given, it ends the
// hierarchy at a level below level 0 of at most that many rows whose coarsening would take two
// levels more, never at A itself; out-of-range values are InputErrors; PCG with it converges by
// the residual recomputed outside the solver.
#include <doctest/doctest.h>

#include <string>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("AMG dense_coarse_rows: off on the host by default; given, it ends where two levels would follow") {
  const auto A = test::load("1138_bus");  // levels 1138 / 312 / 49 by the host's default
  const HostAmg<double> by_default(A, AmgOptions{});
  REQUIRE(by_default.info().levels.size() == 3);
  const index_t n1 = by_default.info().levels[1].rows;  // 312: about 312²/1138 = 85 rows next
  AmgOptions o;
  o.dense_coarse_rows = 1200;  // 85 ≤ coarse_size 200: one level more ends it, as without
  CHECK(HostAmg<double>(A, o).info().levels.size() == 3);

  // coarse_size 20: 1138 / 312 / 49 / 7 without; with 400 dense rows, 85 > 20 rows would follow
  // level 1 and level 1 is the coarsest (level 0, 1138 rows, is coarsened all the same).
  o.coarse_size = 20;
  o.dense_coarse_rows = 0;
  REQUIRE(HostAmg<double>(A, o).info().levels.size() == 4);
  o.dense_coarse_rows = 400;
  const HostAmg<double> two(A, o);
  REQUIRE(two.info().levels.size() == 2);
  CHECK(two.info().levels[1].rows == n1);
  CHECK(two.info().coarse_direct);
  CAPTURE(two.info().stop_reason);
  CHECK(two.info().stop_reason.find("dense coarse solve below level 0") != std::string::npos);
  const auto solved = test::amg_pcg(A, o);
  CAPTURE(solved.preconditioner);
  CHECK(solved.true_residual <= 1e-8);
  CHECK(solved.preconditioner.find("2 levels") != std::string::npos);
  // Under the level-1 size it changes nothing.
  o.dense_coarse_rows = 300;
  CHECK(HostAmg<double>(A, o).info().levels.size() == 4);
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

TEST_CASE("AMG dense_coarse_rows: a V-cycle on the GPU resolves auto to its size, and keeps a given one") {
  AmgOptions o;
  CHECK(amg::vcycle_on_device(o).dense_coarse_rows == kAmgDeviceDenseCoarseRows);
  o.dense_coarse_rows = 0;
  CHECK(amg::vcycle_on_device(o).dense_coarse_rows == 0);
  o.dense_coarse_rows = 300;
  CHECK(amg::vcycle_on_device(o).dense_coarse_rows == 300);
  // Nothing else moves: a host hierarchy given these options is the device default's.
  o.dense_coarse_rows = kAmgAuto;
  o.theta = 0.3;
  o.coarse_size = 50;
  const AmgOptions d = amg::vcycle_on_device(o);
  CHECK(d.theta == 0.3);
  CHECK(d.coarse_size == 50);
  CHECK(d.smoother_degree == kAmgAuto);
}
