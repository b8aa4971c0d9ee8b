#pragma once
/// \file device_jacobi.hpp
/// Jacobi on the GPU: the inverse diagonal in device memory, computed there from A's device arrays
/// (device_diagonal.hpp: no host pass over the values). CUDA-free header.
#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"

namespace krysp {

template <class T>
class DeviceJacobi final : public Preconditioner<T> {
 public:
  /// InputError as jacobi_inverse_diagonal (same text) for a bad diagonal entry.
  explicit DeviceJacobi(const CsrMatrix<T>& A);
  PrecondKind kind() const override { return PrecondKind::Jacobi; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  const T* inverse_diagonal() const override { return inv_.data(); }
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }

 private:
  StructureFingerprint fingerprint_;
  DeviceArray<T> inv_;
};

}  // namespace krysp
