// Block CG's two row-wise steps (see block_cg_kernels.hpp). Up to 8 columns: a thread per row, a
// warp's 32 rows moved through shared memory so that global loads and stores are contiguous
// (cp.async where available), the Gram products in per-lane tiles and summed in a fixed order
// (bitwise reproducible). 9 to 16 columns: a thread per row reading its row directly, the Gram
// products by tall_gram. Coefficients travel by value as __grid_constant__ kernel parameters:
// no upload, no wait, each an FMA's constant-bank operand in the unrolled loops. Rows are
// independent, so both steps run in place.
#include <algorithm>

#include "krysp/base/cuda/check.cuh"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kThreads = 256;

/// Up to three small column-major matrices, a[i·S + j] = A(i, j), zero outside the parts used.
template <int S>
struct Coefs {
  double a[S * S];
  double b[S * S];
  double c[S * S];
};
template <int S>
void put(double (&dst)[S * S], const double* M, index_t rows, index_t cols) {
  for (index_t j = 0; M && j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) dst[i * S + j] = M[i + j * rows];
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

/// Shared memory of the narrow kernels: per warp, a staging buffer and a second row buffer
/// (32 rows of S + 1 values each), reused at the end for the block sums.
template <int S>
struct NarrowShared {
  // + S: the second buffer's columns fall on other banks than the first's (tiles read both at once)
  static constexpr int kRow = S + 1, kBuf = 32 * kRow + S;
  double buf[kThreads / 32][2][kBuf];
};


/// z = M⁻¹·w for one row (count columns): D⁻¹ (d), the identity, or read from a filled Z block.
template <int S>
__device__ __forceinline__ void z_of(ZSource zsrc, double d, const double* zrow, int count, const double (&w)[S],
                                     double (&z)[S]) {
#pragma unroll
  for (int j = 0; j < S; ++j)
    z[j] = j >= count ? 0.0 : zsrc == ZSource::InverseDiagonal ? d * w[j] : zsrc == ZSource::Given ? zrow[j] : w[j];
}

// k.a = ξ (w × w), k.b = Cq (wq × w). With update: Q = Q·Cq − AP·ξ (first w columns, from the first
// wq). With grams: this block's partials of Wᵀ·[Z | W] (W = Q after the update), WᵀZ at
// [i + j·w], WᵀW at [w² + i + j·w].
template <int S>
__global__ void __launch_bounds__(kThreads, 3)
    step_rows_kernel(index_t n, int s, int w, int wq, const double* __restrict__ AP, double* __restrict__ Q, ZSource zsrc,
                     const double* __restrict__ inv_diag, const double* __restrict__ Z, bool update, bool grams,
                     const __grid_constant__ Coefs<S> k, TallWorkspace ws) {
  using Tiles = WarpTiles<S, 2 * S>;
  constexpr int kRow = NarrowShared<S>::kRow;
  static_assert(sizeof(NarrowShared<S>) >= kThreads * Tiles::KTT * sizeof(double), "finish() scratch");
  __shared__ NarrowShared<S> shm;
  Tiles wt;
  const int lane = threadIdx.x % 32;
  double* b0 = shm.buf[threadIdx.x / 32][0];
  double* b1 = shm.buf[threadIdx.x / 32][1];
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32 * 32; row0 < n;
       row0 += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t row = row0 + lane;
    const bool live = row < n;
    double ap[S], q[S];
    if (update) warp_async_rows<S>(AP, row0, n, s, b0);  // both blocks' rows on the way at once
    warp_async_rows<S>(Q, row0, n, s, b1);
    async_rows_wait<0>();
    if (update) warp_read_rows<S>(b0, row0, n, s, w, ap);
    warp_read_rows<S>(b1, row0, n, s, update ? wq : w, q);
    __syncwarp();  // b0 and b1 are reused below
    if (update) {
      double qn[S];
#pragma unroll
      for (int j = 0; j < S; ++j) {
        double a = 0.0, dq = 0.0;  // Σ first, then one subtraction: the host reference's rounding
#pragma unroll
        for (int i = 0; i < S; ++i) {
          a += q[i] * k.b[i * S + j];  // coefficients are zero beyond wq and w
          dq += ap[i] * k.a[i * S + j];
        }
        qn[j] = a - dq;
      }
#pragma unroll
      for (int j = 0; j < S; ++j) q[j] = qn[j];
      warp_store_rows<S>(Q, row0, n, s, w, b0, q);
    }
    if (grams) {
      double z[S];
      z_of<S>(zsrc, zsrc == ZSource::InverseDiagonal && live ? inv_diag[row] : 1.0, live ? Z + row * s : nullptr,
              live ? w : 0, q, z);
#pragma unroll
      for (int j = 0; j < S; ++j) {  // rows past n hold zeros: they add nothing
        b0[lane * kRow + j] = q[j];
        b1[lane * kRow + j] = z[j];
      }
      __syncwarp();
      wt.add(b0, b1, S, b0, kRow);  // Wᵀ·[Z | W]
      __syncwarp();
    }
  }
  if (!grams) return;
  const int ww = w * w;
  double* part = ws.partials + std::size_t(blockIdx.x) * (2 * ww);
  __syncthreads();
  wt.finish(&shm.buf[0][0][0], [&](int i, int j, double v) {
    if (i >= w) return;
    if (j < S) {
      if (j < w) part[i + j * w] = v;
    } else if (j - S < w) {
      part[ww + i + (j - S) * w] = v;
    }
  });
}

// k.a = Cw (w × w2), k.b = Tt (w × w2), k.c = Cx (w × s): X += P·Cx, then P = Z·Cw + P·Tt (Z = M⁻¹·W
// from W's rows in Q, or a filled block), all from the rows as they were.
template <int S>
__global__ void __launch_bounds__(kThreads, 3)
    rotate_rows_kernel(index_t n, int s, int w, int w2, const double* __restrict__ Q, ZSource zsrc,
                       const double* __restrict__ inv_diag, const double* __restrict__ Z, double* __restrict__ P,
                       double* __restrict__ X, const __grid_constant__ Coefs<S> k) {
  __shared__ NarrowShared<S> shm;
  double* b0 = shm.buf[threadIdx.x / 32][0];
  double* b1 = shm.buf[threadIdx.x / 32][1];
  const int lane = threadIdx.x % 32;
  for (std::int64_t row0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) / 32 * 32; row0 < n;
       row0 += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t row = row0 + lane;
    const bool live = row < n;
    double q[S], p[S], x[S], z[S];
    warp_async_rows<S>(P, row0, n, s, b0);
    warp_async_rows<S>(X, row0, n, s, b1);
    async_rows_wait<0>();
    warp_read_rows<S>(b0, row0, n, s, w, p);
    warp_read_rows<S>(b1, row0, n, s, s, x);
    __syncwarp();
    const bool want_q = zsrc != ZSource::Given;  // Z from W on the fly
    if (want_q) warp_async_rows<S>(Q, row0, n, s, b1);  // W's rows travel while X's step is made
#pragma unroll
    for (int j = 0; j < S; ++j) {
      double dx = 0.0;  // Σ first, then one add; columns that do not move have zero coefficients
#pragma unroll
      for (int i = 0; i < S; ++i) dx += p[i] * k.c[i * S + j];
      x[j] += dx;
    }
    warp_store_rows<S>(X, row0, n, s, s, b0, x);
    if (want_q) {
      async_rows_wait<0>();
      warp_read_rows<S>(b1, row0, n, s, w, q);
      __syncwarp();
    } else {
#pragma unroll
      for (int j = 0; j < S; ++j) q[j] = 0.0;
    }
    z_of<S>(zsrc, zsrc == ZSource::InverseDiagonal && live ? inv_diag[row] : 1.0, live ? Z + row * s : nullptr,
            live ? w : 0, q, z);
    double pn[S];
#pragma unroll
    for (int j = 0; j < S; ++j) {
      double b = 0.0;
#pragma unroll
      for (int i = 0; i < S; ++i) b += z[i] * k.a[i * S + j] + p[i] * k.b[i * S + j];
      pn[j] = b;
    }
    warp_store_rows<S>(P, row0, n, s, w2, b0, pn);
  }
}

// 9 to 16 columns: a thread per row. k.a = ξ, k.b = Cq: Q = Q·Cq − AP·ξ; with Z also Z = D⁻¹·Q
// (Z = Q without d).
__global__ void __launch_bounds__(kThreads)
    step_wide_kernel(index_t n, int s, int w, int wq, const double* __restrict__ AP, double* __restrict__ Q,
                     double* __restrict__ Z, const double* __restrict__ inv_diag, const __grid_constant__ Coefs<16> k) {
  for (std::int64_t row = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; row < n;
       row += std::int64_t(gridDim.x) * kThreads) {
    double ap[16], q[16], qn[16];
    load_row<16>(AP + row * s, w, ap);
    load_row<16>(Q + row * s, wq, q);
    const double d = inv_diag ? inv_diag[row] : 1.0;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      double a = 0.0, dq = 0.0;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        a += q[i] * k.b[i * 16 + j];
        dq += ap[i] * k.a[i * 16 + j];
      }
      qn[j] = a - dq;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      if (j >= w) break;
      Q[row * s + j] = qn[j];
      if (Z) Z[row * s + j] = d * qn[j];
    }
  }
}

// 9 to 16 columns, as rotate_rows_kernel with Z read from a filled block.
__global__ void __launch_bounds__(kThreads)
    rotate_wide_kernel(index_t n, int s, int w, int w2, const double* __restrict__ Z, double* __restrict__ P,
                       double* __restrict__ X, const __grid_constant__ Coefs<16> k) {
  for (std::int64_t row = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; row < n;
       row += std::int64_t(gridDim.x) * kThreads) {
    double z[16], p[16], pn[16];
    load_row<16>(Z + row * s, w, z);
    load_row<16>(P + row * s, w, p);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      if (j >= s) break;
      double dx = 0.0;
#pragma unroll
      for (int i = 0; i < 16; ++i) dx += p[i] * k.c[i * 16 + j];
      X[row * s + j] += dx;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      double b = 0.0;
#pragma unroll
      for (int i = 0; i < 16; ++i) b += z[i] * k.a[i * 16 + j] + p[i] * k.b[i * 16 + j];
      pn[j] = b;
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      if (j >= w2) break;
      P[row * s + j] = pn[j];
    }
  }
}

/// The register width for s columns: 1, 2, 4, 8 (warp-staged kernels), 16, or 0 beyond.
int step_width(index_t s) { return s <= 1 ? 1 : s <= 2 ? 2 : s <= 4 ? 4 : s <= 8 ? 8 : s <= kMaxStepCols ? 16 : 0; }

unsigned wide_grid(index_t n) {
  return unsigned(std::clamp<std::int64_t>((std::int64_t(n) + kThreads - 1) / kThreads, 1, 65535));
}
}  // namespace

bool tall_steps_fit(index_t s) { return step_width(s) > 0; }
bool tall_step_grams_fused(index_t s) { return step_width(s) > 0 && step_width(s) <= 8; }

void tall_step(index_t n, index_t s, index_t w, const double* AP, const double* xi, double* Q, index_t wq,
               const double* Cq, ZSource zsrc, const double* inv_diag, double* Z, bool update, bool grams,
               const TallWorkspace& ws) {
  const int S = step_width(s);
  KRYSP_REQUIRE(S > 0 && (S <= 8 || !grams) && (update || grams) && w > 0 && w <= s && wq <= s, "tall_step: ", s,
                " columns, width ", w, " from ", wq, grams ? " with" : " without", " Gram products");
  // No rows: nothing to update, but the Gram products are still due (zeros: a rank without rows
  // adds them to the other ranks' sums), so the kernel runs its blocks over no rows.
  if (n == 0 && !grams) return;
  if (S == 16) {
    Coefs<16> k{};
    put<16>(k.a, xi, w, w);
    put<16>(k.b, Cq, wq, w);
    step_wide_kernel<<<wide_grid(n), kThreads>>>(n, int(s), int(w), int(wq), AP, Q,
                                                 zsrc == ZSource::Given ? nullptr : Z,
                                                 zsrc == ZSource::InverseDiagonal ? inv_diag : nullptr, k);
    KRYSP_CUDA_CHECK_LAUNCH("step_wide_kernel");
    return;
  }
#define KRYSP_STEP(W)                                                                                            \
  do {                                                                                                           \
    Coefs<W> k{};                                                                                                \
    if (update) put<W>(k.a, xi, w, w), put<W>(k.b, Cq, wq, w);                                                  \
    step_rows_kernel<W><<<ws.grid, kThreads>>>(n, int(s), int(w), int(wq), AP, Q, zsrc, inv_diag, Z, update,     \
                                               grams, k, ws);                                                    \
  } while (0)
  if (S == 1) KRYSP_STEP(1);
  if (S == 2) KRYSP_STEP(2);
  if (S == 4) KRYSP_STEP(4);
  if (S == 8) KRYSP_STEP(8);
#undef KRYSP_STEP
  KRYSP_CUDA_CHECK_LAUNCH("step_rows_kernel");
  if (grams) tall_reduce(int(2 * w * w), ws);
}

void tall_rotate(index_t n, index_t s, index_t w, index_t w2, const double* Q, ZSource zsrc, const double* inv_diag,
                 const double* Z, double* P, double* X, const double* Cw, const double* Tt, const double* Cx,
                 const TallWorkspace& ws) {
  const int S = step_width(s);
  KRYSP_REQUIRE(S > 0 && w > 0 && w2 <= w && w <= s, "tall_rotate: ", s, " columns, width ", w, " to ", w2);
  if (n == 0) return;
  if (S == 16) {
    KRYSP_REQUIRE(zsrc == ZSource::Given, "tall_rotate: 9 to 16 columns read Z from a filled block");
    Coefs<16> k{};
    put<16>(k.a, Cw, w, w2);
    put<16>(k.b, Tt, w, w2);
    put<16>(k.c, Cx, w, s);
    rotate_wide_kernel<<<wide_grid(n), kThreads>>>(n, int(s), int(w), int(w2), Z, P, X, k);
    KRYSP_CUDA_CHECK_LAUNCH("rotate_wide_kernel");
    return;
  }
#define KRYSP_ROTATE(W)                                                                                           \
  do {                                                                                                            \
    Coefs<W> k{};                                                                                                 \
    put<W>(k.a, Cw, w, w2);                                                                                       \
    put<W>(k.b, Tt, w, w2);                                                                                       \
    put<W>(k.c, Cx, w, s);                                                                                        \
    rotate_rows_kernel<W><<<ws.grid, kThreads>>>(n, int(s), int(w), int(w2), Q, zsrc, inv_diag, Z, P, X, k);      \
  } while (0)
  if (S == 1) KRYSP_ROTATE(1);
  if (S == 2) KRYSP_ROTATE(2);
  if (S == 4) KRYSP_ROTATE(4);
  if (S == 8) KRYSP_ROTATE(8);
#undef KRYSP_ROTATE
  KRYSP_CUDA_CHECK_LAUNCH("rotate_rows_kernel");
}

}  // namespace krysp::detail
