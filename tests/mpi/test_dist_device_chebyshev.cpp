// Distributed Chebyshev on the GPUs (issue 27): the interval and M⁻¹·r of the one-rank host
// Chebyshev (also on partitions with empty ranks), and LOBPCG with --precond chebyshev and
// Backend::Cuda against the one-rank host eigenvalues (1e-10 relative) and the residuals
// recomputed from the global matrix, on each device transport. CG and block CG with Chebyshev
// are in test_dist_device_solve.cpp, with the other preconditioners. Rank r uses GPU r mod the
// device count; without a GPU on every rank the cases check nothing (CI).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/device_dist_chebyshev.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/sparse/dist_csr_device.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_device_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
struct ChebCase {
  std::string name;
  CsrMatrix<double> A;
};
std::vector<ChebCase> cheb_cases() {
  return {{"bcsstk06", load("bcsstk06")}, {"laplacian_3d(12,11,10)", laplacian_3d(12, 11, 10)}};
}
}  // namespace

TEST_CASE("distributed Chebyshev on the GPUs: the one-rank host interval and M^-1 r, vector and block") {
  if (!gpus_everywhere()) return;
  for (const auto& c : cheb_cases()) {
    CAPTURE(c.name);
    PrecondOptions p;
    p.kind = PrecondKind::Chebyshev;
    const HostChebyshev<double> one(c.A, p);
    const std::int64_t n = c.A.rows();
    const index_t N = 3, ldz = 5;  // a padded output block
    const std::size_t rows = static_cast<std::size_t>(n);
    std::vector<double> R(rows * N), Z1(rows * N), z1(rows);
    for (std::int64_t i = 0; i < n * N; ++i) R[std::size_t(i)] = fixed_entry(i, 3);
    one.apply(R.data(), z1.data());  // the first n entries as a vector
    one.apply_block(N, R.data(), N, Z1.data(), N);
    // The balanced partition, and (on several ranks) ones with empty ranks and a one-row rank:
    // their Lanczos sums add zeros, their products exchange nothing.
    std::vector<Partition> parts{{"balanced", {}}};
    if (world().size() > 1)
      for (const auto& q : partitions_with_empty_ranks(world().size(), n)) parts.push_back(q);
    for (const auto& part : parts)
      for (const auto& t : device_transports()) {
        CAPTURE(part.name);
        CAPTURE(t);
        const Communicator comm = communicator_on(t);
        const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? c.A : CsrMatrix<double>(), 0, part.starts);
        const std::int64_t first = D.first_row(), m = D.rows();
        const DeviceDistCsr G(D);
        const DeviceDistChebyshev M(G, p);
        CHECK(std::abs(M.info().gershgorin - one.info().gershgorin) <= 1e-14 * one.info().gershgorin);
        CHECK(std::abs(M.info().lambda_max - one.info().lambda_max) <= 1e-10 * one.info().lambda_max);
        CHECK(std::abs(M.info().lanczos_steps - one.info().lanczos_steps) <= 1);
        for (auto s : comm.allgather(M.info().lambda_max)) CHECK(s == M.info().lambda_max);

        const auto rl = slice(R, first, first + m);
        DeviceArray<double> dr(static_cast<std::size_t>(m)), dz(static_cast<std::size_t>(m));
        dr.upload(rl.data(), rl.size());
        M.apply(dr.data(), dz.data());
        std::vector<double> z(static_cast<std::size_t>(m));
        dz.download(z.data(), z.size());
        CHECK(relative_difference(gather_rows(comm, z, n, first, 1), z1) <= 1e-10);

        const auto Rl = slice(R, first * N, (first + m) * N);
        DeviceArray<double> dR(Rl.size()), dZ(static_cast<std::size_t>(m) * ldz);
        dR.upload(Rl.data(), Rl.size());
        M.apply_block(N, dR.data(), N, dZ.data(), ldz);
        std::vector<double> Zp(static_cast<std::size_t>(m) * ldz), Z(static_cast<std::size_t>(m) * N);
        dZ.download(Zp.data(), Zp.size());
        for (std::int64_t i = 0; i < m; ++i)
          for (index_t j = 0; j < N; ++j) Z[std::size_t(i * N + j)] = Zp[std::size_t(i * ldz + j)];
        CHECK(relative_difference(gather_rows(comm, Z, n, first, N), Z1) <= 1e-10);
      }
  }
}

TEST_CASE("distributed LOBPCG with Chebyshev on the GPUs: the one-rank host eigenvalues, alone and inside PCG") {
  if (!gpus_everywhere()) return;
  struct EigCase {
    std::string name;
    CsrMatrix<double> A;
    int inner_iters;
  };
  // Chebyshev alone on the Laplacian; on bcsstk06 inside the inner PCG solve (what one process's
  // `krysp eigs --precond auto` runs for the smallest pairs: Chebyshev alone has a slow tail there).
  const std::vector<EigCase> eig_cases{{"laplacian_3d(12,11,10)", laplacian_3d(12, 11, 10), 0},
                                       {"bcsstk06", load("bcsstk06"), 8}};
  for (const auto& c : eig_cases) {
    CAPTURE(c.name);
    EigOptions o;
    o.backend = Backend::Host;
    o.precond.kind = PrecondKind::Chebyshev;
    o.inner_iters = c.inner_iters;
    o.lobpcg.k = 4;
    o.lobpcg.which = EigWhich::Smallest;
    o.lobpcg.tol = 1e-8;
    o.refine = false;  // not distributed; the reference runs without it too
    const EigReport one = eigensolve(c.A, nullptr, o);
    REQUIRE(one.converged());
    o.backend = Backend::Cuda;
    for (const auto& t : device_transports()) {
      CAPTURE(t);
      const Communicator comm = communicator_on(t);
      const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? c.A : CsrMatrix<double>());
      check_lobpcg(comm, c.A, D, o, one, 1e-10);
    }
  }
}
