#pragma once
/// \file small_dense.hpp
/// Small dense symmetric problems on the host through LAPACK(E): the b × b work of block CG and
/// LOBPCG. Matrices are column-major std::vector<double> of size n·n. Failures are reported by
/// return value, never by exception: a failed Cholesky is an event the solvers handle (shift,
/// drop directions, restart), not the end of a run.
#include <vector>

#include "krysp/base/types.hpp"

namespace krysp::dense {

/// A = Rᵀ·R in place (R upper triangular, strict lower part zeroed). False when A is not
/// numerically positive definite (A is then unspecified).
bool cholesky_upper(index_t n, std::vector<double>& A);
/// Inverse of an upper-triangular R in place.
bool invert_upper(index_t n, std::vector<double>& R);
/// Eigenvalues (ascending) and orthonormal eigenvectors (columns of V) of symmetric A.
bool sym_eig(index_t n, const std::vector<double>& A, std::vector<double>& w, std::vector<double>& V);
/// Eigenvalues only (ascending) of symmetric A: several times cheaper than sym_eig for the
/// condition checks that need no vectors (the values agree with sym_eig's to rounding).
bool sym_eigenvalues(index_t n, std::vector<double> A, std::vector<double>& w);
/// Generalized symmetric-definite problem A·v = λ·B·v (B SPD): ascending λ, B-orthonormal V.
bool sym_gen_eig(index_t n, const std::vector<double>& A, const std::vector<double>& B, std::vector<double>& w,
                 std::vector<double>& V);
/// C = Aᵀ·B for column-major A (k × m) and B (k × n): C is m × n.
std::vector<double> at_b(index_t k, index_t m, index_t n, const std::vector<double>& A, const std::vector<double>& B);
/// C = A·B for column-major A (m × k) and B (k × n).
std::vector<double> a_b(index_t m, index_t k, index_t n, const std::vector<double>& A, const std::vector<double>& B);
/// Symmetrises A in place: (A + Aᵀ)/2 (Gram matrices computed in floating point drift apart).
void symmetrize(index_t n, std::vector<double>& A);

}  // namespace krysp::dense
