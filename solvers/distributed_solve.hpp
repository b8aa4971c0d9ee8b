#pragma once
/// \file distributed_solve.hpp
/// CG and block CG on a DistCsrMatrix (docs/distributed.md): the algorithms of solvers/cg.hpp
/// and solvers/block_cg.hpp as they are, over the host ops with A as the distributed operator and
/// every dot product and Gram matrix summed over its communicator. Every rank calls with its own
/// rows of b and x and the same options; every rank gets the same report (the statuses and
/// residuals come from reduced scalars, bitwise equal on all ranks).
///
/// Backend::Host (and Auto) run on the host. Backend::Cuda runs on the current GPU of each rank
/// (one rank per GPU: the caller makes it current, e.g. by local rank): A's rows there as a
/// DeviceDistCsr, halos and reductions through the communicator's device transport (NCCL, or MPI
/// staged through pinned host memory: docs/distributed.md); b and x stay host vectors.
/// Preconditioners: none, jacobi, chebyshev (of the whole distributed A: DistChebyshev on the
/// host, DeviceDistChebyshev on the GPUs, the same interval), and block-jacobi on each rank's
/// diagonal block (its local block: blocks never straddle ranks); amg is refused until it is
/// distributed.
/// Bad input on any rank (sizes, non-finite b or x0, a zero diagonal) is an InputError on all.
#include <vector>

#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp {

/// Solves A·x = b by PCG. b: this rank's A.rows() entries; x: the initial guess (resized to them
/// and zeroed if empty), receives this rank's part of the solution. Collective.
SolveReport solve_distributed(const DistCsrMatrix& A, const std::vector<double>& b, std::vector<double>& x,
                              const SolveOptions& options = {});

/// Solves A·X = B for s right-hand sides at once by block PCG (as solve_block). B and X are this
/// rank's A.rows() × s rows, column-major; X is the initial guess (zero-filled if empty).
/// SolveOptions::block_group must be 0 (groups are not distributed yet). Collective.
BlockSolveReport solve_block_distributed(const DistCsrMatrix& A, const std::vector<double>& B, index_t s,
                                         std::vector<double>& X, const SolveOptions& options = {});

}  // namespace krysp
