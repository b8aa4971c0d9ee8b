#pragma once
// Helpers of the distributed GPU suites: whether every rank has a GPU (then rank r uses GPU
// r mod the device count), and a communicator on a chosen device transport.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "mpi/mpi_test_util.hpp"

namespace krysp::test {

/// True on every rank when every rank has a GPU (then made current): all ranks skip together.
inline bool gpus_everywhere() {
  const bool mine = cuda_device_available();
  for (char ok : world().allgather<char>(mine ? 1 : 0))
    if (!ok) {
      if (world().rank() == 0) MESSAGE("no CUDA device on some rank: device cases skipped");
      return false;
    }
  detail::use_local_gpu(world().rank());
  return true;
}

/// A communicator of its own (a communicator keeps the transport it made first) whose device
/// transport is `transport` ("mpi" or "nccl", as KRYSP_COMM).
inline Communicator communicator_on(const std::string& transport) {
  setenv(detail::kCommEnv, transport.c_str(), 1);
  Communicator c = Communicator::world();
  c.device_kind();  // the transport is made now, under this setting
  unsetenv(detail::kCommEnv);
  return c;
}

/// The transports to try: "mpi" always, "nccl" when auto picks it (built, more than one rank,
/// and no two ranks on one GPU, which NCCL refuses). Collective the first time.
inline const std::vector<std::string>& device_transports() {
  static const std::vector<std::string> t = [] {
    std::vector<std::string> v{"mpi"};
    if (detail::nccl_built() && communicator_on("auto").device_kind() == "nccl") v.push_back("nccl");
    return v;
  }();
  return t;
}

// LOBPCG on D: converged, on the GPU, the eigenvalues of the one-rank host run to `close`
// relative, the residuals of the gathered eigenvectors (global matrix) within tol, and the same
// iteration count on every rank.
inline void check_lobpcg(const Communicator& comm, const CsrMatrix<double>& A, const DistCsrMatrix& D, const EigOptions& o,
                  const EigReport& one, double close) {
  const EigReport rep = eigensolve_distributed(D, nullptr, o);
  CAPTURE(rep.iterations);
  CAPTURE(one.iterations);
  CHECK(rep.converged());
  CHECK(rep.backend == "cuda");
  REQUIRE(rep.eigenvalues.size() == one.eigenvalues.size());
  for (std::size_t j = 0; j < rep.eigenvalues.size(); ++j)
    CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= close * std::abs(one.eigenvalues[j]));
  const auto X = gather_rows(comm, rep.eigenvectors, A.rows(), D.first_row(), o.lobpcg.k);
  CHECK(worst_relative_residual(A, nullptr, X, rep.eigenvalues) <= 1.01 * o.lobpcg.tol);
  for (auto it : comm.allgather(rep.iterations)) CHECK(it == rep.iterations);
}

}  // namespace krysp::test
