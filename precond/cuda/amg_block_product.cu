// The AMG set-up's products in dense blocks (amg_block_product.hpp): block patterns and their
// maps, the pair lists of each block of C, and the gathers, product and scatter of a numeric pass.
#include "krysp/precond/cuda/amg_block_product.hpp"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/amg_device_primitives.cuh"
#include "krysp/precond/cuda/amg_galerkin.hpp"
#include "krysp/precond/cuda/sorted_search.cuh"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) { return int(std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads)); }
std::size_t at_least_one(std::int64_t n) { return std::size_t(std::max<std::int64_t>(n, 1)); }

// The row of scalar entry e, by a search of the row offsets: the last row that starts at or
// before e (so empty rows are passed over).
__device__ __forceinline__ index_t row_of_entry(const index_t* rp, index_t rows, index_t e) {
  index_t lo = 0, hi = rows;  // the last row i with rp[i] <= e
  while (hi - lo > 1) {
    const index_t mid = lo + (hi - lo) / 2;
    if (rp[mid] <= e)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// One thread an entry: 1 when it opens a run of its row's block column J (column / bc) and no
// earlier row of its strip holds J, so each block of a strip is counted once.
__global__ void k_pattern_first(index_t rows, index_t nnz, int br, int bc, const index_t* __restrict__ rp,
                                const index_t* __restrict__ ci, index_t* __restrict__ first) {
  const index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= nnz) return;
  const index_t i = row_of_entry(rp, rows, e), J = ci[e] / bc;
  bool f = e == rp[i] || ci[e - 1] / bc != J;
  for (index_t r = i - i % br; f && r < i; ++r) {
    const index_t len = rp[r + 1] - rp[r], p = lower_bound(ci + rp[r], len, J * bc);
    f = !(p < len && ci[rp[r] + p] / bc == J);
  }
  first[e] = f ? 1 : 0;
}

// Strip I's blocks start at the count of first entries before its first row.
__global__ void k_pattern_offsets(index_t strips, int br, const index_t* __restrict__ rp,
                                  const index_t* __restrict__ scan, index_t* __restrict__ brp) {
  const index_t I = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I <= strips) brp[I] = scan[rp[I * br]];
}

// One thread a first entry: its block column goes to its place in the strip's sorted list, the
// number of the strip's first entries with smaller block columns, row by row.
__global__ void k_pattern_fill(index_t rows, index_t nnz, int br, int bc, const index_t* __restrict__ rp,
                               const index_t* __restrict__ ci, const index_t* __restrict__ first,
                               const index_t* __restrict__ scan, const index_t* __restrict__ brp,
                               index_t* __restrict__ bci) {
  const index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= nnz || !first[e]) return;
  const index_t i = row_of_entry(rp, rows, e), I = i / br, J = ci[e] / bc;
  index_t pos = 0;
  for (index_t r = I * br; r < I * br + br; ++r)
    pos += scan[rp[r] + lower_bound(ci + rp[r], rp[r + 1] - rp[r], J * bc)] - scan[rp[r]];
  bci[brp[I] + pos] = J;
}

// One thread an entry: its offset in the dense blocks (block q of its strip holds its column
// block). A column block the strip lacks sets *missing.
__global__ void k_pattern_map(index_t rows, index_t nnz, int br, int bc, const index_t* __restrict__ rp,
                              const index_t* __restrict__ ci, const index_t* __restrict__ brp,
                              const index_t* __restrict__ bci, index_t* __restrict__ map, int* missing) {
  const index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= nnz) return;
  const index_t i = row_of_entry(rp, rows, e), I = i / br, J = ci[e] / bc;
  const index_t len = brp[I + 1] - brp[I], p = lower_bound(bci + brp[I], len, J);
  if (p < len && bci[brp[I] + p] == J) {
    map[e] = ((brp[I] + p) * br + i % br) * bc + ci[e] % bc;
  } else {
    map[e] = 0;
    *missing = 1;
  }
}

// One thread a block pa of A (strip I): for each block of B's strip K = A's column, the block of
// C's strip I with B's column. Counted into count (Fill false), or written at its C block's cursor.
template <bool Fill>
__global__ void k_pairs(index_t a_blocks, index_t a_strips, const index_t* __restrict__ arp,
                        const index_t* __restrict__ aci, const index_t* __restrict__ brp,
                        const index_t* __restrict__ bci, const index_t* __restrict__ crp,
                        const index_t* __restrict__ cci, index_t* __restrict__ count, index_t* __restrict__ pair_a,
                        index_t* __restrict__ pair_b, int* missing) {
  const index_t pa = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pa >= a_blocks) return;
  const index_t I = row_of_entry(arp, a_strips, pa), K = aci[pa], c0 = crp[I], clen = crp[I + 1] - c0;
  for (index_t qb = brp[K]; qb < brp[K + 1]; ++qb) {
    const index_t J = bci[qb], p = lower_bound(cci + c0, clen, J);
    if (!(p < clen && cci[c0 + p] == J)) {
      *missing = 1;  // C's pattern is not a product's
      continue;
    }
    const index_t slot = atomicAdd(count + c0 + p, index_t(1));
    if (Fill) {
      pair_a[slot] = pa;
      pair_b[slot] = qb;
    }
  }
}

// One thread an entry of R's blocks: R = Pᵀ, block q of R is block perm[q] of P transposed.
__global__ void k_transpose_blocks(std::int64_t entries, int br, int bc, const index_t* __restrict__ perm,
                                   const double* __restrict__ p, double* __restrict__ r) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= entries) return;
  const int size = br * bc, o = int(t % size), k = o / bc, c = o % bc;  // R's block is br × bc
  r[t] = p[std::int64_t(perm[t / size]) * size + c * br + k];
}

__global__ void k_to_dense(index_t nnz, const index_t* __restrict__ map, const double* __restrict__ va,
                           double* __restrict__ dense) {
  const index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < nnz) dense[map[e]] = va[e];
}

__global__ void k_from_dense(index_t nnz, const index_t* __restrict__ map, const double* __restrict__ dense,
                             double* __restrict__ va) {
  const index_t e = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < nnz) va[e] = dense[map[e]];
}

// One thread an entry of C's blocks: Σ over its block's pairs, and within a pair over the
// column kk of A's block, of a·b, each term rounded and added on its own (spgemm_numeric's
// operations and order). BR, BK, BC: the block sizes, 0 where given at run time.
template <int BR, int BK, int BC>
__global__ void k_block_multiply(std::int64_t entries, int br_, int bk_, int bc_, const index_t* __restrict__ rp,
                                 const index_t* __restrict__ pa, const index_t* __restrict__ pb,
                                 const double* __restrict__ a, const double* __restrict__ b, double* __restrict__ c) {
  const int br = BR ? BR : br_, bk = BK ? BK : bk_, bc = BC ? BC : bc_;
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= entries) return;
  const int size = br * bc;
  const std::int64_t blk = t / size;
  const int o = int(t % size), ii = o / bc, jj = o % bc;
  double acc = 0.0;
  for (index_t p = rp[blk]; p < rp[blk + 1]; ++p) {
    const double* ab = a + std::int64_t(pa[p]) * (br * bk) + ii * bk;
    const double* bb = b + std::int64_t(pb[p]) * (bk * bc) + jj;
#pragma unroll
    for (int kk = 0; kk < (BK ? BK : kBlockProductMaxDim); ++kk)
      if (BK || kk < bk) acc = __dadd_rn(acc, __dmul_rn(ab[kk], bb[kk * bc]));
  }
  c[t] = acc;
}

// Σ counts[0..n) in 64 bits (one synchronisation): a total past index_t does not fit the arrays.
std::int64_t total64(const index_t* counts, index_t n) {
  if (n == 0) return 0;
  DeviceArray<std::int64_t> total(1);
  std::size_t bytes = 0;
  KRYSP_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, counts, total.data(), n));
  DeviceArray<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
  KRYSP_CUDA_CHECK(cub::DeviceReduce::Sum(tmp.data(), bytes, counts, total.data(), n));
  std::int64_t t = 0;
  total.download(&t, 1);
  return t;
}
constexpr std::int64_t kMaxIndex = std::numeric_limits<index_t>::max();

int download_flag(const DeviceArray<int>& flag) {
  int h = 0;
  flag.download(&h, 1);
  return h;
}

void check_sizes(index_t rows, index_t cols, int br, int bc) {
  KRYSP_REQUIRE(br >= 1 && bc >= 1 && br <= kBlockProductMaxDim && bc <= kBlockProductMaxDim && rows % br == 0 &&
                    cols % bc == 0,
                "AMG: block pattern of ", br, "x", bc, " blocks for a ", rows, "x", cols, " matrix");
}

}  // namespace

BlockPattern block_pattern(index_t rows, index_t cols, index_t nnz, const index_t* rp, const index_t* ci, int br,
                           int bc, bool with_map) {
  check_sizes(rows, cols, br, bc);
  BlockPattern P;
  P.br = br;
  P.bc = bc;
  P.block_rows = rows / br;
  P.block_cols = cols / bc;
  P.rp = DeviceArray<index_t>(std::size_t(P.block_rows) + 1);
  DeviceArray<index_t> first(at_least_one(nnz)), scan(std::size_t(nnz) + 1);
  if (nnz > 0) {
    k_pattern_first<<<blocks_for(nnz), kThreads>>>(rows, nnz, br, bc, rp, ci, first.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_pattern_first");
  }
  P.blocks = exclusive_scan(first.data(), scan.data(), nnz);
  k_pattern_offsets<<<blocks_for(std::int64_t(P.block_rows) + 1), kThreads>>>(P.block_rows, br, rp, scan.data(),
                                                                               P.rp.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_pattern_offsets");
  P.ci = DeviceArray<index_t>(at_least_one(P.blocks));
  if (nnz > 0) {
    k_pattern_fill<<<blocks_for(nnz), kThreads>>>(rows, nnz, br, bc, rp, ci, first.data(), scan.data(), P.rp.data(),
                                                  P.ci.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_pattern_fill");
  }
  P.fits = P.values() <= std::size_t(std::numeric_limits<index_t>::max());
  if (with_map) add_block_map(P, rows, nnz, rp, ci);
  return P;
}

BlockPattern block_product_pattern(const BlockPattern& A, const BlockPattern& B) {
  KRYSP_REQUIRE(A.fits && B.fits, "AMG: a block product pattern of patterns that do not fit");
  KRYSP_REQUIRE(A.bc == B.br && A.block_cols == B.block_rows, "AMG: block product pattern of ", A.block_rows, "x",
                A.block_cols, " blocks of ", A.br, "x", A.bc, " and ", B.block_rows, "x", B.block_cols, " blocks of ",
                B.br, "x", B.bc);
  BlockPattern C;
  C.br = A.br;
  C.bc = B.bc;
  C.block_rows = A.block_rows;
  C.block_cols = B.block_cols;
  C.rp = DeviceArray<index_t>(std::size_t(C.block_rows) + 1);
  {
    DeviceArray<index_t> counts(at_least_one(C.block_rows));
    if (C.block_rows > 0)
      spgemm_symbolic_count(C.block_rows, A.rp.data(), A.ci.data(), A.blocks, B.rp.data(), B.ci.data(), B.block_cols,
                            counts.data());
    if (total64(counts.data(), C.block_rows) > kMaxIndex) {
      C.fits = false;  // no pattern: the caller keeps the scalar products
      return C;
    }
    C.blocks = exclusive_scan(counts.data(), C.rp.data(), C.block_rows);
  }
  C.ci = DeviceArray<index_t>(at_least_one(C.blocks));
  if (C.block_rows > 0 && C.blocks > 0)
    spgemm_symbolic_fill(C.block_rows, A.rp.data(), A.ci.data(), A.blocks, B.rp.data(), B.ci.data(), B.block_cols,
                         C.rp.data(), C.ci.data());
  C.fits = C.values() <= std::size_t(std::numeric_limits<index_t>::max());
  return C;
}

void add_block_map(BlockPattern& P, index_t rows, index_t nnz, const index_t* rp, const index_t* ci, int* missing) {
  KRYSP_REQUIRE(rows == P.block_rows * P.br, "AMG: a block map of a ", rows, "-row matrix for ", P.block_rows,
                " strips of ", P.br);
  P.map = DeviceArray<index_t>();
  if (!P.fits) return;
  P.map = DeviceArray<index_t>(at_least_one(nnz));
  if (nnz == 0) return;
  DeviceArray<int> own;
  if (!missing) {
    own = DeviceArray<int>(1);
    own.zero();
  }
  k_pattern_map<<<blocks_for(nnz), kThreads>>>(rows, nnz, P.br, P.bc, rp, ci, P.rp.data(), P.ci.data(), P.map.data(),
                                               missing ? missing : own.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_pattern_map");
  if (!missing) KRYSP_REQUIRE(download_flag(own) == 0, "AMG: a block pattern lacks a block of its matrix's entries");
}

BlockPairs block_pairs(const BlockPattern& A, const BlockPattern& B, const BlockPattern& C, int* missing) {
  KRYSP_REQUIRE(A.bc == B.br && A.br == C.br && B.bc == C.bc && A.block_cols == B.block_rows &&
                    A.block_rows == C.block_rows && B.block_cols == C.block_cols,
                "AMG: block product of ", A.block_rows, "x", A.block_cols, " blocks of ", A.br, "x", A.bc, " and ",
                B.block_rows, "x", B.block_cols, " blocks of ", B.br, "x", B.bc, " into ", C.block_rows, "x",
                C.block_cols, " blocks of ", C.br, "x", C.bc);
  BlockPairs R;
  R.br = A.br;
  R.bk = A.bc;
  R.bc = B.bc;
  R.c_blocks = C.blocks;
  R.rp = DeviceArray<index_t>(std::size_t(C.blocks) + 1);
  DeviceArray<int> own;
  if (!missing) {
    own = DeviceArray<int>(1);
    own.zero();
    missing = own.data();
  }
  {
    DeviceArray<index_t> count(at_least_one(C.blocks));
    count.zero();
    if (A.blocks > 0) {
      k_pairs<false><<<blocks_for(A.blocks), kThreads>>>(A.blocks, A.block_rows, A.rp.data(), A.ci.data(), B.rp.data(),
                                                         B.ci.data(), C.rp.data(), C.ci.data(), count.data(), nullptr,
                                                         nullptr, missing);
      KRYSP_CUDA_CHECK_LAUNCH("k_pairs");
    }
    if (total64(count.data(), C.blocks) > kMaxIndex) {
      R.fits = false;  // no pairs: the caller keeps the scalar products
      return R;
    }
    R.pairs = exclusive_scan(count.data(), R.rp.data(), C.blocks);
  }
  if (own.size() > 0)
    KRYSP_REQUIRE(download_flag(own) == 0, "AMG: a block product's pattern lacks blocks of the product");
  R.a = DeviceArray<index_t>(at_least_one(R.pairs));
  R.b = DeviceArray<index_t>(at_least_one(R.pairs));
  if (R.pairs > 0) {
    DeviceArray<index_t> cursor(at_least_one(C.blocks));
    copy_device_to_device(cursor.data(), R.rp.data(), std::size_t(C.blocks) * sizeof(index_t));
    k_pairs<true><<<blocks_for(A.blocks), kThreads>>>(A.blocks, A.block_rows, A.rp.data(), A.ci.data(), B.rp.data(),
                                                      B.ci.data(), C.rp.data(), C.ci.data(), cursor.data(), R.a.data(),
                                                      R.b.data(), missing);
    KRYSP_CUDA_CHECK_LAUNCH("k_pairs");
    // The slots came in any order: each C block's pairs sorted by A's block (distinct keys), so
    // that K ascends.
    DeviceArray<index_t> a(at_least_one(R.pairs)), b(at_least_one(R.pairs));
    std::size_t bytes = 0;
    KRYSP_CUDA_CHECK(cub::DeviceSegmentedSort::SortPairs(nullptr, bytes, R.a.data(), a.data(), R.b.data(), b.data(),
                                                         R.pairs, C.blocks, R.rp.data(), R.rp.data() + 1));
    DeviceArray<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
    KRYSP_CUDA_CHECK(cub::DeviceSegmentedSort::SortPairs(tmp.data(), bytes, R.a.data(), a.data(), R.b.data(),
                                                         b.data(), R.pairs, C.blocks, R.rp.data(), R.rp.data() + 1));
    R.a = std::move(a);
    R.b = std::move(b);
  }
  return R;
}

void block_gather(const BlockPattern& pattern, index_t nnz, const double* va, double* dense) {
  KRYSP_REQUIRE(pattern.fits, "AMG: a block pattern of ", pattern.values(), " values, more than index_t holds");
  if (pattern.values() > 0) KRYSP_CUDA_CHECK(cudaMemsetAsync(dense, 0, pattern.values() * sizeof(double)));
  if (nnz > 0) {
    k_to_dense<<<blocks_for(nnz), kThreads>>>(nnz, pattern.map.data(), va, dense);
    KRYSP_CUDA_CHECK_LAUNCH("k_to_dense");
  }
}

void block_scatter(const BlockPattern& pattern, index_t nnz, const double* dense, double* va) {
  KRYSP_REQUIRE(pattern.fits, "AMG: a block pattern of ", pattern.values(), " values, more than index_t holds");
  if (nnz > 0) {
    k_from_dense<<<blocks_for(nnz), kThreads>>>(nnz, pattern.map.data(), dense, va);
    KRYSP_CUDA_CHECK_LAUNCH("k_from_dense");
  }
}

void block_transpose(const BlockPattern& r, const index_t* perm, const double* p, double* out) {
  const std::int64_t entries = std::int64_t(r.values());
  if (entries == 0) return;
  k_transpose_blocks<<<blocks_for(entries), kThreads>>>(entries, r.br, r.bc, perm, p, out);
  KRYSP_CUDA_CHECK_LAUNCH("k_transpose_blocks");
}

void block_multiply(const BlockPairs& pairs, const double* a, const double* b, double* c) {
  const std::int64_t entries = std::int64_t(pairs.c_blocks) * pairs.br * pairs.bc;
  if (entries == 0) return;
  const int grid = blocks_for(entries);
  const int br = pairs.br, bk = pairs.bk, bc = pairs.bc;
  // The shapes of the first levels with rigid-body modes compiled with their sizes; others at run time.
  if (br == 3 && bk == 3 && bc == 6)
    k_block_multiply<3, 3, 6><<<grid, kThreads>>>(entries, br, bk, bc, pairs.rp.data(), pairs.a.data(),
                                                  pairs.b.data(), a, b, c);
  else if (br == 6 && bk == 3 && bc == 6)
    k_block_multiply<6, 3, 6><<<grid, kThreads>>>(entries, br, bk, bc, pairs.rp.data(), pairs.a.data(),
                                                  pairs.b.data(), a, b, c);
  else if (br == 6 && bk == 6 && bc == 6)
    k_block_multiply<6, 6, 6><<<grid, kThreads>>>(entries, br, bk, bc, pairs.rp.data(), pairs.a.data(),
                                                  pairs.b.data(), a, b, c);
  else
    k_block_multiply<0, 0, 0><<<grid, kThreads>>>(entries, br, bk, bc, pairs.rp.data(), pairs.a.data(),
                                                  pairs.b.data(), a, b, c);
  KRYSP_CUDA_CHECK_LAUNCH("k_block_multiply");
}

}  // namespace krysp::detail
