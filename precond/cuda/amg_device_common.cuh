#pragma once
/// \file amg_device_common.cuh
/// What the GPU AMG set-up (amg_device_setup.cu) and its Lanczos (amg_device_lanczos.cu) share:
/// the launch shape, the reductions' fixed trees (block partials, then one block folds them, so a
/// sum has the same bits for a given n), the lanes a row of the row kernels, and the launch check.
/// Internal: included by those .cu files only; each compiles its own copy (internal linkage).
#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/types.hpp"
#include "krysp/precond/cuda/row_groups.cuh"

namespace krysp::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxPartials = 1024;  // blocks of a reduction: fixed for a given n (deterministic)

inline int blocks_for(std::int64_t n) { return int(std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads)); }
inline int partial_blocks(std::int64_t n) { return int(std::min<std::int64_t>(kMaxPartials, blocks_for(n))); }

// Block partials of a sum or max over i of f(i): one per block, a fixed tree inside the block.
template <bool Max>
__device__ double block_reduce(double v) {
  __shared__ double sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) {
      const double a = sh[threadIdx.x], b = sh[threadIdx.x + s];
      sh[threadIdx.x] = Max ? (b > a ? b : a) : __dadd_rn(a, b);
    }
    __syncthreads();
  }
  return sh[0];
}

// partials[b] = max over i ≡ b (grid stride) of x[i].
__global__ void k_max_partials(index_t n, const double* x, double* partials) {
  double m = 0;  // the values reduced are ≥ 0
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    m = x[i] > m ? x[i] : m;
  const double r = block_reduce<true>(m);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
}

// *out = op over the `count` partials, in a fixed order (one block of kThreads); with root: sqrt
// of the sum. __ldcg: the partials may come from other blocks of the same launch (finish_if_last).
template <bool Max>
__device__ void finish_partials(int count, const double* partials, double* out, bool root) {
  double v = 0;
  for (int b = int(threadIdx.x); b < count; b += blockDim.x) {
    const double p = __ldcg(partials + b);
    v = Max ? (p > v ? p : v) : __dadd_rn(v, p);
  }
  const double r = block_reduce<Max>(v);
  if (threadIdx.x == 0) *out = root ? sqrt(r) : r;
}
template <bool Max>
__global__ void k_finish(int count, const double* partials, double* out, bool root) {
  finish_partials<Max>(count, partials, out, root);
}
// After each block wrote partials[blockIdx.x]: the last block to arrive finishes the sum as
// k_finish does (the same order and operations: the same bits) and sets *counter back to 0 for
// the next launch. One launch where a partial pass and k_finish took two.
__device__ void finish_if_last(const double* partials, double* out, bool root, unsigned* counter) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();  // this block's partial is visible before it is counted
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  finish_partials<false>(int(gridDim.x), partials, out, root);
  if (threadIdx.x == 0) *counter = 0;
}


// Lanes a row for the SpMV-like kernels (the Lanczos SpMV): half the mean row length, rounded up
// to a power of two.
inline int row_lanes(index_t n, index_t nnz) { return pow2_lanes(n > 0 ? 0.5 * double(nnz) / double(n) : 1.0); }
// Lanes a row for the row kernels that fold a row's terms in order (k_diagonal, the strength
// graph, the filtered matrix): one thread a row below 16 entries a row on average, where the
// ordered fold across lanes costs more than the coalescing saves (256^3 Laplacian, 7 a row:
// strength 2.6 ms at one lane, 4.6 ms at four); row_lanes above (level 1, 35 a row: 4.4 → 1.4 ms).
inline int fold_lanes(index_t n, index_t nnz) { return n > 0 && nnz < 16 * std::int64_t(n) ? 1 : row_lanes(n, nnz); }


inline void check_launch(const char* name) { KRYSP_CUDA_CHECK_LAUNCH(name); }


}  // namespace
}  // namespace krysp::detail
