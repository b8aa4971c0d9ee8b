// A's diagonal on the GPU for Jacobi and Chebyshev setup: D⁻¹ (and D^{-1/2}, the Gershgorin bound)
// without a host pass over the values, and the value conversion of Chebyshev's fp32 copy.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/precond/cuda/diagonal_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kBlock = 256;

__device__ __forceinline__ std::int64_t thread_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

unsigned grid_for(std::int64_t total) {
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(1, (total + kBlock - 1) / kBlock), 1 << 20));
}

// Position of column c in the sorted columns col[b..e), or −1 (columns are strictly increasing).
__device__ index_t find_column(const index_t* __restrict__ col, index_t b, index_t e, index_t c) {
  while (b < e) {
    const index_t m = b + (e - b) / 2;
    const index_t x = col[m];
    if (x == c) return m;
    if (x < c)
      b = m + 1;
    else
      e = m;
  }
  return -1;
}

template <class T, DiagonalMode Mode>
__global__ void __launch_bounds__(kBlock)
    diagonal_kernel(CsrView<T> A, T* __restrict__ inv, T* __restrict__ inv_sqrt, DiagonalStatus* status) {
  unsigned long long gbits = 0;  // 0.0
  for (std::int64_t r = thread_index(); r < A.rows; r += grid_stride()) {
    const index_t i = index_t(r), b = A.row_ptr[i], e = A.row_ptr[i + 1];
    T d = 0;
    double sum = 0;
    if (Mode == DiagonalMode::Chebyshev) {
      for (index_t k = b; k < e; ++k) {  // stored order, as the host sums
        const T v = A.values[k];
        if (A.col_idx[k] == i) d = v;
        sum += fabs(double(v));
      }
    } else {
      const index_t k = find_column(A.col_idx, b, e, i);
      if (k >= 0) d = A.values[k];
    }
    if (!(isfinite(double(d)) && d > T(0))) {  // missing (d = 0), zero, negative, NaN or Inf
      atomicMin(&status->first_bad, int(i));
      continue;
    }
    if (Mode == DiagonalMode::Chebyshev) {
      const double dd = double(d);
      const T x = T(1.0 / dd);
      inv[i] = x;
      if (inv_sqrt) inv_sqrt[i] = T(sqrt(double(x)));
      gbits = max(gbits, (unsigned long long)(__double_as_longlong(sum / dd)));
    } else {
      inv[i] = T(1) / d;
    }
  }
  if (Mode == DiagonalMode::Chebyshev) {
    for (int off = 16; off > 0; off /= 2) gbits = max(gbits, __shfl_xor_sync(0xffffffffu, gbits, off));
    if (threadIdx.x % 32 == 0 && gbits != 0) atomicMax(&status->gershgorin_bits, gbits);
  }
}

template <class T, class S>
__global__ void __launch_bounds__(kBlock) convert_kernel(std::int64_t count, const T* __restrict__ src, S* __restrict__ dst) {
  for (std::int64_t k = thread_index(); k < count; k += grid_stride()) dst[k] = S(src[k]);
}
}  // namespace

template <class T>
void diagonal_pass(CsrView<T> A, DiagonalMode mode, T* inv, T* inv_sqrt, DiagonalStatus* status) {
  if (A.rows == 0) return;
  if (mode == DiagonalMode::Chebyshev) {
    diagonal_kernel<T, DiagonalMode::Chebyshev><<<grid_for(A.rows), kBlock>>>(A, inv, inv_sqrt, status);
    KRYSP_CUDA_CHECK_LAUNCH("diagonal_kernel (Chebyshev)");
  } else {
    diagonal_kernel<T, DiagonalMode::Jacobi><<<grid_for(A.rows), kBlock>>>(A, inv, inv_sqrt, status);
    KRYSP_CUDA_CHECK_LAUNCH("diagonal_kernel (Jacobi)");
  }
}

template <class T, class S>
void convert_values(std::size_t count, const T* src, S* dst) {
  if (count == 0) return;
  convert_kernel<T, S><<<grid_for(std::int64_t(count)), kBlock>>>(std::int64_t(count), src, dst);
  KRYSP_CUDA_CHECK_LAUNCH("convert_kernel");
}

template void diagonal_pass<double>(CsrView<double>, DiagonalMode, double*, double*, DiagonalStatus*);
template void diagonal_pass<float>(CsrView<float>, DiagonalMode, float*, float*, DiagonalStatus*);
template void convert_values<double, float>(std::size_t, const double*, float*);

}  // namespace krysp::detail
