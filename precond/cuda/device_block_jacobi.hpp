#pragma once
/// \file device_block_jacobi.hpp
/// Block Jacobi on the GPU (the method, the block-size rule and why it is SPD: block_jacobi.hpp).
/// Setup runs on the GPU: the block-size detection (device_detect_block_size) and the factoring
/// of every diagonal block (one thread per block, the host twin's Cholesky code); it keeps the
/// dense inverses (n·b values); apply() and apply_block() are one kernel each.
/// A block that is not SPD is an InputError naming the block, its rows and the pivot. With b = 1
/// the inverses are the inverse diagonal, handed to CG to fuse (inverse_diagonal()). CUDA-free header.
#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"

namespace krysp {

/// detect_block_size on the GPU from A's device arrays (one thread per node, every candidate b
/// counted exactly, one download): the same block size, without the host scan of the pattern.
template <class T>
int device_detect_block_size(const CsrMatrix<T>& A);

template <class T>
class DeviceBlockJacobi final : public Preconditioner<T> {
 public:
  /// block_size 0 detects it (device_detect_block_size).
  explicit DeviceBlockJacobi(const CsrMatrix<T>& A, int block_size = 0);
  PrecondKind kind() const override { return PrecondKind::BlockJacobi; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  const T* inverse_diagonal() const override { return b_ == 1 ? inv_.data() : nullptr; }
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  int block_size() const { return b_; }
  /// The inverses in device memory (n·b values, block k's row-major b×b inverse at k·b²).
  const DeviceArray<T>& inverses() const { return inv_; }

 private:
  StructureFingerprint fingerprint_;
  index_t n_ = 0;
  int b_ = 1;
  DeviceArray<T> inv_;
};

extern template class DeviceBlockJacobi<double>;
extern template class DeviceBlockJacobi<float>;

}  // namespace krysp
