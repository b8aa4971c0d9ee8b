// The thread-sequential merge-path SpMM kernel (SeqNnz) and its launcher: for short, irregular
// rows at small N, where a sub-warp per row leaves most lanes idle. Each lane of a unit's warp
// walks its own slice of the unit's merge path (Merrill & Garland's merge-based SpMV) with all
// the chunk's columns in registers; the pieces of rows that cross lanes are joined by one
// segmented warp scan, and rows that cross units go to the unit's carry slots like the other
// nonzero-balanced kernels (the partition and the fix-up kernel are shared). Layout and order of
// additions: spmm_common.hpp. No floating-point atomics: results are bitwise reproducible.
#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_kernels.cuh"

namespace krysp::detail {

namespace {

/// x[0..W) = X row entries p[0..m) (zeros after; never reads p[m..)). VEC: p is 16-byte aligned
/// when W >= the vector width, else aligned to W entries, so whole vectors are single loads.
template <bool VEC, int W>
__device__ __forceinline__ void seq_load_x(const double* p, int m, double (&x)[W]) {
  if constexpr (W == 1) {
    x[0] = __ldg(p);
  } else {
#pragma unroll
    for (int v = 0; v < W; v += 2) {
      if (VEC && v + 2 <= m) {
        const double2 d = __ldg(reinterpret_cast<const double2*>(p + v));
        x[v] = d.x;
        x[v + 1] = d.y;
      } else {
        x[v] = v < m ? __ldg(p + v) : 0.0;
        x[v + 1] = v + 1 < m ? __ldg(p + v + 1) : 0.0;
      }
    }
  }
}
template <bool VEC, int W>
__device__ __forceinline__ void seq_load_x(const float* p, int m, float (&x)[W]) {
  if constexpr (W == 1) {
    x[0] = __ldg(p);
  } else if constexpr (W == 2) {
    if (VEC && m == 2) {
      const float2 f = __ldg(reinterpret_cast<const float2*>(p));
      x[0] = f.x;
      x[1] = f.y;
    } else {
      x[0] = __ldg(p);
      x[1] = m == 2 ? __ldg(p + 1) : 0.0f;
    }
  } else {
#pragma unroll
    for (int v = 0; v < W; v += 4) {
      if (VEC && v + 4 <= m) {
        const float4 f = __ldg(reinterpret_cast<const float4*>(p + v));
        x[v] = f.x;
        x[v + 1] = f.y;
        x[v + 2] = f.z;
        x[v + 3] = f.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) x[v + e] = v + e < m ? __ldg(p + v + e) : 0.0f;
      }
    }
  }
}

/// Columns j0 + [0, m) of one row: y = alpha·sum + beta·y (axpby) or the raw sums (a carry slot).
template <class T, int W>
__device__ __forceinline__ void seq_put(T* dst, int m, bool axpby, T alpha, const T (&sum)[W], T beta) {
#pragma unroll
  for (int t = 0; t < W; ++t)
    if (t < m) spmm_put(dst + t, axpby, alpha, sum[t], beta);
}

/// Units of at most kSeqStaged items (the derived sizes) take the staged path: the unit's row
/// offsets and (column, value) pairs are copied to shared memory with coalesced loads, the lanes'
/// searches run there, and each lane issues the gathers of all its nonzeros (at most
/// kSeqStaged / 32) before it walks them, instead of one dependent load chain per nonzero (which
/// took 1.6x the time of VDL on a power-law graph: docs/tuning.md).
constexpr int kSeqStaged = 256;
constexpr int kSeqLaneMax = kSeqStaged / 32;

/// row_ptr[i] for the rows [i0, i1] of a unit: from shared memory (staged) or global memory.
struct UnitRowPtr {
  const index_t* staged;  ///< row_ptr[i0 .. i1], or null
  const index_t* global;
  index_t i0;
  __device__ __forceinline__ index_t operator[](index_t i) const {
    return staged ? staged[i - i0] : __ldg(global + i);
  }
};

/// One warp per merge-path unit; lane layout and scan in spmm_common.hpp (SeqNnz).
template <class T, int W, bool VEC>
__global__ void __launch_bounds__(kSpmmBlock)
    spmm_seq_nnz_kernel(CsrView<T> A, index_t N, SpmmWorkspaceView ws, T alpha, const T* __restrict__ X,
                        index_t ldx, T beta, T* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  constexpr unsigned kFull = 0xffffffffu;
  __shared__ index_t s_rp[kSpmmWarpsPerBlock][kSeqStaged + 1];
  __shared__ index_t s_col[kSpmmWarpsPerBlock][kSeqStaged];
  __shared__ T s_val[kSpmmWarpsPerBlock][kSeqStaged];
  const std::int64_t unit = (std::int64_t(blockIdx.x) * kSpmmBlock + threadIdx.x) / 32;
  if (unit >= ws.units) return;  // whole warps leave together
  const index_t u = index_t(unit);
  const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
  const index_t i0 = ws.unit_row[u], k0 = ws.unit_nnz[u], i1 = ws.unit_row[u + 1], k1 = ws.unit_nnz[u + 1];
  const std::int64_t L = (std::int64_t(i1) - i0) + (std::int64_t(k1) - k0);
  // Staged: the same for the whole warp; not for W = 8, whose 8 × 8 gathered values would spill.
  const bool staged = W <= 4 && L <= kSeqStaged;
  if (staged) {
    for (index_t j = lane; j <= i1 - i0; j += 32) s_rp[warp][j] = __ldg(A.row_ptr + i0 + j);
    for (index_t j = lane; j < k1 - k0; j += 32) {
      s_col[warp][j] = load_stream(A.col_idx + k0 + j);
      s_val[warp][j] = load_stream(A.values + k0 + j);
    }
    __syncwarp();
  }
  const UnitRowPtr row_ptr{staged ? s_rp[warp] : nullptr, A.row_ptr, i0};
  // This lane's slice [s, e): e is the next lane's start (lane 31: the unit's end).
  const MergeCoord s = seq_unit_search(seq_lane_diag(lane, L), row_ptr, i0, k0, i1, k1);
  index_t er = __shfl_down_sync(kFull, s.row, 1), ek = __shfl_down_sync(kFull, s.nnz, 1);
  if (lane == 31) er = i1, ek = k1;
  const index_t rs0 = row_ptr[s.row];  // s.row <= rows
  // The first row end waits for the scan when its row began in an earlier lane (or unit).
  const bool deferred = s.row < er && rs0 < s.nnz;
  // Carry-outs are keyed by the lane's end row; a key changes exactly at lanes with a row end.
  const unsigned heads = __ballot_sync(kFull, lane == 0 || s.row != er);
  const int seg = 31 - __clz(heads & (kFull >> (31 - lane)));
  T* carries = static_cast<T*>(ws.carries);
  const T* __restrict__ vals = A.values;
  const index_t* __restrict__ cols = A.col_idx;

  for (index_t j0 = 0; j0 < N; j0 += W) {
    const int m = N - j0 < W ? int(N - j0) : W;
    T acc[W], head[W];
#pragma unroll
    for (int t = 0; t < W; ++t) acc[t] = head[t] = T(0);
    index_t k = s.nnz, i = s.row;
    auto finish_row = [&] {  // row i ends: its first row waits for the scan when deferred
      if (i == s.row && deferred) {
#pragma unroll
        for (int t = 0; t < W; ++t) head[t] = acc[t];
      } else {  // the whole row lies in this lane
        seq_put<T, W>(Y + std::int64_t(i) * ldy + j0, m, true, alpha, acc, beta);
      }
#pragma unroll
      for (int t = 0; t < W; ++t) acc[t] = T(0);
      ++i;
    };
    if (staged) {
      // all this lane's gathers first (at most kSeqLaneMax nonzeros), then the walk: before
      // nonzero q, the rows that end at or before it are finished, in order
      const int nk = int(ek - s.nnz);
      T a[kSeqLaneMax], x[kSeqLaneMax][W];
#pragma unroll
      for (int q = 0; q < kSeqLaneMax; ++q) {
        a[q] = T(0);
#pragma unroll
        for (int t = 0; t < W; ++t) x[q][t] = T(0);
        if (q < nk) {
          const index_t c = s_col[warp][s.nnz - k0 + q];
          a[q] = s_val[warp][s.nnz - k0 + q];
          seq_load_x<VEC, W>(X + std::int64_t(c) * ldx + j0, m, x[q]);
        }
      }
#pragma unroll
      for (int q = 0; q < kSeqLaneMax; ++q) {
        if (q < nk) {
          while (i < er && row_ptr[i + 1] <= s.nnz + q) finish_row();
#pragma unroll
          for (int t = 0; t < W; ++t) acc[t] += a[q] * x[q][t];
        }
      }
      k = ek;
    }
    auto add = [&] {  // nonzero k from global memory (not staged)
      const index_t c = load_stream(cols + k);
      const T a = load_stream(vals + k);
      T x[W];
      seq_load_x<VEC, W>(X + std::int64_t(c) * ldx + j0, m, x);
#pragma unroll
      for (int t = 0; t < W; ++t) acc[t] += a * x[t];
    };
    while (i < er) {
      for (const index_t re = row_ptr[i + 1]; k < re; ++k) add();
      finish_row();
    }
    for (; k < ek; ++k) add();  // the end row's piece: this lane's carry-out
    // Segmented inclusive scan of the carry-outs (earlier lanes' value first).
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
#pragma unroll
      for (int t = 0; t < W; ++t) {
        const T v = __shfl_up_sync(kFull, acc[t], off);
        if (lane - off >= seg) acc[t] = v + acc[t];
      }
    }
    T pre[W];
#pragma unroll
    for (int t = 0; t < W; ++t) pre[t] = __shfl_up_sync(kFull, acc[t], 1);
    if (deferred) {
      if (lane > 0) {
#pragma unroll
        for (int t = 0; t < W; ++t) head[t] = pre[t] + head[t];
      }
      const SpmmDest d = spmm_unit_dest(s.row, i0, k0, i1, rs0);
      T* dst = d == SpmmDest::Direct ? Y + std::int64_t(s.row) * ldy : carries + spmm_carry_offset(d, u, ws.units, N);
      seq_put<T, W>(dst + j0, m, d == SpmmDest::Direct, alpha, head, beta);
    }
    if (lane == 31 && i1 < A.rows)  // row i1 continues in the next unit
      seq_put<T, W>(carries + spmm_carry_offset(SpmmDest::Tail, u, ws.units, N) + j0, m, false, alpha, acc, beta);
  }
}

template <class T, int W>
void launch(const SpmmArgs<T>& a, cudaStream_t st) {
  const std::int64_t grid = (std::int64_t(a.ws.units) + kSpmmWarpsPerBlock - 1) / kSpmmWarpsPerBlock;
  if (a.x_vec)
    launch_overlapped("spmm_seq_nnz_kernel", spmm_seq_nnz_kernel<T, W, true>, static_cast<unsigned>(grid), kSpmmBlock,
                      st, a.A, a.N, a.ws, a.alpha, a.X, a.ldx, a.beta, a.Y, a.ldy);
  else
    launch_overlapped("spmm_seq_nnz_kernel", spmm_seq_nnz_kernel<T, W, false>, static_cast<unsigned>(grid), kSpmmBlock,
                      st, a.A, a.N, a.ws, a.alpha, a.X, a.ldx, a.beta, a.Y, a.ldy);
}

}  // namespace

template <class T>
void spmm_seq_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st) {
  KRYSP_REQUIRE(c.subwarp == 32, "SpMM seq-nnz: sub-warp ", c.subwarp, " is not 32");
  if (a.ws.units == 0) return;
  switch (seq_width(a.N)) {
    case 1: return launch<T, 1>(a, st);
    case 2: return launch<T, 2>(a, st);
    case 4: return launch<T, 4>(a, st);
    default: return launch<T, 8>(a, st);
  }
}

template void spmm_seq_launch(const SpmmConfig&, const SpmmArgs<double>&, cudaStream_t);
template void spmm_seq_launch(const SpmmConfig&, const SpmmArgs<float>&, cudaStream_t);

}  // namespace krysp::detail
