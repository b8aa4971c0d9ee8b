// LOBPCG's host ops on a distributed matrix: the random block is the global one's rows, and the
// Gram matrices and column norms are the global ones (summed over the ranks), and the order is
// the global one. eigensolve_distributed runs LOBPCG on these ops (test_dist_eigensolve.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "mpi/mpi_test_util.hpp"

using namespace krysp;
using namespace krysp::test;

TEST_CASE("distributed eig ops: random block by global row, global Gram matrices and norms") {
  const auto& comm = world();
  const auto A = load("bcsstk06");
  const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>());
  const index_t b = 3, n = A.rows(), m = D.rows();
  const HostEigOps global(A, nullptr, nullptr);
  const HostEigOps local(D, nullptr, nullptr, comm, D.first_row());
  std::vector<double> Xg(std::size_t(n) * b), Xl(std::size_t(m) * b);
  global.fill_random(b, Xg.data(), b, 42, 0);
  local.fill_random(b, Xl.data(), b, 42, 0);
  CHECK(local.global_size() == n);
  CHECK(global.global_size() == n);
  CHECK(Xl == std::vector<double>(Xg.begin() + D.first_row() * b, Xg.begin() + (D.first_row() + m) * b));

  std::vector<double> AXg(Xg.size()), AXl(Xl.size()), Cg(b * b), Cl(b * b);
  global.apply_a(b, Xg.data(), b, AXg.data(), b);
  local.apply_a(b, Xl.data(), b, AXl.data(), b);
  global.gram(Xg.data(), b, b, AXg.data(), b, b, Cg.data());
  local.gram(Xl.data(), b, b, AXl.data(), b, b, Cl.data());
  for (std::size_t k = 0; k < Cg.size(); ++k) CHECK(Cl[k] == doctest::Approx(Cg[k]).epsilon(1e-12));

  const double lambda[b] = {1.0, 2.0, 3.0};
  const index_t dest[b] = {0, -1, 2};
  std::vector<double> Rg(Xg.size()), Rl(Xl.size());
  double rrg[b], xxg[b], rrl[b], xxl[b];
  global.residuals(b, AXg.data(), b, Xg.data(), b, Xg.data(), b, lambda, dest, Rg.data(), b, rrg, xxg);
  local.residuals(b, AXl.data(), b, Xl.data(), b, Xl.data(), b, lambda, dest, Rl.data(), b, rrl, xxl);
  for (index_t j = 0; j < b; ++j) {
    CHECK(rrl[j] == doctest::Approx(rrg[j]).epsilon(1e-12));
    CHECK(xxl[j] == doctest::Approx(xxg[j]).epsilon(1e-12));
  }
  // Every rank holds the same reduced numbers.
  for (double e : comm.allgather(Cl[1])) CHECK(e == Cl[1]);
}
