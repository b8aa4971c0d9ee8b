// The numeric phase of a sparse product into a known structure (amg_galerkin.hpp).
#include "krysp/precond/cuda/amg_galerkin.hpp"

#include <algorithm>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;
// Shared slots per thread: a group of W lanes keeps a row of C of up to kSlots·W entries
// (columns and sums) in shared memory; longer rows search and accumulate in global memory.
constexpr int kSlots = 8;

// First position p in [0, len) with cols[p] >= j (len when none).
__device__ index_t lower_bound(const index_t* cols, index_t len, index_t j) {
  index_t lo = 0, hi = len;
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    if (cols[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// One group of W lanes a row of C. For each entry k of A's row, in order, the lanes split B's
// row k (distinct columns, so distinct positions of C: no two lanes add to one sum at once) and
// add a_ik·b_kj to the sum of column j; the group synchronises between entries. Each sum thus
// receives its terms in A's row order whatever W is: bitwise the one-thread-a-row result.
template <int W>
__global__ void k_spgemm_numeric(index_t rows, const index_t* __restrict__ a_rp, const index_t* __restrict__ a_ci,
                                 const double* __restrict__ a_va, const index_t* __restrict__ b_rp,
                                 const index_t* __restrict__ b_ci, const double* __restrict__ b_va,
                                 const index_t* __restrict__ c_rp, const index_t* __restrict__ c_ci, double* c_va,
                                 int* missing) {
  __shared__ index_t s_col[kThreads * kSlots];
  __shared__ double s_val[kThreads * kSlots];
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= rows) return;  // whole groups leave together (rows are W-aligned)
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t cb = c_rp[i], len = c_rp[i + 1] - cb;
  const bool shared = len <= index_t(kSlots * W);
  index_t* cols = shared ? s_col + (threadIdx.x / W) * (W * kSlots) : nullptr;
  double* sums = shared ? s_val + (threadIdx.x / W) * (W * kSlots) : c_va + cb;
  const index_t* ccols = shared ? cols : c_ci + cb;
  for (index_t p = lane; p < len; p += W) {
    if (shared) cols[p] = c_ci[cb + p];
    sums[p] = 0.0;
  }
  __syncwarp(mask);
  for (index_t k = a_rp[i]; k < a_rp[i + 1]; ++k) {
    const double a = a_va[k];
    const index_t r = a_ci[k];
    for (index_t q = b_rp[r] + lane; q < b_rp[r + 1]; q += W) {
      const index_t j = b_ci[q];
      const index_t p = lower_bound(ccols, len, j);
      if (p < len && ccols[p] == j)
        sums[p] = __dadd_rn(sums[p], __dmul_rn(a, b_va[q]));
      else if (missing)
        *missing = 1;
    }
    __syncwarp(mask);
  }
  if (shared)
    for (index_t p = lane; p < len; p += W) c_va[cb + p] = sums[p];
}

// Lanes a row: enough for B's mean row (the work of one entry of A) and for C's mean row to fit
// the shared slots; a power of two up to 32.
int choose_lanes(index_t rows, index_t b_rows, index_t b_nnz, index_t c_nnz) {
  const double b_mean = b_rows > 0 ? double(b_nnz) / double(b_rows) : 1.0;
  const double c_mean = rows > 0 ? double(c_nnz) / double(rows) : 1.0;
  int w = 1;
  while (w < 32 && (double(w) < b_mean || double(kSlots * w) < c_mean)) w *= 2;
  return w;
}

template <int W>
void launch(index_t rows, const index_t* a_rp, const index_t* a_ci, const double* a_va, const index_t* b_rp,
            const index_t* b_ci, const double* b_va, const index_t* c_rp, const index_t* c_ci, double* c_va,
            int* missing) {
  const std::int64_t threads = std::int64_t(rows) * W;
  const std::int64_t blocks = (threads + kThreads - 1) / kThreads;
  k_spgemm_numeric<W><<<unsigned(blocks), kThreads>>>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va,
                                                      missing);
  KRYSP_CUDA_CHECK_LAUNCH("k_spgemm_numeric");
}

}  // namespace

void spgemm_numeric(index_t rows, const index_t* a_rp, const index_t* a_ci, const double* a_va, index_t b_rows,
                    index_t b_nnz, const index_t* b_rp, const index_t* b_ci, const double* b_va, const index_t* c_rp,
                    const index_t* c_ci, index_t c_nnz, double* c_va, int lanes, int* missing) {
  if (rows <= 0 || c_nnz <= 0) return;
  const int w = lanes > 0 ? lanes : choose_lanes(rows, b_rows, b_nnz, c_nnz);
  switch (w) {
    case 1: launch<1>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    case 2: launch<2>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    case 4: launch<4>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    case 8: launch<8>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    case 16: launch<16>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    case 32: launch<32>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing); break;
    default: KRYSP_THROW(InputError, "spgemm_numeric: lanes = ", lanes, " (1, 2, 4, 8, 16, 32 or 0)");
  }
}

}  // namespace krysp::detail
