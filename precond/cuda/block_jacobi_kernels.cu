// Block Jacobi on the GPU: detect the block size (count the nodes whose rows share a pattern, the
// host's test: node_pattern.hpp), factor every diagonal block once (one thread per block, the same
// Cholesky code as the host: spd_block.hpp), then apply all inverses in one kernel.
#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/precond/cuda/block_jacobi_kernels.hpp"
#include "krysp/precond/node_pattern.hpp"
#include "krysp/precond/spd_block.hpp"

namespace krysp::detail {

namespace {
constexpr int kBlock = 256;
constexpr int kFactorBlock = 64;  // one thread per diagonal block, ~1 KB of local arrays each

__device__ __forceinline__ std::int64_t thread_index() { return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ std::int64_t grid_stride() { return std::int64_t(gridDim.x) * blockDim.x; }

// The dense diagonal block k (b×b row-major, zeros where A stores nothing). Columns are sorted
// within a row, so each row's scan stops past the block.
template <class T>
__device__ void load_block(const CsrView<T>& A, int b, index_t k, T* a) {
  for (int t = 0; t < b * b; ++t) a[t] = T(0);
  const index_t c0 = k * b;
  for (int i = 0; i < b; ++i) {
    const index_t end = A.row_ptr[c0 + i + 1];
    for (index_t p = A.row_ptr[c0 + i]; p < end; ++p) {
      const index_t c = A.col_idx[p] - c0;
      if (c >= b) break;
      if (c >= 0) a[i * b + c] = A.values[p];
    }
  }
}

__global__ void __launch_bounds__(kBlock) pattern_kernel(const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                                                         index_t nodes, int b, unsigned long long* count) {
  unsigned long long agree = 0;
  for (std::int64_t k = thread_index(); k < nodes; k += grid_stride()) agree += node_agrees(rp, ci, index_t(k), b);
  for (int off = 16; off > 0; off /= 2) agree += __shfl_xor_sync(0xffffffffu, agree, off);
  if (threadIdx.x % 32 == 0 && agree > 0) atomicAdd(count, agree);
}

template <class T>
__global__ void __launch_bounds__(kFactorBlock)
    factor_kernel(CsrView<T> A, int b, index_t nodes, T* __restrict__ inv, int* first_bad) {
  T a[kMaxBlockSize * kMaxBlockSize], out[kMaxBlockSize * kMaxBlockSize];
  for (std::int64_t k = thread_index(); k < nodes; k += grid_stride()) {
    load_block(A, b, index_t(k), a);
    T pivot = 0;
    if (invert_spd_block(b, a, out, &pivot) != 0) {
      atomicMin(first_bad, int(k));
      continue;
    }
    T* dst = inv + k * b * b;
    for (int t = 0; t < b * b; ++t) dst[t] = out[t];
  }
}

template <class T>
__global__ void report_kernel(CsrView<T> A, int b, index_t k, int* pivot_index, T* pivot_value) {
  T a[kMaxBlockSize * kMaxBlockSize], out[kMaxBlockSize * kMaxBlockSize];
  load_block(A, b, k, a);
  T pivot = 0;
  *pivot_index = invert_spd_block(b, a, out, &pivot);
  *pivot_value = pivot;
}

// One thread per entry (g, c) of Z: z[g][c] = Σ_j inv_g[j]·R[k·B + j][c], with g = k·B + i and
// inv_g = row i of block k's inverse (B contiguous values). Neighbouring threads read neighbouring
// inverse rows (coalesced) and share the B entries of R (cached).
template <class T, int B>
__global__ void __launch_bounds__(kBlock)
    apply_kernel(index_t n, index_t N, const T* __restrict__ inv, const T* __restrict__ R, index_t ldr,
                 T* __restrict__ Z, index_t ldz) {
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = thread_index(); t < total; t += grid_stride()) {
    std::int64_t g = t, c = 0;
    if (N != 1) {
      g = t / N;
      c = t - g * N;
    }
    const std::int64_t first = g - g % B;
    const T* row = inv + g * B;
    T s = 0;
#pragma unroll
    for (int j = 0; j < B; ++j) s += row[j] * R[(first + j) * ldr + c];
    Z[g * ldz + c] = s;
  }
}

template <class T, int B>
void launch_apply(index_t n, index_t N, const T* inv, const T* R, index_t ldr, T* Z, index_t ldz) {
  const std::int64_t total = std::int64_t(n) * N;
  const unsigned grid = unsigned(std::min<std::int64_t>((total + kBlock - 1) / kBlock, 1 << 20));
  apply_kernel<T, B><<<grid, kBlock>>>(n, N, inv, R, ldr, Z, ldz);
  KRYSP_CUDA_CHECK_LAUNCH("block_jacobi apply_kernel");
}
}  // namespace

void block_pattern_count(const index_t* row_ptr, const index_t* col_idx, index_t n, int b, unsigned long long* count) {
  const index_t nodes = n / b;
  if (nodes == 0) return;
  const unsigned grid = unsigned(std::min<std::int64_t>((std::int64_t(nodes) + kBlock - 1) / kBlock, 1 << 20));
  pattern_kernel<<<grid, kBlock>>>(row_ptr, col_idx, nodes, b, count);
  KRYSP_CUDA_CHECK_LAUNCH("block_jacobi pattern_kernel");
}

template <class T>
void block_jacobi_factor(CsrView<T> A, int b, T* inv, int* first_bad) {
  const index_t nodes = A.rows / b;
  if (nodes == 0) return;
  const unsigned grid = unsigned(std::min<std::int64_t>((std::int64_t(nodes) + kFactorBlock - 1) / kFactorBlock, 1 << 20));
  factor_kernel<T><<<grid, kFactorBlock>>>(A, b, nodes, inv, first_bad);
  KRYSP_CUDA_CHECK_LAUNCH("block_jacobi factor_kernel");
}

template <class T>
void block_jacobi_report(CsrView<T> A, int b, index_t k, int* pivot_index, T* pivot_value) {
  report_kernel<T><<<1, 1>>>(A, b, k, pivot_index, pivot_value);
  KRYSP_CUDA_CHECK_LAUNCH("block_jacobi report_kernel");
}

template <class T>
void block_jacobi_apply(index_t n, int b, index_t N, const T* inv, const T* R, index_t ldr, T* Z, index_t ldz) {
  if (n == 0 || N == 0) return;
  switch (b) {
    case 1: return launch_apply<T, 1>(n, N, inv, R, ldr, Z, ldz);
    case 2: return launch_apply<T, 2>(n, N, inv, R, ldr, Z, ldz);
    case 3: return launch_apply<T, 3>(n, N, inv, R, ldr, Z, ldz);
    case 4: return launch_apply<T, 4>(n, N, inv, R, ldr, Z, ldz);
    case 5: return launch_apply<T, 5>(n, N, inv, R, ldr, Z, ldz);
    case 6: return launch_apply<T, 6>(n, N, inv, R, ldr, Z, ldz);
    case 7: return launch_apply<T, 7>(n, N, inv, R, ldr, Z, ldz);
    case 8: return launch_apply<T, 8>(n, N, inv, R, ldr, Z, ldz);
  }
  KRYSP_THROW(InputError, "block Jacobi: block size ", b, " is not supported (1 to ", kMaxBlockSize, ")");
}

#define KRYSP_INSTANTIATE_BJ(T)                                                             \
  template void block_jacobi_factor<T>(CsrView<T>, int, T*, int*);                         \
  template void block_jacobi_report<T>(CsrView<T>, int, index_t, int*, T*);                \
  template void block_jacobi_apply<T>(index_t, int, index_t, const T*, const T*, index_t, T*, index_t);
KRYSP_INSTANTIATE_BJ(double)
KRYSP_INSTANTIATE_BJ(float)

}  // namespace krysp::detail
