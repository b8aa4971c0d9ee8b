// The AMG set-up's sparse products (amg_galerkin.hpp): the symbolic phase (also P = S·P_tent's
// structure), the numeric phase into a known structure, and the smoothed prolongator's values as
// a column aggregation.
#include "krysp/precond/cuda/amg_galerkin.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

#include <cub/block/block_scan.cuh>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_policy.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/row_groups.cuh"
#include "krysp/precond/cuda/sorted_search.cuh"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;
// Shared slots per thread: a group of W lanes keeps a row of C of up to kSlots·W entries
// (columns and sums) in shared memory, longer rows search and accumulate in global memory
// (k_spgemm_numeric); the prolongator's values read A's row kSlots·W entries at a time.
constexpr int kSlots = 8;
constexpr index_t kNoRow = std::numeric_limits<index_t>::max();  // "no row is that long"

// Long rows go to a kernel that gives each row a whole block of kThreads (k_spgemm_numeric_block,
// k_spgemm_symbolic_bitmap). The block kernels find their rows themselves, in a grid of one wave:
// the rows are dealt round robin to the blocks in runs of `run` consecutive rows (row r to block
// r / run mod gridDim.x), so long rows spread over the blocks wherever they cluster, and each
// pass tests kThreads candidates at once, one a thread. run = 1 when every block has one pass
// at most (few rows: each long row to its own block); 8 past that (a 32-byte sector of row
// offsets a run, where scattered single reads would cost a sector a row). body(i) runs for
// every row with marked(i), by every thread of the block (it may synchronise the block).
template <class Marked, class Body>
__device__ void for_long_rows(index_t rows, int run, Marked marked, Body body) {
  __shared__ unsigned s_mark[kThreads / 32];
  const std::int64_t grid = gridDim.x, block = blockIdx.x;
  // The c-th candidate of this block (increasing in c, and every row is one block's candidate).
  auto row_of = [=](std::int64_t c) { return (c / run * grid + block) * run + c % run; };
  for (std::int64_t c0 = 0; row_of(c0) < rows; c0 += kThreads) {
    const std::int64_t r = row_of(c0 + threadIdx.x);
    const unsigned m = __ballot_sync(0xffffffffu, r < rows && marked(index_t(r)));
    if (threadIdx.x % 32 == 0) s_mark[threadIdx.x / 32] = m;
    __syncthreads();
    for (int w = 0; w < kThreads / 32; ++w)
      for (unsigned b = s_mark[w]; b != 0u; b &= b - 1u)  // the same rows in every thread
        body(index_t(row_of(c0 + w * 32 + __ffs(int(b)) - 1)));
    __syncthreads();  // every thread has read s_mark before the next pass writes it
  }
}

// One wave of a block kernel (its resident blocks on the device), at most one block a row, and
// the run for_long_rows deals the rows in.
struct LongRowGrid {
  unsigned blocks;
  int run;
};
template <class Kernel>
LongRowGrid long_row_grid(Kernel kernel, std::size_t dynamic_smem, index_t rows) {
  int per_sm = 0;
  KRYSP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, dynamic_smem));
  const std::int64_t wave = std::int64_t(std::max(per_sm, 1)) * std::max(device_policy().multiprocessors, 1);
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min<std::int64_t>(rows, wave));
  return {unsigned(blocks), rows > blocks * kThreads ? 8 : 1};
}

// The term a·b_rj of column j into C's row: its position by a binary search in C's columns, the
// sum rounded as a separate multiply and add; a column that C's row lacks sets `missing`. Both
// numeric kernels, so the same bits.
__device__ __forceinline__ void add_term(double a, index_t j, double b, const index_t* ccols, index_t len,
                                         double* sums, int* missing) {
  const index_t p = lower_bound(ccols, len, j);
  if (p < len && ccols[p] == j)
    sums[p] = __dadd_rn(sums[p], __dmul_rn(a, b));
  else if (missing)
    *missing = 1;
}

// Both numeric kernels take A's row a stage of entries at a time: each thread of the stage loads
// one entry's value and the bounds of its row of B (one round of loads for the stage, where each
// entry waited on a chain of three dependent ones: a_ci, then b_rp, then B's row), and the chunks
// of B's rows of the entries to come are loaded while an entry's terms are added. The terms still go
// in one entry at a time, in A's row order, so every sum gets the bits of the one-thread-a-row loop.

// One term of a product: B's entry (j, b) at a position of B's row, has: the position is in
// the row.
struct Term {
  index_t j = 0;
  double b = 0.0;
  bool has = false;
};
// The term at position q of a row of B ending at q1.
__device__ __forceinline__ Term load_chunk(index_t q, index_t q1, const index_t* __restrict__ b_ci,
                                           const double* __restrict__ b_va) {
  Term x;
  x.has = q < q1;
  if (x.has) {
    x.j = b_ci[q];
    x.b = b_va[q];
  }
  return x;
}
// Chunks of B's row (W positions each) a lane of the group kernel loads an entry ahead.
constexpr int kChunksAhead = 2;
// Entries of A's row a lane of the group kernel stages at once (kPerLane·W a stage): a stage's
// loads are a chain (a_ci, then b_rp), and with a stage of W entries a few lanes paid it every
// W entries (P = S·P_tent at 2 lanes: 0.1 ms on a 4,410-row matrix).
constexpr int kPerLane = 4;

// One group of W lanes a row of C. For each entry k of A's row, in order, the lanes split B's
// row k (distinct columns, so distinct positions of C: no two lanes add to one sum at once) and
// add a_ik·b_kj to the sum of column j; the group synchronises between entries. Each sum thus
// receives its terms in A's row order whatever W is: bitwise the one-thread-a-row result.
template <int W>
__global__ void k_spgemm_numeric(index_t rows, const index_t* __restrict__ a_rp, const index_t* __restrict__ a_ci,
                                 const double* __restrict__ a_va, const index_t* __restrict__ b_rp,
                                 const index_t* __restrict__ b_ci, const double* __restrict__ b_va,
                                 const index_t* __restrict__ c_rp, const index_t* __restrict__ c_ci, double* c_va,
                                 int* missing, index_t above) {
  __shared__ index_t s_col[kThreads * kSlots];
  __shared__ double s_val[kThreads * kSlots];
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= rows) return;  // whole groups leave together (rows are W-aligned)
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t cb = c_rp[i], len = c_rp[i + 1] - cb;
  if (len > above) return;  // k_spgemm_numeric_block's row (the whole group leaves)
  const bool shared = len <= index_t(kSlots * W);
  index_t* cols = shared ? s_col + (threadIdx.x / W) * (W * kSlots) : nullptr;
  double* sums = shared ? s_val + (threadIdx.x / W) * (W * kSlots) : c_va + cb;
  const index_t* ccols = shared ? cols : c_ci + cb;
  for (index_t p = lane; p < len; p += W) {
    if (shared) cols[p] = c_ci[cb + p];
    sums[p] = 0.0;
  }
  __syncwarp(mask);
  const index_t ke = a_rp[i + 1];
  for (index_t k0 = a_rp[i]; k0 < ke; k0 += kPerLane * W) {
    // The stage: entry e = s·W + l (from k0) is lane l's slot s: its value and the bounds of its
    // row of B.
    double av[kPerLane];
    index_t qb[kPerLane], qe[kPerLane];
#pragma unroll
    for (int s = 0; s < kPerLane; ++s) {
      const index_t k = k0 + index_t(s * W + lane);
      av[s] = 0.0;
      qb[s] = qe[s] = 0;
      if (k < ke) {
        const index_t r = a_ci[k];
        av[s] = a_va[k];
        qb[s] = b_rp[r];
        qe[s] = b_rp[r + 1];
      }
    }
    const int m = int(min(index_t(kPerLane * W), ke - k0));  // the same in every lane of the group
    // Entry e + 1's bounds and first kChunksAhead chunks of B's row are loaded while entry e's
    // terms are added (one chunk ahead left the second chunk's latency on the chain).
    index_t q0 = __shfl_sync(mask, qb[0], 0, W), q1 = __shfl_sync(mask, qe[0], 0, W);
    Term cur[kChunksAhead];
#pragma unroll
    for (int c = 0; c < kChunksAhead; ++c) cur[c] = load_chunk(q0 + lane + index_t(c * W), q1, b_ci, b_va);
#pragma unroll
    for (int s = 0; s < kPerLane; ++s) {
      for (int l = 0; l < W; ++l) {
        const int e = s * W + l;
        if (e >= m) break;  // the same in every lane
        const double a = __shfl_sync(mask, av[s], l, W);
        index_t n0 = 0, n1 = 0;  // entry e + 1: lane l + 1 of slot s, or lane 0 of slot s + 1
        if (e + 1 < m) {
          const int ns = s + 1 < kPerLane ? s + 1 : s;  // unrolled: a constant (registers)
          const bool here = l + 1 < W;
          n0 = __shfl_sync(mask, here ? qb[s] : qb[ns], here ? l + 1 : 0, W);
          n1 = __shfl_sync(mask, here ? qe[s] : qe[ns], here ? l + 1 : 0, W);
        }
        Term next[kChunksAhead];
#pragma unroll
        for (int c = 0; c < kChunksAhead; ++c) next[c] = load_chunk(n0 + lane + index_t(c * W), n1, b_ci, b_va);
#pragma unroll
        for (int c = 0; c < kChunksAhead; ++c)
          if (cur[c].has) add_term(a, cur[c].j, cur[c].b, ccols, len, sums, missing);
        for (index_t q = q0 + lane + index_t(kChunksAhead * W); q < q1; q += W)
          add_term(a, b_ci[q], b_va[q], ccols, len, sums, missing);
        __syncwarp(mask);  // entry e's terms are in before entry e + 1's
        q0 = n0;
        q1 = n1;
#pragma unroll
        for (int c = 0; c < kChunksAhead; ++c) cur[c] = next[c];
      }
    }
  }
  if (shared)
    for (index_t p = lane; p < len; p += W) c_va[cb + p] = sums[p];
}

// C's rows longer than the group's shared slots searched and summed in global memory, a chain
// of dependent global loads a term (R·(A·P) on a coarse level with rows of C of ~600 entries
// spent most of its time there). Those rows take a block each instead: kThreads threads split
// B's row k, with C's row (up to kBlockSlots entries) in shared memory, and the block
// synchronises between the entries of A's row, so each sum still takes its terms in A's row
// order: the same operations in the same order as the group's, so the same bits.
constexpr index_t kBlockSlots = 2048;  // 24 KB of columns and sums
// Rows of C up to this stay on the group even past its slots: a block's fixed cost (a barrier
// an entry of A's row, the row loaded and stored) is not worth it on so few positions.
constexpr index_t kBlockRowMin = 64;
// Where the group kernel would not give every multiprocessor a block (a coarse level's product:
// a few hundred rows), the time is the longest row's chain of A's entries, and a block a row
// shortens it (a stage of A's row a barrier, B's row in one pass, C's row in shared memory):
// rows of C past this many entries take the block kernel then.
constexpr index_t kFewRowsBlockMin = 16;
// A row of C whose columns are all below this finds each term's position in a map in shared
// memory (column → position, −1: not in the row; 16 KB) instead of a binary search in the row:
// one shared read where the search took ~10 dependent ones, on the chain of A's entries.
constexpr index_t kMapCols = 4096;
// The block takes B's row of entry e + kAhead of the stage while it adds entry e's terms: the
// loads of a few entries in flight, where one entry ahead left their latency on the chain.
constexpr int kAhead = 4;

// Thread t's term of the stage's entry e (of m): position t of its row of B.
__device__ __forceinline__ Term load_term(const index_t* qb, const index_t* qe, int e, int m, index_t t,
                                          const index_t* __restrict__ b_ci, const double* __restrict__ b_va) {
  return e < m ? load_chunk(qb[e] + t, qe[e], b_ci, b_va) : Term{};
}

__global__ void k_spgemm_numeric_block(index_t rows, const index_t* __restrict__ a_rp, const index_t* __restrict__ a_ci,
                                       const double* __restrict__ a_va, const index_t* __restrict__ b_rp,
                                       const index_t* __restrict__ b_ci, const double* __restrict__ b_va,
                                       const index_t* __restrict__ c_rp, const index_t* __restrict__ c_ci,
                                       double* c_va, int* missing, index_t above, int run) {
  __shared__ index_t s_col[kBlockSlots];
  __shared__ double s_val[kBlockSlots];
  __shared__ double s_a[kThreads];  // the stage of A's row: values and bounds of B's rows
  __shared__ index_t s_qb[kThreads], s_qe[kThreads];
  __shared__ index_t s_pos[kMapCols];
  const index_t t = index_t(threadIdx.x);
  for (index_t j = t; j < kMapCols; j += kThreads) s_pos[j] = -1;  // for_long_rows synchronises first
  for_long_rows(
      rows, run, [=](index_t i) { return c_rp[i + 1] - c_rp[i] > above; },
      [=](index_t i) {
        const index_t cb = c_rp[i], len = c_rp[i + 1] - cb;
        const bool shared = len <= kBlockSlots;  // else in global memory, as the group does
        const bool map = len > 0 && c_ci[cb + len - 1] < kMapCols;  // columns sorted: the last is the largest
        double* sums = shared ? s_val : c_va + cb;
        const index_t* ccols = shared ? s_col : c_ci + cb;
        for (index_t p = t; p < len; p += kThreads) {
          const index_t j = c_ci[cb + p];
          if (shared) s_col[p] = j;
          if (map) s_pos[j] = p;
          sums[p] = 0.0;
        }
        auto add = [&](double a, index_t j, double b) {
          if (!map) {
            add_term(a, j, b, ccols, len, sums, missing);
            return;
          }
          const index_t p = s_pos[j];
          if (p >= 0)
            sums[p] = __dadd_rn(sums[p], __dmul_rn(a, b));
          else if (missing)
            *missing = 1;
        };
        const index_t ke = a_rp[i + 1];
        for (index_t k0 = a_rp[i]; k0 < ke; k0 += kThreads) {
          if (k0 + t < ke) {
            const index_t r = a_ci[k0 + t];
            s_a[t] = a_va[k0 + t];
            s_qb[t] = b_rp[r];
            s_qe[t] = b_rp[r + 1];
          }
          __syncthreads();  // the stage (and, the first time, C's row and its map) is in place
          const int m = int(min(index_t(kThreads), ke - k0));
          Term ahead[kAhead];  // entry e's in ahead[e % kAhead]
#pragma unroll
          for (int d = 0; d < kAhead; ++d) ahead[d] = load_term(s_qb, s_qe, d, m, t, b_ci, b_va);
          for (int e0 = 0; e0 < m; e0 += kAhead) {
#pragma unroll
            for (int d = 0; d < kAhead; ++d) {
              const int e = e0 + d;
              if (e >= m) break;  // the same in every thread
              const double a = s_a[e];
              if (ahead[d].has) add(a, ahead[d].j, ahead[d].b);
              for (index_t q = s_qb[e] + t + kThreads; q < s_qe[e]; q += kThreads) add(a, b_ci[q], b_va[q]);
              ahead[d] = load_term(s_qb, s_qe, e + kAhead, m, t, b_ci, b_va);
              __syncthreads();  // entry e's terms are in before entry e + 1's; the stage is read
            }
          }
        }
        __syncthreads();  // a row without entries: C's row zeroed before it is stored
        for (index_t p = t; p < len; p += kThreads) {
          if (shared) c_va[cb + p] = s_val[p];
          if (map) s_pos[c_ci[cb + p]] = -1;  // the map empty again for the next row
        }
        __syncthreads();  // the shared row is read out before the next row overwrites it
      });
}

// Lanes a row: half of B's mean row (the work of one entry of A) at least, and enough for C's
// mean row to fit the shared slots; a power of two up to 32. Half, not all of it: twice the rows
// in flight pay more than the second pass over B's row costs (R·(A·P) on level 0 of the 256³
// Laplacian, B's rows ~12: 5.9 ms at 16 lanes, 4.8 at 8, 9.9 at 32; docs/amg.md).
// Then, where the groups would leave multiprocessors without a block and more lanes give them one,
// the lanes are widened to that: otherwise the rows past kFewRowsBlockMin take a block each, whose
// barrier an entry of A's row cost more on thousands of short rows (P = S·P_tent on the 30 × 30
// shell's level 0: 5,580 rows of C of ~24 entries, P_tent's rows of 6; docs/amg.md).
int choose_lanes(index_t rows, index_t b_rows, index_t b_nnz, index_t c_nnz) {
  const double b_mean = b_rows > 0 ? double(b_nnz) / double(b_rows) : 1.0;
  const double c_mean = rows > 0 ? double(c_nnz) / double(rows) : 1.0;
  int w = 1;
  while (w < 32 && (double(2 * w) < b_mean || double(kSlots * w) < c_mean)) w *= 2;
  const std::int64_t sms = std::max(device_policy().multiprocessors, 1);
  auto groups_fill = [&](int v) { return (std::int64_t(rows) * v + kThreads - 1) / kThreads >= sms; };
  if (!groups_fill(w) && groups_fill(32))
    while (!groups_fill(w)) w *= 2;
  return w;
}

// C's rows longer than this take k_spgemm_numeric_block: those past the group's shared slots,
// or past kFewRowsBlockMin where the groups are fewer than the multiprocessors (kNoRow when C has
// no row that long: the block kernel is not launched).
index_t numeric_block_above(int w, index_t rows, index_t c_nnz) {
  const std::int64_t group_blocks = (std::int64_t(rows) * w + kThreads - 1) / kThreads;
  const bool few = group_blocks < std::max(device_policy().multiprocessors, 1);
  const index_t above = few ? kFewRowsBlockMin : std::max(index_t(kSlots * w), kBlockRowMin);
  return c_nnz > above ? above : kNoRow;
}

template <int W>
void launch(index_t rows, const index_t* a_rp, const index_t* a_ci, const double* a_va, const index_t* b_rp,
            const index_t* b_ci, const double* b_va, const index_t* c_rp, const index_t* c_ci, index_t c_nnz,
            double* c_va, int* missing) {
  const index_t above = numeric_block_above(W, rows, c_nnz);
  const std::int64_t threads = std::int64_t(rows) * W;
  const std::int64_t blocks = (threads + kThreads - 1) / kThreads;
  k_spgemm_numeric<W><<<unsigned(blocks), kThreads>>>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va,
                                                      missing, above);
  KRYSP_CUDA_CHECK_LAUNCH("k_spgemm_numeric");
  if (above == kNoRow) return;
  const LongRowGrid g = long_row_grid(k_spgemm_numeric_block, 0, rows);
  k_spgemm_numeric_block<<<g.blocks, kThreads>>>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_va, missing,
                                                 above, g.run);
  KRYSP_CUDA_CHECK_LAUNCH("k_spgemm_numeric_block");
}

// P_tent's column of row k (−1: an empty row, a node left out of the aggregates).
__device__ index_t tent_column(const index_t* t_rp, const index_t* t_ci, index_t k) {
  return t_rp[k] < t_rp[k + 1] ? t_ci[t_rp[k]] : -1;
}

// P = S·P_tent is a column aggregation: entry e of A's row i (column k) sends the term s_ik·t_k
// to P's column J_e = P_tent's column of row k (−1: none). P's structure is the symbolic product
// of A's pattern and P_tent (k_spgemm_symbolic below); its values are filled here.

// s_ik·t_k, rounded as the host forms S (amg.cpp: (δ_ik − (ω·dinv_i)·a_ik)) and then the term.
__device__ double prolongator_term(index_t i, index_t k, double od, double a, double t) {
  return __dmul_rn(__dsub_rn(k == i ? 1.0 : 0.0, __dmul_rn(od, a)), t);
}

// P's values: a group of W lanes a row. Each lane owns some positions q of P's row and adds, over
// the row's entries in order, the terms whose column is J_q: every sum takes its terms in A's row
// order (bitwise the one-thread-a-row result, whatever W). The group reads A's row coalesced (one
// thread a row read the coarse levels' long rows uncoalesced) into shared memory, kSlots·W
// entries at a time: a row longer than that is taken in chunks, each lane carrying its sums from
// one chunk to the next in p_va (each q has one owner, so no other lane touches it, and a
// double stored and reloaded is unchanged), so the order of the terms, and the bits, are those
// of a single chunk. The reload costs one global read a q a chunk, against kSlots·W shared reads.
template <int W>
__global__ void k_prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va,
                                     const double* dinv, double omega, const index_t* t_rp, const index_t* t_ci,
                                     const double* t_va, const index_t* p_rp, const index_t* p_ci, double* p_va) {
  constexpr index_t kChunk = kSlots * W;
  __shared__ index_t s_j[kThreads * kSlots];
  __shared__ double s_t[kThreads * kSlots];
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t b = a_rp[i], len = a_rp[i + 1] - b;
  const index_t pb = p_rp[i], plen = p_rp[i + 1] - pb;
  const double od = __dmul_rn(omega, dinv[i]);
  index_t* J = s_j + (threadIdx.x / W) * kChunk;
  double* T = s_t + (threadIdx.x / W) * kChunk;
  // One pass at least, so that a row without entries still writes its (zero) sums.
  for (index_t c0 = 0; c0 == 0 || c0 < len; c0 += kChunk) {
    const index_t clen = min(kChunk, len - c0);
    for (index_t e = lane; e < clen; e += W) {
      const index_t k = a_ci[b + c0 + e], j = tent_column(t_rp, t_ci, k);
      J[e] = j;
      T[e] = j >= 0 ? prolongator_term(i, k, od, a_va[b + c0 + e], t_va[t_rp[k]]) : 0.0;
    }
    __syncwarp(mask);
    for (index_t q = lane; q < plen; q += W) {
      const index_t j = p_ci[pb + q];
      double sum = c0 == 0 ? 0.0 : p_va[pb + q];
      for (index_t e = 0; e < clen; ++e)
        if (J[e] == j) sum = __dadd_rn(sum, T[e]);
      p_va[pb + q] = sum;
    }
    __syncwarp(mask);  // every lane has read this chunk before the next one overwrites it
  }
}

// The symbolic product: C's row i is the union of B's rows k over A's row i (B's rows sorted,
// each column once). A group of W lanes merges those rows: each lane keeps a cursor into up to C
// of them (entries lane, lane + W, ... of A's row) in registers; each step the group takes the
// smallest head of all cursors (a shuffle tree), which is C's next column, and moves the cursors
// standing on it. The row thus comes out sorted and without repeats: no hash table, no sort, no
// scratch memory, and the result is the set itself, whatever W. Entries of A's row past C·W keep
// no cursor: each step they find their next column by a binary search in B's row for the first
// column above the last one taken (slower, but complete for any row length); when C's columns
// fit a bitmap, such rows take k_spgemm_symbolic_bitmap below instead.
constexpr index_t kNoColumn = 0x7fffffff;  // above every column (columns < B's cols <= INT_MAX)

template <int W>
__device__ __forceinline__ index_t group_min(index_t v, unsigned mask) {
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) v = min(v, __shfl_xor_sync(mask, v, off, W));
  return v;
}

// counts[i] = the length of C's row i, or (Fill) C's columns into c_ci from c_rp[i], for the
// rows of A of at most `above` entries (the others are the bitmap kernel's).
template <int W, int C, bool Fill>
__global__ void k_spgemm_symbolic(index_t rows, const index_t* __restrict__ a_rp, const index_t* __restrict__ a_ci,
                                  const index_t* __restrict__ b_rp, const index_t* __restrict__ b_ci, index_t* counts,
                                  const index_t* c_rp, index_t* c_ci, index_t above) {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  if (i >= rows) return;  // whole groups leave together (rows are W-aligned)
  const int lane = int(threadIdx.x % W);
  const unsigned mask = W == 32 ? 0xffffffffu : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const index_t ab = a_rp[i], alen = a_rp[i + 1] - ab;
  if (alen > above) return;  // k_spgemm_symbolic_bitmap's row (the whole group leaves)
  index_t pos[C], end[C], head[C];
#pragma unroll
  for (int t = 0; t < C; ++t) {
    const index_t e = lane + index_t(t * W);
    pos[t] = end[t] = 0;
    if (e < alen) {
      const index_t k = a_ci[ab + e];
      pos[t] = b_rp[k];
      end[t] = b_rp[k + 1];
    }
    head[t] = pos[t] < end[t] ? b_ci[pos[t]] : kNoColumn;
  }
  const index_t cb = Fill ? c_rp[i] : 0, clen = Fill ? c_rp[i + 1] - cb : 0;
  index_t count = 0, last = -1;
  for (;;) {
    index_t m = kNoColumn;
#pragma unroll
    for (int t = 0; t < C; ++t) m = min(m, head[t]);
    for (index_t e = index_t(C * W) + lane; e < alen; e += W) {  // past the cursors
      const index_t k = a_ci[ab + e], bb = b_rp[k], blen = b_rp[k + 1] - bb;
      const index_t q = lower_bound(b_ci + bb, blen, last + 1);
      if (q < blen) m = min(m, b_ci[bb + q]);
    }
    m = group_min<W>(m, mask);  // the same in every lane: the group loops and stops together
    if (m == kNoColumn) break;
    if (Fill && lane == 0 && count < clen) c_ci[cb + count] = m;
    ++count;
    last = m;
#pragma unroll
    for (int t = 0; t < C; ++t)
      if (head[t] == m) {
        ++pos[t];
        head[t] = pos[t] < end[t] ? b_ci[pos[t]] : kNoColumn;
      }
  }
  if (!Fill && lane == 0) counts[i] = count;
}

// The rows of A past the cursors are the slow ones above: every step of the merge does a binary
// search a lane for each of them, |C's row| steps (a coarse R·(A·P) with rows of A of ~1200
// entries and of C of ~600 spent tens of milliseconds there). When C's columns fit a bitmap in
// shared memory such a row takes a block instead: its threads walk A's row × B's rows and set
// each column's bit (integer atomicOr: the set does not depend on the order), then the count is
// the bits' popcount and the fill writes each word's bits in order at the word's exclusive-scan
// offset: the sorted distinct columns, the same set as the merge's. The work is the row's
// products, Σ_k |B_k|, spread evenly over the block, plus a pass over the bitmap's words.
constexpr index_t kBitmapCols = 262144;  // 32 KB of bits: a few blocks an SM, no opt-in needed
// Rows of A up to this stay on the merge even past its cursors (at 8 lanes or fewer, 4 a lane):
// a few searches a step cost less than a block's clearing and scanning of the bitmap.
constexpr index_t kBitmapRowMin = 64;

// Rows of A longer than this take k_spgemm_symbolic_bitmap: those whose entries the W lanes'
// cursors cannot all hold, and more than kBitmapRowMin (kNoRow: none, when C's columns do not
// fit the bitmap or A has no row that long, and the bitmap kernel is not launched). By A's row
// length alone (read from a_rp, so both kernels decide alike for free): the cursor path is fast
// on the rows it holds in registers, whatever their product's length.
index_t bitmap_above(index_t a_nnz, index_t b_cols, int w) {
  const index_t above = std::max(index_t((w == 32 ? 8 : 4) * w), kBitmapRowMin);
  return b_cols >= 1 && b_cols <= kBitmapCols && a_nnz > above ? above : kNoRow;
}

// counts[i] = the length of C's row i, or (Fill) C's columns into c_ci from c_rp[i], for the
// rows of A longer than `above`; dynamic shared memory: ceil(ncols / 32) words.
template <bool Fill>
__global__ void k_spgemm_symbolic_bitmap(index_t rows, const index_t* __restrict__ a_rp,
                                         const index_t* __restrict__ a_ci, const index_t* __restrict__ b_rp,
                                         const index_t* __restrict__ b_ci, index_t ncols, index_t* counts,
                                         const index_t* c_rp, index_t* c_ci, index_t above, int run) {
  extern __shared__ unsigned s_bits[];
  using Scan = cub::BlockScan<std::int64_t, kThreads>;
  __shared__ typename Scan::TempStorage s_scan;
  __shared__ std::int64_t s_off[kThreads];  // a chunk of A's row: where each entry's products start
  __shared__ index_t s_start[kThreads];     // and where its row of B starts
  const index_t t = index_t(threadIdx.x);
  const index_t words = ncols / 32 + (ncols % 32 != 0);
  // Contiguous words a thread for the count and the fill, so that each thread's columns are in
  // order and follow those of the threads before it.
  const index_t per = words / kThreads + (words % kThreads != 0);
  const index_t w0 = min(words, t * per), w1 = min(words, w0 + per);
  for_long_rows(
      rows, run, [=](index_t i) { return a_rp[i + 1] - a_rp[i] > above; },
      [=](index_t i) {
        const index_t ab = a_rp[i], alen = a_rp[i + 1] - ab;
        for (index_t w = t; w < words; w += kThreads) s_bits[w] = 0u;
        __syncthreads();
        // A's row kThreads entries at a time; the chunk's products p (its rows of B one after
        // another) are dealt kThreads apart, so consecutive threads read consecutive columns of
        // a row of B and a thread's work does not depend on how long each row of B is.
        for (index_t c0 = 0; c0 < alen; c0 += kThreads) {
          const index_t n = min(index_t(kThreads), alen - c0);
          index_t start = 0;
          std::int64_t len = 0, off = 0, total = 0;
          if (t < n) {
            const index_t k = a_ci[ab + c0 + t];
            start = b_rp[k];
            len = b_rp[k + 1] - start;
          }
          Scan(s_scan).ExclusiveSum(len, off, total);
          s_off[t] = off;
          s_start[t] = start;
          __syncthreads();
          // Product p belongs to the last entry e with s_off[e] <= p (entries without products
          // share their successor's offset): a binary search for the first, then forward.
          index_t e = 0;
          for (index_t hi = n; hi - e > 1;) {
            const index_t mid = e + (hi - e) / 2;
            if (s_off[mid] <= t)
              e = mid;
            else
              hi = mid;
          }
          for (std::int64_t p = t; p < total; p += kThreads) {
            while (e + 1 < n && s_off[e + 1] <= p) ++e;
            const index_t j = b_ci[s_start[e] + index_t(p - s_off[e])];
            if (j >= 0 && j < ncols) {  // B's columns are below ncols; never write past the bitmap
              unsigned* word = s_bits + j / 32;
              const unsigned bit = 1u << (j % 32);
              // Read first: once most columns are in, most products find their bit set, and
              // the atomics (serialised on one word) are left to the first of each column.
              if ((*static_cast<volatile unsigned*>(word) & bit) == 0u) atomicOr(word, bit);
            }
          }
          __syncthreads();  // s_off, s_start and s_scan are rewritten by the next chunk
        }
        std::int64_t mine = 0, off = 0, total = 0;
        for (index_t w = w0; w < w1; ++w) mine += __popc(s_bits[w]);
        Scan(s_scan).ExclusiveSum(mine, off, total);
        if (!Fill) {
          if (t == 0) counts[i] = index_t(total);
        } else {
          const index_t cb = c_rp[i], clen = c_rp[i + 1] - cb;
          index_t q = index_t(off);
          for (index_t w = w0; w < w1; ++w)
            for (unsigned b = s_bits[w]; b != 0u; b &= b - 1u, ++q)
              if (q < clen) c_ci[cb + q] = w * 32 + (__ffs(int(b)) - 1);
        }
        __syncthreads();  // the bitmap and s_scan are rewritten by the next row
      });
}

unsigned row_blocks(index_t n, int w) { return unsigned((std::int64_t(n) * w + kThreads - 1) / kThreads); }

// Lanes a row of A for the prolongator's values: its mean length, rounded up to a power of two,
// at most 32.
int prolongator_lanes(index_t n, index_t nnz) { return pow2_lanes(n > 0 ? double(nnz) / double(n) : 1.0); }

// Lanes a row of C: half A's mean row, rounded up to a power of two, at most 32. Each lane holds
// 4 cursors (8 with 32 lanes), so rows of A up to 4·W entries, at least twice the mean below 32
// lanes and 256 with 32, merge from registers alone.
int symbolic_lanes(index_t rows, index_t a_nnz) {
  return pow2_lanes(rows > 0 ? 0.5 * double(a_nnz) / double(rows) : 1.0);
}

void check_symbolic_lanes(int lanes) {
  KRYSP_REQUIRE(lanes == 0 || lanes == 1 || lanes == 2 || lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32,
                "spgemm_symbolic: lanes = ", lanes, " (1, 2, 4, 8, 16, 32 or 0)");
}

void launch_symbolic(index_t rows, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* b_rp,
                     const index_t* b_ci, index_t b_cols, bool fill, index_t* counts, const index_t* c_rp,
                     index_t* c_ci, int lanes) {
  check_symbolic_lanes(lanes);
  KRYSP_REQUIRE(b_cols >= 0, "spgemm_symbolic: ", b_cols, " columns");
  if (rows <= 0) return;
  const int w = lanes > 0 ? lanes : symbolic_lanes(rows, a_nnz);
  const index_t above = bitmap_above(a_nnz, b_cols, w);
  with_lanes(w, [&](auto W) {
    constexpr int lw = decltype(W)::value, c = lw == 32 ? 8 : 4;
    if (fill)
      k_spgemm_symbolic<lw, c, true>
          <<<row_blocks(rows, lw), kThreads>>>(rows, a_rp, a_ci, b_rp, b_ci, nullptr, c_rp, c_ci, above);
    else
      k_spgemm_symbolic<lw, c, false>
          <<<row_blocks(rows, lw), kThreads>>>(rows, a_rp, a_ci, b_rp, b_ci, counts, nullptr, nullptr, above);
  });
  KRYSP_CUDA_CHECK_LAUNCH("k_spgemm_symbolic");
  if (above == kNoRow) return;
  const std::size_t smem = std::size_t(b_cols / 32 + (b_cols % 32 != 0)) * sizeof(unsigned);
  if (fill) {
    const LongRowGrid g = long_row_grid(k_spgemm_symbolic_bitmap<true>, smem, rows);
    k_spgemm_symbolic_bitmap<true>
        <<<g.blocks, kThreads, smem>>>(rows, a_rp, a_ci, b_rp, b_ci, b_cols, nullptr, c_rp, c_ci, above, g.run);
  } else {
    const LongRowGrid g = long_row_grid(k_spgemm_symbolic_bitmap<false>, smem, rows);
    k_spgemm_symbolic_bitmap<false>
        <<<g.blocks, kThreads, smem>>>(rows, a_rp, a_ci, b_rp, b_ci, b_cols, counts, nullptr, nullptr, above, g.run);
  }
  KRYSP_CUDA_CHECK_LAUNCH("k_spgemm_symbolic_bitmap");
}

}  // namespace

void prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va, const double* dinv,
                        double omega, const index_t* t_rp, const index_t* t_ci, const double* t_va,
                        const index_t* p_rp, const index_t* p_ci, double* p_va, index_t a_nnz) {
  if (n <= 0) return;
  with_lanes(prolongator_lanes(n, a_nnz), [&](auto W) {
    k_prolongator_values<decltype(W)::value><<<row_blocks(n, W), kThreads>>>(n, a_rp, a_ci, a_va, dinv, omega, t_rp,
                                                                             t_ci, t_va, p_rp, p_ci, p_va);
  });
  KRYSP_CUDA_CHECK_LAUNCH("k_prolongator_values");
}

void spgemm_symbolic_count(index_t rows, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* b_rp,
                           const index_t* b_ci, index_t b_cols, index_t* counts, int lanes) {
  launch_symbolic(rows, a_rp, a_ci, a_nnz, b_rp, b_ci, b_cols, false, counts, nullptr, nullptr, lanes);
}

void spgemm_symbolic_fill(index_t rows, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* b_rp,
                          const index_t* b_ci, index_t b_cols, const index_t* c_rp, index_t* c_ci, int lanes) {
  launch_symbolic(rows, a_rp, a_ci, a_nnz, b_rp, b_ci, b_cols, true, nullptr, c_rp, c_ci, lanes);
}

index_t spgemm_symbolic_bitmap_above(index_t rows, index_t a_nnz, index_t b_cols, int lanes) {
  check_symbolic_lanes(lanes);
  return bitmap_above(a_nnz, b_cols, lanes > 0 ? lanes : symbolic_lanes(rows, a_nnz));
}

void spgemm_numeric(index_t rows, const index_t* a_rp, const index_t* a_ci, const double* a_va, index_t b_rows,
                    index_t b_nnz, const index_t* b_rp, const index_t* b_ci, const double* b_va, const index_t* c_rp,
                    const index_t* c_ci, index_t c_nnz, double* c_va, int lanes, int* missing) {
  if (rows <= 0 || c_nnz <= 0) return;
  const int w = lanes > 0 ? lanes : choose_lanes(rows, b_rows, b_nnz, c_nnz);
  switch (w) {
    case 1: launch<1>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    case 2: launch<2>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    case 4: launch<4>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    case 8: launch<8>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    case 16: launch<16>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    case 32: launch<32>(rows, a_rp, a_ci, a_va, b_rp, b_ci, b_va, c_rp, c_ci, c_nnz, c_va, missing); break;
    default: KRYSP_THROW(InputError, "spgemm_numeric: lanes = ", lanes, " (1, 2, 4, 8, 16, 32 or 0)");
  }
}

index_t spgemm_numeric_block_above(index_t rows, index_t b_rows, index_t b_nnz, index_t c_nnz, int lanes) {
  return numeric_block_above(lanes > 0 ? lanes : choose_lanes(rows, b_rows, b_nnz, c_nnz), rows, c_nnz);
}

}  // namespace krysp::detail
