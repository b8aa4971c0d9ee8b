// The trust suite (tests/trust_checks.hpp) on the host backend.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "krysp/io/hdf5_result.hpp"
#include "trust_checks.hpp"

using namespace krysp;
using namespace krysp::test;

KRYSP_TRUST_CASES("Trust: ", Backend::Host)

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
  CHECK(std::get<double>(io::read_hdf5_attribute(out, "residual_floor")) > 1e-17);
  std::remove(out.c_str());
  std::remove("trust_cli_test.log");
}
