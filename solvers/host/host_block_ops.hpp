#pragma once
/// \file host_block_ops.hpp
/// Tall-block operations on the host (see solvers/block_ops.hpp). The reference for the CUDA
/// twin, and the block solvers' no-GPU path.
#include "krysp/solvers/block_ops.hpp"

namespace krysp {

/// Dense tall-block products on the host (n × b row-major blocks with leading dimensions).
template <class T>
struct HostBlockOps {
  /// C = Xᵀ·Y, accumulated in double; C is bx × by column-major.
  void gram(index_t n, const T* X, index_t ldx, index_t bx, const T* Y, index_t ldy, index_t by, double* C) const;
  /// Y = alpha·X·C + beta·Y (beta = 0 never reads Y); C is bx × by column-major.
  void combine(index_t n, const T* X, index_t ldx, index_t bx, const double* C, double alpha, double beta, T* Y,
               index_t ldy, index_t by) const;
  /// Y = X (n × b).
  void copy(index_t n, index_t b, const T* X, index_t ldx, T* Y, index_t ldy) const;
};

extern template struct HostBlockOps<double>;
extern template struct HostBlockOps<float>;

}  // namespace krysp
