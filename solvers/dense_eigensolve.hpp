#pragma once
/// \file dense_eigensolve.hpp
/// eigensolve() on problems too small for LOBPCG: where k wanted pairs leave no room for the
/// basis [X W P] (3k > n) and the caller fixed neither the block size nor constraints, the pencil
/// is densified and solved whole by LAPACK (dsyevd, or dsygvd with B), on the host whatever the
/// backend, as SciPy's lobpcg does for such sizes. Internal to the solvers.
#include "krysp/solvers/eigensolve.hpp"

namespace krysp::detail {

/// True when eigensolve() takes dense_eigensolve for these options and n rows: no block size or
/// constraints given, 1 ≤ k ≤ n, and 3k > n.
bool dense_eigensolve_applies(const EigOptions& o, index_t n, index_t constraint_cols);

/// The k wanted pairs of A·x = λ·x, or A·x = λ·B·x (B SPD), from the whole dense spectrum; A (and
/// B) already checked square, of one size and symmetric. The report is eigensolve's: eigenvalues
/// in its order, eigenvectors B-orthonormal (n × k row-major), residual norms and the convergence
/// measure from fresh products. Converged when every pair meets tol; Stagnated when double
/// precision does not allow tol (the dense answer is the closest it gives); NotPositiveDefinite
/// when LAPACK finds B not positive definite; NonFinite for a NaN or Inf entry. `solver` is
/// "dense-dsyevd" or "dense-dsygvd"; the backend "host".
EigReport dense_eigensolve(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& o);

}  // namespace krysp::detail
