// The numeric phase of a sparse product into a known structure (amg_galerkin.hpp).
#include "krysp/precond/cuda/amg_galerkin.hpp"

#include <algorithm>
#include <type_traits>

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

// P_tent's column of row k (−1: an empty row, a node left out of the aggregates).
__device__ index_t tent_column(const index_t* t_rp, const index_t* t_ci, index_t k) {
  return t_rp[k] < t_rp[k + 1] ? t_ci[t_rp[k]] : -1;
}

// P = S·P_tent is a column aggregation: entry e of A's row i (column k) sends the term s_ik·t_k
// to P's column J_e = P_tent's column of row k (−1: none). A group of W lanes takes a row: the
// lanes read the row's entries coalesced (one thread a row read the coarse levels' long rows
// uncoalesced) into shared memory, then work on the buffer. Rows longer than the buffer are done
// by the group's first lane alone, straight from global memory, with the same arithmetic.

// The serial reference, for rows longer than the buffer: P's row pattern (count, or the sorted
// columns) from global memory.
__device__ index_t serial_pattern(index_t i, const index_t* a_rp, const index_t* a_ci, const index_t* t_rp,
                                  const index_t* t_ci, const index_t* p_rp, index_t* p_ci) {
  const index_t b = p_rp ? p_rp[i] : 0;
  index_t o = 0;
  for (index_t e = a_rp[i]; e < a_rp[i + 1]; ++e) {
    const index_t j = tent_column(t_rp, t_ci, a_ci[e]);
    if (j < 0) continue;
    bool seen = false;
    for (index_t f = a_rp[i]; f < e && !seen; ++f) seen = tent_column(t_rp, t_ci, a_ci[f]) == j;
    if (seen) continue;
    if (p_ci) {  // insertion into the sorted prefix
      index_t r = b + o;
      for (; r > b && p_ci[r - 1] > j; --r) p_ci[r] = p_ci[r - 1];
      p_ci[r] = j;
    }
    ++o;
  }
  return o;
}

// Pattern of P: counts[i] (p_ci null) or the sorted columns into p_ci. In the buffer: J_e; an
// entry is its column's first when no earlier entry has the column (a ballot numbers the
// firsts in order into U); a first's place in the row is the number of distinct columns below
// it (U holds each once).
template <int W>
__global__ void k_prolongator_pattern(index_t n, const index_t* a_rp, const index_t* a_ci, const index_t* t_rp,
                                      const index_t* t_ci, const index_t* p_rp, index_t* counts, index_t* p_ci) {
  __shared__ index_t s_j[kThreads * kSlots];
  __shared__ index_t s_u[kThreads * kSlots];
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= n) return;
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t b = a_rp[i], len = a_rp[i + 1] - b;
  if (len > index_t(kSlots * W)) {
    if (lane == 0) {
      const index_t c = serial_pattern(i, a_rp, a_ci, t_rp, t_ci, p_ci ? p_rp : nullptr, p_ci);
      if (!p_ci) counts[i] = c;
    }
    return;
  }
  index_t* J = s_j + (threadIdx.x / W) * (W * kSlots);
  index_t* U = s_u + (threadIdx.x / W) * (W * kSlots);
  for (index_t e = lane; e < len; e += W) J[e] = tent_column(t_rp, t_ci, a_ci[b + e]);
  __syncwarp(mask);
  index_t u = 0;  // firsts so far (the same in every lane of the group)
  for (index_t base = 0; base < len; base += W) {
    const index_t e = base + lane;
    bool first = false;
    if (e < len && J[e] >= 0) {
      first = true;
      for (index_t f = 0; f < e && first; ++f) first = J[f] != J[e];
    }
    // The group's bits only, shifted so that bit t is lane t of the group.
    const unsigned ballot = (__ballot_sync(mask, first) & mask) >> (threadIdx.x % 32 / W * W);
    if (first) U[u + __popc(ballot & ((1u << lane) - 1u))] = J[e];
    u += __popc(ballot);
  }
  __syncwarp(mask);
  if (!p_ci) {
    if (lane == 0) counts[i] = u;
    return;
  }
  const index_t pb = p_rp[i];
  for (index_t x = lane; x < u; x += W) {
    index_t rank = 0;
    for (index_t y = 0; y < u; ++y) rank += U[y] < U[x] ? 1 : 0;
    p_ci[pb + rank] = U[x];
  }
}

// s_ik·t_k, rounded as the host forms S (amg.cpp: (δ_ik − (ω·dinv_i)·a_ik)) and then the term.
__device__ double prolongator_term(index_t i, index_t k, double od, double a, double t) {
  return __dmul_rn(__dsub_rn(k == i ? 1.0 : 0.0, __dmul_rn(od, a)), t);
}

// P's values: each lane owns some positions q of P's row and adds, over the row's entries in
// order, the terms whose column is J_q: every sum takes its terms in A's row order (bitwise the
// one-thread-a-row result, whatever W).
template <int W>
__global__ void k_prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va,
                                     const double* dinv, double omega, const index_t* t_rp, const index_t* t_ci,
                                     const double* t_va, const index_t* p_rp, const index_t* p_ci, double* p_va) {
  __shared__ index_t s_j[kThreads * kSlots];
  __shared__ double s_t[kThreads * kSlots];
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= n) return;
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t b = a_rp[i], len = a_rp[i + 1] - b;
  const index_t pb = p_rp[i], plen = p_rp[i + 1] - pb;
  const double od = __dmul_rn(omega, dinv[i]);
  if (len > index_t(kSlots * W)) {
    if (lane != 0) return;
    for (index_t q = 0; q < plen; ++q) p_va[pb + q] = 0.0;
    for (index_t e = b; e < b + len; ++e) {
      const index_t k = a_ci[e], j = tent_column(t_rp, t_ci, k);
      if (j < 0) continue;
      const index_t q = lower_bound(p_ci + pb, plen, j);
      if (q < plen) p_va[pb + q] = __dadd_rn(p_va[pb + q], prolongator_term(i, k, od, a_va[e], t_va[t_rp[k]]));
    }
    return;
  }
  index_t* J = s_j + (threadIdx.x / W) * (W * kSlots);
  double* T = s_t + (threadIdx.x / W) * (W * kSlots);
  for (index_t e = lane; e < len; e += W) {
    const index_t k = a_ci[b + e], j = tent_column(t_rp, t_ci, k);
    J[e] = j;
    T[e] = j >= 0 ? prolongator_term(i, k, od, a_va[b + e], t_va[t_rp[k]]) : 0.0;
  }
  __syncwarp(mask);
  for (index_t q = lane; q < plen; q += W) {
    const index_t j = p_ci[pb + q];
    double sum = 0.0;
    for (index_t e = 0; e < len; ++e)
      if (J[e] == j) sum = __dadd_rn(sum, T[e]);
    p_va[pb + q] = sum;
  }
}

unsigned row_blocks(index_t n, int w) { return unsigned((std::int64_t(n) * w + kThreads - 1) / kThreads); }

// Lanes a row of A: its mean length, rounded up to a power of two, at most 32.
int row_lanes(index_t n, index_t nnz) {
  const double mean = n > 0 ? double(nnz) / double(n) : 1.0;
  int w = 1;
  while (w < 32 && double(w) < mean) w *= 2;
  return w;
}

template <class F>
void with_lanes(int w, F&& f) {
  switch (w) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    default: f(std::integral_constant<int, 32>{}); break;
  }
}

void launch_pattern(index_t n, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* t_rp,
                    const index_t* t_ci, const index_t* p_rp, index_t* counts, index_t* p_ci) {
  if (n <= 0) return;
  with_lanes(row_lanes(n, a_nnz), [&](auto W) {
    k_prolongator_pattern<decltype(W)::value><<<row_blocks(n, W), kThreads>>>(n, a_rp, a_ci, t_rp, t_ci, p_rp, counts,
                                                                              p_ci);
  });
  KRYSP_CUDA_CHECK_LAUNCH("k_prolongator_pattern");
}

}  // namespace

void prolongator_count(index_t n, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* t_rp,
                       const index_t* t_ci, index_t* counts) {
  launch_pattern(n, a_rp, a_ci, a_nnz, t_rp, t_ci, nullptr, counts, nullptr);
}

void prolongator_fill(index_t n, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* t_rp,
                      const index_t* t_ci, const index_t* p_rp, index_t* p_ci) {
  launch_pattern(n, a_rp, a_ci, a_nnz, t_rp, t_ci, p_rp, nullptr, p_ci);
}

void prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va, const double* dinv,
                        double omega, const index_t* t_rp, const index_t* t_ci, const double* t_va,
                        const index_t* p_rp, const index_t* p_ci, double* p_va, index_t a_nnz) {
  if (n <= 0) return;
  with_lanes(row_lanes(n, a_nnz), [&](auto W) {
    k_prolongator_values<decltype(W)::value><<<row_blocks(n, W), kThreads>>>(n, a_rp, a_ci, a_va, dinv, omega, t_rp,
                                                                             t_ci, t_va, p_rp, p_ci, p_va);
  });
  KRYSP_CUDA_CHECK_LAUNCH("k_prolongator_values");
}

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
