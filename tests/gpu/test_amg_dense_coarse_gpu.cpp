// The GPU's larger coarsest level (AmgOptions::dense_coarse_rows at kAmgAuto is
// kAmgDeviceDenseCoarseRows where the V-cycle runs on the GPU): where it ends the hierarchy and
// where not, the host's hierarchy under the same resolved options (levels, and the V-cycle to
// 1e-10), and PCG with it, to a true residual recomputed here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "test_util.hpp"

using namespace krysp;

TEST_CASE("AMG GPU default: a small level that two levels more would follow is the coarsest") {
  // coarse_size 20: their deep hierarchies are 1138/312/49/7, 1074/257/61/5 and 1473/366/45/6
  // rows, and below level 1 about 85, 61 and 91 > 20 rows would follow.
  AmgOptions given;
  given.coarse_size = 20;
  for (const std::string name : {"1138_bus", "bcsstk08", "bcsstm12"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const index_t n = A.rows();
    const SpmvPlan<double> plan(A);
    const DeviceAmg<double> dev(A, plan, given);
    CAPTURE(dev.summary());
    CHECK(dev.set_up_on_gpu());
    AmgOptions deep = given;
    deep.dense_coarse_rows = 0;
    const DeviceAmg<double> dev_deep(A, plan, deep);
    const auto& L = dev.info().levels;
    REQUIRE(L.size() == 2);  // A itself, over coarse_size rows, is coarsened all the same
    REQUIRE(dev_deep.info().levels.size() == 4);
    CHECK(L[1].rows == dev_deep.info().levels[1].rows);
    CHECK(L[1].rows <= kAmgDeviceDenseCoarseRows);
    CHECK(dev.info().coarse_direct);
    CHECK(dev.info().stop_reason.find("dense coarse solve below level 0") != std::string::npos);

    // The host's hierarchy with the options the device resolved: the same levels and V-cycle.
    const HostAmg<double> host(A, amg::vcycle_on_device(given));
    REQUIRE(host.info().levels.size() == L.size());
    for (std::size_t l = 0; l < L.size(); ++l) CHECK(host.info().levels[l].rows == L[l].rows);
    const auto r = test::random_vector(std::size_t(n));
    std::vector<double> zh(std::size_t(n), 0.0), zd(std::size_t(n), 0.0);
    host.apply(r.data(), zh.data());
    DeviceArray<double> dr(static_cast<std::size_t>(n)), dz(static_cast<std::size_t>(n));
    dr.upload(r.data(), r.size());
    dev.apply(dr.data(), dz.data());
    dz.download(zd.data(), zd.size());
    CHECK(test::rel_diff(zd, zh) <= 1e-10);

    // PCG with it on the GPU: converged by the residual recomputed here.
    std::vector<double> b(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) b[std::size_t(i)] = 1 + 0.5 * std::sin(0.37 * i);
    SolveOptions o;
    o.precond.kind = PrecondKind::Amg;
    o.precond.amg = given;
    o.cg.rtol = 1e-8;
    o.cg.max_iters = 2000;
    o.backend = Backend::Cuda;
    std::vector<double> x;
    const auto res = solve(A, b, x, o);
    CAPTURE(res.preconditioner);
    REQUIRE(res.status == SolveStatus::Converged);
    CHECK(test::true_relative_residual(A, b, x) <= 1e-8);
    CHECK(res.preconditioner.find("coarsest " + std::to_string(L.back().rows) + " rows by cholesky") !=
          std::string::npos);
    MESSAGE(name, ": ", res.iterations, " iterations; ", res.preconditioner);
  }
}

TEST_CASE("AMG GPU default: where one level more would end the hierarchy, it is the host's") {
  // Below level 1 about 85, 61 and 91 rows would follow: under coarse_size 200, so the default's
  // hierarchies are the host's default ones, three levels.
  for (const std::string name : {"1138_bus", "bcsstk08", "bcsstm12"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const SpmvPlan<double> plan(A);
    const DeviceAmg<double> dev(A, plan, AmgOptions{});
    const HostAmg<double> host(A, AmgOptions{});
    REQUIRE(dev.info().levels.size() == 3);
    REQUIRE(host.info().levels.size() == 3);
    for (std::size_t l = 0; l < 3; ++l) CHECK(dev.info().levels[l].rows == host.info().levels[l].rows);
  }
}
