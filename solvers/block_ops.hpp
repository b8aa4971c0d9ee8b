#pragma once
/// \file block_ops.hpp
/// Dense operations on tall blocks, for block CG and LOBPCG. A block is n × b, row-major (the b
/// values of a row are contiguous, as the SpMM kernels want), with a leading dimension ld ≥ b.
/// Small b × b coefficient matrices live on the host, column-major (LAPACK's convention): the
/// tall products run on the backend, the small factorizations on the host.
///
/// Both backends implement, with the same signatures (pointers to host or device memory):
///   gram(n, X, ldx, bx, Y, ldy, by, C)            C (bx × by, host) = Xᵀ·Y
///   combine(n, X, ldx, bx, C, alpha, beta, Y, ldy, by)   Y = alpha·X·C + beta·Y, C bx × by on host
///   copy(n, b, X, ldx, Y, ldy)                    Y = X
#include <vector>

#include "krysp/base/types.hpp"

namespace krysp {

/// Index of element (i, j) of a column-major small matrix with `rows` rows.
inline std::size_t cm(index_t i, index_t j, index_t rows) { return std::size_t(j) * rows + i; }

}  // namespace krysp
