#pragma once
/// \file grid_reduce.cuh
/// Deterministic grid reductions in one launch: each block reduces its share in a fixed tree,
/// writes a partial, and the last block to finish (found with one atomic ticket) sums the
/// partials in index order. No floating-point atomics, so results are bitwise reproducible for a
/// given grid size. Sums are kept in double, also for fp32 data. Used by CG's vector kernels and
/// by the SpMV kernels' fused xᵀy epilogue; the ticket alone (last_block_done) also by the
/// Lanczos and LOBPCG residual kernels, which sum their partials in an order of their own.
#include <cuda_runtime.h>

namespace krysp::detail {

inline constexpr int kReduceBlock = 256;

/// Workspace of a grid reduction: NOUT partials per block and a ticket counter (zero at rest).
struct ReduceWorkspace {
  double* partials;
  unsigned int* ticket;
};

/// Indices of the scalar slots that receive a reduction's NOUT totals.
template <int NOUT>
struct SlotList {
  int at[NOUT];
};

/// Sums v over the block (blockDim.x == BLOCK) in a fixed tree; the totals are valid in thread 0.
template <int NOUT, int BLOCK>
__device__ __forceinline__ void block_sum(double (&v)[NOUT], double (*shared)[BLOCK / 32]) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int j = 0; j < NOUT; ++j) {
    for (int off = 16; off > 0; off /= 2) v[j] += __shfl_down_sync(0xffffffffu, v[j], off);
    if (lane == 0) shared[j][warp] = v[j];
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < NOUT; ++j) {
      v[j] = lane < BLOCK / 32 ? shared[j][lane] : 0.0;
      for (int off = 16; off > 0; off /= 2) v[j] += __shfl_down_sync(0xffffffffu, v[j], off);
    }
  }
  __syncthreads();
}

/// The maximum of v over the block (blockDim.x == BLOCK), returned in every thread (NaNs are
/// skipped, as fmax does). Every thread of the block calls it.
template <int BLOCK>
__device__ __forceinline__ double block_max(double v) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  __shared__ double shared[BLOCK / 32];
  for (int off = 16; off > 0; off /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, off));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < BLOCK / 32; ++w) v = fmax(v, shared[w]);
  __syncthreads();  // before the block's next use of `shared`
  return v;
}

/// The "last block to finish" ticket of one-launch grid reductions. Call from every thread of
/// each of the `count` blocks, after the writes the last block is to read; returns true in every
/// thread of the last block to take the ticket (false in all others), with every block's writes
/// visible to it (read them past L1: __ldcg). The ticket is back to 0 then, ready for the next
/// launch (kernels on one stream run in order).
__device__ __forceinline__ bool last_block_done(unsigned int* ticket, unsigned count) {
  __shared__ bool last;
  __threadfence();  // each thread's writes visible before its block's ticket is taken
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == count - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();  // see every other block's writes
  // Every block has its ticket: no one else touches it in this launch.
  if (threadIdx.x == 0) *ticket = 0;
  return true;
}

/// First half of a grid reduction split over two launches: every thread of the block calls it;
/// thread 0 stores the block's NOUT totals as partial number `index`.
template <int NOUT, int BLOCK>
__device__ __forceinline__ void block_partial(double (&v)[NOUT], double* partials, unsigned index) {
  __shared__ double shared[NOUT][BLOCK / 32];
  block_sum<NOUT, BLOCK>(v, shared);
  if (threadIdx.x == 0)
#pragma unroll
    for (int j = 0; j < NOUT; ++j) partials[index * NOUT + j] = v[j];
}

/// Call from every thread of every block (blockDim.x == BLOCK) with its NOUT values; the block's
/// totals become partial number `index` (< count, one per block). Thread 0 of the last block to
/// finish sums partials 0..count−1 in index order, writes total j to scalars[slots.at[j]] and
/// returns true (false everywhere else), so a caller can act on the totals in the same launch.
template <int NOUT, int BLOCK = kReduceBlock>
__device__ bool grid_sum(double (&v)[NOUT], ReduceWorkspace ws, unsigned index, unsigned count, double* scalars,
                         SlotList<NOUT> slots) {
  __shared__ double shared[NOUT][BLOCK / 32];
  block_sum<NOUT, BLOCK>(v, shared);
  if (threadIdx.x == 0)
#pragma unroll
    for (int j = 0; j < NOUT; ++j) ws.partials[index * NOUT + j] = v[j];
  if (!last_block_done(ws.ticket, count)) return false;
  double t[NOUT];
#pragma unroll
  for (int j = 0; j < NOUT; ++j) t[j] = 0.0;
  for (unsigned b = threadIdx.x; b < count; b += BLOCK)
#pragma unroll
    for (int j = 0; j < NOUT; ++j) t[j] += __ldcg(ws.partials + b * NOUT + j);
  block_sum<NOUT, BLOCK>(t, shared);
  if (threadIdx.x == 0)
#pragma unroll
    for (int j = 0; j < NOUT; ++j) scalars[slots.at[j]] = t[j];
  return threadIdx.x == 0;
}

/// The common case: one partial per block, in blockIdx order.
template <int NOUT>
__device__ bool grid_sum(double (&v)[NOUT], ReduceWorkspace ws, double* scalars, SlotList<NOUT> slots) {
  return grid_sum<NOUT, kReduceBlock>(v, ws, blockIdx.x, gridDim.x, scalars, slots);
}

}  // namespace krysp::detail
