#pragma once
/// \file small_cholesky.hpp
/// Dense Cholesky factor and SPD inverse of a small matrix (the AMG coarsest level) held in one
/// thread block's shared memory (internal; CUDA-free header). cuSOLVER's potrf and two cuBLAS
/// trsm take 17 and 2 dependent launches there, mostly waiting; here the factor is one launch
/// and the inverse one more (docs/amg.md has the timings). Both are deterministic: a fixed order
/// of operations, no atomics. Both run on the default stream.
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// The largest n that small_cholesky and small_spd_inverse take on the current device: L's
/// packed lower triangle, two vectors of n and a copy of a panel of 8 columns must fit one
/// block's shared memory (230 rows at 227 KB), and the inverse's vector a warp's registers (256
/// rows). 0 when none does.
index_t small_dense_max_rows();

/// In place, LX (n × n, row-major, symmetric: the lower triangle is read) becomes L, A = L·Lᵀ, in
/// its lower triangle; the strict upper triangle is left as it is. Stops at the first pivot
/// d_j (l_jj² to be) that amg::cholesky would pin or refuse (not above amg::pivot_zero_level)
/// or that is not finite, and writes j to *refused; LX is then unusable. Otherwise *refused is
/// not written. n ≤ small_dense_max_rows().
void small_cholesky(index_t n, double* LX, int* refused);

/// W (n × n) = L⁻ᵀ·L⁻¹ = A⁻¹, column j (W[j·n .. j·n + n)) by forward and back substitution on
/// e_j; L from LX's lower triangle as small_cholesky leaves it (row-major). W is symmetric to
/// rounding only. n ≤ small_dense_max_rows(). A pinned unknown of amg::cholesky's factor (l_jj =
/// +∞, its row and column zero) gets a zero row and column.
void small_spd_inverse(index_t n, const double* LX, double* W);

}  // namespace krysp::detail
