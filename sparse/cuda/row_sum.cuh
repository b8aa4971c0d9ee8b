#pragma once
/// \file row_sum.cuh
/// Σ_k a_k·x[col_k] over one CSR row by a sub-warp of W lanes (W divides 32), the shared inner
/// loop of the row-balanced SpMV kernel and of kernels that fuse their own epilogue into it (the
/// Chebyshev step). Deterministic: a fixed split over lanes and a fixed shuffle tree.
#include <cstdint>

#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/cuda/load.cuh"

namespace krysp::detail {

/// The sum of row `row` (< A.rows), complete on the sub-warp's first lane (lane = threadIdx.x % W);
/// every lane of the sub-warp must call it.
template <int W, class T>
__device__ __forceinline__ T subwarp_row_sum(const CsrView<T>& A, const T* __restrict__ x, std::int64_t row) {
  const int lane = threadIdx.x % W;
  const unsigned mask = (W == 32 ? 0xffffffffu : ((1u << W) - 1u)) << ((threadIdx.x % 32) / W * W);
  const index_t b = __ldg(A.row_ptr + row), e = __ldg(A.row_ptr + row + 1);
  T sum = T(0);
  index_t k = b + lane;
  // Long rows: four independent loads per lane in flight per trip.
  for (; k < e - 3 * W; k += 4 * W) {  // (written so that nothing overflows near nnz = 2^31)
    index_t c[4];
    T v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      c[i] = load_stream(A.col_idx + k + i * W);
      v[i] = load_stream(A.values + k + i * W);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) sum += v[i] * load_cached(x + c[i]);
  }
  for (; k < e; k += W) sum += load_stream(A.values + k) * load_cached(x + load_stream(A.col_idx + k));
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) sum += __shfl_down_sync(mask, sum, off, W);
  return sum;
}

}  // namespace krysp::detail
