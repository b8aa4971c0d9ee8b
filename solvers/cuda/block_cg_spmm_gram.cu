// Qn = A·Pn and PnᵀQn in one pass (block CG, widths up to 8; see block_cg_kernels.hpp). The
// separate Gram pass reads Pn and Qn again, two tall blocks out of an iteration's twelve; here
// each row's Qn values are still in registers when its Pn row is read back, and that read hits
// the cache, because the row's own entry (the diagonal) was gathered a moment before by its
// neighbours. The SpMM part follows the row-balanced CSC kernel (sparse/cuda/spmm_kernels.cuh):
// a sub-warp of S lanes per row, the row's (column, value) pairs cached S at a time in shared
// memory with one coalesced load, each lane owning V consecutive columns of the row.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "krysp/base/cuda/check.cuh"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kThreads = 256;

/// The S-lane sub-warp of this thread, as a shuffle mask.
template <int S>
__device__ __forceinline__ unsigned subwarp_mask() {
  if constexpr (S == 32) return 0xffffffffu;
  else return ((1u << S) - 1u) << (threadIdx.x % 32 / S * S);
}

/// PF: the row pipeline of a sub-warp. Its tiles' rows come one after another (t, t + grid, ...),
/// and each needs two dependent loads (the row bounds, then the (column, value) pairs) before its
/// gathers of Pn can start; with PF the bounds are loaded two tiles ahead and the first S pairs
/// one tile ahead, so those latencies overlap the current tile's gathers.
struct RowPipe {
  index_t b = 0, e = 0;   ///< the current tile's row bounds (b = e: no row)
  index_t col = 0;        ///< its first pairs, this lane's
  double val = 0.0;
  index_t nb = 0, ne = 0; ///< the next tile's bounds
};
__device__ __forceinline__ void row_bounds(const CsrView<double>& A, std::int64_t row, index_t& b, index_t& e) {
  b = e = 0;
  if (row < A.rows) b = __ldg(A.row_ptr + row), e = __ldg(A.row_ptr + row + 1);
}
/// This lane's pair of [b, e), the lane-th (nothing when the lane is past the row's end).
__device__ __forceinline__ void first_pair(const CsrView<double>& A, index_t b, index_t e, int lane, index_t& col,
                                           double& val) {
  if (lane < e - b) col = __ldcs(A.col_idx + b + lane), val = __ldcs(A.values + b + lane);
}

/// Block b takes row tiles b, b + grid, ... of kThreads / S consecutive rows (neighbouring rows
/// share X rows, reused from L1). Each lane sums G(i, j) = Σ_r Pn(r, i)·Qn(r, j) for its own
/// columns j over the rows it made; the block's sums become partial number blockIdx.x.
template <int S, int V, int MINB, bool PF>
__global__ void __launch_bounds__(kThreads, MINB)
    spmm_gram_kernel(CsrView<double> A, int a, const double* __restrict__ P, int ld, double* __restrict__ Q,
                     double* __restrict__ partials) {
  constexpr int W = S * V;  // columns one sub-warp covers (≥ a)
  __shared__ index_t s_col[kThreads];
  __shared__ double s_val[kThreads];
  __shared__ double sh[kThreads / 32][W * W];
  const int lane = threadIdx.x % S, base = threadIdx.x - lane, j0 = lane * V;
  const unsigned mask = subwarp_mask<S>();
  const bool full = j0 + V <= a;  // every column of this lane in use: vector loads (V = 2)
  double g[W][V];
#pragma unroll
  for (int i = 0; i < W; ++i)
#pragma unroll
    for (int v = 0; v < V; ++v) g[i][v] = 0.0;
  const std::int64_t tiles = (std::int64_t(A.rows) + kThreads / S - 1) / (kThreads / S);
  auto row_of = [&](std::int64_t t) { return t * (kThreads / S) + threadIdx.x / S; };
  RowPipe pipe;
  if constexpr (PF) {
    row_bounds(A, row_of(blockIdx.x), pipe.b, pipe.e);
    first_pair(A, pipe.b, pipe.e, lane, pipe.col, pipe.val);
    row_bounds(A, row_of(std::int64_t(blockIdx.x) + gridDim.x), pipe.nb, pipe.ne);
  }
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t row = row_of(t);
    double q[V], p[V];
#pragma unroll
    for (int v = 0; v < V; ++v) q[v] = p[v] = 0.0;
    index_t b, e, col0 = 0;
    double val0 = 0.0;
    if constexpr (PF) {  // take this tile's row from the pipe, start the next two tiles' loads
      b = pipe.b, e = pipe.e, col0 = pipe.col, val0 = pipe.val;
      pipe.b = pipe.nb, pipe.e = pipe.ne;
      first_pair(A, pipe.b, pipe.e, lane, pipe.col, pipe.val);
      row_bounds(A, row_of(t + 2 * std::int64_t(gridDim.x)), pipe.nb, pipe.ne);
    }
    if (row < A.rows) {  // the same for the whole sub-warp
      if constexpr (!PF) b = A.row_ptr[row], e = A.row_ptr[row + 1];
      const double* pr = P + row * ld + j0;  // this row of Pn, loaded now: its latency overlaps the row's
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (j0 + v < a) p[v] = pr[v];
      for (index_t kk = b; kk < e; kk += S) {
        const int cnt = e - kk < S ? int(e - kk) : S;
        if (lane < cnt) {
          s_col[base + lane] = PF && kk == b ? col0 : __ldcs(A.col_idx + kk + lane);
          s_val[base + lane] = PF && kk == b ? val0 : __ldcs(A.values + kk + lane);
        }
        __syncwarp(mask);
#pragma unroll 4
        for (int k = 0; k < cnt; ++k) {
          const double av = s_val[base + k];
          const double* xr = P + std::int64_t(s_col[base + k]) * ld + j0;
          if constexpr (V == 2) {
            if (full) {
              const double2 x = __ldg(reinterpret_cast<const double2*>(xr));
              q[0] += av * x.x;
              q[1] += av * x.y;
              continue;
            }
          }
#pragma unroll
          for (int v = 0; v < V; ++v)
            if (j0 + v < a) q[v] += av * __ldg(xr + v);
        }
        __syncwarp(mask);  // the slots are refilled next round
      }
      double* qr = Q + row * ld + j0;
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (j0 + v < a) qr[v] = q[v];
    }
    // Pn(row, i) lives in lane i / V, slot i % V: G(i, j0 + v) += Pn(row, i)·Qn(row, j0 + v)
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const double pi = __shfl_sync(0xffffffffu, p[i % V], i / V, S);
#pragma unroll
      for (int v = 0; v < V; ++v) g[i][v] += pi * q[v];
    }
  }
  // The warp's sub-warps in a fixed tree, then the block's warps in order.
#pragma unroll
  for (int i = 0; i < W; ++i)
#pragma unroll
    for (int v = 0; v < V; ++v)
      for (int off = 16; off >= S; off /= 2) g[i][v] += __shfl_down_sync(0xffffffffu, g[i][v], off);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 < S)
#pragma unroll
    for (int i = 0; i < W; ++i)
#pragma unroll
      for (int v = 0; v < V; ++v) sh[warp][i * W + j0 + v] = g[i][v];
  __syncthreads();
  for (int o = threadIdx.x; o < a * a; o += kThreads) {  // o = i + j·a: column-major, as tall_gram
    double sum = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) sum += sh[w][(o % a) * W + o / a];
    partials[std::size_t(blockIdx.x) * a * a + o] = sum;
  }
}

using Kernel = void (*)(CsrView<double>, int, const double*, int, double*, double*);

/// Every variant, by (lanes, columns per lane, least blocks per SM asked of the compiler: 0 for no
/// register cap); the table the rule and the tuner choose from.
struct VariantKernel {
  SpmmGramVariant v;
  Kernel k;
};
constexpr VariantKernel kVariants[] = {
    {{1, 1, 0}, spmm_gram_kernel<1, 1, 1, false>}, {{1, 2, 0}, spmm_gram_kernel<1, 2, 1, false>},
    {{2, 1, 0}, spmm_gram_kernel<2, 1, 1, false>}, {{2, 2, 0}, spmm_gram_kernel<2, 2, 1, false>},
    {{4, 1, 0}, spmm_gram_kernel<4, 1, 1, false>}, {{4, 1, 6}, spmm_gram_kernel<4, 1, 6, false>},
    {{4, 2, 0}, spmm_gram_kernel<4, 2, 1, false>}, {{8, 1, 0}, spmm_gram_kernel<8, 1, 1, false>},
    {{8, 1, 6}, spmm_gram_kernel<8, 1, 6, false>}, {{8, 1, 4, true}, spmm_gram_kernel<8, 1, 4, true>},
    {{8, 1, 3, true}, spmm_gram_kernel<8, 1, 3, true>}, {{4, 1, 4, true}, spmm_gram_kernel<4, 1, 4, true>},
    {{2, 1, 4, true}, spmm_gram_kernel<2, 1, 4, true>},
};

/// Blocks of kernel k that the current device holds at once (one full wave), looked up once per
/// device and kernel: the occupancy query costs microseconds of host time, and block CG launches
/// the fused pass every iteration (on small matrices the host is on the critical path).
int wave_blocks(Kernel k) {
  static std::mutex mu;
  static std::map<std::pair<int, Kernel>, int> waves;
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  int& blocks = waves[{dev, k}];
  if (blocks == 0) {
    int sms = 0, per_sm = 0;
    KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    KRYSP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kThreads, 0));
    blocks = std::max(per_sm, 1) * sms;
  }
  return blocks;
}

/// The kernel of a variant for width w, or null when it does not serve w.
Kernel spmm_gram_kernel_for(SpmmGramVariant v, index_t w) {
  const int W = v.lanes * v.cols;
  if (w < 1 || w > W || (W > 1 && 2 * w <= W)) return nullptr;  // W: the least power of two ≥ w
  for (const auto& e : kVariants)
    if (e.v == v) return e.k;
  return nullptr;
}
}  // namespace

std::vector<SpmmGramVariant> spmm_gram_variants(index_t w, index_t ld) {
  std::vector<SpmmGramVariant> out;
  for (const auto& e : kVariants)
    if (spmm_gram_kernel_for(e.v, w) && (e.v.cols == 1 || ld % e.v.cols == 0)) out.push_back(e.v);
  return out;
}

std::size_t tall_spmm_gram_partials(index_t s) {
  int dev = 0, sms = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const std::size_t w = std::size_t(std::min<index_t>(s, 8));
  return std::size_t(2048 / kThreads) * std::size_t(sms) * w * w;  // a full wave at most
}

void tall_spmm_gram(const CsrView<double>& A, index_t w, const double* Pn, index_t ld, double* Qn,
                    SpmmGramVariant variant, const TallWorkspace& ws) {
  const Kernel k = spmm_gram_kernel_for(variant, w);
  KRYSP_REQUIRE(k && (variant.cols == 1 || ld % variant.cols == 0), "tall_spmm_gram: variant ", variant.lanes, "x",
                variant.cols, "/b", variant.min_blocks, variant.prefetch ? "/prefetch" : "", " does not serve width ", w,
                " with ld ", ld);
  if (A.rows == 0) {  // no rows: PnᵀQn is zero, written all the same (the caller reads it)
    TallWorkspace r = ws;
    r.grid = 0;  // the reduction of no partials writes zeros
    return tall_reduce(int(w * w), r);
  }
  // One full wave: every block takes the same share of the tiles, which measured faster than
  // runs of 4 or 16 tiles per block or one contiguous share per block (docs/tuning.md, "Fused
  // SpMM and Gram").
  const std::int64_t tiles = (std::int64_t(A.rows) + kThreads / variant.lanes - 1) / (kThreads / variant.lanes);
  const std::int64_t grid64 = std::min<std::int64_t>(wave_blocks(k), tiles);
  KRYSP_REQUIRE(grid64 * w * w <= std::int64_t(ws.partials_room), "tall_spmm_gram: ", grid64, " blocks' partials of ",
                w * w, " values exceed the workspace's ", ws.partials_room);
  const int grid = int(std::max<std::int64_t>(grid64, 1));
  k<<<grid, kThreads>>>(A, int(w), Pn, int(ld), Qn, ws.partials);
  KRYSP_CUDA_CHECK_LAUNCH("spmm_gram_kernel");
  TallWorkspace r = ws;
  r.grid = grid;
  tall_reduce(int(w * w), r);
}

}  // namespace krysp::detail
