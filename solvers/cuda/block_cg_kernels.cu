// Block CG's tall-skinny kernels (see block_cg_kernels.hpp). Wide blocks (s > 8): a block walks
// chunks of rows (grid-stride), stages the chunk's rows of each input block in shared memory with
// contiguous, coalesced loads (a chunk of a row-major block is one contiguous run), does its
// row-wise work element by element, then each thread adds its own outputs of the small products
// over the chunk's rows into a shared accumulator it alone owns. Narrow blocks (s ≤ 8): see
// "Narrow blocks" below. At the end the blocks' partials are summed by a second small kernel, one
// block per output, in a fixed order: no floating-point atomics, bitwise reproducible for a given
// grid.
#include <algorithm>
#include <type_traits>

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
  double* ca = zs + std::size_t(R) * s;  // Caᵀ (stored [i·s + j]: lanes of one i read consecutive j)
  double* acc = ca + std::size_t(a) * s;
  const int nout = grams ? s + a * s : 0;
  for (int o = threadIdx.x; o < a * s; o += kThreads) ca[(o % a) * s + o / a] = Ca ? Ca[o] : 0.0;
  for (int o = threadIdx.x; o < nout; o += kThreads) acc[o] = 0.0;
  __syncthreads();
  for (index_t r0 = index_t(blockIdx.x) * R; r0 < n; r0 += index_t(gridDim.x) * R) {
    const int nr = int(std::min<index_t>(R, n - r0));
    stage(qs, Qn, r0, nr, s);
    __syncthreads();
    for (int e = threadIdx.x; e < nr * s; e += kThreads) {
      const int r = e / s, j = e % s;
      const std::size_t g = std::size_t(r0) * s + e;  // = (r0 + r)·s + j
      double rv = Rg[g];
      if (update) {
        double dr = 0.0;  // Σ first, then one subtraction: the host reference's rounding
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
  double* ca = cb + std::size_t(a) * a2; // Ca stored [i·s + j] (with Ca only)
  const bool move_x = Ca != nullptr;
  double* acc = ca + (move_x ? std::size_t(a) * s : 0);
  int* cols = reinterpret_cast<int*>(acc + a2 * a2 + a2 * s);
  const int nout = a2 * a2 + a2 * s;
  for (int o = threadIdx.x; o < a * a2; o += kThreads) cb[(o % a) * a2 + o / a] = Cb[o];
  if (move_x)
    for (int o = threadIdx.x; o < a * s; o += kThreads) ca[(o % a) * s + o / a] = Ca[o];
  for (int o = threadIdx.x; o < a2; o += kThreads) cols[o] = act[o];
  for (int o = threadIdx.x; o < nout; o += kThreads) acc[o] = 0.0;
  __syncthreads();
  for (index_t r0 = index_t(blockIdx.x) * R; r0 < n; r0 += index_t(gridDim.x) * R) {
    const int nr = int(std::min<index_t>(R, n - r0));
    if (a > 0) stage(ps, Pn, r0, nr, s);
    if (a2 > 0) stage(rs, Rg, r0, nr, s);
    __syncthreads();
    if (move_x)  // X += Pn·Ca from the staged (old) Pn rows
      for (int e = threadIdx.x; e < nr * s; e += kThreads) {
        const int r = e / s, j = e % s;
        double dx = 0.0;  // Σ first, then one add; inactive columns have zero coefficients: x + 0
        for (int i = 0; i < a; ++i) dx += ps[r * s + i] * ca[i * s + j];
        X[std::size_t(r0) * s + e] += dx;
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
  if (nout > 0) finish(acc, nout, ws);
}

// ---- Narrow blocks (s ≤ 8). Nothing is staged in shared memory (the staged kernels above are
// bound by it at these widths: 33% of the copy bandwidth at s = 8, H100).

/// Sums per-thread accumulators over the block in a fixed order. A warp's lanes form G = 32/span
/// groups of `span` consecutive lanes (lane = g·span + l, the lanes g ≥ G left out); for each
/// position l < span and accumulator o < N, the groups are summed by a pairwise shuffle tree, then
/// the warps in order through `sh` (kThreads/32 · span · N doubles), and emit(l, o, sum) is called
/// once. span = 1 sums all the lanes. All threads must call it; it synchronises the block.
template <int N, class Emit>
__device__ __forceinline__ void block_reduce(double (&acc)[N], int span, double* sh, Emit emit) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, G = 32 / span, g = lane / span;
  for (int h = 1; h < G; h *= 2) {
    const bool take = g % (2 * h) == 0 && g + h < G;  // lane + span·h < 32 then
#pragma unroll
    for (int o = 0; o < N; ++o) {
      const double t = __shfl_down_sync(0xffffffffu, acc[o], span * h);
      if (take) acc[o] += t;
    }
  }
  if (g == 0)
#pragma unroll
    for (int o = 0; o < N; ++o) sh[(warp * span + lane) * N + o] = acc[o];
  __syncthreads();
  for (int slot = threadIdx.x; slot < span * N; slot += kThreads) {
    const int l = slot / N, o = slot % N;
    double t = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) t += sh[(w * span + l) * N + o];
    emit(l, o, t);
  }
}

/// v[0..count) = p[0..count), the rest 0.
template <int S>
__device__ __forceinline__ void load_row(const double* p, int count, double (&v)[S]) {
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = i < count ? p[i] : 0.0;
}

template <int S>
__global__ void __launch_bounds__(kThreads) gram_rows_kernel(index_t n, int ld, const double* __restrict__ X, int bx,
                                                             const double* __restrict__ Y, int by, TallWorkspace ws) {
  __shared__ double sh[kThreads / 32 * S * S];
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
  double* part = ws.partials + std::size_t(blockIdx.x) * (bx * by);
  block_reduce<S * S>(acc, 1, sh, [&](int, int o, double v) {
    const int i = o / S, j = o % S;
    if (i < bx && j < by) part[i + j * bx] = v;
  });
}

/// Coefficients of the narrow update and direction kernels, passed by value: no upload, and
/// they come from the constant bank. Column-major with leading dimension S, zero beyond the
/// a × s of Ca and the a × a2 of Cb.
template <int S>
struct NarrowCoefs {
  double ca[S * S];
  double cb[S * S];
  int act[S];  ///< act[j] for j < a2, else 0
};

/// out = column c of the S × S matrix m, c chosen at run time: compile-time indices only (m stays
/// in the constant bank, nothing is copied to local memory).
template <int S>
__device__ __forceinline__ void column_of(const double (&m)[S * S], int c, double (&out)[S]) {
#pragma unroll
  for (int i = 0; i < S; ++i) out[i] = m[i];
#pragma unroll
  for (int cc = 1; cc < S; ++cc)
#pragma unroll
    for (int i = 0; i < S; ++i) out[i] = c == cc ? m[i + cc * S] : out[i];
}

template <int S>
NarrowCoefs<S> narrow_coefs(index_t s, index_t a, const double* Ca, index_t a2, const double* Cb, const int* act) {
  NarrowCoefs<S> k{};
  for (index_t j = 0; j < s; ++j)
    for (index_t i = 0; i < a; ++i) k.ca[i + j * S] = Ca ? Ca[i + j * a] : 0.0;
  for (index_t j = 0; j < a2; ++j) {
    for (index_t i = 0; i < a; ++i) k.cb[i + j * S] = Cb[i + j * a];
    k.act[j] = act[j];
  }
  return k;
}

// The narrow gram, update and direction kernels keep the blocks' coalesced layout: a row-major block's
// rows row0 .. row0 + G − 1 are one contiguous run of G·s values, and lane g·s + c of a warp
// (G = 32/s groups of s lanes) loads, updates and stores element (row0 + g, c) of each block,
// 32·8 contiguous bytes per load at s = 8 (lanes G·s .. 31 idle when s does not divide 32). The
// row's other values come from the group's lanes by shuffles: lane c holds column c of the small
// coefficient matrices in registers, gathers Pn(row, 0..a) (or Qn's) to form its output element,
// and accumulates column c of each small product. A warp takes kSteps such row groups at a time,
// all their loads in flight before any is used.
constexpr int kSteps = 4;

/// Xᵀ·Y for ld ≤ S ≤ 8: lane c holds Y(row, c), gathers X(row, 0..bx) and accumulates column c.
template <int S>
__global__ void __launch_bounds__(kThreads) gram_group_kernel(index_t n, int ld, const double* __restrict__ X, int bx,
                                                              const double* __restrict__ Y, int by,
                                                              double* __restrict__ partials) {
  __shared__ double sh[kThreads / 32 * S * S];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int G = 32 / ld, g = lane / ld, c = lane % ld, base = g * ld;
  const bool used = g < G;
  double acc[S];  // (Xᵀ·Y)(i, c)
#pragma unroll
  for (int o = 0; o < S; ++o) acc[o] = 0.0;
  const std::int64_t rows = std::int64_t(G) * kSteps, stride = std::int64_t(gridDim.x) * (kThreads / 32) * rows;
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * (kThreads / 32) + warp) * rows; row0 < n; row0 += stride) {
    double x[kSteps], y[kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const std::int64_t row = row0 + u * G + g, off = row * ld + c;
      const bool live = used && row < n;
      x[u] = live && c < bx ? X[off] : 0.0;
      y[u] = live && c < by ? Y[off] : 0.0;
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int i = 0; i < S; ++i)
        if (i < bx) acc[i] += __shfl_sync(0xffffffffu, x[u], base + i) * y[u];  // uniform: every lane shuffles
  }
  double* part = partials + std::size_t(blockIdx.x) * (bx * by);
  block_reduce<S>(acc, ld, sh, [&](int l, int o, double v) {
    if (o < bx && l < by) part[o + l * bx] = v;
  });
}

template <int S>
__global__ void __launch_bounds__(kThreads, 2)
    update_group_kernel(index_t n, int s, int a, const double* __restrict__ Qn, double* __restrict__ Rg,
                        ZSource zsrc, const double* __restrict__ inv_diag, const double* __restrict__ Z, bool update,
                        bool grams, NarrowCoefs<S> k, double* __restrict__ partials) {
  constexpr int N = S + 1;  // per lane (column c): Qnᵀ·Z (i, c) for i < S, then (RᵀR)(c, c)
  __shared__ double sh[kThreads / 32 * S * N];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int G = 32 / s, g = lane / s, c = lane % s, base = g * s;
  const bool used = g < G;
  double ca[S];  // Ca(:, c)
  column_of<S>(k.ca, c, ca);
  double acc[N];
#pragma unroll
  for (int o = 0; o < N; ++o) acc[o] = 0.0;
  const std::int64_t rows = std::int64_t(G) * kSteps, stride = std::int64_t(gridDim.x) * (kThreads / 32) * rows;
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * (kThreads / 32) + warp) * rows; row0 < n; row0 += stride) {
    double q[kSteps], r[kSteps], d[kSteps];  // d: D⁻¹(row, row), or Z(row, c) given
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const std::int64_t row = row0 + u * G + g, off = row * s + c;
      const bool live = used && row < n;
      q[u] = live && c < a ? Qn[off] : 0.0;
      r[u] = live ? Rg[off] : 0.0;
      d[u] = !live || !grams                  ? 0.0
             : zsrc == ZSource::InverseDiagonal ? inv_diag[row]
             : zsrc == ZSource::Given           ? Z[off]
                                                : 1.0;
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const std::int64_t row = row0 + u * G + g, off = row * s + c;
      const bool live = used && row < n;
      double qi[S], dr = 0.0;  // Qn(row, 0..S), and Σ Qn(row, i)·Ca(i, c) in order (the host's rounding)
#pragma unroll
      for (int i = 0; i < S; ++i) {
        qi[i] = 0.0;
        if (i < a) {  // uniform: every lane shuffles
          qi[i] = __shfl_sync(0xffffffffu, q[u], base + i);
          dr += qi[i] * ca[i];
        }
      }
      double rv = r[u];
      if (update) {
        rv -= dr;  // inactive columns have zero coefficients: r − 0 leaves them as they are
        if (live) Rg[off] = rv;
      }
      if (grams) {  // lanes past n or idle hold zeros: they add nothing
        const double z = zsrc == ZSource::Given ? d[u] : zsrc == ZSource::InverseDiagonal ? d[u] * rv : rv;
        acc[S] += rv * rv;
#pragma unroll
        for (int i = 0; i < S; ++i) acc[i] += qi[i] * z;
      }
    }
  }
  if (!grams) return;  // uniform over the block
  double* part = partials + std::size_t(blockIdx.x) * (s + a * s);
  block_reduce<N>(acc, s, sh, [&](int l, int o, double v) {
    if (o == S) part[l] = v;
    else if (o < a) part[s + o + l * a] = v;
  });
}

template <int S>
__global__ void __launch_bounds__(kThreads, 2)
    direction_group_kernel(index_t n, int s, int a, int a2, bool move_x, const double* __restrict__ Pn,
                           double* __restrict__ X, const double* __restrict__ Rg, ZSource zsrc,
                           const double* __restrict__ inv_diag, const double* __restrict__ Z,
                           double* __restrict__ Pnext, NarrowCoefs<S> k, double* __restrict__ partials) {
  constexpr int kDirSteps = S == 8 ? 3 : kSteps;  // 4 at S = 8 spills (128 registers for 2 blocks per SM)
  constexpr int N = 2 * S;  // per lane (column c): PnextᵀPnext (i, c) for i ≤ c, then PnextᵀR (i, c), i < S
  __shared__ double sh[kThreads / 32 * S * N];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int G = 32 / s, g = lane / s, c = lane % s, base = g * s;
  const bool used = g < G, out = c < a2;  // out: Pnext has a column c
  int zc = 0;                             // Pnext(:, c) starts from Z(:, zc)
#pragma unroll
  for (int cc = 0; cc < S; ++cc) zc = c == cc && out ? k.act[cc] : zc;
  double ca[S], cb[S];                    // Ca(:, c), Cb(:, c)
  column_of<S>(k.ca, c, ca);
  column_of<S>(k.cb, c, cb);
  double acc[N];
#pragma unroll
  for (int o = 0; o < N; ++o) acc[o] = 0.0;
  const std::int64_t rows = std::int64_t(G) * kDirSteps, stride = std::int64_t(gridDim.x) * (kThreads / 32) * rows;
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * (kThreads / 32) + warp) * rows; row0 < n; row0 += stride) {
    double p[kDirSteps], r[kDirSteps], x[kDirSteps], d[kDirSteps];  // d: D⁻¹(row, row), or Z(row, zc) given
#pragma unroll
    for (int u = 0; u < kDirSteps; ++u) {
      const std::int64_t row = row0 + u * G + g, off = row * s + c;
      const bool live = used && row < n;
      p[u] = live && c < a ? Pn[off] : 0.0;
      r[u] = live && a2 > 0 ? Rg[off] : 0.0;
      x[u] = live && move_x ? X[off] : 0.0;
      d[u] = !live || a2 == 0                   ? 0.0
             : zsrc == ZSource::InverseDiagonal ? inv_diag[row]
             : zsrc == ZSource::Given && out    ? Z[row * s + zc]
                                                : 1.0;
    }
#pragma unroll
    for (int u = 0; u < kDirSteps; ++u) {
      const std::int64_t row = row0 + u * G + g, off = row * s + c;
      const bool live = used && row < n;
      double v = 0.0, dx = 0.0;
      if (a2 > 0) {  // uniform
        const double rz = __shfl_sync(0xffffffffu, r[u], base + zc);  // R(row, zc)
        v = zsrc == ZSource::Given ? d[u] : zsrc == ZSource::InverseDiagonal ? d[u] * rz : rz;
      }
#pragma unroll
      for (int i = 0; i < S; ++i)
        if (i < a) {  // uniform: every lane shuffles
          const double pi = __shfl_sync(0xffffffffu, p[u], base + i);  // Pn(row, i)
          v -= pi * cb[i];                                           // the host's order
          dx += pi * ca[i];  // Σ first, then one add; inactive columns have zero coefficients: x + 0
        }
      if (move_x && live) X[off] = x[u] + dx;
      if (a2 == 0) continue;  // uniform
      v = live && out ? v : 0.0;
      if (live && out) Pnext[off] = v;
#pragma unroll
      for (int i = 0; i < S; ++i)
        if (i < a2) {  // uniform
          const double vi = __shfl_sync(0xffffffffu, v, base + i);  // Pnext(row, i)
          if (i <= c) acc[i] += vi * v;
          acc[S + i] += vi * r[u];
        }
    }
  }
  if (a2 == 0) return;  // uniform over the block
  const int hh = a2 * a2;
  double* part = partials + std::size_t(blockIdx.x) * (hh + a2 * s);
  block_reduce<N>(acc, s, sh, [&](int l, int o, double v) {  // l: the lanes' column c
    if (o < S) {
      if (o <= l && l < a2) part[o + l * a2] = part[l + o * a2] = v;  // symmetric: both halves from i ≤ c
    } else if (o - S < a2) {
      part[hh + (o - S) + l * a2] = v;
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

int tall_grid(index_t n, index_t s) {
  int dev = 0, sms = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const std::int64_t chunks = (std::int64_t(n) + chunk_rows(4 * s) - 1) / chunk_rows(4 * s);
  return int(std::clamp<std::int64_t>(chunks, 1, 4 * std::int64_t(sms)));
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
  if (const int S = row_width(ld)) {  // bx, by ≤ ld ≤ 8
    if (S == 1) gram_group_kernel<1><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws.partials);
    if (S == 2) gram_group_kernel<2><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws.partials);
    if (S == 4) gram_group_kernel<4><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws.partials);
    if (S == 8) gram_group_kernel<8><<<ws.grid, kThreads>>>(n, int(ld), X, int(bx), Y, int(by), ws.partials);
    KRYSP_CUDA_CHECK_LAUNCH("gram_group_kernel");
    return reduce_outputs(int(bx * by), ws);
  }
  if (const int S = row_width(std::max(bx, by))) {  // narrow products of wide blocks
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
  const int nout = grams ? int(s + a * s) : 0;
  if (const int S = row_width(s)) {
    auto launch = [&](auto width) {
      constexpr int W = decltype(width)::value;
      update_group_kernel<W><<<ws.grid, kThreads>>>(n, int(s), int(a), Qn, R, zsrc, inv_diag, Z, update, grams,
                                                    narrow_coefs<W>(s, a, update ? Ca : nullptr, 0, nullptr, nullptr),
                                                    ws.partials);
    };
    if (S == 1) launch(std::integral_constant<int, 1>{});
    if (S == 2) launch(std::integral_constant<int, 2>{});
    if (S == 4) launch(std::integral_constant<int, 4>{});
    if (S == 8) launch(std::integral_constant<int, 8>{});
    KRYSP_CUDA_CHECK_LAUNCH("update_group_kernel");
    return reduce_outputs(nout, ws);
  }
  const double* ca = nullptr;
  if (update && a > 0) {
    copy_to_device(ws.coef, Ca, std::size_t(a) * s * sizeof(double));
    ca = ws.coef;
  }
  const int rows = chunk_rows(3 * s);
  const std::size_t bytes = (std::size_t(3) * rows * s + std::size_t(a) * s + std::size_t(nout)) * sizeof(double);
  allow_shared(update_kernel, bytes);
  update_kernel<<<ws.grid, kThreads, bytes>>>(n, int(s), int(a), Qn, ca, R, zsrc, inv_diag, Z, update, grams, rows,
                                              ws);
  KRYSP_CUDA_CHECK_LAUNCH("update_kernel");
  reduce_outputs(nout, ws);
}

void tall_direction(index_t n, index_t s, index_t a, const double* Pn, const double* Ca, double* X, const double* Cb,
                    index_t a2, const int* act, const double* R, ZSource zsrc, const double* inv_diag,
                    const double* Z, double* Pnext, const TallWorkspace& ws) {
  if (a == 0) Ca = nullptr;  // nothing to add to X
  const int nout = int(a2 * a2 + a2 * s);
  if (const int S = row_width(s)) {
    auto launch = [&](auto width) {
      constexpr int W = decltype(width)::value;
      direction_group_kernel<W><<<ws.grid, kThreads>>>(n, int(s), int(a), int(a2), Ca != nullptr, Pn, X, R, zsrc,
                                                       inv_diag, Z, Pnext, narrow_coefs<W>(s, a, Ca, a2, Cb, act),
                                                       ws.partials);
    };
    if (S == 1) launch(std::integral_constant<int, 1>{});
    if (S == 2) launch(std::integral_constant<int, 2>{});
    if (S == 4) launch(std::integral_constant<int, 4>{});
    if (S == 8) launch(std::integral_constant<int, 8>{});
    KRYSP_CUDA_CHECK_LAUNCH("direction_group_kernel");
    return reduce_outputs(nout, ws);
  }
  // The coefficients to the device: Cb, then Ca (2·s² doubles in all), the column indices.
  if (a * a2 > 0) copy_to_device(ws.coef, Cb, std::size_t(a) * a2 * sizeof(double));
  if (Ca) copy_to_device(ws.coef + std::size_t(s) * s, Ca, std::size_t(a) * s * sizeof(double));
  if (a2 > 0) copy_to_device(ws.act, act, std::size_t(a2) * sizeof(int));
  const int rows = chunk_rows(3 * s);
  const std::size_t bytes = (std::size_t(3) * rows * s + std::size_t(a) * a2 + (Ca ? std::size_t(a) * s : 0) +
                             std::size_t(nout)) * sizeof(double) + std::size_t(a2) * sizeof(int);
  allow_shared(direction_kernel, bytes);
  direction_kernel<<<ws.grid, kThreads, bytes>>>(n, int(s), int(a), Pn, Ca ? ws.coef + std::size_t(s) * s : nullptr,
                                                 X, ws.coef, int(a2), ws.act, R, zsrc, inv_diag, Z, Pnext, rows, ws);
  KRYSP_CUDA_CHECK_LAUNCH("direction_kernel");
  reduce_outputs(nout, ws);
}

}  // namespace krysp::detail
