#pragma once
/// \file spmm_kernels.cuh
/// The SpMM kernels (templates) and the launchers the dispatcher calls. Lane layouts, the
/// reduce-scatter and the merge-path partition are described in spmm_common.hpp; the host tests
/// emulate them with the same index functions.
/// The measurements behind the choices in this file's comments are in docs/tuning.md.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/base/error.hpp"
#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/cuda/load.cuh"
#include "krysp/sparse/cuda/spmm_common.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"

namespace krysp::detail {

// ---- small helpers ----------------------------------------------------------------------------

/// Mask of the S-lane sub-warp holding thread `tid` (S a power of two <= 32).
__device__ __forceinline__ unsigned spmm_subwarp_mask(int S, unsigned tid) {
  return S == 32 ? 0xffffffffu : ((1u << S) - 1u) << ((tid % 32u) & ~unsigned(S - 1));
}

template <int V>
struct StaticLog2 {
  static constexpr int value = V <= 1 ? 0 : 1 + StaticLog2<V / 2>::value;
};
template <>
struct StaticLog2<1> {
  static constexpr int value = 0;
};

/// Loads the valid entries of one vector of X (m of them, 1 <= m <= VW) into x[0..VW), zeros
/// after; never reads past p[m-1]. VEC: p is 16-byte aligned, so full vectors are one 16-byte
/// load (and for float a partial vector of 2 or 3 starts with an 8-byte load).
template <bool VEC>
__device__ __forceinline__ void spmm_load_x(const double* p, int m, double (&x)[2]) {
  if (m >= 2) {
    if constexpr (VEC) {
      const double2 v = __ldg(reinterpret_cast<const double2*>(p));
      x[0] = v.x;
      x[1] = v.y;
    } else {
      x[0] = __ldg(p);
      x[1] = __ldg(p + 1);
    }
  } else {
    x[0] = __ldg(p);
    x[1] = 0;
  }
}
template <bool VEC>
__device__ __forceinline__ void spmm_load_x(const float* p, int m, float (&x)[4]) {
  if (m >= 4) {
    if constexpr (VEC) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(p));
      x[0] = v.x;
      x[1] = v.y;
      x[2] = v.z;
      x[3] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) x[e] = __ldg(p + e);
    }
  } else {
    bool done = false;
    if constexpr (VEC) {
      if (m >= 2) {
        const float2 v = __ldg(reinterpret_cast<const float2*>(p));
        x[0] = v.x;
        x[1] = v.y;
        done = true;
      }
    }
    if (!done) {
      x[0] = __ldg(p);
      x[1] = m >= 2 ? __ldg(p + 1) : 0.0f;
    }
    x[2] = m >= 3 ? __ldg(p + 2) : 0.0f;
    x[3] = 0.0f;
  }
}

/// y = alpha·sum + beta·y (Y; beta = 0 never reads y) or the raw sum (a carry slot).
template <class T>
__device__ __forceinline__ void spmm_put(T* dst, bool axpby, T alpha, T sum, T beta) {
  if (axpby)
    store_axpby(dst, alpha, sum, beta);
  else
    *dst = sum;
}

/// This block's first column chunk and the step to its next one (column tiles over blockIdx.y:
/// spmm_column_tiles).
__device__ __forceinline__ index_t spmm_tile_first(index_t chunk) { return index_t(blockIdx.y) * chunk; }
__device__ __forceinline__ index_t spmm_tile_step(index_t chunk) { return index_t(gridDim.y) * chunk; }

// ---- long rows (SpmmConfig::long_row) ---------------------------------------------------------

/// One long-row piece (spmm_long_pieces_host): its row, nonzeros [b, e), the row's first piece and
/// its number of pieces.
struct LongPiece {
  index_t row, b, e, first, count;
};
__device__ __forceinline__ LongPiece long_piece(const SpmmWorkspaceView& ws, index_t p) {
  const index_t* q = ws.pieces + 5 * std::int64_t(p);
  return {__ldg(q), __ldg(q + 1), __ldg(q + 2), __ldg(q + 3), __ldg(q + 4)};
}

/// The block of piece p has its sub-warps' sums of columns j0 + [0, width) in s_part (sub-warp g at
/// s_part[g·width]). Adds them over the sub-warps (a tree in shared memory, fixed order), then:
/// a row of one piece goes straight to Y; otherwise the piece's sums go to ws.piece_sums, and the
/// block that finishes the row's column tile last (a ticket per row and tile) adds its pieces' sums
/// in a fixed order (G strided sums, then a tree) into Y and resets the ticket. Every thread of the
/// block calls it.
template <class T>
__device__ void long_piece_finish(T* s_part, int subs, int width, index_t j0, index_t N, const LongPiece& pc,
                                  index_t p, const SpmmWorkspaceView& ws, T alpha, T beta, T* __restrict__ Y,
                                  index_t ldy) {
  __shared__ bool s_last;
  const int cols = int(N - j0 < width ? N - j0 : width);
  for (int h = subs / 2; h >= 1; h /= 2) {
    __syncthreads();
    for (int i = int(threadIdx.x); i < h * cols; i += kSpmmBlock) {
      const int g = i / cols, j = i - g * cols;
      s_part[g * width + j] += s_part[(g + h) * width + j];
    }
  }
  __syncthreads();
  T* y = Y + std::int64_t(pc.row) * ldy + j0;
  if (pc.count == 1) {
    for (int j = int(threadIdx.x); j < cols; j += kSpmmBlock) store_axpby(y + j, alpha, s_part[j], beta);
    __syncthreads();  // s_part is refilled by the next chunk
    return;
  }
  T* sums = static_cast<T*>(ws.piece_sums);
  for (int j = int(threadIdx.x); j < cols; j += kSpmmBlock) sums[std::int64_t(p) * N + j0 + j] = s_part[j];
  __threadfence();  // the sums are visible to the other blocks before the ticket counts this one
  __syncthreads();
  unsigned* ticket = ws.tickets + std::int64_t(pc.first) * gridDim.y + blockIdx.y;
  if (threadIdx.x == 0) s_last = atomicAdd(ticket, 1u) == unsigned(pc.count - 1);
  __syncthreads();
  if (s_last) {
    // G threads a column (cols <= 64 here: a chunk), thread g adding pieces g, g + G, ... in order,
    // their sums meeting in a fixed tree: a row of many pieces waits for count / G loads, not count.
    __shared__ T s_fin[kSpmmBlock];
    __threadfence();
    int G = 1;
    while (2 * G * cols <= kSpmmBlock) G *= 2;
    const int j = int(threadIdx.x) % cols, g = int(threadIdx.x) / cols;
    if (g < G) {
      const T* src = sums + std::int64_t(pc.first) * N + j0 + j;
      T s = T(0);
      index_t q = g;
      for (; q + 3 * G < pc.count; q += 4 * G) {  // 4 loads in flight, added in piece order
        T t[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) t[i] = __ldcg(src + std::int64_t(q + i * G) * N);
#pragma unroll
        for (int i = 0; i < 4; ++i) s += t[i];
      }
      for (; q < pc.count; q += G) s += __ldcg(src + std::int64_t(q) * N);
      s_fin[g * cols + j] = s;
    }
    for (int h = G / 2; h >= 1; h /= 2) {
      __syncthreads();
      if (g < h) s_fin[g * cols + j] += s_fin[(g + h) * cols + j];
    }
    __syncthreads();
    if (g == 0) store_axpby(y + j, alpha, s_fin[j], beta);
    if (threadIdx.x == 0) *ticket = 0u;  // every block of the row has counted: ready for the next call
  }
  __syncthreads();  // s_part and s_last are refilled by the next chunk
}

// ---- VDL ----------------------------------------------------------------------------------------

/// Per-lane constants of the VDL layout (spmm_common.hpp).
struct VdlLane {
  int log2q, Q, q;  ///< column lanes
  int log2p, P, p;  ///< nonzero lanes
  int h;            ///< halving steps of the reduce-scatter
  index_t chunk;    ///< columns per chunk: Q·NV·VW
};

template <class T, int NV, int S>
__device__ __forceinline__ VdlLane vdl_lane(int lane, int log2q) {
  constexpr int VW = kSpmmVecWidth<T>;
  constexpr int LOG2M = StaticLog2<NV * VW>::value;
  VdlLane L;
  L.log2q = log2q;
  L.Q = 1 << log2q;
  L.q = lane & (L.Q - 1);
  L.log2p = StaticLog2<S>::value - log2q;
  L.P = 1 << L.log2p;
  L.p = lane >> log2q;
  L.h = vdl_halving_steps(LOG2M, L.log2p);
  L.chunk = index_t(L.Q) * NV * VW;
  return L;
}

/// acc[v·VW + e] += Σ_k a_k · X[c_k, col_v + e] over this lane's nonzeros b+p, b+p+P, ... < e.
template <class T, int NV, bool VEC>
__device__ __forceinline__ void vdl_accumulate(T (&acc)[NV * kSpmmVecWidth<T>], const index_t* __restrict__ col_idx,
                                               const T* __restrict__ values, index_t b, index_t e, const VdlLane& L,
                                               const T* __restrict__ X, index_t ldx, const index_t (&col)[NV],
                                               const int (&m)[NV]) {
  constexpr int VW = kSpmmVecWidth<T>;
#pragma unroll 2
  for (std::int64_t k = std::int64_t(b) + L.p; k < e; k += L.P) {
    const index_t c = load_stream(col_idx + k);
    const T a = load_stream(values + k);
    const T* xr = X + std::int64_t(c) * ldx;
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      if (m[v] > 0) {
        T x[VW];
        spmm_load_x<VEC>(xr + col[v], m[v], x);
#pragma unroll
        for (int t = 0; t < VW; ++t) acc[v * VW + t] += a * x[t];
      }
    }
  }
}

/// The sub-warp reduce-scatter of spmm_common.hpp. Every lane of the sub-warp must call it.
template <class T, int M, int S>
__device__ __forceinline__ void vdl_reduce(T (&acc)[M], unsigned mask, const VdlLane& L) {
  constexpr int LOG2M = StaticLog2<M>::value;
#pragma unroll
  for (int s = 0; s < LOG2M; ++s) {
    if (s < L.h) {
      const bool upper = (L.p >> s) & 1;
      const int lane_off = (1 << s) << L.log2q;
      constexpr int kMaxHalf = M / 2;
#pragma unroll
      for (int t = 0; t < kMaxHalf; ++t) {
        if (t < (M >> (s + 1))) {
          const int hi = t + (M >> (s + 1));
          const T send = upper ? acc[t] : acc[hi];
          const T keep = upper ? acc[hi] : acc[t];
          acc[t] = keep + __shfl_xor_sync(mask, send, lane_off, S);
        }
      }
    }
  }
  // P > M: one live sum per lane, plain butterfly over the remaining bits of p.
  for (int s = L.h; s < L.log2p; ++s) acc[0] += __shfl_xor_sync(mask, acc[0], (1 << s) << L.log2q, S);
}

/// Owners (p < 2^h) write their live sums: dst[col] for col < N.
template <class T, int NV>
__device__ __forceinline__ void vdl_store(const T (&acc)[NV * kSpmmVecWidth<T>], const VdlLane& L, index_t j0,
                                          index_t N, T* dst, bool axpby, T alpha, T beta) {
  constexpr int VW = kSpmmVecWidth<T>;
  constexpr int M = NV * VW;
  if ((L.p >> L.h) != 0) return;
  const int live = M >> L.h;
  const int off = vdl_scatter_offset(L.p, L.h, M);
#pragma unroll
  for (int t = 0; t < M; ++t) {
    if (t < live) {
      const int i = off + t;
      const index_t col = vdl_slot_col(j0, L.q, i / VW, L.Q, VW) + i % VW;
      if (col < N) spmm_put(dst + col, axpby, alpha, acc[t], beta);
    }
  }
}

/// One row segment [b, e): all column chunks; dst is the row of Y (axpby) or a carry slot (raw).
/// Every lane of the sub-warp must call it with the same arguments except the lane's own.
template <class T, int NV, int S>
__device__ __forceinline__ void vdl_segment(const CsrView<T>& A, index_t b, index_t e, index_t N, const VdlLane& L,
                                            unsigned mask, const T* __restrict__ X, index_t ldx, bool x_vec, T* dst,
                                            bool axpby, T alpha, T beta) {
  constexpr int VW = kSpmmVecWidth<T>;
  constexpr int M = NV * VW;
  for (index_t j0 = spmm_tile_first(L.chunk); j0 < N; j0 += spmm_tile_step(L.chunk)) {
    T acc[M];
#pragma unroll
    for (int t = 0; t < M; ++t) acc[t] = T(0);
    index_t col[NV];
    int m[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      col[v] = vdl_slot_col(j0, L.q, v, L.Q, VW);
      m[v] = vdl_valid(N, col[v], VW);
    }
    if (x_vec)
      vdl_accumulate<T, NV, true>(acc, A.col_idx, A.values, b, e, L, X, ldx, col, m);
    else
      vdl_accumulate<T, NV, false>(acc, A.col_idx, A.values, b, e, L, X, ldx, col, m);
    vdl_reduce<T, M, S>(acc, mask, L);
    vdl_store<T, NV>(acc, L, j0, N, dst, axpby, alpha, beta);
  }
}

/// The first two nonzeros of a lean-VDL lane (vdl1_segment): lane p of the P = S / 2^LOG2Q
/// nonzero lanes takes b + p and b + p + P of the row segment [b, e); those past e stay zero.
template <class T>
struct Vdl1Pair {
  index_t c0 = 0, c1 = 0;
  T a0 = T(0), a1 = T(0);
};
template <class T, int S, int LOG2Q>
__device__ __forceinline__ Vdl1Pair<T> vdl1_first_pair(const CsrView<T>& A, index_t b, index_t e, int lane) {
  constexpr int P = S >> LOG2Q;
  const int p = lane >> LOG2Q;
  Vdl1Pair<T> f;
  const index_t n = e - b - p;
  if (n > 0) f.c0 = load_stream(A.col_idx + b + p), f.a0 = load_stream(A.values + b + p);
  if (n > P) f.c1 = load_stream(A.col_idx + b + p + P), f.a1 = load_stream(A.values + b + p + P);
  return f;
}

/// The lean VDL segment: a single chunk (N <= Q·NV·VW) with Q = 2^LOG2Q column lanes, everything
/// compile-time. Same lane layout, order of additions and reduce-scatter as vdl_segment
/// (spmm_common.hpp), with a fraction of its instructions: for short rows (N = 2 on a stencil) the
/// kernels are bound by instructions per row, not by memory. Every lane of the sub-warp must call
/// it (with FIRST, `first` from vdl1_first_pair). Tried and dropped (docs/tuning.md, "Lean VDL:
/// variants dropped"): an ELL copy of the matrix read without the row offsets (one dependent trip
/// to memory less), no faster; and one thread a row (S = 1, no reduction, 4 nonzeros' loads issued
/// together), which the best other candidate beat 3-5x.
template <class T, int NV, int S, bool VEC, int LOG2Q = 0, bool FIRST = false>
__device__ __forceinline__ void vdl1_segment(const CsrView<T>& A, index_t b, index_t e, index_t N, int lane,
                                             unsigned mask, const T* __restrict__ X, index_t ldx, T* dst, bool axpby,
                                             T alpha, T beta, Vdl1Pair<T> first = {}) {
  constexpr int VW = kSpmmVecWidth<T>;
  constexpr int M = NV * VW, Q = 1 << LOG2Q, P = S >> LOG2Q;
  constexpr int LOG2M = StaticLog2<M>::value, LOG2P = StaticLog2<S>::value - LOG2Q;
  constexpr int H = LOG2M < LOG2P ? LOG2M : LOG2P;
  const int q = lane & (Q - 1), p = lane >> LOG2Q;  // column lane, nonzero lane
  int m[NV];
#pragma unroll
  for (int v = 0; v < NV; ++v) m[v] = vdl_valid(N, vdl_slot_col(0, q, v, Q, VW), VW);
  T acc[M];
#pragma unroll
  for (int t = 0; t < M; ++t) acc[t] = T(0);
  const T* xq = X + q * VW;  // slot v of this lane: xq + v·Q·VW
  // acc += a0·X[c0, cols], then (two) a1·X[c1, cols]: both rows of X in flight together
  auto add = [&](index_t c0, T a0, index_t c1, T a1, bool two) {
    const T* x0 = xq + std::int64_t(c0) * ldx;
    const T* x1 = xq + std::int64_t(c1) * ldx;
#pragma unroll
    for (int v = 0; v < NV; ++v) {
      if (m[v] > 0) {
        T xa[VW], xb[VW];
        spmm_load_x<VEC>(x0 + v * Q * VW, m[v], xa);
        if (two) spmm_load_x<VEC>(x1 + v * Q * VW, m[v], xb);
#pragma unroll
        for (int t = 0; t < VW; ++t) acc[v * VW + t] += a0 * xa[t];
        if (two) {
#pragma unroll
          for (int t = 0; t < VW; ++t) acc[v * VW + t] += a1 * xb[t];
        }
      }
    }
  };
  // This lane's nonzeros: b + p, b + p + P, ...; n counts down (no index overflow). FIRST: the
  // first two were loaded already (vdl1_first_pair). Without FIRST the loop is the one from
  // before early loads: taking the first pair apart in every call cost 3.7% without early loads
  // (geomean of the small cases, up to 15%: docs/tuning.md).
  index_t n = e - b - p;
  const index_t* cp = A.col_idx + b + p;
  const T* vp = A.values + b + p;
  if constexpr (FIRST) {
    if (n > P) {
      add(first.c0, first.a0, first.c1, first.a1, true);
      n -= 2 * P, cp += 2 * P, vp += 2 * P;
    } else {
      if (n > 0) add(first.c0, first.a0, 0, T(0), false);
      n = 0;
    }
  }
  for (; n > P; n -= 2 * P, cp += 2 * P, vp += 2 * P)  // two nonzeros in flight
    add(load_stream(cp), load_stream(vp), load_stream(cp + P), load_stream(vp + P), true);
  if (n > 0) add(load_stream(cp), load_stream(vp), 0, T(0), false);
  // reduce-scatter over the nonzero lanes (lane offsets in units of Q)
#pragma unroll
  for (int s = 0; s < H; ++s) {
    const bool upper = (p >> s) & 1;
#pragma unroll
    for (int t = 0; t < (M >> (s + 1)); ++t) {
      const int hi = t + (M >> (s + 1));
      const T send = upper ? acc[t] : acc[hi];
      const T keep = upper ? acc[hi] : acc[t];
      acc[t] = keep + __shfl_xor_sync(mask, send, (1 << s) << LOG2Q, S);
    }
  }
#pragma unroll
  for (int s = H; s < LOG2P; ++s) acc[0] += __shfl_xor_sync(mask, acc[0], (1 << s) << LOG2Q, S);
  if ((p >> H) != 0) return;
  const int off = vdl_scatter_offset(p, H, M);
#pragma unroll
  for (int t = 0; t < (M >> H); ++t) {
    const int i = off + t;
    const index_t col = vdl_slot_col(0, q, i / VW, Q, VW) + i % VW;
    if (col < N) spmm_put(dst + col, axpby, alpha, acc[t], beta);
  }
}

/// Long-row piece p (SpmmConfig::long_row) with the lean VDL layout: the block's sub-warps take
/// contiguous slices of the piece (csc_slice), each summed by vdl1_segment into its row of
/// s_part, then long_piece_finish. Every thread of the block calls it.
template <class T, int NV, int S, bool VEC>
__device__ void vdl1_long_piece(index_t p, const CsrView<T>& A, index_t N, const SpmmWorkspaceView& ws, T alpha,
                                const T* __restrict__ X, index_t ldx, T beta, T* __restrict__ Y, index_t ldy) {
  constexpr int M = NV * kSpmmVecWidth<T>, SUBS = kSpmmBlock / S;
  __shared__ T s_part[SUBS * M];
  const LongPiece pc = long_piece(ws, p);
  const int g = int(threadIdx.x) / S;
  index_t b = 0, e = 0;
  csc_slice(pc.b, pc.e, g, SUBS, &b, &e);
  vdl1_segment<T, NV, S, VEC>(A, b, e, N, int(threadIdx.x % S), spmm_subwarp_mask(S, threadIdx.x), X, ldx,
                              s_part + g * M, false, alpha, beta);
  long_piece_finish(s_part, SUBS, M, 0, N, pc, p, ws, alpha, beta, Y, ldy);
}

/// Row-balanced lean VDL (vdl1_segment): a sub-warp of S lanes per row, 2^LOG2Q of them column
/// lanes. LONG (one column lane only): the first ws.num_pieces blocks take the long rows' pieces
/// (vdl1_long_piece), the others skip those rows. EARLY: A's arrays were last written before the
/// kernel ahead of this one began (SpmmPlan::apply knows), so each lane loads its row's offsets
/// and first two nonzeros while that kernel finishes, and only X (and Y under beta) after the wait.
/// It also lets the next kernel launch once every block has passed its wait (release_next_kernel).
/// Two instantiations, not a runtime switch: with the release instruction present but skipped,
/// the CSC row kernel took 1-3% longer than without it on small matrices.
template <class T, int NV, int S, bool VEC, bool LONG, int LOG2Q, bool EARLY>
__global__ void __launch_bounds__(kSpmmBlock)
    spmm_vdl1_row_kernel(CsrView<T> A, index_t N, T alpha, const T* __restrict__ X, index_t ldx, T beta,
                         T* __restrict__ Y, index_t ldy, SpmmWorkspaceView ws) {
  static_assert(!LONG || LOG2Q == 0, "long-row pieces have one column lane");
  if constexpr (!EARLY) wait_for_previous_kernel();  // launched overlapped: no memory access before this
  std::int64_t block = blockIdx.x;
  if constexpr (LONG) {
    if (block < ws.num_pieces) {
      if constexpr (EARLY) {
        wait_for_previous_kernel();
        release_next_kernel();
      }
      return vdl1_long_piece<T, NV, S, VEC>(index_t(block), A, N, ws, alpha, X, ldx, beta, Y, ldy);
    }
    block -= ws.num_pieces;
  }
  const std::int64_t row = (block * kSpmmBlock + threadIdx.x) / S;
  if (row >= A.rows) return;  // whole sub-warps leave together
  const int lane = int(threadIdx.x % S);
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const index_t b = __ldg(A.row_ptr + row), e = __ldg(A.row_ptr + row + 1);
  T* const y = Y + row * ldy;
  if constexpr (EARLY) {
    const Vdl1Pair<T> first = vdl1_first_pair<T, S, LOG2Q>(A, b, e, lane);
    wait_for_previous_kernel();  // X and Y only after this
    release_next_kernel();
    if (LONG && e - b > ws.long_min) return;  // a long row: its pieces' blocks
    vdl1_segment<T, NV, S, VEC, LOG2Q, true>(A, b, e, N, lane, mask, X, ldx, y, true, alpha, beta, first);
  } else {
    if (LONG && e - b > ws.long_min) return;
    vdl1_segment<T, NV, S, VEC, LOG2Q>(A, b, e, N, lane, mask, X, ldx, y, true, alpha, beta);
  }
}

/// Row-balanced VDL: sub-warp of S lanes per row.
template <class T, int NV, int S>
__global__ void __launch_bounds__(kSpmmBlock)
    spmm_vdl_row_kernel(CsrView<T> A, index_t N, int log2q, T alpha, const T* __restrict__ X, index_t ldx, T beta,
                        T* __restrict__ Y, index_t ldy, bool x_vec) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t row = (std::int64_t(blockIdx.x) * kSpmmBlock + threadIdx.x) / S;
  if (row >= A.rows) return;  // whole sub-warps leave together
  const int lane = int(threadIdx.x % S);
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const VdlLane L = vdl_lane<T, NV, S>(lane, log2q);
  const index_t b = A.row_ptr[row], e = A.row_ptr[row + 1];
  vdl_segment<T, NV, S>(A, b, e, N, L, mask, X, ldx, x_vec, Y + row * ldy, true, alpha, beta);
}

/// Nonzero-balanced VDL: one warp per merge-path unit, its rows round-robin over the 32/S
/// sub-warps. LEAN: the vdl1_segment path (Q = 1, N <= NV·VW).
template <class T, int NV, int S, bool LEAN>
__global__ void __launch_bounds__(kSpmmBlock)
    spmm_vdl_nnz_kernel(CsrView<T> A, index_t N, int log2q, SpmmWorkspaceView ws, T alpha, const T* __restrict__ X,
                        index_t ldx, T beta, T* __restrict__ Y, index_t ldy, bool x_vec) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t unit = (std::int64_t(blockIdx.x) * kSpmmBlock + threadIdx.x) / 32;
  if (unit >= ws.units) return;  // whole warps leave together
  const index_t u = index_t(unit);
  const index_t i0 = ws.unit_row[u], k0 = ws.unit_nnz[u], i1 = ws.unit_row[u + 1], k1 = ws.unit_nnz[u + 1];
  const int lane = int(threadIdx.x % S);
  const int g = int(threadIdx.x % 32) / S;
  constexpr int G = 32 / S;
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const VdlLane L = vdl_lane<T, NV, S>(lane, log2q);
  const std::int64_t last = i1 < A.rows ? i1 : A.rows - 1;
  T* carries = static_cast<T*>(ws.carries);
  for (std::int64_t r = std::int64_t(i0) + g; r <= last; r += G) {
    const index_t rs = A.row_ptr[r], re = A.row_ptr[r + 1];
    const index_t b = rs > k0 ? rs : k0, e = re < k1 ? re : k1;
    const SpmmDest d = spmm_unit_dest(index_t(r), i0, k0, i1, rs);
    T* dst = d == SpmmDest::Direct ? Y + r * ldy : carries + spmm_carry_offset(d, u, ws.units, N);
    const bool axpby = d == SpmmDest::Direct;
    if constexpr (LEAN) {
      if (x_vec)
        vdl1_segment<T, NV, S, true>(A, b, e, N, lane, mask, X, ldx, dst, axpby, alpha, beta);
      else
        vdl1_segment<T, NV, S, false>(A, b, e, N, lane, mask, X, ldx, dst, axpby, alpha, beta);
    } else {
      vdl_segment<T, NV, S>(A, b, e, N, L, mask, X, ldx, x_vec, dst, axpby, alpha, beta);
    }
  }
}

// ---- CSC ----------------------------------------------------------------------------------------

// The CSC kernels with B > 1 are declared for at least 2 blocks an SM (__launch_bounds__), which
// lets ptxas use up to 128 registers: without it, it kept their walks at 64 and spilled.

/// The column a CSC lane loads for its column col (ok: col < N): col itself, or column 0 past N,
/// which every X has. Lanes past N thus load unconditionally (no branch per pair) and keep sums
/// that are never stored. For the batched walks (B > 1) of small launches, which issue-rate
/// bounds: ncu, ex15 N = 16, csc-row/s16 ran 2.7 M instructions where cuSPARSE ALG3 ran 1.0 M.
__device__ __forceinline__ index_t csc_load_col(index_t col, bool ok) { return ok ? col : 0; }

/// x[c] = this lane's entries of an X row, at xc[c] + off (xc[c]: X + the lane's load column c,
/// csc_load_col); PV: the two adjacent columns of a paired lane (csc_paired) in one load.
template <class T, int NC, bool PV>
__device__ __forceinline__ void csc_load_x(T (&x)[NC], const T* const (&xc)[NC], std::int64_t off) {
  if constexpr (PV) {
    static_assert(NC == 2, "paired columns come two a lane");
    const auto v = load_cached_pair(xc[0] + off);
    x[0] = v.x;
    x[1] = v.y;
  } else {
#pragma unroll
    for (int c = 0; c < NC; ++c) x[c] = load_cached(xc[c] + off);
  }
}

/// o[0..B) = p[0..B) from shared memory in 16-byte loads (p 16-byte aligned, B a multiple of the
/// entries per load): 32-bit entries (indices, float) four at a time, doubles two.
template <class E, int B>
__device__ __forceinline__ void load_shared_vec(const E* p, E (&o)[B]) {
  if constexpr (sizeof(E) == 8) {
    static_assert(B % 2 == 0, "two 64-bit entries a load");
#pragma unroll
    for (int i = 0; i < B; i += 2) {
      const double2 v = *reinterpret_cast<const double2*>(p + i);
      o[i] = v.x, o[i + 1] = v.y;
    }
  } else {
    static_assert(sizeof(E) == 4 && B % 4 == 0, "four 32-bit entries a load");
    using V = std::conditional_t<std::is_same_v<E, float>, float4, int4>;
#pragma unroll
    for (int i = 0; i < B; i += 4) {
      const V v = *reinterpret_cast<const V*>(p + i);
      o[i] = v.x, o[i + 1] = v.y, o[i + 2] = v.z, o[i + 3] = v.w;
    }
  }
}

/// acc[c] += Σ_t a_t · X[c_t, col[c]] over the cnt (column, value) pairs sc[t], sv[t] in shared
/// memory. B = 1: a plain loop (unrolled by 4), for launches that fill the GPU, where other warps
/// hide the load latency; B > 1: B pairs at a time with all their X loads issued before any
/// addition, for small launches, where the chain of one row is the whole kernel
/// (spmm_csc_batch_max_threads). Additions in pair order either way. PADDED (B > 1): the slots are
/// 16-byte aligned and hold harmless pairs (column 0) up to the next multiple of B past cnt, so a
/// batch reads its B pairs with vector loads and no clamp (a third of the shared-memory reads);
/// they are loaded, never added.
template <class T, int NC, int B, bool PV, bool PADDED = false>
__device__ __forceinline__ void csc_walk(T (&acc)[NC], const index_t* sc, const T* sv, int cnt,
                                         const T* __restrict__ X, index_t ldx, const index_t (&col)[NC],
                                         const bool (&ok)[NC]) {
  if constexpr (B == 1) {
#pragma unroll 4
    for (int t = 0; t < cnt; ++t) {
      const T a = sv[t];
      const T* xr = X + std::int64_t(sc[t]) * ldx;
      if constexpr (PV) {  // ok[0] == ok[1]
        if (ok[0]) {
          const auto v = load_cached_pair(xr + col[0]);
          acc[0] += a * v.x;
          acc[1] += a * v.y;
        }
      } else {
#pragma unroll
        for (int c = 0; c < NC; ++c)
          if (ok[c]) acc[c] += a * load_cached(xr + col[c]);
      }
    }
  } else {
    const T* xc[NC];  // this lane's column of X: a pair's load is one multiply-add away
#pragma unroll
    for (int c = 0; c < NC; ++c) xc[c] = X + csc_load_col(col[c], ok[c]);
    // One loop for all batches: a separate one for full batches would diverge between the
    // sub-warps of a warp, whose rows differ in length (N = 8: 5-12% slower on rows of 5-15).
    // Full batches only where the sub-warp is the whole warp (a runtime switch) were 2-3% faster
    // at N = 32 / 64 but made the S < 32 code slower too (aft01 at N = 16: 1.2x), with the same
    // geometric means (docs/tuning.md).
    for (int t0 = 0; t0 < cnt; t0 += B) {
      T a[B], x[B][NC];
      index_t ci[B];
      if constexpr (PADDED) {
        load_shared_vec(sc + t0, ci);
        load_shared_vec(sv + t0, a);
      } else {
#pragma unroll
        for (int i = 0; i < B; ++i) {
          const int t = min(t0 + i, cnt - 1);  // past the end: the last pair again, not added
          ci[i] = sc[t];
          a[i] = sv[t];
        }
      }
#pragma unroll
      for (int i = 0; i < B; ++i) csc_load_x<T, NC, PV>(x[i], xc, std::int64_t(ci[i]) * ldx);
#pragma unroll
      for (int i = 0; i < B; ++i)
        if (t0 + i < cnt) {
#pragma unroll
          for (int c = 0; c < NC; ++c) acc[c] += a[i] * x[i][c];
        }
    }
  }
}

/// A lane's first (column, value) pair of a row segment [b, e) in the CSC layout: nonzero b + lane
/// (zero past e).
template <class T>
struct CscPair {
  index_t c = 0;
  T v = T(0);
};
template <class T>
__device__ __forceinline__ CscPair<T> csc_first_pair(const CsrView<T>& A, index_t b, index_t e, int lane) {
  CscPair<T> f;
  if (std::int64_t(b) + lane < e) f.c = load_stream(A.col_idx + b + lane), f.v = load_stream(A.values + b + lane);
  return f;
}

/// acc[c] += Σ_k a_k · X[c_k, col[c]] over the nonzeros [b, e): the (col, val) pairs are cached S
/// at a time in this sub-warp's slots s_col/s_val (one coalesced load), then walked (csc_walk).
/// Every lane of the sub-warp calls it. `first`: this lane's first pair, loaded already (B > 1).
template <class T, int NC, int B, bool PV>
__device__ __forceinline__ void csc_accumulate(T (&acc)[NC], const CsrView<T>& A, index_t b, index_t e, int lane,
                                               int S, unsigned mask, index_t* s_col, T* s_val,
                                               const T* __restrict__ X, index_t ldx, const index_t (&col)[NC],
                                               const bool (&ok)[NC], const CscPair<T>* first) {
  if constexpr (B > 1) {
    // Small launches: the slots past cnt are padded with column 0 (csc_walk PADDED; B <= S,
    // launch_b, so a batch stays within the sub-warp's S slots), and the next round's pair is
    // loaded while this round is walked: a row of several rounds waits once for its pairs.
    const CscPair<T> f = first ? *first : csc_first_pair(A, b, e, lane);
    index_t nc = f.c;
    T nv = f.v;
    for (std::int64_t kk = b; kk < e; kk += S) {
      const int cnt = e - kk < S ? int(e - kk) : S;
      s_col[lane] = lane < cnt ? nc : 0;
      s_val[lane] = lane < cnt ? nv : T(0);
      __syncwarp(mask);
      if (kk + S + lane < e) {
        nc = load_stream(A.col_idx + kk + S + lane);
        nv = load_stream(A.values + kk + S + lane);
      }
      csc_walk<T, NC, B, PV, true>(acc, s_col, s_val, cnt, X, ldx, col, ok);
      __syncwarp(mask);  // the slots are refilled next round
    }
  } else {
    for (std::int64_t kk = b; kk < e; kk += S) {
      const int cnt = e - kk < S ? int(e - kk) : S;
      if (lane < cnt) {
        s_col[lane] = load_stream(A.col_idx + kk + lane);
        s_val[lane] = load_stream(A.values + kk + lane);
      }
      __syncwarp(mask);
      csc_walk<T, NC, B, PV>(acc, s_col, s_val, cnt, X, ldx, col, ok);
      __syncwarp(mask);  // the slots are refilled next round
    }
  }
}

/// This lane's columns of the chunk at j0 (CSC layout): col[c], ok[c] (col[c] < N), and their
/// sums acc[c] set to zero.
template <class T, int NC, bool PV>
__device__ __forceinline__ void csc_lane_columns(index_t (&col)[NC], bool (&ok)[NC], T (&acc)[NC], index_t j0,
                                                 int lane, int S, index_t N) {
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    col[c] = csc_col(j0, lane, c, S, PV);
    ok[c] = col[c] < N;
    acc[c] = T(0);
  }
}

/// This lane's sums over the nonzeros [b, e) for its columns of the chunk at j0 (CSC layout):
/// col[c], ok[c] (col[c] < N) and acc[c]. Every lane of the sub-warp calls it (`first`:
/// csc_accumulate).
template <class T, int NC, int B, bool PV>
__device__ __forceinline__ void csc_chunk(T (&acc)[NC], index_t (&col)[NC], bool (&ok)[NC], index_t j0,
                                          const CsrView<T>& A, index_t b, index_t e, index_t N, int lane, int S,
                                          unsigned mask, index_t* s_col, T* s_val, const T* __restrict__ X,
                                          index_t ldx, const CscPair<T>* first = nullptr) {
  csc_lane_columns<T, NC, PV>(col, ok, acc, j0, lane, S, N);
  csc_accumulate<T, NC, B, PV>(acc, A, b, e, lane, S, mask, s_col, s_val, X, ldx, col, ok, first);
}

/// One row segment [b, e) with the CSC layout, this block's column chunks; dst is the row of Y
/// (axpby) or a carry slot (raw). Every lane of the sub-warp calls it. `first`: this lane's first
/// pair, loaded already (B > 1), for the first chunk.
template <class T, int NC, int B, bool PV>
__device__ __forceinline__ void csc_segment(const CsrView<T>& A, index_t b, index_t e, index_t N, int lane, int S,
                                            unsigned mask, index_t* s_col, T* s_val, const T* __restrict__ X,
                                            index_t ldx, T* dst, bool axpby, T alpha, T beta,
                                            const CscPair<T>* first = nullptr) {
  const index_t chunk = index_t(S) * NC;
  for (index_t j0 = spmm_tile_first(chunk); j0 < N; j0 += spmm_tile_step(chunk), first = nullptr) {
    T acc[NC];
    index_t col[NC];
    bool ok[NC];
    csc_chunk<T, NC, B, PV>(acc, col, ok, j0, A, b, e, N, lane, S, mask, s_col, s_val, X, ldx, first);
#pragma unroll
    for (int c = 0; c < NC; ++c)
      if (ok[c]) spmm_put(dst + col[c], axpby, alpha, acc[c], beta);
  }
}

/// Long-row piece p (SpmmConfig::long_row) with the CSC layout: the block's sub-warps take
/// contiguous slices of the piece (csc_slice, kSpmmLongSlicePairs pairs each), each summed by
/// csc_chunk into its row of s_part, then long_piece_finish, chunk after chunk of this block's
/// column tile. Every thread of the block calls it.
template <class T, int NC, int B, bool PV>
__device__ void csc_long_piece(index_t p, const CsrView<T>& A, index_t N, int log2s, const SpmmWorkspaceView& ws,
                               index_t* s_col, T* s_val, T alpha, const T* __restrict__ X, index_t ldx, T beta,
                               T* __restrict__ Y, index_t ldy) {
  __shared__ T s_part[kSpmmBlock * NC];
  const LongPiece pc = long_piece(ws, p);
  const int S = 1 << log2s, subs = kSpmmBlock >> log2s;
  const int lane = int(threadIdx.x) & (S - 1), g = int(threadIdx.x) >> log2s;
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  index_t b = 0, e = 0;
  csc_slice(pc.b, pc.e, g, subs, &b, &e);
  const index_t chunk = index_t(S) * NC;
  for (index_t j0 = spmm_tile_first(chunk); j0 < N; j0 += spmm_tile_step(chunk)) {  // same trips in the block
    T acc[NC];
    index_t col[NC];
    bool ok[NC];
    csc_chunk<T, NC, B, PV>(acc, col, ok, j0, A, b, e, N, lane, S, mask, s_col + g * S, s_val + g * S, X, ldx);
#pragma unroll
    for (int c = 0; c < NC; ++c) s_part[g * chunk + (col[c] - j0)] = acc[c];
    long_piece_finish(s_part, subs, int(chunk), j0, N, pc, p, ws, alpha, beta, Y, ldy);
  }
}

/// Row-balanced CSC: sub-warp of S = 2^log2s lanes per row. Block b takes the R·(256/S)
/// consecutive rows from b·R·(256/S); in round r its sub-warps work on consecutive rows, so that
/// X rows shared by neighbouring matrix rows are reused from L1. LONG: the first ws.num_pieces
/// blocks take the long rows' pieces (csc_long_piece), the others skip those rows. EARLY (B > 1)
/// as in spmm_vdl1_row_kernel: the first row's offsets and each lane's first pair are loaded
/// before the wait.
template <class T, int NC, int B, bool PV, bool LONG, bool EARLY>
__global__ void __launch_bounds__(kSpmmBlock, B > 1 ? 2 : 0)
    spmm_csc_row_kernel(CsrView<T> A, index_t N, int log2s, int R, T alpha, const T* __restrict__ X, index_t ldx,
                        T beta, T* __restrict__ Y, index_t ldy, SpmmWorkspaceView ws) {
  static_assert(!EARLY || B > 1, "early loads feed the batched walk");
  if constexpr (!EARLY) wait_for_previous_kernel();    // launched overlapped: no memory access before this
  __shared__ __align__(16) index_t s_col[kSpmmBlock];  // 16-byte aligned: csc_walk PADDED
  __shared__ __align__(16) T s_val[kSpmmBlock];
  std::int64_t block = blockIdx.x;
  if constexpr (LONG) {
    if (block < ws.num_pieces) {
      if constexpr (EARLY) {
        wait_for_previous_kernel();
        release_next_kernel();
      }
      return csc_long_piece<T, NC, B, PV>(index_t(block), A, N, log2s, ws, s_col, s_val, alpha, X, ldx, beta, Y, ldy);
    }
    block -= ws.num_pieces;
  }
  const int S = 1 << log2s;
  const int subs = kSpmmBlock >> log2s;
  const int lane = int(threadIdx.x) & (S - 1);
  const int base = int(threadIdx.x) - lane;
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const std::int64_t first = block * subs * R + (int(threadIdx.x) >> log2s);
  const bool pre = EARLY && first < A.rows;
  index_t b0 = 0, e0 = 0;
  CscPair<T> p0;
  if (pre) {
    b0 = __ldg(A.row_ptr + first), e0 = __ldg(A.row_ptr + first + 1);
    p0 = csc_first_pair(A, b0, e0, lane);
  }
  if constexpr (EARLY) {
    wait_for_previous_kernel();  // X and Y only after this
    release_next_kernel();
  }
  for (int r = 0; r < R; ++r) {
    const std::int64_t row = first + std::int64_t(r) * subs;
    if (row >= A.rows) return;  // whole sub-warps leave together
    const bool loaded = pre && r == 0;
    const index_t b = loaded ? b0 : A.row_ptr[row], e = loaded ? e0 : A.row_ptr[row + 1];
    if (LONG && e - b > ws.long_min) continue;  // a long row: its pieces' blocks
    csc_segment<T, NC, B, PV>(A, b, e, N, lane, S, mask, s_col + base, s_val + base, X, ldx, Y + row * ldy, true, alpha,
                              beta, loaded ? &p0 : nullptr);
  }
}

/// Staged CscNnz: one sub-warp's rows [ra, rb) of a unit staged in shared memory (row offsets
/// rp[r − i0] for r in [i0, i1], pairs sc/sv from nonzero k0), walked as one stream of nonzeros
/// in batches of kSpmmCscStreamBatch whose X loads are all issued before any addition, across row
/// ends: a row's sum is stored when the walk passes its end. Few rounds of loads per unit, not one
/// per row. Additions in nonzero order within a row, as in csc_segment.
template <class T, int NC, bool PV>
__device__ __forceinline__ void csc_stream_rows(index_t ra, index_t rb, const index_t* rp, const index_t* sc,
                                                const T* sv, index_t i0, index_t k0, index_t i1, index_t k1,
                                                index_t u, index_t N, int lane, int S, const SpmmWorkspaceView& ws,
                                                T alpha, const T* __restrict__ X, index_t ldx, T beta,
                                                T* __restrict__ Y, index_t ldy) {
  constexpr int B = kSpmmCscStreamBatch;
  if (ra >= rb) return;
  T* carries = static_cast<T*>(ws.carries);
  auto row_end = [&](index_t r) { return r < i1 ? rp[r - i0 + 1] : k1; };
  const index_t kb = rp[ra - i0] > k0 ? rp[ra - i0] : k0, ke = row_end(rb - 1);
  const index_t chunk = index_t(S) * NC;
  for (index_t j0 = spmm_tile_first(chunk); j0 < N; j0 += spmm_tile_step(chunk)) {
    index_t col[NC];
    bool ok[NC];
    T acc[NC];
    csc_lane_columns<T, NC, PV>(col, ok, acc, j0, lane, S, N);
    const T* xc[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c) xc[c] = X + csc_load_col(col[c], ok[c]);
    index_t r = ra, re = row_end(ra);
    auto put_row = [&] {  // row r is complete: its sums go to Y or a carry slot; then the next row
      const SpmmDest d = spmm_unit_dest(r, i0, k0, i1, rp[r - i0]);
      T* dst = d == SpmmDest::Direct ? Y + std::int64_t(r) * ldy : carries + spmm_carry_offset(d, u, ws.units, N);
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (ok[c]) spmm_put(dst + col[c], d == SpmmDest::Direct, alpha, acc[c], beta);
        acc[c] = T(0);
      }
      ++r;
      if (r < rb) re = row_end(r);
    };
    for (index_t t0 = kb; t0 < ke; t0 += B) {
      T x[B][NC];
#pragma unroll
      for (int i = 0; i < B; ++i) {
        const index_t t = t0 + i < ke ? t0 + i : t0;  // past the end: nonzero t0 again, not added
        csc_load_x<T, NC, PV>(x[i], xc, std::int64_t(sc[t - k0]) * ldx);
      }
#pragma unroll
      for (int i = 0; i < B; ++i) {
        const index_t t = t0 + i;
        if (t < ke) {
          while (t >= re) put_row();  // rows that end before nonzero t, empty ones included
          const T a = sv[t - k0];
#pragma unroll
          for (int c = 0; c < NC; ++c) acc[c] += a * x[i][c];
        }
      }
    }
    while (r < rb) put_row();  // the last row with nonzeros, and empty rows after it
  }
}

/// Nonzero-balanced CSC: one warp per merge-path unit, rows round-robin over the sub-warps.
/// Small launches (B > 1) stage a unit of at most kSpmmCscStaged items first: its row offsets and
/// (column, value) pairs are copied to shared memory with coalesced loads. Then each sub-warp
/// streams through a contiguous share of the unit's rows (csc_stream_rows) when they are short,
/// or walks its rows one by one from shared memory, instead of three dependent trips to memory
/// per row (row offsets, pairs, X).
template <class T, int NC, int B, bool PV>
__global__ void __launch_bounds__(kSpmmBlock, B > 1 ? 2 : 0)
    spmm_csc_nnz_kernel(CsrView<T> A, index_t N, int log2s, SpmmWorkspaceView ws, T alpha, const T* __restrict__ X,
                        index_t ldx, T beta, T* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();                          // launched overlapped: no memory access before this
  __shared__ __align__(16) index_t s_col[kSpmmBlock];  // 16-byte aligned: csc_walk PADDED
  __shared__ __align__(16) T s_val[kSpmmBlock];
  const std::int64_t unit = (std::int64_t(blockIdx.x) * kSpmmBlock + threadIdx.x) / 32;
  if (unit >= ws.units) return;  // whole warps leave together
  const index_t u = index_t(unit);
  const index_t i0 = ws.unit_row[u], k0 = ws.unit_nnz[u], i1 = ws.unit_row[u + 1], k1 = ws.unit_nnz[u + 1];
  const int S = 1 << log2s;
  const int lane = int(threadIdx.x) & (S - 1);
  const int base = int(threadIdx.x) - lane;
  const int g = int(threadIdx.x % 32) >> log2s;
  const int G = 32 >> log2s;
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const std::int64_t last = i1 < A.rows ? i1 : A.rows - 1;
  T* carries = static_cast<T*>(ws.carries);
  if constexpr (B > 1) {
    __shared__ index_t s_rp[kSpmmWarpsPerBlock][kSpmmCscStaged + 1];
    __shared__ index_t s_ucol[kSpmmWarpsPerBlock][kSpmmCscStaged];
    __shared__ T s_uval[kSpmmWarpsPerBlock][kSpmmCscStaged];
    if ((std::int64_t(i1) - i0) + (std::int64_t(k1) - k0) <= kSpmmCscStaged) {  // the same for the whole warp
      const int warp = int(threadIdx.x / 32), wl = int(threadIdx.x % 32);
      for (index_t j = wl; j <= i1 - i0; j += 32) s_rp[warp][j] = __ldg(A.row_ptr + i0 + j);
      for (index_t j = wl; j < k1 - k0; j += 32) {
        s_ucol[warp][j] = load_stream(A.col_idx + k0 + j);
        s_uval[warp][j] = load_stream(A.values + k0 + j);
      }
      __syncwarp();
      const std::int64_t nr = last + 1 - i0;  // rows of the unit, [i0, last]
      if (std::int64_t(k1) - k0 < kSpmmCscStreamMaxRow * nr) {  // short rows: one stream per sub-warp
        csc_stream_rows<T, NC, PV>(index_t(i0 + nr * g / G), index_t(i0 + nr * (g + 1) / G), s_rp[warp], s_ucol[warp],
                               s_uval[warp], i0, k0, i1, k1, u, N, lane, S, ws, alpha, X, ldx, beta, Y, ldy);
        return;
      }
      for (std::int64_t r = std::int64_t(i0) + g; r <= last; r += G) {  // longer rows: a walk per row
        const index_t rs = s_rp[warp][r - i0];                            // row i1 ends at or after k1
        const index_t b = rs > k0 ? rs : k0, e = r < i1 ? s_rp[warp][r - i0 + 1] : k1;
        const SpmmDest d = spmm_unit_dest(index_t(r), i0, k0, i1, rs);
        T* dst = d == SpmmDest::Direct ? Y + r * ldy : carries + spmm_carry_offset(d, u, ws.units, N);
        const index_t chunk = index_t(S) * NC;
        for (index_t j0 = spmm_tile_first(chunk); j0 < N; j0 += spmm_tile_step(chunk)) {
          T acc[NC];
          index_t col[NC];
          bool ok[NC];
          csc_lane_columns<T, NC, PV>(col, ok, acc, j0, lane, S, N);
          csc_walk<T, NC, B, PV>(acc, s_ucol[warp] + (b - k0), s_uval[warp] + (b - k0), int(e - b), X, ldx, col, ok);
#pragma unroll
          for (int c = 0; c < NC; ++c)
            if (ok[c]) spmm_put(dst + col[c], d == SpmmDest::Direct, alpha, acc[c], beta);
        }
      }
      return;
    }
  }
  for (std::int64_t r = std::int64_t(i0) + g; r <= last; r += G) {
    const index_t rs = A.row_ptr[r], re = A.row_ptr[r + 1];
    const index_t b = rs > k0 ? rs : k0, e = re < k1 ? re : k1;
    const SpmmDest d = spmm_unit_dest(index_t(r), i0, k0, i1, rs);
    T* dst = d == SpmmDest::Direct ? Y + r * ldy : carries + spmm_carry_offset(d, u, ws.units, N);
    csc_segment<T, NC, B, PV>(A, b, e, N, lane, S, mask, s_col + base, s_val + base, X, ldx, dst,
                          d == SpmmDest::Direct, alpha, beta);
  }
}

/// Row-balanced CSC with 2^log2k sub-warps per row (ksplit): sub-warp g of the block works on row
/// blockIdx.x·rows_per_block + g / KS, slice g mod KS of its nonzeros (csc_slice); the slices'
/// sums meet in shared memory and the first sub-warp adds them in slice order.
template <class T, int NC, int B, bool PV>
__global__ void __launch_bounds__(kSpmmBlock, B > 1 ? 2 : 0)
    spmm_csc_split_kernel(CsrView<T> A, index_t N, int log2s, int log2k, T alpha, const T* __restrict__ X,
                          index_t ldx, T beta, T* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();                          // launched overlapped: no memory access before this
  __shared__ __align__(16) index_t s_col[kSpmmBlock];  // 16-byte aligned: csc_walk PADDED
  __shared__ __align__(16) T s_val[kSpmmBlock];
  __shared__ T s_sum[NC][kSpmmBlock];
  const int S = 1 << log2s, KS = 1 << log2k;
  const int lane = int(threadIdx.x) & (S - 1);
  const int base = int(threadIdx.x) - lane;
  const int sub = int(threadIdx.x) >> log2s;
  const int slice = sub & (KS - 1);
  const unsigned mask = spmm_subwarp_mask(S, threadIdx.x);
  const std::int64_t row = std::int64_t(blockIdx.x) * ((kSpmmBlock >> log2s) >> log2k) + (sub >> log2k);
  const bool live = row < A.rows;  // no early return: every thread meets the block barriers
  index_t b = 0, e = 0;
  if (live) csc_slice(A.row_ptr[row], A.row_ptr[row + 1], slice, KS, &b, &e);
  const index_t chunk = index_t(S) * NC;
  for (index_t j0 = spmm_tile_first(chunk); j0 < N; j0 += spmm_tile_step(chunk)) {  // same trips in the block
    T acc[NC];
    index_t col[NC];
    bool ok[NC];
    csc_chunk<T, NC, B, PV>(acc, col, ok, j0, A, b, e, N, lane, S, mask, s_col + base, s_val + base, X, ldx);
#pragma unroll
    for (int c = 0; c < NC; ++c) s_sum[c][threadIdx.x] = acc[c];
    __syncthreads();
    if (live && slice == 0) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (!ok[c]) continue;
        T sum = s_sum[c][threadIdx.x];
        for (int q = 1; q < KS; ++q) sum += s_sum[c][threadIdx.x + q * S];
        spmm_put(Y + row * ldy + col[c], true, alpha, sum, beta);
      }
    }
    __syncthreads();  // s_sum is refilled by the next chunk
  }
}

/// A launch with long-row pieces: grid blocks (pieces included) fit a grid, and `tiles` column
/// tiles of `chunk` columns cover all N (one chunk per block: the tickets count per tile).
inline void spmm_require_long_launch(std::int64_t grid, unsigned tiles, index_t chunk, index_t N) {
  KRYSP_REQUIRE(grid <= 0x7fffffff, "SpMM: ", grid, " blocks with long-row pieces exceed the grid");
  KRYSP_REQUIRE(std::int64_t(tiles) * chunk >= N, "SpMM: long-row pieces need N <= ", std::int64_t(tiles) * chunk,
                " (", tiles, " column tiles of ", chunk, "), not N = ", N);
}

// ---- launchers (defined in spmm_vdl.cu / spmm_csc.cu / spmm_seq.cu; all on stream st) ---------------

template <class T>
void spmm_vdl_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st);
/// x_vec: X is vector-aligned (csc_paired: two columns a lane are then loaded together).
template <class T>
void spmm_csc_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st);
/// SeqNnz (thread-sequential merge path, spmm_common.hpp); x_vec: 16-byte loads of X allowed.
template <class T>
void spmm_seq_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st);

}  // namespace krysp::detail
