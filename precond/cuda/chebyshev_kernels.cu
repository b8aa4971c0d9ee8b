// The Chebyshev preconditioner's fused vector kernels and the Lanczos helpers (λmax on the GPU).
// Every kernel is memory bound: each entry of each block crosses memory once per launch.
#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kBlock = 256;
constexpr int kMaxReduceGrid = 1024;

__device__ __forceinline__ std::int64_t thread_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

unsigned grid_for(std::int64_t total) {
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(1, (total + kBlock - 1) / kBlock), 1 << 20));
}

// Block-wide sum of v (blockDim.x == kBlock); thread 0 writes it to partials[blockIdx.x].
__device__ void block_partial(double v, double* partials) {
  __shared__ double warp_sums[kBlock / 32];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlock / 32 ? warp_sums[lane] : 0.0;
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) partials[blockIdx.x] = v;
  }
}

template <class T, class S, class O>
__global__ void __launch_bounds__(kBlock)
    cheb_first_kernel(index_t n, index_t N, S c0, const S* __restrict__ dinv, const T* __restrict__ R, index_t ldr,
                      O* __restrict__ X, index_t ldx) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  if (N == 1) {
    for (std::int64_t i = thread_index(); i < n; i += grid_stride())
      X[i * ldx] = O(c0 * dinv[i] * S(R[i * ldr]));
    return;
  }
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = thread_index(); t < total; t += grid_stride()) {
    const std::int64_t i = t / N, c = t - i * N;
    X[i * ldx + c] = O(c0 * dinv[i] * S(R[i * ldr + c]));
  }
}

// Xp and Y may be the same array (in-place update of x_{k−1} into x_{k+1}): no __restrict__ on them.
template <class T, class S, class O>
__global__ void __launch_bounds__(kBlock)
    cheb_step_kernel(index_t n, index_t N, S c1, S c2, const S* __restrict__ dinv, const T* __restrict__ R,
                     index_t ldr, const S* __restrict__ W, index_t ldw, const S* __restrict__ X, index_t ldx,
                     const S* Xp, index_t ldp, O* Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = thread_index(); t < total; t += grid_stride()) {
    std::int64_t i = t, c = 0;
    if (N != 1) {
      i = t / N;
      c = t - i * N;
    }
    const S x = X[i * ldx + c];
    const S xp = Xp ? Xp[i * ldp + c] : S(0);
    const S y = x + c1 * (x - xp) + c2 * (dinv[i] * (S(R[i * ldr + c]) - W[i * ldw + c]));
    Y[i * ldy + c] = O(y);
  }
}

// The last block to finish (last_block_done's ticket) sums the partials:
// loaded by all its threads at once, then added by thread 0 in block order from 0.0, bitwise
// what one thread summing them in a launch of its own would. Every thread of every block calls it
// (blockDim.x == kBlock) after block_partial. Returns true in every thread of the last block,
// with the total (its root when `root`) in `value`; the ticket is back to 0 then.
__device__ bool finish_in_last_block(double* partials, unsigned* ticket, double* out, bool root, double& value) {
  __shared__ double p[kMaxReduceGrid];
  __shared__ double total;
  if (!last_block_done(ticket, gridDim.x)) return false;  // also the vector entries advance_in_block reads
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) p[b] = __ldcg(partials + b);
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (unsigned b = 0; b < gridDim.x; ++b) sum += p[b];
    total = root ? sqrt(sum) : sum;
    *out = total;
  }
  __syncthreads();
  value = total;
  return true;
}

// The tail of a last block on small vectors: v = T(1.0 / d)·v, u = s∘v over all n entries (the
// next step's Lanczos vector and SpMV input), saving the launch of lanczos_advance. The entries
// were written by other blocks before their tickets: read past L1. Loads are issued kChunk at a
// time per thread (one L2 round trip per chunk, not per entry): ~4 round trips for n = 8k.
template <class T>
__device__ void advance_in_block(index_t n, double d, T* __restrict__ v, const T* __restrict__ s,
                                 T* __restrict__ u) {
  constexpr int kChunk = 8;
  const T a = T(1.0 / d);
  const std::int64_t step = std::int64_t(blockDim.x);
  for (std::int64_t base = threadIdx.x; base < n; base += kChunk * step) {
    T vv[kChunk], ss[kChunk];
#pragma unroll
    for (int c = 0; c < kChunk; ++c) {
      const std::int64_t i = base + c * step;
      if (i < n) {
        vv[c] = __ldcg(v + i);
        ss[c] = s[i];
      }
    }
#pragma unroll
    for (int c = 0; c < kChunk; ++c) {
      const std::int64_t i = base + c * step;
      if (i < n) {
        const T vi = vv[c] * a;
        v[i] = vi;
        u[i] = ss[c] * vi;
      }
    }
  }
}

// v_i = the start vector's entry of global row first + i; *out = ‖v‖ (root) or Σ v_i² (this rank's
// partial of a distributed sum). s null: v is written unscaled (lanczos_advance scales it); else
// (root only) the last block scales it and writes u = s∘v too.
template <class T>
__global__ void __launch_bounds__(kBlock)
    lanczos_start_kernel(index_t n, std::int64_t first, T* __restrict__ v, double* partials, unsigned* ticket,
                         double* out, bool root, const T* __restrict__ s, T* __restrict__ u) {
  double sum = 0;
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
    const T e = T(lanczos_start_entry(first + i));
    v[i] = e;
    sum += double(e) * double(e);
  }
  block_partial(sum, partials);
  double d;
  if (finish_in_last_block(partials, ticket, out, root, d) && s) advance_in_block(n, d, v, s, u);
}

// v = T(1.0 / *d)·v in place, u = s∘v: the Lanczos vector of the next step and the SpMV input.
template <class T>
__global__ void __launch_bounds__(kBlock)
    lanczos_advance_kernel(index_t n, const double* __restrict__ d, T* __restrict__ v, const T* __restrict__ s,
                           T* __restrict__ u) {
  const T a = T(1.0 / *d);
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
    const T vi = v[i] * a;
    v[i] = vi;
    u[i] = s[i] * vi;
  }
}

// vprev null: β_{−1}·v_{−1} = 0 (the first step), without reading either.
template <class T>
__global__ void __launch_bounds__(kBlock)
    lanczos_alpha_fused_kernel(index_t n, const T* __restrict__ s, T* __restrict__ w,
                               const double* __restrict__ beta_p, const T* __restrict__ vprev,
                               const T* __restrict__ v, double* partials, unsigned* ticket, double* alpha) {
  double sum = 0;
  if (vprev) {
    const T beta = T(*beta_p);
    for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
      const T wi = s[i] * w[i] - beta * vprev[i];
      w[i] = wi;
      sum += double(wi) * double(v[i]);
    }
  } else {
    for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
      const T wi = s[i] * w[i];  // the host's s∘w − 0·0: the same value
      w[i] = wi;
      sum += double(wi) * double(v[i]);
    }
  }
  block_partial(sum, partials);
  double unused;
  finish_in_last_block(partials, ticket, alpha, false, unused);
}

// w −= T(*alpha)·v; *out = ‖w‖ (root) or Σ w_i² (this rank's partial of a distributed sum); with s
// (root only) the last block then scales w by 1/β and writes u = s∘w.
template <class T>
__global__ void __launch_bounds__(kBlock)
    lanczos_beta_kernel(index_t n, const double* __restrict__ alpha_p, const T* __restrict__ v, T* w,
                        double* partials, unsigned* ticket, double* out, bool root, const T* __restrict__ s,
                        T* __restrict__ u) {
  const T alpha = T(*alpha_p);
  double sum = 0;
  for (std::int64_t i = thread_index(); i < n; i += grid_stride()) {
    const T wi = w[i] - alpha * v[i];
    w[i] = wi;
    sum += double(wi) * double(wi);
  }
  block_partial(sum, partials);
  double d;
  if (finish_in_last_block(partials, ticket, out, root, d) && s) advance_in_block(n, d, w, s, u);
}

__global__ void lanczos_root_kernel(double* x) { *x = sqrt(*x); }
}  // namespace

template <class T, class S, class O>
void cheb_first(index_t n, index_t N, S c0, const S* dinv, const T* R, index_t ldr, O* X, index_t ldx,
                DeviceStream stream) {
  if (n == 0 || N == 0) return;
  launch_overlapped("cheb_first_kernel", cheb_first_kernel<T, S, O>, grid_for(std::int64_t(n) * N), kBlock,
                    cuda_stream(stream), n, N, c0, dinv, R, ldr, X, ldx);
}

template <class T, class S, class O>
void cheb_step(index_t n, index_t N, S c1, S c2, const S* dinv, const T* R, index_t ldr, const S* W, index_t ldw,
               const S* X, index_t ldx, const S* Xp, index_t ldp, O* Y, index_t ldy, DeviceStream stream) {
  if (n == 0 || N == 0) return;
  launch_overlapped("cheb_step_kernel", cheb_step_kernel<T, S, O>, grid_for(std::int64_t(n) * N), kBlock,
                    cuda_stream(stream), n, N, c1, c2, dinv, R, ldr, W, ldw, X, ldx, Xp, ldp, Y, ldy);
}

int lanczos_grid(index_t n) {
  return int(std::min<std::int64_t>(kMaxReduceGrid, std::max<std::int64_t>(1, (std::int64_t(n) + kBlock - 1) / kBlock)));
}

template <class T>
void lanczos_start_fused(index_t n, T* v, double* partials, unsigned* ticket, double* norm, const T* s, T* u) {
  lanczos_start_kernel<T><<<lanczos_grid(n), kBlock>>>(n, 0, v, partials, ticket, norm, true, s, u);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_start_kernel");
}

template <class T>
void lanczos_advance(index_t n, const double* d, T* v, const T* s, T* u) {
  if (n == 0) return;
  lanczos_advance_kernel<T><<<grid_for(n), kBlock>>>(n, d, v, s, u);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_advance_kernel");
}

template <class T>
void lanczos_alpha_fused(index_t n, const T* s, T* w, const double* beta, const T* vprev, const T* v,
                         double* partials, unsigned* ticket, double* alpha) {
  lanczos_alpha_fused_kernel<T><<<lanczos_grid(n), kBlock>>>(n, s, w, beta, vprev, v, partials, ticket, alpha);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_alpha_fused_kernel");
}

template <class T>
void lanczos_beta_fused(index_t n, const double* alpha, const T* v, T* w, double* partials, unsigned* ticket,
                        double* beta, const T* s, T* u) {
  lanczos_beta_kernel<T><<<lanczos_grid(n), kBlock>>>(n, alpha, v, w, partials, ticket, beta, true, s, u);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_beta_kernel");
}

template <class T>
void lanczos_start_partial(index_t n, std::int64_t first, T* v, double* partials, unsigned* ticket, double* sumsq) {
  lanczos_start_kernel<T><<<lanczos_grid(n), kBlock>>>(n, first, v, partials, ticket, sumsq, false, nullptr, nullptr);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_start_kernel");
}

template <class T>
void lanczos_beta_partial(index_t n, const double* alpha, const T* v, T* w, double* partials, unsigned* ticket,
                          double* sumsq) {
  lanczos_beta_kernel<T><<<lanczos_grid(n), kBlock>>>(n, alpha, v, w, partials, ticket, sumsq, false, nullptr,
                                                      nullptr);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_beta_kernel");
}

void lanczos_root(double* x) {
  lanczos_root_kernel<<<1, 1>>>(x);
  KRYSP_CUDA_CHECK_LAUNCH("lanczos_root_kernel");
}

#define KRYSP_INSTANTIATE_CHEB(T, S, O)                                                                             \
  template void cheb_first<T, S, O>(index_t, index_t, S, const S*, const T*, index_t, O*, index_t, DeviceStream);   \
  template void cheb_step<T, S, O>(index_t, index_t, S, S, const S*, const T*, index_t, const S*, index_t, const S*, \
                                   index_t, const S*, index_t, O*, index_t, DeviceStream);
KRYSP_INSTANTIATE_CHEB(double, double, double)
KRYSP_INSTANTIATE_CHEB(float, float, float)
KRYSP_INSTANTIATE_CHEB(double, float, float)
KRYSP_INSTANTIATE_CHEB(double, float, double)

#define KRYSP_INSTANTIATE_LANCZOS(T)                                                                      \
  template void lanczos_start_fused<T>(index_t, T*, double*, unsigned*, double*, const T*, T*);          \
  template void lanczos_advance<T>(index_t, const double*, T*, const T*, T*);                            \
  template void lanczos_alpha_fused<T>(index_t, const T*, T*, const double*, const T*, const T*, double*, \
                                       unsigned*, double*);                                              \
  template void lanczos_beta_fused<T>(index_t, const double*, const T*, T*, double*, unsigned*, double*,   \
                                      const T*, T*);
KRYSP_INSTANTIATE_LANCZOS(double)
KRYSP_INSTANTIATE_LANCZOS(float)
template void lanczos_start_partial<double>(index_t, std::int64_t, double*, double*, unsigned*, double*);
template void lanczos_beta_partial<double>(index_t, const double*, const double*, double*, double*, unsigned*,
                                           double*);

}  // namespace krysp::detail
