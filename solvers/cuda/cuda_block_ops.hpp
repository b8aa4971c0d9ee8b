#pragma once
/// \file cuda_block_ops.hpp
/// Tall-block operations on the GPU through cuBLAS (see solvers/block_ops.hpp); the small b × b
/// coefficient matrices travel between host and device. CUDA-free header.
///
/// Latency: gram() must wait for the device (its result is read on the host), combine() need
/// not. combine()'s coefficients go through a ring of pinned host slots and an asynchronous copy
/// into a matching device ring, so it never waits: a slot is reused only after a point where the
/// device is known idle (a gram's download, which waits for all earlier work on the default
/// stream), or after an explicit wait when the ring is full.
#include <memory>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/solvers/block_ops.hpp"

namespace krysp {

template <class T>
class CudaBlockOps {
 public:
  /// max_cols: the widest block these ops will see (workspace is sized once, here).
  explicit CudaBlockOps(index_t max_cols);
  ~CudaBlockOps();
  CudaBlockOps(const CudaBlockOps&) = delete;
  CudaBlockOps& operator=(const CudaBlockOps&) = delete;

  /// C (bx × by, host, column-major) = Xᵀ·Y. Synchronises (C is read on the host).
  void gram(index_t n, const T* X, index_t ldx, index_t bx, const T* Y, index_t ldy, index_t by, double* C);
  /// C1 = Xᵀ·Y1 and C2 = Xᵀ·Y2 (each bx × by, host, column-major) with one download (one wait).
  void gram2(index_t n, const T* X, index_t ldx, index_t bx, const T* Y1, index_t ldy1, const T* Y2, index_t ldy2,
             index_t by, double* C1, double* C2);
  /// C1 = X1ᵀ·Y1 (bx1 × by1) and C2 = X2ᵀ·Y2 (bx2 × by2), host, column-major, with one download.
  void gram_pair(index_t n, const T* X1, index_t ldx1, index_t bx1, const T* Y1, index_t ldy1, index_t by1,
                 double* C1, const T* X2, index_t ldx2, index_t bx2, const T* Y2, index_t ldy2, index_t by2,
                 double* C2);
  /// Y = alpha·X·C + beta·Y; C (bx × by, host, column-major). Y must not alias X.
  void combine(index_t n, const T* X, index_t ldx, index_t bx, const double* C, double alpha, double beta, T* Y,
               index_t ldy, index_t by);
  void copy(index_t n, index_t b, const T* X, index_t ldx, T* Y, index_t ldy);

 private:
  struct Handle;
  std::unique_ptr<Handle> h_;
  /// Device pointer of the next free coefficient slot for `count` entries, staged from `host`.
  const T* stage(const double* host, std::size_t count);
  index_t max_cols_;
  DeviceArray<T> small_;  ///< two max_cols × max_cols Gram matrices on the device
  DeviceArray<T> ring_;   ///< combine()'s coefficients on the device (kRingSlots matrices)
  std::size_t ring_used_ = 0;
  std::vector<double> last_host_;  ///< the coefficients of the last slot staged (valid while last_ is set)
  const T* last_ = nullptr;        ///< their device slot; reset with the ring
};

extern template class CudaBlockOps<double>;
extern template class CudaBlockOps<float>;

}  // namespace krysp
