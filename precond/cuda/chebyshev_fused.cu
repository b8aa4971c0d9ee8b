// The fused Chebyshev step: one row's (A·x)_i is computed inside the kernel and the recurrence is
// applied in its epilogue, so A·x_k is never written to memory and read back (per fp32 step on a
// 7-point Laplacian that saves 2 of ~10 vector passes plus a launch; chebyshev_kernels.hpp).
// Both kernels sum each row in one fixed order (no atomics): the result is bitwise reproducible.
#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/sparse/cuda/load.cuh"
#include "krysp/sparse/cuda/row_sum.cuh"

namespace krysp::detail {

namespace {
constexpr int kFusedBlock = 256;
constexpr int kStreamWarps = kFusedBlock / 32;
/// Stream kernel: products staged per warp and pass (8 coalesced loads of values and indices per
/// lane in flight before the gathers), and in fp32 at least 6 blocks per SM (40 registers, no
/// spills; fp64 keeps 4 blocks and 64 registers, where 6 would spill 80 bytes). 256 products and
/// 6 blocks were the fastest of the shapes timed with bench_precond, 6% ahead of no register cap
/// (docs/tuning.md, "Fused Chebyshev step").
constexpr int kStreamChunk = 256;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr int kStreamMinBlocks = 4;  // at most 1,024 threads per SM before sm_80
#else
constexpr int kStreamMinBlocks = 6;
#endif

// y_i = x_i + c1·(x_i − xp_i) + c2·dinv_i·(r_i − ax): the same expression as cheb_step_kernel;
// with RES the residual y_i = r_i − ax alone.
template <bool RES, class R, class S, class O>
__device__ __forceinline__ void cheb_epilogue(std::int64_t row, S ax, S c1, S c2, const S* __restrict__ dinv,
                                              const R* __restrict__ Rv, index_t ldr, const S* __restrict__ X,
                                              const S* Xp, O* Y, index_t ldy) {
  if constexpr (RES) {
    Y[row * ldy] = O(S(Rv[row * ldr]) - ax);
    return;
  }
  const S x = X[row];
  const S xp = Xp ? Xp[row] : S(0);  // read before Y_row is written: Y may be Xp
  const S y = x + c1 * (x - xp) + c2 * (dinv[row] * (S(Rv[row * ldr]) - ax));
  Y[row * ldy] = O(y);
}

// A warp per 32 consecutive rows, one lane per row (CSR-stream). The warp's nonzeros, contiguous
// in CSR, are loaded by all 32 lanes together (coalesced, kStreamChunk/32 independent loads per
// lane), their products a_k·x_{col_k} staged in shared memory, then each lane adds up its row's
// products in row order. Short, even rows (3-D Laplacian: 7) keep every lane busy, where a
// sub-warp per row idles lanes and leaves one load per lane in flight. Long rows stay correct
// (several passes) but serialise on their lane: the plan chooses this kernel for even rows only.
// Xp and Y may be the same array (no __restrict__): each row's Xp entry is read before its Y
// entry is written, by the same lane. X must not be Y (other rows gather from X).
template <bool RES, class R, class S, class O>
__global__ void __launch_bounds__(kFusedBlock, sizeof(S) == 4 ? kStreamMinBlocks : 4)
    cheb_fused_stream_kernel(CsrView<S> A, S c1, S c2, const S* __restrict__ dinv, const R* __restrict__ Rv,
                             index_t ldr, const S* __restrict__ X, const S* Xp, O* Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  __shared__ S staged[kStreamWarps][kStreamChunk];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t row0 = (std::int64_t(blockIdx.x) * kStreamWarps + warp) * 32;
  if (row0 >= A.rows) return;  // whole warps leave; only __syncwarp below
  const std::int64_t row = row0 + lane;
  const bool active = row < A.rows;
  const int last = (A.rows - row0 < 32 ? int(A.rows - row0) : 32) - 1;  // the warp's last row's lane
  std::int64_t rb = 0, re = 0;
  if (active) {
    rb = __ldg(A.row_ptr + row);
    re = __ldg(A.row_ptr + row + 1);
  }
  const std::int64_t b = __shfl_sync(0xffffffffu, rb, 0), e = __shfl_sync(0xffffffffu, re, last);
  S* const mine = staged[warp];
  S sum = S(0);
  for (std::int64_t cb = b; cb < e; cb += kStreamChunk) {
    constexpr int kPer = kStreamChunk / 32;
    index_t c[kPer];
    S v[kPer];
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const std::int64_t k = cb + t * 32 + lane;
      c[t] = k < e ? load_stream(A.col_idx + k) : index_t(-1);
      v[t] = k < e ? load_stream(A.values + k) : S(0);
    }
#pragma unroll
    for (int t = 0; t < kPer; ++t)
      if (c[t] >= 0) mine[t * 32 + lane] = v[t] * load_cached(X + c[t]);
    __syncwarp();
    if (active) {
      const std::int64_t lo = rb > cb ? rb : cb;
      const std::int64_t hi = re < cb + kStreamChunk ? re : cb + kStreamChunk;
      for (std::int64_t k = lo; k < hi; ++k) sum += mine[k - cb];
    }
    __syncwarp();  // the next pass overwrites the staged products
  }
  if (active) cheb_epilogue<RES, R, S, O>(row, sum, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy);
}

// A sub-warp of W lanes per row, shuffle reduction (as spmv_row_subwarp_kernel), the recurrence
// on the sub-warp's first lane. Aliasing as above.
template <bool RES, class R, class S, class O, int W>
__global__ void __launch_bounds__(kFusedBlock)
    cheb_fused_subwarp_kernel(CsrView<S> A, S c1, S c2, const S* __restrict__ dinv, const R* __restrict__ Rv,
                              index_t ldr, const S* __restrict__ X, const S* Xp, O* Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t tid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t row = tid / W;
  if (row >= A.rows) return;  // whole sub-warps agree: W divides the warp
  const S sum = subwarp_row_sum<W>(A, X, row);
  if (threadIdx.x % W == 0) cheb_epilogue<RES, R, S, O>(row, sum, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy);
}

template <class T, class S>
__global__ void __launch_bounds__(kFusedBlock)
    cheb_first_split_kernel(index_t n, S c0, const S* __restrict__ dinv, const T* __restrict__ R, index_t ldr,
                            S* __restrict__ X, S* __restrict__ Rs) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const S r = S(R[i * ldr]);  // what every step would convert: the same value
    Rs[i] = r;
    X[i] = c0 * dinv[i] * r;
  }
}

template <bool RES, class R, class S, class O, int W>
void launch_subwarp(const CsrView<S>& A, S c1, S c2, const S* dinv, const R* Rv, index_t ldr, const S* X,
                    const S* Xp, O* Y, index_t ldy, cudaStream_t st) {
  const auto grid = unsigned((std::size_t(A.rows) * W + kFusedBlock - 1) / kFusedBlock);
  launch_overlapped("cheb_fused_subwarp_kernel", cheb_fused_subwarp_kernel<RES, R, S, O, W>, grid, kFusedBlock, st,
                    A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy);
}

template <bool RES, class R, class S, class O>
void launch_fused(const CsrView<S>& A, int subwarp, S c1, S c2, const S* dinv, const R* Rv, index_t ldr, const S* X,
                  const S* Xp, O* Y, index_t ldy, DeviceStream stream) {
  if (A.rows == 0) return;
  const cudaStream_t st = cuda_stream(stream);
  switch (subwarp) {
    case 0: {
      const auto grid = unsigned((std::size_t(A.rows) + kFusedBlock - 1) / kFusedBlock);
      launch_overlapped("cheb_fused_stream_kernel", cheb_fused_stream_kernel<RES, R, S, O>, grid, kFusedBlock, st,
                        A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy);
      return;
    }
    case 2: return launch_subwarp<RES, R, S, O, 2>(A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, st);
    case 4: return launch_subwarp<RES, R, S, O, 4>(A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, st);
    case 8: return launch_subwarp<RES, R, S, O, 8>(A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, st);
    case 16: return launch_subwarp<RES, R, S, O, 16>(A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, st);
    case 32: return launch_subwarp<RES, R, S, O, 32>(A, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, st);
    default:
      KRYSP_THROW(InputError, "cheb_fused_step: sub-warp width ", subwarp, " is not 0 (stream), 2, 4, 8, 16 or 32");
  }
}
}  // namespace

template <class R, class S, class O>
void cheb_fused_step(const CsrView<S>& A, int subwarp, S c1, S c2, const S* dinv, const R* Rv, index_t ldr,
                     const S* X, const S* Xp, O* Y, index_t ldy, DeviceStream stream) {
  launch_fused<false>(A, subwarp, c1, c2, dinv, Rv, ldr, X, Xp, Y, ldy, stream);
}

template <class T>
void fused_residual(const CsrView<T>& A, int subwarp, const T* B, const T* X, T* Y, DeviceStream stream) {
  launch_fused<true, T, T, T>(A, subwarp, T(0), T(0), nullptr, B, 1, X, nullptr, Y, 1, stream);
}

template <class T, class S>
void cheb_first_split(index_t n, S c0, const S* dinv, const T* R, index_t ldr, S* X, S* Rs) {
  if (n == 0) return;
  const auto grid = unsigned(std::min<std::int64_t>((std::int64_t(n) + kFusedBlock - 1) / kFusedBlock, 1 << 20));
  cheb_first_split_kernel<T, S><<<grid, kFusedBlock>>>(n, c0, dinv, R, ldr, X, Rs);
  KRYSP_CUDA_CHECK_LAUNCH("cheb_first_split_kernel");
}

#define KRYSP_INSTANTIATE_FUSED(R, S, O)                                                                        \
  template void cheb_fused_step<R, S, O>(const CsrView<S>&, int, S, S, const S*, const R*, index_t, const S*, \
                                         const S*, O*, index_t, DeviceStream);
KRYSP_INSTANTIATE_FUSED(double, double, double)
KRYSP_INSTANTIATE_FUSED(float, float, float)
KRYSP_INSTANTIATE_FUSED(double, float, float)   // fp32 polynomial, r read in fp64
KRYSP_INSTANTIATE_FUSED(double, float, double)  // ... its last step
KRYSP_INSTANTIATE_FUSED(float, float, double)   // fp32 polynomial, r converted once: the last step
template void fused_residual<double>(const CsrView<double>&, int, const double*, const double*, double*,
                                    DeviceStream);
template void fused_residual<float>(const CsrView<float>&, int, const float*, const float*, float*, DeviceStream);
template void cheb_first_split<double, float>(index_t, float, const float*, const double*, index_t, float*, float*);

}  // namespace krysp::detail
