#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/precond/cuda/scale_rows.hpp"

namespace krysp::detail {

template <class T>
__global__ void scale_rows_kernel(index_t n, index_t N, const T* __restrict__ d, const T* __restrict__ R,
                                  index_t ldr, T* __restrict__ Z, index_t ldz) {
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, j = t % N;
    Z[i * ldz + j] = d[i] * R[i * ldr + j];
  }
}

template <class T>
void scale_rows(index_t n, index_t N, const T* d, const T* R, index_t ldr, T* Z, index_t ldz) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  const unsigned grid = unsigned(std::min<std::int64_t>((total + 255) / 256, 1 << 16));
  scale_rows_kernel<T><<<grid, 256>>>(n, N, d, R, ldr, Z, ldz);
  KRYSP_CUDA_CHECK_LAUNCH("scale_rows_kernel");
}

template void scale_rows<double>(index_t, index_t, const double*, const double*, index_t, double*, index_t);
template void scale_rows<float>(index_t, index_t, const float*, const float*, index_t, float*, index_t);

}  // namespace krysp::detail
