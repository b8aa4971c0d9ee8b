#include <algorithm>
#include <cstdint>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/precond/cuda/amg_auto_stats.hpp"

namespace krysp::detail {

namespace {
constexpr int kThreads = 256;
constexpr int kLanes = 8;                        // lanes a row: rows of 7-80 entries read mostly coalesced
constexpr int kRowsPerBlock = kThreads / kLanes;

unsigned grid_for(index_t rows, int rows_per_block) {
  const std::int64_t blocks = (std::int64_t(rows) + rows_per_block - 1) / rows_per_block;
  return unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, 1 << 16)));
}

__device__ unsigned long long warp_sum(unsigned long long x) {
  for (int s = 16; s > 0; s /= 2) x += __shfl_down_sync(0xffffffffu, x, s);
  return x;
}

template <class T>
__global__ void k_sign_count(index_t rows, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                             const T* __restrict__ va, unsigned long long* counts) {
  const int lane = int(threadIdx.x) % kLanes;
  unsigned long long off = 0, pos = 0;
  const std::int64_t stride = std::int64_t(gridDim.x) * kRowsPerBlock;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes; i < rows; i += stride)
    for (index_t k = rp[i] + lane; k < rp[i + 1]; k += kLanes) {
      const T v = va[k];
      if (ci[k] != i && v != T(0)) {
        ++off;
        pos += v > T(0);
      }
    }
  off = warp_sum(off);
  pos = warp_sum(pos);
  if (threadIdx.x % 32 == 0 && off > 0) {
    atomicAdd(&counts[0], off);
    atomicAdd(&counts[1], pos);
  }
}

// Each thread's sums in a fixed order (the grid is fixed by the row count), then the block's tree.
template <class T>
__global__ void k_entry_sums(index_t rows, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                             const T* __restrict__ va, double* partials) {
  const int lane = int(threadIdx.x) % kLanes;
  double v[2] = {0.0, 0.0};
  const std::int64_t stride = std::int64_t(gridDim.x) * kRowsPerBlock;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes; i < rows; i += stride)
    for (index_t k = rp[i] + lane; k < rp[i + 1]; k += kLanes) {
      const double a = double(va[k]);
      v[0] += a;
      if (ci[k] == i) v[1] += a;
    }
  block_partial<2, kThreads>(v, partials, blockIdx.x);
}

// dm_i = sqrt(a_ii²), 0 without a diagonal entry: amg::strength_graph's node magnitude for b = 1.
template <class T>
__global__ void k_node_magnitude(index_t rows, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                                 const T* __restrict__ va, double* dm) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    double d = 0;
    for (index_t k = rp[i]; k < rp[i + 1]; ++k)
      if (ci[k] == i) d = double(va[k]);
    dm[i] = sqrt(__dmul_rn(d, d));
  }
}

// A row is isolated when no entry passes |a_ij| ≥ θ·sqrt(dm_i·dm_j) (strength_graph's test, its
// operations in its order). The loop's trip count is the warp's, so every lane reaches the shuffles.
template <class T>
__global__ void k_isolated(index_t rows, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                           const T* __restrict__ va, const double* __restrict__ dm, double theta,
                           unsigned long long* count) {
  const int lane = int(threadIdx.x) % kLanes;
  const std::int64_t warp_first = (std::int64_t(blockIdx.x) * kThreads + (threadIdx.x / 32) * 32) / kLanes;
  const std::int64_t stride = std::int64_t(gridDim.x) * kRowsPerBlock;
  unsigned long long isolated = 0;
  for (std::int64_t w = warp_first; w < rows; w += stride) {
    const std::int64_t i = w + (threadIdx.x % 32) / kLanes;
    int s = 0;
    if (i < rows)
      for (index_t k = rp[i] + lane; k < rp[i + 1] && !s; k += kLanes) {
        const index_t j = ci[k];
        const double v = double(va[k]), acc = __dmul_rn(v, v);
        s = j != i && sqrt(acc) >= __dmul_rn(theta, sqrt(__dmul_rn(dm[i], dm[j]))) && acc > 0;
      }
    for (int m = 1; m < kLanes; m *= 2) s |= __shfl_xor_sync(0xffffffffu, s, m, kLanes);
    isolated += i < rows && lane == 0 && !s;
  }
  isolated = warp_sum(isolated);
  if (threadIdx.x % 32 == 0 && isolated > 0) atomicAdd(count, isolated);
}
}  // namespace

template <class T>
void count_off_diagonal_signs(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                              std::int64_t* off_diagonal, std::int64_t* positive) {
  unsigned long long h[2] = {0, 0};
  if (rows > 0) {
    DeviceArray<unsigned long long> counts(2);
    counts.zero();
    k_sign_count<T><<<grid_for(rows, kRowsPerBlock), kThreads>>>(rows, d_row_ptr, d_col_idx, d_values, counts.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_sign_count");
    counts.download(h, 2);
  }
  *off_diagonal = std::int64_t(h[0]);
  *positive = std::int64_t(h[1]);
}

template <class T>
void sum_entries_and_diagonal(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                              double* all, double* diagonal) {
  *all = 0;
  *diagonal = 0;
  if (rows <= 0) return;
  const unsigned blocks = std::min(grid_for(rows, kRowsPerBlock), 1024u);
  DeviceArray<double> partials(std::size_t(blocks) * 2);
  k_entry_sums<T><<<blocks, kThreads>>>(rows, d_row_ptr, d_col_idx, d_values, partials.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_entry_sums");
  std::vector<double> h(std::size_t(blocks) * 2);
  partials.download(h.data(), h.size());
  for (unsigned b = 0; b < blocks; ++b) {
    *all += h[2 * b];
    *diagonal += h[2 * b + 1];
  }
}

template <class T>
std::int64_t count_isolated_rows(index_t rows, const index_t* d_row_ptr, const index_t* d_col_idx, const T* d_values,
                                 double theta) {
  if (rows <= 0) return 0;
  DeviceArray<double> dm{std::size_t(rows)};
  k_node_magnitude<T><<<grid_for(rows, kThreads), kThreads>>>(rows, d_row_ptr, d_col_idx, d_values, dm.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_node_magnitude");
  DeviceArray<unsigned long long> count(1);
  count.zero();
  k_isolated<T><<<grid_for(rows, kRowsPerBlock), kThreads>>>(rows, d_row_ptr, d_col_idx, d_values, dm.data(), theta,
                                                             count.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_isolated");
  unsigned long long h = 0;
  count.download(&h, 1);
  return std::int64_t(h);
}

template void count_off_diagonal_signs<double>(index_t, const index_t*, const index_t*, const double*, std::int64_t*,
                                               std::int64_t*);
template void count_off_diagonal_signs<float>(index_t, const index_t*, const index_t*, const float*, std::int64_t*,
                                              std::int64_t*);
template void sum_entries_and_diagonal<double>(index_t, const index_t*, const index_t*, const double*, double*,
                                               double*);
template void sum_entries_and_diagonal<float>(index_t, const index_t*, const index_t*, const float*, double*, double*);
template std::int64_t count_isolated_rows<double>(index_t, const index_t*, const index_t*, const double*, double);
template std::int64_t count_isolated_rows<float>(index_t, const index_t*, const index_t*, const float*, double);

}  // namespace krysp::detail
