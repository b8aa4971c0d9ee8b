// Block CG's Gram kernels and helpers (see block_cg_kernels.hpp; the row-wise steps are in
// block_cg_steps.cu). Wide blocks: a block walks chunks of rows (grid-stride), stages the chunk's
// rows of each input block in shared memory with contiguous, coalesced loads (a chunk of a
// row-major block is one contiguous run), then each thread adds its own outputs of the small
// products over the chunk's rows into a shared accumulator it alone owns. At the end the blocks' partials
// are summed by a second small kernel, one block per output, in a fixed order: no floating-point
// atomics, bitwise reproducible for a given grid.
#include <algorithm>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kThreads = 256;
constexpr int kStageDoubles = 2048;  // staged row data per block (16 KB), whatever the width

/// Rows per chunk when `cols` doubles per row are staged: a power of two, 4 to 512.
int chunk_rows(index_t cols) {
  int r = 512;
  while (r > 4 && std::int64_t(r) * cols > kStageDoubles) r /= 2;
  return r;
}

/// Copies rows [r0, r0 + nr) of an n × ld row-major block (one contiguous run) to shared memory.
__device__ __forceinline__ void stage(double* dst, const double* src, index_t r0, int nr, index_t ld) {
  const std::int64_t base = std::int64_t(r0) * ld, count = std::int64_t(nr) * ld;
  for (std::int64_t e = threadIdx.x; e < count; e += kThreads) dst[e] = __ldcs(src + base + e);
}

/// acc[o] += Σ_{r < nr} f(o, r) for every o < nout. With few outputs, L threads share an output
/// (rows strided by L) and join their sums with a shuffle tree: a fixed order either way.
template <class F>
__device__ __forceinline__ void accumulate(double* acc, int nout, int nr, F f) {
  int L = 1;
  while (L < 32 && nout * L * 2 <= kThreads) L *= 2;
  if (L == 1) {
    for (int o = threadIdx.x; o < nout; o += kThreads) {
      double v = 0.0;
      for (int r = 0; r < nr; ++r) v += f(o, r);
      acc[o] += v;
    }
    return;
  }
  const int o = threadIdx.x / L, l = threadIdx.x % L;
  double v = 0.0;
  if (o < nout)
    for (int r = l; r < nr; r += L) v += f(o, r);
  for (int off = L / 2; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off, L);  // every lane takes part
  if (o < nout && l == 0) acc[o] += v;
}

/// Stores this block's nout accumulators as its partial (summed by reduce_kernel afterwards).
__device__ __forceinline__ void finish(const double* acc, int nout, TallWorkspace ws) {
  for (int o = threadIdx.x; o < nout; o += kThreads) ws.partials[std::size_t(blockIdx.x) * nout + o] = acc[o];
}

/// out[o] = Σ_b partials[b·nout + o], one block per output: threads strided over the blocks'
/// partials, then a fixed shuffle/shared tree (deterministic; many SMs share the work).
constexpr int kReduceThreads = 128;
__global__ void __launch_bounds__(kReduceThreads) reduce_kernel(const double* __restrict__ partials, int grid,
                                                                int nout, double* __restrict__ out) {
  __shared__ double warp_sum[kReduceThreads / 32];
  const int o = blockIdx.x;
  double v = 0.0;
  for (int b = threadIdx.x; b < grid; b += kReduceThreads) v += partials[std::size_t(b) * nout + o];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < kReduceThreads / 32; ++w) t += warp_sum[w];
    out[o] = t;
  }
}

void reduce_outputs(int nout, const TallWorkspace& ws) {
  if (nout == 0) return;
  reduce_kernel<<<nout, kReduceThreads>>>(ws.partials, ws.grid, nout, ws.out);
  KRYSP_CUDA_CHECK_LAUNCH("reduce_kernel");
}

__global__ void __launch_bounds__(kThreads) gram_kernel(index_t n, index_t ld, const double* __restrict__ X, int bx,
                                                        const double* __restrict__ Y, int by, int R, TallWorkspace ws) {
  extern __shared__ double sm[];
  double* xs = sm;
  double* ys = xs + std::size_t(R) * ld;
  double* acc = ys + std::size_t(R) * ld;
  const int nout = bx * by;
  for (int o = threadIdx.x; o < nout; o += kThreads) acc[o] = 0.0;
  for (index_t r0 = index_t(blockIdx.x) * R; r0 < n; r0 += index_t(gridDim.x) * R) {
    const int nr = int(std::min<index_t>(R, n - r0));
    stage(xs, X, r0, nr, ld);
    stage(ys, Y, r0, nr, ld);
    __syncthreads();
    accumulate(acc, nout, nr, [&](int o, int r) { return xs[r * ld + o % bx] * ys[r * ld + o / bx]; });
    __syncthreads();
  }
  finish(acc, nout, ws);
}

// ---- Narrow blocks (s ≤ 8): a thread per row. Each thread takes whole rows (grid-stride), keeps
// its share of every small product in registers (compile-time width S ≥ s), and the block sums
// its threads' products once, at the end (a fixed shuffle tree, then warps in order).

/// v[0..count) = p[0..count), the rest 0.
template <int S>
__device__ __forceinline__ void load_row(const double* p, int count, double (&v)[S]) {
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = i < count ? p[i] : 0.0;
}

/// Sums each of the NOUT per-thread accumulators over the block and stores, for o < nout, output
/// o (= accumulator index(o)) as this block's partial.
template <int NOUT, class Index>
__device__ __forceinline__ void block_partials(const double (&acc)[NOUT], int nout, Index index, double* partials) {
  __shared__ double sh[kThreads / 32][NOUT];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 0; o < NOUT; ++o) {
    double v = acc[o];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) sh[warp][o] = v;
  }
  __syncthreads();
  for (int o = threadIdx.x; o < nout; o += kThreads) {
    const int k = index(o);
    double t = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) t += sh[w][k];
    partials[std::size_t(blockIdx.x) * nout + o] = t;
  }
}

template <int S>
__global__ void __launch_bounds__(kThreads) gram_rows_kernel(index_t n, int ld, const double* __restrict__ X, int bx,
                                                             const double* __restrict__ Y, int by, TallWorkspace ws) {
  double acc[S * S];
#pragma unroll
  for (int o = 0; o < S * S; ++o) acc[o] = 0.0;
  for (std::int64_t row = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; row < n;
       row += std::int64_t(gridDim.x) * kThreads) {
    double x[S], y[S];
    load_row<S>(X + row * ld, bx, x);
    load_row<S>(Y + row * ld, by, y);
#pragma unroll
    for (int i = 0; i < S; ++i)
#pragma unroll
      for (int j = 0; j < S; ++j) acc[i * S + j] += x[i] * y[j];
  }
  block_partials<S * S>(acc, bx * by, [&](int o) { return (o % bx) * S + o / bx; }, ws.partials);
}

/// The row-per-thread width for s columns, or 0 when the staged kernels take them.
inline int row_width(index_t s) { return s <= 1 ? 1 : s <= 2 ? 2 : s <= 4 ? 4 : s <= 8 ? 8 : 0; }

/// Raises the kernel's dynamic shared-memory limit when a wide block needs more than 48 KB.
template <class K>
void allow_shared(K kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    KRYSP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}
}  // namespace

void tall_reduce(int nout, const TallWorkspace& ws) { reduce_outputs(nout, ws); }

int tall_grid(index_t n, index_t s) {
  int dev = 0, sms = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const std::int64_t chunks = (std::int64_t(n) + chunk_rows(4 * s) - 1) / chunk_rows(4 * s);
  // 6 blocks per SM at most: whole waves for kernels that fit 1, 2 or 3 blocks per SM (each block
  // takes the same share of the rows, so a partial last wave would idle most SMs)
  return int(std::clamp<std::int64_t>(chunks, 1, 6 * std::int64_t(sms)));
}

namespace {
/// out (cols × rows, row-major) = inᵀ for in (rows × cols, row-major), through 32 × 33 tiles.
__global__ void transpose_kernel(const double* __restrict__ in, index_t rows, index_t cols, double* __restrict__ out) {
  __shared__ double tile[32][33];
  const std::int64_t tiles_c = (std::int64_t(cols) + 31) / 32;  // tiles in one linear grid: no 65535 limit
  const std::int64_t c0 = (blockIdx.x % tiles_c) * 32, r0 = (blockIdx.x / tiles_c) * 32;
  for (int k = threadIdx.y; k < 32; k += 8) {
    const std::int64_t r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += 8) {
    const std::int64_t c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][k];
  }
}
}  // namespace

void transpose(const double* in, index_t rows, index_t cols, double* out) {
  if (rows == 0 || cols == 0) return;
  const std::int64_t tiles = ((std::int64_t(cols) + 31) / 32) * ((std::int64_t(rows) + 31) / 32);
  transpose_kernel<<<unsigned(tiles), dim3(32, 8)>>>(in, rows, cols, out);
  KRYSP_CUDA_CHECK_LAUNCH("transpose_kernel");
}

void zero_column(double* X, index_t n, index_t s, index_t j) {
  if (n == 0) return;
  KRYSP_CUDA_CHECK(cudaMemset2D(X + j, std::size_t(s) * sizeof(double), 0, sizeof(double), std::size_t(n)));
}

std::size_t tall_partials(int grid, index_t s) { return std::size_t(grid) * std::size_t(2 * s) * s; }

void tall_gram(index_t n, index_t ld, const double* X, index_t bx, const double* Y, index_t by,
               const TallWorkspace& ws) {
  if (const int S = row_width(std::max(bx, by))) {
    if (S == 1) gram_rows_kernel<1><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws);
    if (S == 2) gram_rows_kernel<2><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws);
    if (S == 4) gram_rows_kernel<4><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws);
    if (S == 8) gram_rows_kernel<8><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws);
    KRYSP_CUDA_CHECK_LAUNCH("gram_rows_kernel");
    return reduce_outputs(int(bx * by), ws);
  }
  const int R = chunk_rows(2 * ld);
  const std::size_t bytes = (std::size_t(2) * R * ld + std::size_t(bx) * by) * sizeof(double);
  allow_shared(gram_kernel, bytes);
  gram_kernel<<<ws.grid, kThreads, bytes>>>(n, ld, X, int(bx), Y, int(by), R, ws);
  KRYSP_CUDA_CHECK_LAUNCH("gram_kernel");
  reduce_outputs(int(bx * by), ws);
}

}  // namespace krysp::detail
