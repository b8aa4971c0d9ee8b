// The vector kernels of bench_dist_cg (bench/dist_cg_kernels.hpp).
#include <cuda_runtime.h>

#include "dist_cg_kernels.hpp"

namespace krysp::bench {

namespace {
constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return int(b < kDotPartials ? (b < 1 ? 1 : b) : kDotPartials);
}

// Block sum in shared memory with a fixed tree: the same bits for the same input.
__device__ double block_sum(double v) {
  __shared__ double s[kThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  return s[0];
}

__global__ void dot_kernel(const double* a, const double* b, std::int64_t n, double* partials) {
  double v = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * kThreads)
    v += a[i] * b[i];
  v = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void finish_kernel(const double* partials, int count, double* slot) {
  double v = 0;
  for (int i = threadIdx.x; i < count; i += kThreads) v += partials[i];
  v = block_sum(v);
  if (threadIdx.x == 0) *slot = v;
}

__global__ void update_kernel(std::int64_t n, const double* rr, const double* pq, const double* p, const double* q,
                              double* x, double* r, double* partials) {
  const double alpha = *rr / *pq;
  double v = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * kThreads) {
    x[i] += alpha * p[i];
    const double ri = r[i] - alpha * q[i];
    r[i] = ri;
    v += ri * ri;
  }
  v = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void direction_kernel(std::int64_t n, const double* rr_new, const double* rr, const double* r, double* p) {
  const double beta = *rr_new / *rr;
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * kThreads)
    p[i] = r[i] + beta * p[i];
}

__global__ void fill_kernel(double* v, std::int64_t n, double value) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * kThreads)
    v[i] = value;
}
}  // namespace

void dist_dot(const double* a, const double* b, std::int64_t n, double* partials, double* slot) {
  const int g = blocks_for(n);
  dot_kernel<<<g, kThreads>>>(a, b, n, partials);
  finish_kernel<<<1, kThreads>>>(partials, g, slot);
}

void dist_cg_update(std::int64_t n, const double* rr, const double* pq, const double* p, const double* q, double* x,
                    double* r, double* partials, double* rr_new) {
  const int g = blocks_for(n);
  update_kernel<<<g, kThreads>>>(n, rr, pq, p, q, x, r, partials);
  finish_kernel<<<1, kThreads>>>(partials, g, rr_new);
}

void dist_cg_direction(std::int64_t n, const double* rr_new, const double* rr, const double* r, double* p) {
  direction_kernel<<<blocks_for(n) * 4, kThreads>>>(n, rr_new, rr, r, p);
}

void dist_fill(double* v, std::int64_t n, double value) { fill_kernel<<<blocks_for(n) * 4, kThreads>>>(v, n, value); }

}  // namespace krysp::bench
