#pragma once
/// \file amg_kernels.hpp
/// The device V-cycle's vector kernels and its coarse solve (internal; CUDA-free header). Blocks
/// are n × N row-major with their own leading dimensions; N = 1 with ld = 1 is a vector. Each
/// runs on the stream it is given (default: the default stream), so a V-cycle can be captured.
#include "krysp/base/stream.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Y = O(X) entry by entry (a copy, or a conversion between precisions).
template <class I, class O>
void amg_copy(index_t n, index_t N, const I* X, index_t ldx, O* Y, index_t ldy, DeviceStream stream = {});
/// Y += X.
template <class T>
void amg_add(index_t n, index_t N, const T* X, index_t ldx, T* Y, index_t ldy, DeviceStream stream = {});

/// Y = X·B for the coarse solve: X the n × n inverse of the coarsest matrix (double, symmetric,
/// AmgCoarseSolver::invert), B and Y n × N (B and Y must not overlap), summed in double in a
/// fixed order (a warp a row, a fixed tree across its lanes): bitwise reproducible. One kernel
/// where two triangular solves took 15-40 µs of dependent steps on a 30-200 row level.
template <class T>
void amg_dense_apply(index_t n, const double* X, index_t N, const T* B, index_t ldb, T* Y, index_t ldy,
                     DeviceStream stream = {});

/// A cuBLAS handle that turns the coarse Cholesky factor into the coarse inverse.
class AmgCoarseSolver {
 public:
  AmgCoarseSolver();
  ~AmgCoarseSolver();
  AmgCoarseSolver(const AmgCoarseSolver&) = delete;
  AmgCoarseSolver& operator=(const AmgCoarseSolver&) = delete;
  /// On entry LX holds L, the n × n Cholesky factor of the coarsest matrix A_c stored ROW-MAJOR
  /// in its lower triangle (the host's amg::cholesky layout; read column-major it is Lᵀ, upper);
  /// on return A_c⁻¹ = L⁻ᵀ·L⁻¹, both triangles, exactly symmetric ((X + Xᵀ)/2 of two cuBLAS
  /// triangular solves on the identity). Deterministic (cuBLAS without atomics). Its forward
  /// error is that of the solves it replaces, about κ(A_c)·ε.
  void invert(index_t n, double* LX) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace krysp::detail
