// The trust suite (tests/trust_checks.hpp) on the host backend.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "io/hdf5_result.hpp"
#include "trust_checks.hpp"

using namespace krysp;
using namespace krysp::test;

TEST_CASE("Trust: LOBPCG (auto options) on the bundled SuiteSparse SPD matrices matches LAPACK, both ends") {
  trust_bundled(Backend::Host);
}

TEST_CASE("Trust: ill-conditioned and clustered: the 1-D Laplacian's smallest pairs (analytic eigenvalues)") {
  trust_laplacian_1d(Backend::Host);
}

TEST_CASE("Trust: repeated eigenvalues (2-D Laplacian 30 x 30, analytic), both ends") {
  trust_repeated(Backend::Host);
}

TEST_CASE("Trust: coefficient jumps (1e4) with anisotropy (100), and a badly scaled D*A*D, against LAPACK") {
  trust_jumps_and_scaling(Backend::Host);
}

TEST_CASE("Trust: a run started on the wrong pairs is caught by the check for missed eigenvalues") {
  trust_missed_eigenvalue(Backend::Host);
}

TEST_CASE("Trust: CG and block CG report converged only when b - A*x meets rtol") {
  trust_cg(Backend::Host);
}

TEST_CASE("Trust: CG restarts from the true residual where the recursive one drifted, and converges") {
  trust_cg_replacement(Backend::Host);
}

TEST_CASE("Trust: an rtol below what double precision allows ends stagnated or not converged, never converged") {
  trust_cg_unattainable(Backend::Host);
}

TEST_CASE("Trust: block CG: no column needs more iterations than CG alone, s = 4, 8, 16") {
  trust_block_cg_columns(Backend::Host);
}

TEST_CASE("Trust: every SPD matrix of ../shared/matrices up to 20k rows, k = 8 smallest and largest, vs LAPACK") {
  trust_shared_set(Backend::Host);
}

TEST_CASE("Trust: krysp solve writes the true residual's verdict to HDF5 (stagnated, not converged)") {
  const std::string cli = KRYSP_CLI_PATH, out = "trust_cli_test.h5";
  if (!std::ifstream(cli).good()) {
    MESSAGE("krysp program not built (", cli, "): skipped");
    return;
  }
  std::remove(out.c_str());
  const std::string cmd = cli + " solve " + KRYSP_TEST_DATA + "/bcsstk06.mtx --rtol 1e-17 --backend host --out " + out +
                          " > trust_cli_test.log 2>&1";
  const int rc = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 1);
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "converged")) == 0);
  CHECK(std::get<std::string>(io::read_hdf5_attribute(out, "status")).rfind("stagnated", 0) == 0);
  CHECK(std::get<std::int64_t>(io::read_hdf5_attribute(out, "residual_replacements")) >= 1);
  CHECK(std::get<double>(io::read_hdf5_attribute(out, "relative_residual")) > 1e-17);
  std::remove(out.c_str());
  std::remove("trust_cli_test.log");
}
