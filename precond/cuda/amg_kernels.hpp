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

/// A cuBLAS handle for the coarse solve.
class AmgCoarseSolver {
 public:
  AmgCoarseSolver();
  ~AmgCoarseSolver();
  AmgCoarseSolver(const AmgCoarseSolver&) = delete;
  AmgCoarseSolver& operator=(const AmgCoarseSolver&) = delete;
  /// W = (L·Lᵀ)⁻¹·W in place, W n × N row-major with leading dimension ldw, L the n × n Cholesky
  /// factor stored ROW-MAJOR in its lower triangle (the host's amg::cholesky layout; read as
  /// column-major it is Lᵀ, upper). Two triangular solves: trsv for N = 1 with ldw = 1, trsm
  /// otherwise, on `stream`. Deterministic (cuBLAS without atomics).
  void solve(index_t n, const double* L, index_t N, double* W, index_t ldw, DeviceStream stream = {}) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace krysp::detail
