#pragma once
/// \file spmm_reference.hpp
/// SpMM on the host: Y = alpha·A·X + beta·Y with X (A.cols() × N) and Y (A.rows() × N) dense
/// row-major blocks of leading dimensions ldx, ldy >= N. The reference for the device kernels'
/// tests, and the block solvers' host path. beta = 0 never reads Y; columns >= N of X and Y (the
/// padding up to ld) are neither read nor written. Sizes are checked, and X and Y must not share
/// entries (InputError).
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// Y = alpha·A·X + beta·Y on the host, as described above.
template <class T>
void spmm_host(const CsrMatrix<T>& A, index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy);

/// The operand checks of every SpMM (host and device), InputError naming `who`: ldx, ldy >= N,
/// Y given when A has rows, X given when A has nonzeros, and X and Y sharing no entry
/// (interleaved column blocks of one array are fine: blocks_overlap).
template <class T>
void check_spmm_operands(const char* who, const CsrMatrix<T>& A, index_t N, const T* X, index_t ldx, const T* Y,
                         index_t ldy);

extern template void spmm_host(const CsrMatrix<double>&, index_t, double, const double*, index_t, double, double*,
                               index_t);
extern template void spmm_host(const CsrMatrix<float>&, index_t, float, const float*, index_t, float, float*,
                               index_t);
extern template void check_spmm_operands(const char*, const CsrMatrix<double>&, index_t, const double*, index_t,
                                         const double*, index_t);
extern template void check_spmm_operands(const char*, const CsrMatrix<float>&, index_t, const float*, index_t,
                                         const float*, index_t);

}  // namespace krysp
