// Block CG's tall-skinny kernels (see block_cg_kernels.hpp). One pattern for all three: a block
// walks chunks of rows (grid-stride), stages the chunk's rows of each input block in shared memory
// with contiguous, coalesced loads (a chunk of a row-major block is one contiguous run), does its
// row-wise work element by element, then each thread adds its own outputs of the small products
// over the chunk's rows into a shared accumulator it alone owns. At the end the blocks' partials
// are summed by a second small kernel, one block per output, in a fixed order: no floating-point
// atomics, bitwise reproducible for a given grid.
#include <algorithm>

#include "base/cuda/check.cuh"
#include "base/device_memory.hpp"
#include "solvers/cuda/block_cg_kernels.hpp"

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

__global__ void __launch_bounds__(kThreads)
    update_kernel(index_t n, int s, int a, const double* __restrict__ Qn, const double* __restrict__ Ca,
                  double* __restrict__ Rg, ZSource zsrc, const double* __restrict__ inv_diag,
                  const double* __restrict__ Z, bool update, bool grams, int R, TallWorkspace ws) {
  extern __shared__ double sm[];
  double* qs = sm;                       // Qn rows
  double* rs = qs + std::size_t(R) * s;  // R rows after the update
  double* zs = rs + std::size_t(R) * s;  // Z rows
  double* ca = zs + std::size_t(R) * s;  // Caᵀ (s × a... stored [i·s + j]: lanes of one i read consecutive j)
  double* acc = ca + std::size_t(a) * s;
  const int nout = grams ? s + a * s : 0;
  for (int o = threadIdx.x; o < a * s; o += kThreads) ca[(o % a) * s + o / a] = Ca ? Ca[o] : 0.0;
  for (int o = threadIdx.x; o < nout; o += kThreads) acc[o] = 0.0;
  __syncthreads();
  for (index_t r0 = index_t(blockIdx.x) * R; r0 < n; r0 += index_t(gridDim.x) * R) {
    const int nr = int(std::min<index_t>(R, n - r0));
    if (update || grams) stage(qs, Qn, r0, nr, s);
    __syncthreads();
    for (int e = threadIdx.x; e < nr * s; e += kThreads) {
      const int r = e / s, j = e % s;
      const std::size_t g = std::size_t(r0) * s + e;  // = (r0 + r)·s + j
      double rv = Rg[g];
      if (update) {
        double dr = 0.0;
        for (int i = 0; i < a; ++i) dr += qs[r * s + i] * ca[i * s + j];
        rv -= dr;  // inactive columns have zero coefficients: r − 0 leaves them as they are
        Rg[g] = rv;
      }
      rs[e] = rv;
      zs[e] = zsrc == ZSource::InverseDiagonal ? inv_diag[r0 + r] * rv : zsrc == ZSource::Given ? Z[g] : rv;
    }
    __syncthreads();
    accumulate(acc, nout, nr, [&](int o, int r) {
      return o < s ? rs[r * s + o] * rs[r * s + o] : qs[r * s + (o - s) % a] * zs[r * s + (o - s) / a];
    });
    __syncthreads();
  }
  if (grams) finish(acc, nout, ws);
}

__global__ void __launch_bounds__(kThreads)
    direction_kernel(index_t n, int s, int a, const double* __restrict__ Pn, const double* __restrict__ Ca,
                     double* __restrict__ X, const double* __restrict__ Cb, int a2, const int* __restrict__ act,
                     const double* __restrict__ Rg, ZSource zsrc, const double* __restrict__ inv_diag,
                     const double* __restrict__ Z, double* __restrict__ Pnext, int R, TallWorkspace ws) {
  extern __shared__ double sm[];
  double* ps = sm;                       // Pn rows
  double* rs = ps + std::size_t(R) * s;  // R rows
  double* ns = rs + std::size_t(R) * s;  // the new rows (a2 of s used)
  double* cb = ns + std::size_t(R) * s;  // Cb stored [i·a2 + jj]: lanes of one i read consecutive jj
  double* cx = cb + std::size_t(a) * a2;  // Caᵀ stored [i·s + j] when X takes its step here
  double* acc = cx + (X ? std::size_t(a) * s : 0);
  int* cols = reinterpret_cast<int*>(acc + a2 * a2 + a2 * s);
  const int nout = a2 * a2 + a2 * s;
  for (int o = threadIdx.x; o < a * a2; o += kThreads) cb[(o % a) * a2 + o / a] = Cb[o];
  if (X)
    for (int o = threadIdx.x; o < a * s; o += kThreads) cx[(o % a) * s + o / a] = Ca[o];
  for (int o = threadIdx.x; o < a2; o += kThreads) cols[o] = act[o];
  for (int o = threadIdx.x; o < nout; o += kThreads) acc[o] = 0.0;
  __syncthreads();
  for (index_t r0 = index_t(blockIdx.x) * R; r0 < n; r0 += index_t(gridDim.x) * R) {
    const int nr = int(std::min<index_t>(R, n - r0));
    if (a > 0) stage(ps, Pn, r0, nr, s);
    stage(rs, Rg, r0, nr, s);
    __syncthreads();
    if (X) {  // X += Pn·Ca, the update pass's deferred step, from the staged Pn rows
      for (int e = threadIdx.x; e < nr * s; e += kThreads) {
        const int r = e / s, j = e % s;
        double dx = 0.0;
        for (int i = 0; i < a; ++i) dx += ps[r * s + i] * cx[i * s + j];
        X[std::size_t(r0) * s + e] += dx;  // inactive columns have zero coefficients
      }
    }
    for (int e = threadIdx.x; e < nr * a2; e += kThreads) {
      const int r = e / a2, jj = e % a2, c = cols[jj];
      const index_t row = r0 + r;
      const double rv = rs[r * s + c];
      double v = zsrc == ZSource::InverseDiagonal ? inv_diag[row] * rv
                 : zsrc == ZSource::Given          ? Z[std::size_t(row) * s + c]
                                                   : rv;
      for (int i = 0; i < a; ++i) v -= ps[r * s + i] * cb[i * a2 + jj];
      Pnext[std::size_t(row) * s + jj] = v;
      ns[r * s + jj] = v;
    }
    __syncthreads();
    const int hh = a2 * a2;
    accumulate(acc, nout, nr, [&](int o, int r) {
      return o < hh ? ns[r * s + o % a2] * ns[r * s + o / a2] : ns[r * s + (o - hh) % a2] * rs[r * s + (o - hh) / a2];
    });
    __syncthreads();
  }
  finish(acc, nout, ws);
}

/// X += Pn·Ca (Ca: a × s column-major, device), a thread per entry: X's step on its own, once per
/// solve (when the loop stops right after an update). Σ first, then one add.
__global__ void __launch_bounds__(kThreads)
    x_update_kernel(index_t n, int s, int a, const double* __restrict__ Pn, const double* __restrict__ Ca,
                    double* __restrict__ X) {
  const std::int64_t total = std::int64_t(n) * s;
  for (std::int64_t e = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t row = e / s;
    const int j = int(e % s);
    double dx = 0.0;
    for (int i = 0; i < a; ++i) dx += Pn[row * s + i] * Ca[i + j * a];
    X[e] += dx;
  }
}

// ---- Narrow blocks (s ≤ 8): a thread per row. Each thread takes whole rows (grid-stride), keeps
// the row's values and its share of every small product in registers (compile-time width S ≥ s),
// reads the coefficients as constant-bank operands (NarrowCoefs), and the block sums its threads'
// products once, at the end (a fixed shuffle tree, then warps in order). A warp's 32 rows pass
// through shared memory only to make the global accesses contiguous and to feed the per-lane
// tiles of the small products (the staged kernels above are bound by shared memory at these
// widths: 33% of the copy bandwidth at s = 8, H100).

/// A narrow kernel's coefficients, passed by value as a __grid_constant__ kernel parameter: no
/// upload (a synchronous copy from pageable memory, three per iteration before), no copy to
/// local or shared memory (read in unrolled loops, each is an FMA's constant-bank operand). c[i·S + j] = C(i, j) and x[i·S + j] = Cx(i, j), zero outside the parts used;
/// act[j]: the active columns.
template <int S>
struct NarrowCoefs {
  double c[S * S];
  double x[S * S];
  double xo[S * S];  ///< the previous direction's X step: xo[i·S + j] = Cp(i, j)
  int act[S];
};
/// From C (a × cols, column-major), Cx (a × s, column-major), act (cols entries) and Cp (ap × s,
/// column-major), any null.
template <int S>
NarrowCoefs<S> narrow_coefs(index_t a, index_t cols, const double* C, index_t s, const double* Cx, const int* act,
                            index_t ap = 0, const double* Cp = nullptr) {
  NarrowCoefs<S> k{};
  for (index_t i = 0; i < a; ++i) {
    for (index_t j = 0; j < cols && C; ++j) k.c[i * S + j] = C[i + j * a];
    for (index_t j = 0; j < s && Cx; ++j) k.x[i * S + j] = Cx[i + j * a];
  }
  for (index_t i = 0; i < ap && Cp; ++i)
    for (index_t j = 0; j < s; ++j) k.xo[i * S + j] = Cp[i + j * ap];
  for (index_t j = 0; j < cols && act; ++j) k.act[j] = act[j];
  return k;
}

/// v[0..count) = p[0..count), the rest 0.
template <int S>
__device__ __forceinline__ void load_row(const double* p, int count, double (&v)[S]) {
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = i < count ? p[i] : 0.0;
}

/// Offset in the staging layout (rows of S + 1) of element e of a run of rows of s values. The
/// usual s = S divides by a constant (a shift); a division by a run-time s costs ~20 instructions,
/// and the narrow kernels make ~40 of them per 32 rows.
template <int S>
__device__ __forceinline__ int staged_offset(int e, int s) {
  return s == S ? (e / S) * (S + 1) + e % S : (e / s) * (S + 1) + e % s;
}
/// e % s, with the same shortcut.
template <int S>
__device__ __forceinline__ int staged_column(int e, int s) {
  return s == S ? e % S : e % s;
}

/// Warp-coalesced access to 32 consecutive rows of an n × s row-major block (they are one
/// contiguous run): the warp moves the run through shared memory `sm` (32 rows of S + 1 values,
/// padded against bank conflicts) so that global loads and stores are contiguous across lanes,
/// while each lane works on its own row. Rows at or beyond n are skipped. Loads: warp_async_rows.
template <int S>
__device__ __forceinline__ void warp_store_rows(double* block, std::int64_t row0, index_t n, int s, int count,
                                                double* sm, const double (&v)[S]) {
  const int lane = threadIdx.x % 32;
  const int len = int(std::min<std::int64_t>(32, n - row0)) * s;
#pragma unroll
  for (int i = 0; i < S; ++i)
    if (i < count) sm[lane * (S + 1) + i] = v[i];
  __syncwarp();
  double* dst = block + row0 * s;
  double t[S];
#pragma unroll
  for (int k = 0; k < S; ++k) {
    const int e = lane + 32 * k;
    t[k] = e < len ? sm[staged_offset<S>(e, s)] : 0.0;
  }
#pragma unroll
  for (int k = 0; k < S; ++k) {
    const int e = lane + 32 * k;
    if (e < len && staged_column<S>(e, s) < count) dst[e] = t[k];
  }
  __syncwarp();
}

/// Starts copying the 32 rows from row0 of an n × s row-major block into `sm`, in
/// warp_store_rows's layout, with cp.async (sm_80 and later; a plain copy before): no registers
/// wait for the data, so a warp can have two blocks' rows on the way at once instead of one (the
/// narrow kernels are bound by memory latency). Finish with async_rows_wait, then warp_read_rows.
template <int S>
__device__ __forceinline__ void warp_async_rows(const double* block, std::int64_t row0, index_t n, int s, double* sm) {
  const int lane = threadIdx.x % 32;
  const int len = int(std::min<std::int64_t>(32, n - row0)) * s;
  const double* src = block + row0 * s;
#pragma unroll
  for (int k = 0; k < S; ++k) {
    const int e = lane + 32 * k;
    if (e >= len) continue;
    double* dst = sm + staged_offset<S>(e, s);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(unsigned(__cvta_generic_to_shared(dst))),
                 "l"(src + e)
                 : "memory");
#else
    *dst = src[e];
#endif
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most `pending` of this thread's warp_async_rows copies are still on the way,
/// then makes the finished ones visible to the whole warp.
template <int pending>
__device__ __forceinline__ void async_rows_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
#endif
  __syncwarp();
}
/// Lane l's row (row0 + l) from a warp_async_rows buffer: v[0..count), zeros elsewhere.
template <int S>
__device__ __forceinline__ void warp_read_rows(const double* sm, std::int64_t row0, index_t n, int s, int count,
                                               double (&v)[S]) {
  const int lane = threadIdx.x % 32;
  const bool live = lane < std::min<std::int64_t>(32, n - row0);
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = i < count && live ? sm[lane * (S + 1) + i] : 0.0;
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

/// Uᵀ·V over the 32 rows a warp holds in shared memory (row r of an operand at r·ld), each lane
/// owning fixed TI × TJ tiles of the NU × NV result. A thread holding a whole row's outer product
/// would need NU·NV accumulators: 72 and 128 at width 8, more registers than a thread has (one
/// block per SM and spills, 28-44% of the copy bandwidth). Columns j < nv0 of V come from v0, the
/// others from v1, so that [V0 | V1] operands need no copy. Sums run over rows in order: fixed.
template <int NU, int NV>
struct WarpTiles {
  static constexpr int TI = NU % 2 == 0 && NU * NV >= 64 ? 2 : 1;
  static constexpr int TJ = NV % 2 == 0 && NU * NV >= 128 ? 2 : 1;
  static constexpr int NTI = NU / TI, kTiles = NTI * (NV / TJ), K = (kTiles + 31) / 32, KTT = K * TI * TJ;
  double acc[K][TI][TJ];

  __device__ WarpTiles() {
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int i = 0; i < TI; ++i)
#pragma unroll
        for (int j = 0; j < TJ; ++j) acc[k][i][j] = 0.0;
  }
  __device__ void add(const double* u, const double* v0, int nv0, const double* v1, int ld) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int t = lane + 32 * k;
      if (t >= kTiles) continue;
      const int i0 = (t % NTI) * TI, j0 = (t / NTI) * TJ;
      const double* uc = u + i0;
      const double* vc = j0 < nv0 ? v0 + j0 : v1 + (j0 - nv0);  // a tile never straddles nv0 (TJ = 2 only for even NV)
#pragma unroll 4
      for (int r = 0; r < 32; ++r) {
        double x[TI], y[TJ];
#pragma unroll
        for (int i = 0; i < TI; ++i) x[i] = uc[r * ld + i];
#pragma unroll
        for (int j = 0; j < TJ; ++j) y[j] = vc[r * ld + j];
#pragma unroll
        for (int i = 0; i < TI; ++i)
#pragma unroll
          for (int j = 0; j < TJ; ++j) acc[k][i][j] += x[i] * y[j];
      }
    }
  }
  /// Sums the block's warps in warp order through `sh` (kThreads·KTT doubles; the caller
  /// synchronises before) and calls emit(i, j, sum) once for every (i, j) of the result.
  template <class Emit>
  __device__ void finish(double* sh, Emit emit) const {
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int i = 0; i < TI; ++i)
#pragma unroll
        for (int j = 0; j < TJ; ++j) sh[threadIdx.x * KTT + (k * TI + i) * TJ + j] = acc[k][i][j];
    __syncthreads();
    for (int slot = threadIdx.x; slot < 32 * KTT; slot += kThreads) {  // slot = lane·KTT + tile entry
      double v = 0.0;
      for (int w = 0; w < kThreads / 32; ++w) v += sh[w * 32 * KTT + slot];
      const int lane = slot / KTT, e = slot % KTT, k = e / (TI * TJ), t = lane + 32 * k;
      if (t < kTiles) emit((t % NTI) * TI + (e / TJ) % TI, (t / NTI) * TJ + e % TJ, v);
    }
  }
};

/// Per-thread sums acc[0..S) over the block (shuffle tree, then warps in order) stored as this
/// block's partials [0, count).
template <int S>
__device__ __forceinline__ void block_sums(const double (&acc)[S], int count, double* sh, double* partials) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int o = 0; o < S; ++o) {
    double v = acc[o];
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) sh[warp * S + o] = v;
  }
  __syncthreads();
  for (int o = threadIdx.x; o < count; o += kThreads) {
    double t = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) t += sh[w * S + o];
    partials[o] = t;
  }
  __syncthreads();
}

/// Shared memory of the narrow kernels: per warp, a staging buffer and a second row buffer
/// (32 rows of S + 1 values each), reused at the end for the block sums.
template <int S>
struct NarrowShared {
  // + S: the second buffer's columns fall on other banks than the first's (tiles read both at once)
  static constexpr int kRow = S + 1, kBuf = 32 * kRow + S;
  double buf[kThreads / 32][2][kBuf];
};

// 3 blocks per SM (80 registers at S = 8, 64 bytes spilled): 74% of the copy bandwidth on the
// H100 at s = 8, against 64% with 2 blocks (94 registers, no spill).
template <int S>
__global__ void __launch_bounds__(kThreads, 3)
    update_rows_kernel(index_t n, int s, int a, const double* __restrict__ Qn, const __grid_constant__ NarrowCoefs<S> k,
                       double* __restrict__ Rg, ZSource zsrc, const double* __restrict__ inv_diag,
                       const double* __restrict__ Z, bool update, bool grams, TallWorkspace ws) {
  using Tiles = WarpTiles<S, S>;  // Qnᵀ·Z
  constexpr int kRow = NarrowShared<S>::kRow;
  static_assert(sizeof(NarrowShared<S>) >= kThreads * Tiles::KTT * sizeof(double), "finish() scratch");
  __shared__ NarrowShared<S> shm;
  double rr[S];  // this thread's rows' share of diag(RᵀR)
#pragma unroll
  for (int j = 0; j < S; ++j) rr[j] = 0.0;
  Tiles qz;
  const int lane = threadIdx.x % 32;
  double* w = shm.buf[threadIdx.x / 32][0];
  double* w2 = shm.buf[threadIdx.x / 32][1];
  // Warps take 32 consecutive rows at a time (grid-stride); lane l works on row row0 + l.
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32 * 32; row0 < n;
       row0 += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t row = row0 + lane;
    const bool live = row < n;
    double q[S], r[S];
    warp_async_rows<S>(Qn, row0, n, s, w);  // both blocks' rows on the way at once
    warp_async_rows<S>(Rg, row0, n, s, w2);
    async_rows_wait<0>();
    warp_read_rows<S>(w, row0, n, s, a, q);
    warp_read_rows<S>(w2, row0, n, s, s, r);
    __syncwarp();  // w and w2 are reused below
    if (update) {
#pragma unroll
      for (int j = 0; j < S; ++j) {
        double dr = 0.0;
#pragma unroll
        for (int i = 0; i < S; ++i) dr += q[i] * k.c[i * S + j];  // a constant-bank operand: no load
        r[j] -= dr;
      }
      warp_store_rows<S>(Rg, row0, n, s, s, w, r);
    }
    if (grams) {
      const double d = zsrc == ZSource::InverseDiagonal && live ? inv_diag[row] : 1.0;
#pragma unroll
      for (int j = 0; j < S; ++j) {  // rows past n hold zeros: they add nothing
        const double z = j >= s || !live ? 0.0 : zsrc == ZSource::Given ? Z[row * s + j] : d * r[j];
        rr[j] += r[j] * r[j];
        w[lane * kRow + j] = q[j];
        w2[lane * kRow + j] = z;
      }
      __syncwarp();
      qz.add(w, w2, S, w2, kRow);
      __syncwarp();
    }
  }
  if (!grams) return;
  const int nout = s + a * s;
  double* part = ws.partials + std::size_t(blockIdx.x) * nout;
  __syncthreads();
  block_sums<S>(rr, s, &shm.buf[0][0][0], part);
  qz.finish(&shm.buf[0][0][0], [&](int i, int j, double v) {
    if (i < a && j < s) part[s + i + j * a] = v;
  });
}

// XS: the pass takes X's steps (X not null). A kernel of its own for each: the steps' registers
// (56 bytes spilled at S = 8) would otherwise weigh on the passes without them as well.
template <int S, bool XS>
__global__ void __launch_bounds__(kThreads, 3)
    direction_rows_kernel(index_t n, int s, int a, const double* __restrict__ Pn, double* __restrict__ X, int a2,
                          const __grid_constant__ NarrowCoefs<S> k, const double* __restrict__ Rg, ZSource zsrc,
                          const double* __restrict__ inv_diag, const double* __restrict__ Z, int ap,
                          double* Pnext, TallWorkspace ws) {  // Pnext is read (ap > 0), then written: no __restrict__
  using Tiles = WarpTiles<S, 2 * S>;  // Pnextᵀ·[Pnext | R]
  constexpr int kRow = NarrowShared<S>::kRow;
  static_assert(sizeof(NarrowShared<S>) >= kThreads * Tiles::KTT * sizeof(double), "finish() scratch");
  // The coefficients are read straight from the kernel parameters (k.c = Cb, k.x = Ca, k.act):
  // the loops below are unrolled, so each is a constant-bank operand of its FMA, where a shared
  // copy cost a shared-memory load per use (the kernel is bound by shared-memory traffic).
  __shared__ NarrowShared<S> shm;
  Tiles vv;
  const int lane = threadIdx.x % 32;
  double* w = shm.buf[threadIdx.x / 32][0];
  double* w2 = shm.buf[threadIdx.x / 32][1];
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32 * 32; row0 < n;
       row0 += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t row = row0 + lane;
    double p[S], r[S], v[S], x[S];
    // Pn's rows travel with X's, or with R's when this pass takes no X step (one wait, not two:
    // 0.41 ms against 0.26 ideal with two on the Laplacian 160³, s = 8, H100)
    if (a > 0) warp_async_rows<S>(Pn, row0, n, s, w);
    warp_async_rows<S>(XS ? X : Rg, row0, n, s, w2);
    async_rows_wait<0>();
    warp_read_rows<S>(w, row0, n, s, a, p);
    if constexpr (XS)  // (two calls, not one through a selected array: that would put x and r in local memory)
      warp_read_rows<S>(w2, row0, n, s, s, x);
    else
      warp_read_rows<S>(w2, row0, n, s, s, r);
    __syncwarp();  // w and w2 are refilled next
    if constexpr (XS) {  // X += Pnext·Cp + Pn·Ca: the X steps left to this pass, which reads Pn anyway
      const bool old = ap > 0;
      if (old) warp_async_rows<S>(Pnext, row0, n, s, w);  // the previous direction, before it is overwritten (below)
      warp_async_rows<S>(Rg, row0, n, s, w2);             // R's rows travel while X's step is made
      if (old) {
        async_rows_wait<1>();  // the previous direction's rows (R's may still be on the way)
        double po[S];
        warp_read_rows<S>(w, row0, n, s, ap, po);
        __syncwarp();  // w stages the store of X
#pragma unroll
        for (int j = 0; j < S; ++j) {  // Σ first, then one add per step: the host reference's rounding
          double dx = 0.0;
#pragma unroll
          for (int i = 0; i < S; ++i) dx += po[i] * k.xo[i * S + j];
          x[j] += dx;
        }
      }
#pragma unroll
      for (int j = 0; j < S; ++j) {
        double dx = 0.0;
#pragma unroll
        for (int i = 0; i < S; ++i) dx += p[i] * k.x[i * S + j];  // p is 0 beyond a and so are the coefficients
        x[j] += dx;
      }
      warp_store_rows<S>(X, row0, n, s, s, w, x);  // inactive columns have zero coefficients: they do not change
      async_rows_wait<0>();
      warp_read_rows<S>(w2, row0, n, s, s, r);
      __syncwarp();  // w stages the store of Pnext
    }
    const double d = zsrc == ZSource::InverseDiagonal && row < n ? inv_diag[row] : 1.0;
#pragma unroll
    for (int jj = 0; jj < S; ++jj) {
      v[jj] = 0.0;
      if (jj >= a2 || row >= n) continue;
      const int c = k.act[jj];
      double z = 0.0;
      if (zsrc == ZSource::Given) {
        z = Z[row * s + c];
      } else {
#pragma unroll
        for (int m = 0; m < S; ++m) z = m == c ? d * r[m] : z;  // r[c] without indexing registers at run time
      }
#pragma unroll
      for (int i = 0; i < S; ++i) z -= p[i] * k.c[i * S + jj];
      v[jj] = z;
    }
    warp_store_rows<S>(Pnext, row0, n, s, a2, w, v);
#pragma unroll
    for (int j = 0; j < S; ++j) {  // rows past n hold zeros: they add nothing
      w[lane * kRow + j] = v[j];
      w2[lane * kRow + j] = r[j];
    }
    __syncwarp();
    vv.add(w, w, S, w2, kRow);
    __syncwarp();
  }
  const int hh = a2 * a2;
  double* part = ws.partials + std::size_t(blockIdx.x) * (hh + a2 * s);
  __syncthreads();
  vv.finish(&shm.buf[0][0][0], [&](int i, int j, double v) {
    if (i >= a2) return;
    if (j < S) {
      if (j < a2) part[i + j * a2] = v;
    } else if (j - S < s) {
      part[hh + i + (j - S) * a2] = v;
    }
  });
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

std::size_t tall_partials(int grid, index_t s) { return std::size_t(grid) * std::size_t(2 * s * s + s); }

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

void tall_update(index_t n, index_t s, index_t a, const double* Qn, const double* Ca, double* R, ZSource zsrc,
                 const double* inv_diag, const double* Z, bool update, bool grams, const TallWorkspace& ws) {
  if (!update || a == 0) Ca = nullptr;
  if (const int S = row_width(s)) {
#define KRYSP_UPDATE_ROWS(W)                                                                                         \
  update_rows_kernel<W><<<ws.grid, kThreads>>>(n, int(s), int(a), Qn, narrow_coefs<W>(a, s, Ca, 0, nullptr, nullptr), \
                                               R, zsrc, inv_diag, Z, update, grams, ws)
    if (S == 1) KRYSP_UPDATE_ROWS(1);
    if (S == 2) KRYSP_UPDATE_ROWS(2);
    if (S == 4) KRYSP_UPDATE_ROWS(4);
    if (S == 8) KRYSP_UPDATE_ROWS(8);
#undef KRYSP_UPDATE_ROWS
    KRYSP_CUDA_CHECK_LAUNCH("update_rows_kernel");
    if (grams) reduce_outputs(int(s + a * s), ws);
    return;
  }
  if (Ca) copy_to_device(ws.coef, Ca, std::size_t(a) * s * sizeof(double));
  const int rows = chunk_rows(3 * s);  // Qn, R and Z rows staged
  const std::size_t bytes = (std::size_t(3) * rows * s + std::size_t(a) * s + (s + std::size_t(a) * s)) * sizeof(double);
  allow_shared(update_kernel, bytes);
  update_kernel<<<ws.grid, kThreads, bytes>>>(n, int(s), int(a), Qn, Ca ? ws.coef : nullptr, R, zsrc, inv_diag, Z,
                                              update, grams, rows, ws);
  KRYSP_CUDA_CHECK_LAUNCH("update_kernel");
  if (grams) reduce_outputs(int(s + a * s), ws);
}

void tall_direction(index_t n, index_t s, index_t a, const double* Pn, const double* Ca, double* X, const double* Cb,
                    index_t a2, const int* act, const double* R, ZSource zsrc, const double* inv_diag,
                    const double* Z, double* Pnext, index_t ap, const double* Cp, const TallWorkspace& ws) {
  if (a == 0) Ca = nullptr;  // nothing to add to X
  if (ap == 0 || !Ca) Cp = nullptr;
  const int S = row_width(s);
  if (Cp && (!S || a2 == 0)) {  // the previous step in a pass of its own (wide blocks; the loop's last)
    double* co = ws.coef + std::size_t(2) * s * s;
    copy_to_device(co, Cp, std::size_t(ap) * s * sizeof(double));
    const std::int64_t total = std::int64_t(n) * s;
    const auto grid = unsigned(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 65535));
    x_update_kernel<<<grid, kThreads>>>(n, int(s), int(ap), Pnext, co, X);
    KRYSP_CUDA_CHECK_LAUNCH("x_update_kernel");
    Cp = nullptr;
  }
  if (Ca && a2 == 0) {  // X's step in a pass of its own: the loop's last
    double* cx = ws.coef + std::size_t(s) * s;
    copy_to_device(cx, Ca, std::size_t(a) * s * sizeof(double));
    const std::int64_t total = std::int64_t(n) * s;
    const auto grid = unsigned(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 65535));
    x_update_kernel<<<grid, kThreads>>>(n, int(s), int(a), Pn, cx, X);
    KRYSP_CUDA_CHECK_LAUNCH("x_update_kernel");
    Ca = nullptr;
  }
  if (a2 == 0) return;
  if (S) {
#define KRYSP_DIRECTION_ROWS(W)                                                                                  \
  (Ca ? direction_rows_kernel<W, true> : direction_rows_kernel<W, false>)<<<ws.grid, kThreads>>>(                \
      n, int(s), int(a), Pn, Ca ? X : nullptr, int(a2), narrow_coefs<W>(a, a2, Cb, s, Ca, act, ap, Cp), R, zsrc,  \
      inv_diag, Z, Cp ? int(ap) : 0, Pnext, ws)
    if (S == 1) KRYSP_DIRECTION_ROWS(1);
    if (S == 2) KRYSP_DIRECTION_ROWS(2);
    if (S == 4) KRYSP_DIRECTION_ROWS(4);
    if (S == 8) KRYSP_DIRECTION_ROWS(8);
#undef KRYSP_DIRECTION_ROWS
    KRYSP_CUDA_CHECK_LAUNCH("direction_rows_kernel");
    return reduce_outputs(int(a2 * a2 + a2 * s), ws);
  }
  if (a * a2 > 0) copy_to_device(ws.coef, Cb, std::size_t(a) * a2 * sizeof(double));
  double* cx = ws.coef + std::size_t(s) * s;
  if (Ca) copy_to_device(cx, Ca, std::size_t(a) * s * sizeof(double));
  copy_to_device(ws.act, act, std::size_t(a2) * sizeof(int));
  const int rows = chunk_rows(3 * s);
  const std::size_t bytes = (std::size_t(3) * rows * s + std::size_t(a) * a2 + (Ca ? std::size_t(a) * s : 0) +
                             std::size_t(a2) * a2 + std::size_t(a2) * s) * sizeof(double) + std::size_t(a2) * sizeof(int);
  allow_shared(direction_kernel, bytes);
  direction_kernel<<<ws.grid, kThreads, bytes>>>(n, int(s), int(a), Pn, Ca ? cx : nullptr, Ca ? X : nullptr, ws.coef,
                                                 int(a2), ws.act, R, zsrc, inv_diag, Z, Pnext, rows, ws);
  KRYSP_CUDA_CHECK_LAUNCH("direction_kernel");
  reduce_outputs(int(a2 * a2 + a2 * s), ws);
}

}  // namespace krysp::detail
