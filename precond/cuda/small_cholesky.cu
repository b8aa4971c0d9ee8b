// Dense Cholesky and SPD inverse of a small matrix in one block's shared memory; see
// small_cholesky.hpp. L is kept packed (row i's entries 0..i at tri(i)): 230 rows fit in 227 KB
// where a full square would stop at 168.
#include <cmath>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/cuda/per_device.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/small_cholesky.hpp"

namespace krysp::detail {

namespace {

constexpr int kFactorThreads = 512;  // 4 × 4 tiles of the trailing update: ~60 registers a thread
constexpr int kPanel = 8;            // columns a panel: the trailing update reads each entry once a panel
constexpr int kRowsPerLane = 8;      // the inverse's vector in registers: 256 rows at most
constexpr int kMaxRows = 32 * kRowsPerLane;
constexpr int kInverseWarps = 8;     // columns of the inverse a block

__host__ __device__ inline int tri(int i) { return i * (i + 1) / 2; }

// LX's lower triangle (row-major, n × n) into S, packed: a warp a row.
__device__ inline void load_packed(int n, const double* __restrict__ LX, double* S) {
  const int warps = int(blockDim.x) / 32, lane = int(threadIdx.x) % 32;
  for (int i = int(threadIdx.x) / 32; i < n; i += warps)
    for (int j = lane; j <= i; j += 32) S[tri(i) + j] = LX[std::size_t(i) * n + j];
}

// Blocked right-looking Cholesky on the Schur complements themselves: column k keeps
// s_ik = l_ik·l_kk and its pivot d_k = l_kk², so an update is s_ij −= s_ik·s_jk/d_k and no
// column is scaled until the end, l_ik = s_ik/sqrt(d_k). A panel of kPanel columns takes three
// barriers: one thread factors its diagonal block in registers (the pivots' chain: a reciprocal
// a column), then a thread a row solves the rows below against it (independent rows), then the
// trailing lower triangle takes the panel's rank-kPanel update in 4 × 4 tiles: a warp a tile
// column, a lane a tile row, from a copy of the panel laid out so that the lanes' reads are
// consecutive (the tile column's are one broadcast).
__global__ void __launch_bounds__(kFactorThreads)
    small_cholesky_kernel(int n, double* __restrict__ LX, int* refused) {
  extern __shared__ double smem[];
  double* S = smem;
  double* thr = smem + tri(n);  // the pivot's zero level, then 1/sqrt(d_k) on the way out
  double* q = thr + n;          // 1/d_k
  double* panel = q + n;        // the panel's rows below it: kPanel·4·ceil(rows/4)
  __shared__ int stop;          // the refused pivot's row, or −1
  const int t = int(threadIdx.x), nt = int(blockDim.x), lane = t % 32, warps = nt / 32;
  load_packed(n, LX, S);
  double amax = 0;
  for (int k = t; k < n; k += nt) amax = fmax(amax, fabs(LX[std::size_t(k) * n + k]));
  amax = block_max<kFactorThreads>(amax);
  for (int k = t; k < n; k += nt) thr[k] = amg::pivot_zero_level(LX[std::size_t(k) * n + k], n, amax);
  if (t == 0) stop = -1;
  __syncthreads();
  for (int k0 = 0; k0 < n; k0 += kPanel) {
    const int kb = min(kPanel, n - k0);
    if (t == 0) {  // the diagonal block, D[r][c] = s at (k0 + r, k0 + c), c ≤ r
      double D[kPanel][kPanel];
#pragma unroll
      for (int r = 0; r < kPanel; ++r)
#pragma unroll
        for (int c = 0; c <= r; ++c) D[r][c] = r < kb ? S[tri(k0 + r) + k0 + c] : 1.0;
#pragma unroll
      for (int k = 0; k < kPanel; ++k) {
        if (k >= kb || stop >= 0) break;
        const double d = D[k][k];
        if (!(d > thr[k0 + k]) || !isfinite(d)) {
          stop = k0 + k;
          *refused = k0 + k;
          break;
        }
        const double qk = __drcp_rn(d);
        q[k0 + k] = qk;
#pragma unroll
        for (int r = k + 1; r < kPanel; ++r) {
          const double srk = D[r][k] * qk;
#pragma unroll
          for (int c = k + 1; c <= r; ++c) D[r][c] -= srk * D[c][k];
        }
      }
#pragma unroll
      for (int r = 0; r < kPanel; ++r)
#pragma unroll
        for (int c = 0; c <= r; ++c)
          if (r < kb) S[tri(k0 + r) + k0 + c] = D[r][c];
    }
    __syncthreads();
    if (stop >= 0) return;  // every thread reads it after the barrier
    const int r0 = k0 + kb, tiles = (n - r0 + 3) / 4;
    // Row i below the block: x_c −= (x_k/d_k)·s_(k0+c, k0+k) for k < c, the block's entries
    // broadcast. The result goes to S and to the panel's copy, row r0 + 4·I + r of column c at
    // panel[(c·4 + r)·tiles + I].
    for (int i = r0 + t; i < n; i += nt) {
      double x[kPanel];
#pragma unroll
      for (int c = 0; c < kPanel; ++c) x[c] = c < kb ? S[tri(i) + k0 + c] : 0.0;
#pragma unroll
      for (int k = 0; k < kPanel; ++k) {
        const double s = x[k] * q[k0 + k];  // kb = kPanel here: rows below a short panel do not exist
#pragma unroll
        for (int c = k + 1; c < kPanel; ++c) x[c] -= s * S[tri(k0 + c) + k0 + k];
      }
      const int I = (i - r0) / 4, r = (i - r0) % 4;
#pragma unroll
      for (int c = 0; c < kPanel; ++c) {
        S[tri(i) + k0 + c] = x[c];
        panel[(c * 4 + r) * tiles + I] = x[c];
      }
    }
    if (r0 == n) break;  // no trailing matrix
    for (int i = n + t; i < r0 + 4 * tiles; i += nt)  // the last tile's rows past n: zero
#pragma unroll
      for (int c = 0; c < kPanel; ++c) panel[(c * 4 + (i - r0) % 4) * tiles + (i - r0) / 4] = 0.0;
    __syncthreads();
    // Tile column J, rows I = J + lane (+ 32): two tasks a column when it is over 32 tiles long.
    for (int task = t / 32; task < tiles + max(0, tiles - 32); task += warps) {
      const int J = task < tiles ? task : task - tiles;
      const int I = J + lane + (task < tiles ? 0 : 32);
      if (I >= tiles) continue;
      double acc[4][4] = {};
#pragma unroll
      for (int c = 0; c < kPanel; ++c) {
        const double qc = q[k0 + c];
        const double* pc = panel + c * 4 * tiles;
        double a[4], b[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          a[r] = pc[r * tiles + I];
          b[r] = pc[r * tiles + J] * qc;
        }
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c2 = 0; c2 < 4; ++c2) acc[r][c2] = fma(a[r], b[c2], acc[r][c2]);
      }
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int i = r0 + 4 * I + r, j = r0 + 4 * J + c;
          if (i < n && j <= i) S[tri(i) + j] -= acc[r][c];
        }
    }
    __syncthreads();
  }
  for (int k = t; k < n; k += nt) thr[k] = 1.0 / sqrt(S[tri(k) + k]);
  __syncthreads();
  for (int i = t / 32; i < n; i += warps)
    for (int j = lane; j <= i; j += 32)
      LX[std::size_t(i) * n + j] = i == j ? sqrt(S[tri(i) + i]) : S[tri(i) + j] * thr[j];
}

// A warp a column j of W: L·y = e_j forward (y_r = 0 for r < j), then Lᵀ·x = y backward, column
// by column, L packed in shared memory and the vector in registers (row lane + 32·m in y[m]).
// A step's pivot entry comes from its lane by a shuffle: a step waits on a shuffle and a
// multiply, not on shared memory.
__global__ void __launch_bounds__(32 * kInverseWarps)
    small_spd_inverse_kernel(int n, const double* __restrict__ LX, double* __restrict__ W) {
  extern __shared__ double smem[];
  double* S = smem;
  double* rdiag = smem + tri(n);  // 1 / l_kk
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  load_packed(n, LX, S);
  __syncthreads();
  for (int k = int(threadIdx.x); k < n; k += int(blockDim.x)) rdiag[k] = 1.0 / S[tri(k) + k];
  __syncthreads();
  const int j = int(blockIdx.x) * (int(blockDim.x) / 32) + warp;
  if (j >= n) return;
  double y[kRowsPerLane];
#pragma unroll
  for (int m = 0; m < kRowsPerLane; ++m) y[m] = lane + 32 * m == j ? 1.0 : 0.0;
  // Rows 32·mk .. 32·mk + 31 are y[mk] of the lanes: mk a constant in each copy of the loop (a
  // dynamic register index would put y in local memory).
#pragma unroll
  for (int mk = 0; mk < kRowsPerLane; ++mk) {
    for (int k = max(j, 32 * mk); k < min(n, 32 * mk + 32); ++k) {
      const double yk = __shfl_sync(0xffffffffu, y[mk], k % 32) * rdiag[k];
#pragma unroll
      for (int m = mk; m < kRowsPerLane; ++m) {
        const int r = lane + 32 * m;
        if (r > k && r < n) y[m] -= S[tri(r) + k] * yk;
      }
      if (lane == k % 32) y[mk] = yk;
    }
  }
#pragma unroll
  for (int mk = kRowsPerLane - 1; mk >= 0; --mk) {
    for (int k = min(n, 32 * mk + 32) - 1; k >= 32 * mk; --k) {
      const double xk = __shfl_sync(0xffffffffu, y[mk], k % 32) * rdiag[k];
#pragma unroll
      for (int m = 0; m <= mk; ++m) {
        const int r = lane + 32 * m;
        if (r < k) y[m] -= S[tri(k) + r] * xk;
      }
      if (lane == k % 32) y[mk] = xk;
    }
  }
  double* col = W + std::size_t(j) * n;
#pragma unroll
  for (int m = 0; m < kRowsPerLane; ++m)
    if (lane + 32 * m < n) col[lane + 32 * m] = y[m];
}

// Shared memory of the factor: L packed, two vectors of n and the panel's copy (the inverse needs
// less).
std::size_t factor_doubles(index_t n) {
  return std::size_t(tri(int(n))) + 2 * std::size_t(n) + std::size_t(kPanel) * 4 * ((std::size_t(n) + 3) / 4);
}

// Per device, once: the largest n, with both kernels allowed the shared memory it needs (host
// calls that would otherwise precede every launch of a set-up's latency-bound coarse step).
index_t device_max_rows() {
  static PerDevice<index_t> rows;
  return rows.get([](int device) {
    const std::size_t room = std::size_t(optin_shared_bytes(device)) / sizeof(double);
    index_t n = 0;
    while (n < kMaxRows && factor_doubles(n + 1) <= room) ++n;
    if (n > 0) {
      const int bytes = int(factor_doubles(n) * sizeof(double));
      KRYSP_CUDA_CHECK(cudaFuncSetAttribute(small_cholesky_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      KRYSP_CUDA_CHECK(
          cudaFuncSetAttribute(small_spd_inverse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    }
    return n;
  });
}

}  // namespace

index_t small_dense_max_rows() { return device_max_rows(); }

void small_cholesky(index_t n, double* LX, int* refused) {
  if (n == 0) return;
  KRYSP_REQUIRE(n <= device_max_rows(), "small_cholesky: ", n, " rows do not fit shared memory");
  small_cholesky_kernel<<<1, kFactorThreads, factor_doubles(n) * sizeof(double)>>>(int(n), LX, refused);
  KRYSP_CUDA_CHECK_LAUNCH("small_cholesky_kernel");
}

void small_spd_inverse(index_t n, const double* LX, double* W) {
  if (n == 0) return;
  KRYSP_REQUIRE(n <= device_max_rows(), "small_spd_inverse: ", n, " rows do not fit shared memory");
  const std::size_t bytes = (std::size_t(tri(int(n))) + std::size_t(n)) * sizeof(double);
  const unsigned blocks = unsigned((n + kInverseWarps - 1) / kInverseWarps);
  small_spd_inverse_kernel<<<blocks, 32 * kInverseWarps, bytes>>>(int(n), LX, W);
  KRYSP_CUDA_CHECK_LAUNCH("small_spd_inverse_kernel");
}

}  // namespace krysp::detail
