// One-time work of a plan on the device: row statistics, the nonzero partition, random vectors
// for timing. None of this runs at apply time.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"

namespace krysp::detail {
namespace {

struct StatsAccum {
  unsigned long long sum_sq;
  unsigned int max_len;
  unsigned int empty;
};

/// Σ len², max len, empty rows: block reduction, then integer atomics (exact, so deterministic).
__global__ void __launch_bounds__(256) row_stats_kernel(const index_t* __restrict__ row_ptr, index_t rows,
                                                        StatsAccum* out) {
  unsigned long long sq = 0;
  unsigned int mx = 0, empty = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const unsigned int len = static_cast<unsigned int>(row_ptr[i + 1] - row_ptr[i]);
    sq += static_cast<unsigned long long>(len) * len;
    mx = len > mx ? len : mx;
    empty += len == 0;
  }
  for (int off = 16; off > 0; off /= 2) {
    sq += __shfl_down_sync(0xffffffffu, sq, off);
    mx = max(mx, __shfl_down_sync(0xffffffffu, mx, off));
    empty += __shfl_down_sync(0xffffffffu, empty, off);
  }
  __shared__ StatsAccum warp_acc[8];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_acc[warp] = {sq, mx, empty};
  __syncthreads();
  if (threadIdx.x == 0) {
    StatsAccum t{0, 0, 0};
    for (int w = 0; w < int(blockDim.x / 32); ++w) {
      t.sum_sq += warp_acc[w].sum_sq;
      t.max_len = max(t.max_len, warp_acc[w].max_len);
      t.empty += warp_acc[w].empty;
    }
    atomicAdd(&out->sum_sq, t.sum_sq);
    atomicMax(&out->max_len, t.max_len);
    atomicAdd(&out->empty, t.empty);
  }
}

/// The row that holds nonzero pos (0 <= pos < nnz): upper_bound(row_ptr[0..rows], pos) − 1.
__device__ index_t row_of(const index_t* __restrict__ row_ptr, index_t rows, std::int64_t pos) {
  std::int64_t lo = 0, hi = std::int64_t(rows) + 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (row_ptr[mid] <= pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  return index_t(lo - 1);
}

__global__ void __launch_bounds__(256) nnz_partition_kernel(const index_t* __restrict__ row_ptr, index_t rows,
                                                            index_t nnz, NnzGeometry g, index_t* part,
                                                            index_t* carry_in, unsigned* any_carry) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= g.num_tiles) {
    index_t p;
    if (i == 0)
      p = 0;
    else if (i == g.num_tiles)
      p = rows;
    else
      p = row_of(row_ptr, rows, i * g.tile);
    part[i] = p;
  }
  if (i < g.num_blocks) {
    // Block i writes the row R open at its start (R began before it) if R ends inside block i;
    // then the blocks from the one holding R's start up to i - 1 all carry pieces of R.
    index_t count = 0;
    if (i > 0) {
      const std::int64_t share = std::int64_t(g.warps_per_block) * g.tile;
      const std::int64_t start = i * share;  // < nnz: block i exists
      const index_t r = row_of(row_ptr, rows, start);
      const std::int64_t rb = row_ptr[r];
      const std::int64_t end = min(std::int64_t(nnz), start + share);
      if (rb < start && row_ptr[r + 1] <= end) count = index_t(i - rb / share);
    }
    carry_in[i] = count;
    if (count > 0) atomicOr(any_carry, 1u);
  }
}

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void __launch_bounds__(256) fill_random_kernel(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const double u = double(splitmix64(seed * 0x100000001b3ull + i) >> 11) * 0x1.0p-53;  // [0, 1)
    p[i] = T(2.0 * u - 1.0);
  }
}

}  // namespace

void row_stats_async(const index_t* row_ptr, index_t rows, void* accumulator) {
  static_assert(sizeof(StatsAccum) == kRowStatsBytes, "StatsAccum layout");
  if (rows == 0) return;
  const std::int64_t blocks = std::min<std::int64_t>((std::int64_t(rows) + 255) / 256, 1024);
  row_stats_kernel<<<static_cast<unsigned>(blocks), 256>>>(row_ptr, rows, static_cast<StatsAccum*>(accumulator));
  KRYSP_CUDA_CHECK_LAUNCH("row_stats_kernel");
}

RowStats row_stats_from(index_t rows, index_t nnz, const void* accumulator_copy) {
  StatsAccum h{};
  std::memcpy(&h, accumulator_copy, sizeof h);
  if (rows == 0) return make_row_stats(0, nnz, 0, 0, 0);
  return make_row_stats(rows, nnz, h.sum_sq, index_t(h.max_len), index_t(h.empty));
}

RowStats row_stats_device(const index_t* row_ptr, index_t rows, index_t nnz) {
  if (rows == 0) return make_row_stats(0, nnz, 0, 0, 0);
  // One small accumulator per device for the whole process (plans are made often; cudaMalloc and
  // cudaFree cost more than the reduction itself).
  static std::mutex mu;
  static std::map<int, StatsAccum*> accs;
  std::lock_guard<std::mutex> lock(mu);
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  StatsAccum*& acc = accs[dev];
  if (!acc) acc = static_cast<StatsAccum*>(detail::device_alloc(sizeof(StatsAccum)));
  KRYSP_CUDA_CHECK(cudaMemsetAsync(acc, 0, sizeof(StatsAccum)));
  row_stats_async(row_ptr, rows, acc);
  unsigned char h[kRowStatsBytes];
  KRYSP_CUDA_CHECK(cudaMemcpy(h, acc, sizeof h, cudaMemcpyDeviceToHost));
  return row_stats_from(rows, nnz, h);
}

void* tuning_scratch(std::size_t bytes) {
  static std::mutex mu;
  static std::map<int, std::pair<void*, std::size_t>> buffers;
  std::lock_guard<std::mutex> lock(mu);
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  auto& b = buffers[dev];
  if (b.second < bytes) {
    if (b.first) {
      KRYSP_CUDA_CHECK(cudaDeviceSynchronize());  // nothing may still use the old buffer
      detail::device_free(b.first);
      b = {nullptr, 0};
    }
    b.first = detail::device_alloc(bytes);
    b.second = bytes;
  }
  return b.first;
}

void nnz_partition_device(const index_t* row_ptr, index_t rows, index_t nnz, const NnzGeometry& g, index_t* part,
                          index_t* carry_in, unsigned* any_carry) {
  const std::int64_t n = std::int64_t(g.num_tiles) + 1;
  nnz_partition_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(row_ptr, rows, nnz, g, part, carry_in,
                                                                        any_carry);
  KRYSP_CUDA_CHECK_LAUNCH("nnz_partition_kernel");
}

template <class T>
void fill_random_device(T* p, std::size_t n, std::uint64_t seed) {
  if (n == 0) return;
  const std::size_t blocks = std::min<std::size_t>((n + 255) / 256, 4096);
  fill_random_kernel<T><<<static_cast<unsigned>(blocks), 256>>>(p, n, seed);
  KRYSP_CUDA_CHECK_LAUNCH("fill_random_kernel");
}

template void fill_random_device(double*, std::size_t, std::uint64_t);
template void fill_random_device(float*, std::size_t, std::uint64_t);

}  // namespace krysp::detail
