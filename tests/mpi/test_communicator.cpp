// The communicator: rank order, deterministic sums, broadcast, all_to_all, and agreed errors.
#include <doctest/doctest.h>

#include "krysp/base/error.hpp"
#include "mpi/mpi_test_util.hpp"

using namespace krysp;
using krysp::test::world;

TEST_CASE("communicator: ranks, allgather and broadcast") {
  const auto& comm = world();
  REQUIRE(comm.size() >= 1);
  CHECK(comm.kind() == "mpi");
  const auto ranks = comm.allgather(comm.rank());
  for (int r = 0; r < comm.size(); ++r) CHECK(ranks[r] == r);
  double v = comm.rank() == comm.size() - 1 ? 42.5 : -1.0;
  comm.broadcast(&v, sizeof v, comm.size() - 1);
  CHECK(v == 42.5);
  CHECK(comm.sum(std::int64_t(comm.rank() + 1)) == std::int64_t(comm.size()) * (comm.size() + 1) / 2);
  CHECK(comm.max(double(comm.rank())) == double(comm.size() - 1));
}

TEST_CASE("communicator: the sum adds in rank order, the same bits on every rank") {
  const auto& comm = world();
  // Partials whose sum depends on the order of addition: rank order gives exactly this.
  const double partial[3] = {1e16 * (comm.rank() % 2 ? -1 : 1), 0.1 * (comm.rank() + 1), 1.0 / (comm.rank() + 3)};
  double expect[3] = {0, 0, 0};
  for (int r = 0; r < comm.size(); ++r) {
    const double p[3] = {1e16 * (r % 2 ? -1 : 1), 0.1 * (r + 1), 1.0 / (r + 3)};
    for (int i = 0; i < 3; ++i) expect[i] = r == 0 ? p[i] : expect[i] + p[i];
  }
  double got[3] = {partial[0], partial[1], partial[2]};
  comm.sum(got, 3);
  for (int i = 0; i < 3; ++i) CHECK(got[i] == expect[i]);
  const auto everyone = comm.allgather(got[1]);
  for (double e : everyone) CHECK(e == got[1]);
}

TEST_CASE("communicator: all_to_all delivers each rank's message") {
  const auto& comm = world();
  const int P = comm.size();
  std::vector<std::vector<std::int64_t>> out(P);
  for (int q = 0; q < P; ++q)
    for (int k = 0; k < comm.rank() + q; ++k) out[q].push_back(100 * comm.rank() + q);  // some empty
  const auto in = comm.all_to_all(out);
  REQUIRE(int(in.size()) == P);
  for (int q = 0; q < P; ++q) {
    CHECK(int(in[q].size()) == q + comm.rank());
    for (auto e : in[q]) CHECK(e == 100 * q + comm.rank());
  }
}

TEST_CASE("communicator: a failure on one rank is the same InputError on every rank") {
  const auto& comm = world();
  const int bad = comm.size() - 1;
  CHECK_NOTHROW(comm.agree(true, "unused"));
  CHECK_THROWS_WITH_AS(comm.agree(comm.rank() != bad, "bad input here"),
                       doctest::Contains((comm.size() > 1 ? "rank " + std::to_string(bad) + ": bad input here"
                                                          : std::string("bad input here")).c_str()),
                       InputError);
  CHECK_THROWS_WITH_AS(comm.collective([&] { KRYSP_REQUIRE(comm.rank() != bad, "value ", 7, " refused"); }),
                       doctest::Contains("value 7 refused"), InputError);
  if (comm.size() > 1)  // every rank failing: the lowest is named, the others counted
    CHECK_THROWS_WITH_AS(comm.agree(false, "r" + std::to_string(comm.rank())),
                         doctest::Contains(("rank 0: r0 (and on " + std::to_string(comm.size() - 1)).c_str()), InputError);
}

TEST_CASE("communicator: the serial one is a single rank") {
  const Communicator serial;
  CHECK(serial.size() == 1);
  CHECK(serial.rank() == 0);
  double v[2] = {0.1, 0.2};
  serial.sum(v, 2);
  CHECK(v[0] == 0.1);
  CHECK_THROWS_AS(serial.agree(false, "x"), InputError);
  CHECK(Communicator::mpi_built());
}
