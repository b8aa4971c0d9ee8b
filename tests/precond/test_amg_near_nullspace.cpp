// AmgOptions::near_nullspace: near-nullspace vectors given through the API. Given as the defaults
// (the constant, the unit vectors of each node, the coordinates' rigid-body modes), they give the
// default hierarchy bit for bit; rigid-body modes given take the iterations the coordinates do; a
// vector that vanishes on part of the domain still gives an SPD preconditioner that converges (true
// residual recomputed here); bad input is an InputError naming what is wrong; `krysp solve
// --near-nullspace V.mtx` reads them from a file.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

/// M's V-cycle applied to a fixed vector.
std::vector<double> applied(const HostAmg<double>& M) {
  const index_t n = M.rows();
  std::vector<double> r(static_cast<std::size_t>(n)), z(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) r[std::size_t(i)] = 1.0 + 0.5 * std::sin(0.37 * double(i));
  M.apply(r.data(), z.data());
  return z;
}

}  // namespace

TEST_CASE("AMG: near-nullspace vectors given as the defaults give the default hierarchy bit for bit") {
  SUBCASE("the constant, one unknown a node") {
    const auto A = laplacian_3d(14, 13, 12);
    AmgOptions d;
    d.coarse_size = 30;
    d.filter = AmgFilter::Off;  // a given near-nullspace turns the auto filter off
    AmgOptions g = d;
    g.near_nullspace.assign(std::size_t(A.rows()), 1.0);
    g.near_nullspace_vectors = 1;
    const HostAmg<double> M(A, d), N(A, g);
    CHECK(M.levels().size() >= 3);
    CHECK(applied(M) == applied(N));
    CHECK(N.options().filter == AmgFilter::Off);
    AmgOptions automatic = g;
    automatic.filter = AmgFilter::Auto;
    CHECK(HostAmg<double>(A, automatic).options().filter == AmgFilter::Off);
  }
  SUBCASE("the unit vectors of bcsstk06's nodes (b 3)") {
    const auto A = test::load("bcsstk06");
    AmgOptions d;
    d.block_size = 3;
    d.coarse_size = 30;
    d.adaptive_cycles = 0;  // the defaults as they are: not augmented
    AmgOptions g = d;
    g.near_nullspace.assign(std::size_t(A.rows()) * 3, 0.0);
    for (index_t i = 0; i < A.rows(); ++i) g.near_nullspace[std::size_t(i) * 3 + std::size_t(i % 3)] = 1.0;
    g.near_nullspace_vectors = 3;
    const HostAmg<double> M(A, d), N(A, g);
    CHECK(M.levels().size() >= 3);
    CHECK(applied(M) == applied(N));
  }
  SUBCASE("the rigid-body modes of elasticity's coordinates, and their iterations") {
    std::vector<double> xyz;
    const auto A = elasticity_3d(10, 10, 10, 0.3, &xyz);
    AmgOptions c;
    c.coordinates = xyz;
    c.coordinate_dim = 3;
    AmgOptions g;
    g.block_size = 3;
    g.near_nullspace = amg::rigid_body_modes(xyz, 3, A.rows());
    g.near_nullspace_vectors = 6;
    const HostAmg<double> M(A, c), N(A, g);
    CHECK(applied(M) == applied(N));
    CHECK(N.levels()[1].block_size == 6);
    const auto [its_modes, res_modes, summary_modes] = test::amg_pcg(A, g);
    AmgOptions unit;
    unit.block_size = 3;
    unit.adaptive_cycles = 0;
    const auto [its_unit, res_unit, summary_unit] = test::amg_pcg(A, unit);
    MESSAGE("elasticity_3d 10^3: rigid-body modes given ", its_modes, " iterations, unit vectors ", its_unit);
    CHECK(res_modes <= 1e-8);
    CHECK(res_unit <= 1e-8);
    CHECK(double(its_modes) <= 0.7 * double(its_unit));
  }
}

TEST_CASE("AMG: a given vector that vanishes on part of the domain still gives an SPD M that converges") {
  // Zero on the last third: the aggregates there complete their column of P_tent with a unit
  // vector (the QR's rule for a dependent column), so the coarse levels stay SPD.
  const auto A = diffusion_3d(16, 1, 1, 0.01, 1e4);
  const index_t n = A.rows();
  AmgOptions g;
  g.near_nullspace.resize(std::size_t(n));
  for (index_t i = 0; i < n; ++i) g.near_nullspace[std::size_t(i)] = 3 * i < 2 * n ? 1.0 : 0.0;
  g.near_nullspace_vectors = 1;
  const HostAmg<double> M(A, g);
  CHECK(M.levels().size() >= 3);
  const test::ApplyFn f = [&](const double* x, double* z) { M.apply(x, z); };
  test::check_symmetric_positive_random(n, f, 1e-12);
  const auto [its, res, summary] = test::amg_pcg(A, g);
  MESSAGE("diffusion_3d 16^3 with a vector zero on a third: ", its, " iterations, ", M.summary());
  CHECK(res <= 1e-8);
}

TEST_CASE("AMG: bad near-nullspace vectors are an InputError naming what is wrong") {
  const auto A = laplacian_3d(6, 6, 6);
  const std::size_t n = std::size_t(A.rows());
  AmgOptions o;
  o.near_nullspace.assign(n * 2, 1.0);
  o.near_nullspace_vectors = 0;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("near_nullspace_vectors = 0"), InputError);
  o.near_nullspace_vectors = kAmgMaxNearNullspace + 1;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("out of range"), InputError);
  o.near_nullspace_vectors = 5;  // 432 entries
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("not a positive multiple of 5"), InputError);
  o.near_nullspace_vectors = 2;
  o.near_nullspace[7] = std::nan("");
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("entry 4 of near-nullspace vector 2"), InputError);
  o.near_nullspace.assign(n * 2 - 2, 1.0);
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("the matrix has 216 rows"), InputError);
  o.near_nullspace.assign(n * 2, 1.0);
  o.filter = AmgFilter::On;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("filter on"), InputError);
  o.filter = AmgFilter::Auto;
  o.coordinates.assign(n * 3, 0.5);
  o.coordinate_dim = 3;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("give one"), InputError);
  o.coordinates.clear();
  o.coordinate_dim = 0;
  o.near_nullspace.clear();
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, o), doctest::Contains("has 0 entries"), InputError);
  o.near_nullspace.assign(n * 2, 1.0);
  CHECK_NOTHROW(HostAmg<double>(A, o));  // two equal vectors: dependent columns, still a hierarchy
}

TEST_CASE("krysp solve --near-nullspace V.mtx: the vectors from a dense Matrix Market file") {
  const std::string cli = KRYSP_CLI_PATH;
  if (!std::ifstream(cli).good()) {
    MESSAGE("krysp program not built (", cli, "): skipped");
    return;
  }
  const std::string mtx = std::string(KRYSP_TEST_DATA) + "/bcsstk06.mtx";
  const auto tmp = std::filesystem::temp_directory_path();
  const std::string log = (tmp / "krysp_near_nullspace_test.log").string();
  const std::string vec = (tmp / "krysp_near_nullspace_test.mtx").string();
  // bcsstk06's unit vectors a node (420 x 3), or `rows` x `cols` of them, column-major.
  auto write = [&](index_t rows, int cols) {
    std::ofstream f(vec);
    f << "%%MatrixMarket matrix array real general\n" << rows << " " << cols << "\n";
    for (int k = 0; k < cols; ++k)
      for (index_t i = 0; i < rows; ++i) f << (i % 3 == k ? 1.0 : 0.0) << "\n";
  };
  auto run = [&](const std::string& a) {
    const std::string cmd = cli + " solve " + mtx + " --precond amg --backend host " + a + " > " + log + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text);
  };
  write(420, 3);
  auto [rc, text] = run("--amg-block-size 3 --near-nullspace " + vec);
  CAPTURE(text);
  CHECK(rc == 0);
  CHECK(text.find("near-nullspace 3 given") != std::string::npos);
  CHECK(text.find("converged") != std::string::npos);
  write(419, 3);
  std::tie(rc, text) = run("--amg-block-size 3 --near-nullspace " + vec);
  CHECK(rc == 2);
  CHECK(text.find("the matrix has 420 rows") != std::string::npos);
  write(420, 9);
  std::tie(rc, text) = run("--near-nullspace " + vec);
  CHECK(rc == 2);
  CHECK(text.find("1 to 8 columns") != std::string::npos);
  std::tie(rc, text) = run("--near-nullspace /nonexistent/v.mtx");
  CHECK(rc == 2);
  std::filesystem::remove(vec);
  std::filesystem::remove(log);
}
