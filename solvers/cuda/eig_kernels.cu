// LOBPCG's fused kernels: residuals with column norms, and the reproducible random block.
#include <cuda_runtime.h>

#include <algorithm>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/solvers/cuda/eig_kernels.hpp"
#include "krysp/solvers/eig_random.hpp"

namespace krysp::detail {

namespace {

/// Per-column data of the residual kernel, passed by value (3 KiB, within the 4 KiB limit of
/// kernel parameters on every architecture).
struct EigColumns {
  double lambda[kEigMaxColumns];
  int dest[kEigMaxColumns];
};

constexpr int kResidualThreads = 256;

/// Threads per block for b columns: the largest multiple of b not above 256 (b ≤ 256), so each
/// thread keeps one column and a block covers rows_per = threads/b rows at a time.
int residual_threads(index_t b) { return int(kResidualThreads / b) * int(b); }

// Thread t of a block owns column t % b of rows (t / b) + rows_per·(block + grid·s), s = 0, 1, ...
// Element (i, j) of a row-major block: consecutive threads read consecutive columns of a row,
// then the next row: coalesced when ld = b, in row-sized segments otherwise.
__global__ void eig_residual_kernel(index_t n, index_t b, const double* __restrict__ AX, index_t ldax,
                                    const double* BX, index_t ldbx, const double* X, index_t ldx, EigColumns cols,
                                    double* __restrict__ R, index_t ldr, double* __restrict__ partials,
                                    unsigned* __restrict__ ticket, double* __restrict__ sums) {
  extern __shared__ double sh[];  // 2·blockDim.x
  const int rows_per = blockDim.x / b;
  const int col = threadIdx.x % b, ty = threadIdx.x / b;
  const double lam = cols.lambda[col];
  const int d = cols.dest[col];
  const bool same = BX == X;
  double sr = 0, sx = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * rows_per + ty; i < n; i += std::int64_t(gridDim.x) * rows_per) {
    const double x = X[i * ldx + col];
    const double bx = same ? x : BX[i * ldbx + col];
    const double r = AX[i * ldax + col] - lam * bx;  // r_j = A·x_j − λ_j·B·x_j
    sr += r * r;
    sx += x * x;
    if (d >= 0) R[i * ldr + d] = r;
  }
  sh[threadIdx.x] = sr;
  sh[blockDim.x + threadIdx.x] = sx;
  __syncthreads();
  if (ty == 0) {  // threads 0..b−1 sum their column over the block's rows, in a fixed order
    double a = 0, c = 0;
    for (int t = 0; t < rows_per; ++t) {
      a += sh[t * b + col];
      c += sh[blockDim.x + t * b + col];
    }
    partials[std::size_t(blockIdx.x) * 2 * b + col] = a;
    partials[std::size_t(blockIdx.x) * 2 * b + b + col] = c;
  }
  // The last block to finish sums the partials (what eig_residual_finish did in a launch of its
  // own): sums[j] = Σ_g partials[g·2b + j] in block order, so the result does not depend on
  // which block is last.
  if (!last_block_done(ticket, gridDim.x)) return;
  for (int j = threadIdx.x; j < 2 * b; j += blockDim.x) {
    double t = 0;
    for (unsigned g = 0; g < gridDim.x; ++g) t += __ldcg(partials + std::size_t(g) * 2 * b + j);
    sums[j] = t;
  }
}

__global__ void fill_random_kernel(index_t n, index_t cols, double* X, index_t ldx, std::uint64_t seed,
                                   std::int64_t first_row, index_t first_col) {
  const std::int64_t total = std::int64_t(n) * cols;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / cols, j = t % cols;
    X[i * ldx + j] = random_block_entry(seed, first_row + i, first_col + j);
  }
}

}  // namespace

int eig_residual_grid(index_t n, index_t b) {
  const int rows_per = residual_threads(b) / int(b);
  // At least 4 rows per thread: on small blocks the last block's sequential sum over the grid's
  // partials (one thread per column) is what the kernel waits for (n = 7k, b = 12: 82 blocks,
  // not 327); large n still gets 1024 blocks.
  const std::int64_t need = (std::int64_t(n) + 4 * rows_per - 1) / (4 * rows_per);
  return int(std::max<std::int64_t>(1, std::min<std::int64_t>(need, 1024)));
}

void launch_eig_residuals(index_t n, index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx,
                          const double* X, index_t ldx, const double* lambda, const index_t* dest, double* R,
                          index_t ldr, double* partials, unsigned* ticket, int grid, double* sums) {
  if (b < 1 || b > kEigMaxColumns)
    KRYSP_THROW(InputError, "eig residual kernel: b = ", b, " outside [1, ", kEigMaxColumns, "]");
  EigColumns cols{};
  for (index_t j = 0; j < b; ++j) {
    cols.lambda[j] = lambda[j];
    cols.dest[j] = dest[j];
  }
  const int threads = residual_threads(b);
  eig_residual_kernel<<<grid, threads, 2 * threads * sizeof(double)>>>(n, b, AX, ldax, BX, ldbx, X, ldx, cols, R, ldr,
                                                                       partials, ticket, sums);
  KRYSP_CUDA_CHECK_LAUNCH("eig_residual_kernel");
}

void launch_fill_random(index_t n, index_t cols, double* X, index_t ldx, std::uint64_t seed, std::int64_t first_row,
                        index_t first_col) {
  const std::int64_t total = std::int64_t(n) * cols;
  if (total <= 0) return;
  const unsigned grid = unsigned(std::min<std::int64_t>((total + 255) / 256, 1 << 16));
  fill_random_kernel<<<grid, 256>>>(n, cols, X, ldx, seed, first_row, first_col);
  KRYSP_CUDA_CHECK_LAUNCH("fill_random_kernel");
}

}  // namespace krysp::detail
