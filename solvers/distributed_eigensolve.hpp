#pragma once
/// \file distributed_eigensolve.hpp
/// LOBPCG on a DistCsrMatrix (docs/distributed.md): the algorithm of solvers/lobpcg.hpp as it
/// is, over the host eig ops with A and B as distributed operators, every Gram matrix and column
/// norm summed over the communicator, and the random start drawn by global row. Every rank calls
/// with the same options and gets the same eigenvalues, statuses and residual norms (they come
/// from reduced scalars, bitwise equal on all ranks) and its own rows of the eigenvectors.
///
/// Backend::Host (and Auto) run on the host; Backend::Cuda on the current GPU of each rank, A
/// and B as DeviceDistCsr (docs/distributed.md). Preconditioners: none, jacobi and chebyshev (of
/// A, or of B with precond_from_b; chebyshev of the whole distributed matrix, the same interval on
/// both backends), alone or inside the inner PCG solve (inner_iters > 0); block-jacobi, amg and
/// the spectral flip are refused until they are distributed. The check
/// for missed eigenvalues (EigOptions::verify) runs as in eigensolve(), through the same ops. The
/// refinement of stagnated pairs by inverse iteration (EigOptions::refine) needs a direct solver
/// and is not done here: a stagnated run stays Stagnated. Bad input on any rank (B on another
/// partition, a non-positive diagonal of B, a zero diagonal under Jacobi, k or block size too
/// large for the global order) is an InputError on all ranks.
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp {

/// The k extreme eigenpairs of A·x = λ·x (B null) or A·x = λ·B·x (B on the same partition as A:
/// the same row_starts). The report's eigenvalues, residual norms and status are global (the
/// same on every rank); its `eigenvectors` are this rank's A.rows() rows × k (row-major, as in
/// EigResult), and `n` is the global order (capped at kMaxIndex). Collective.
EigReport eigensolve_distributed(const DistCsrMatrix& A, const DistCsrMatrix* B, const EigOptions& options = {});

}  // namespace krysp
