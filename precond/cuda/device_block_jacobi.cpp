#include "krysp/precond/cuda/device_block_jacobi.hpp"

#include <cstdint>

#include "krysp/base/error.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/cuda/block_jacobi_kernels.hpp"

namespace krysp {

template <class T>
int device_detect_block_size(const CsrMatrix<T>& A) {
  const index_t n = A.rows();
  if (A.rows() != A.cols()) return 1;
  // Every candidate's count queued at once, then one download: exact counts, so the verdicts are
  // those of the host's scan (which stops only once a verdict is certain).
  const CsrView<T> dA = A.device_view();
  DeviceArray<unsigned long long> counts(kMaxBlockSize + 1);
  counts.zero();
  for (int b = kMaxBlockSize; b >= 2; --b)
    if (n % b == 0) detail::block_pattern_count(dA.row_ptr, dA.col_idx, n, b, counts.data() + b);
  unsigned long long agree[kMaxBlockSize + 1];
  counts.download(agree, kMaxBlockSize + 1);  // synchronises
  for (int b = kMaxBlockSize; b >= 2; --b)
    if (block_size_qualifies(n, b, std::int64_t(agree[b]))) return b;
  return 1;
}

template <class T>
DeviceBlockJacobi<T>::DeviceBlockJacobi(const CsrMatrix<T>& A, int block_size)
    : Preconditioner<T>(A.rows(), MemorySpace::Device), fingerprint_(A.fingerprint()), n_(A.rows()),
      b_(resolve_block_size(A, block_size, &device_detect_block_size<T>)) {
  const index_t nodes = n_ / b_;
  inv_ = DeviceArray<T>(std::size_t(n_) * b_);
  if (nodes == 0) return;
  DeviceArray<int> first_bad(1);
  first_bad.upload(&nodes, 1);
  const CsrView<T> view = A.device_view();
  detail::block_jacobi_factor(view, b_, inv_.data(), first_bad.data());
  int bad = nodes;
  first_bad.download(&bad, 1);  // synchronises: faults of the factor kernel surface here
  if (bad < nodes) {
    DeviceArray<int> pivot_index(1);
    DeviceArray<T> pivot_value(1);
    detail::block_jacobi_report(view, b_, bad, pivot_index.data(), pivot_value.data());
    int j = 0;
    T v = 0;
    pivot_index.download(&j, 1);
    pivot_value.download(&v, 1);
    throw_block_not_spd(bad, b_, j > 0 ? j : 1, double(v));
  }
}

template <class T>
void DeviceBlockJacobi<T>::apply(const T* r, T* z) const {
  detail::block_jacobi_apply(n_, b_, 1, inv_.data(), r, 1, z, 1);
}

template <class T>
void DeviceBlockJacobi<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  KRYSP_REQUIRE(N >= 0 && ldr >= N && ldz >= N, "block Jacobi: apply_block with N = ", N, ", ldr = ", ldr,
                ", ldz = ", ldz);
  detail::block_jacobi_apply(n_, b_, N, inv_.data(), R, ldr, Z, ldz);
}

template int device_detect_block_size(const CsrMatrix<double>&);
template int device_detect_block_size(const CsrMatrix<float>&);
template class DeviceBlockJacobi<double>;
template class DeviceBlockJacobi<float>;

}  // namespace krysp
