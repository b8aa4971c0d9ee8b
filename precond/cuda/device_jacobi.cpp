#include "krysp/precond/cuda/device_jacobi.hpp"

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/device_diagonal.hpp"
#include "krysp/precond/cuda/scale_rows.hpp"

namespace krysp {

template <class T>
DeviceJacobi<T>::DeviceJacobi(const CsrMatrix<T>& A)
    : Preconditioner<T>(A.rows(), MemorySpace::Device), fingerprint_(A.fingerprint()),
      inv_(device_jacobi_inverse_diagonal(A)) {}

template <class T>
void DeviceJacobi<T>::apply(const T* r, T* z) const {
  detail::scale_rows<T>(index_t(inv_.size()), 1, inv_.data(), r, 1, z, 1);
}

template <class T>
void DeviceJacobi<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "Jacobi::apply_block: N = ", N, ", ldr = ", ldr, ", ldz = ", ldz);
  detail::scale_rows<T>(index_t(inv_.size()), N, inv_.data(), R, ldr, Z, ldz);
}

template class DeviceJacobi<double>;
template class DeviceJacobi<float>;

}  // namespace krysp
