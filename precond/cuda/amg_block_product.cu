// The AMG set-up's products in dense blocks (amg_block_product.hpp): block patterns and their
// maps, the pair lists of each block of C, and the gathers, product and scatter of a numeric pass.
#include "krysp/precond/cuda/amg_block_product.hpp"

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

/// rp ← the n + 1 offsets of the n counts and true, with `total` their sum, where it fits index_t;
/// else false and rp released: the caller then keeps the scalar products.
bool offsets_that_fit(const DeviceArray<index_t>& counts, index_t n, DeviceArray<index_t>& rp, index_t& total) {
  const std::int64_t sum = exclusive_scan64(counts.data(), rp.data(), n);
  if (sum > kMaxIndex) {
    rp = DeviceArray<index_t>();
    return false;
  }
  total = index_t(sum);
  return true;
}

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

// One thread a block c of C (strip I, block column J): the blocks pa of A's strip I, K = A's
// block column ascending, whose strip K of B holds J (the pairs of C_IJ = Σ_K A_IK·B_KJ).
// Counted into count[c] (Fill false), or written from offset rp[c] on.
template <bool Fill>
__global__ void k_pairs(index_t c_blocks, index_t c_strips, const index_t* __restrict__ crp,
                        const index_t* __restrict__ cci, const index_t* __restrict__ arp,
                        const index_t* __restrict__ aci, const index_t* __restrict__ brp,
                        const index_t* __restrict__ bci, index_t* __restrict__ count_or_rp,
                        index_t* __restrict__ pair_a, index_t* __restrict__ pair_b) {
  const index_t c = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= c_blocks) return;
  const index_t I = row_of_entry(crp, c_strips, c), J = cci[c];
  index_t n = Fill ? count_or_rp[c] : 0;
  for (index_t pa = arp[I]; pa < arp[I + 1]; ++pa) {
    const index_t K = aci[pa], b0 = brp[K], len = brp[K + 1] - b0, p = lower_bound(bci + b0, len, J);
    if (p < len && bci[b0 + p] == J) {
      if (Fill) {
        pair_a[n] = pa;
        pair_b[n] = b0 + p;
      }
      ++n;
    }
  }
  if (!Fill) count_or_rp[c] = n;
}

// One thread a strip I of A: its block products A_IK·B_KJ (for every block of B's strip K)
// against the pairs that C's blocks of strip I listed (rp: their offsets). Fewer listed means
// C's pattern lacks a block of the product: *missing set.
__global__ void k_pairs_check(index_t strips, const index_t* __restrict__ arp, const index_t* __restrict__ aci,
                              const index_t* __restrict__ brp, const index_t* __restrict__ crp,
                              const index_t* __restrict__ rp, int* missing) {
  const index_t I = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I >= strips) return;
  std::int64_t products = 0;
  for (index_t pa = arp[I]; pa < arp[I + 1]; ++pa) products += brp[aci[pa] + 1] - brp[aci[pa]];
  if (products != std::int64_t(rp[crp[I + 1]]) - rp[crp[I]]) *missing = 1;
}

// One thread a scalar row i of the expansion (strip I, row r of its blocks): the columns of each
// of I's blocks in turn, and where each entry lies in the dense blocks.
__global__ void k_expand(index_t rows, int br, int bc, const index_t* __restrict__ brp, const index_t* __restrict__ bci,
                         index_t* __restrict__ rp, index_t* __restrict__ ci, index_t* __restrict__ map) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const index_t I = i / br, r = i % br, q0 = brp[I], len = brp[I + 1] - q0;
  const index_t start = q0 * br * bc + r * len * bc;  // the strip's rows before this one: len·bc each
  rp[i] = start;
  if (i == rows - 1) rp[rows] = brp[I + 1] * br * bc;
  for (index_t q = 0; q < len; ++q)
    for (int c = 0; c < bc; ++c) {
      const index_t e = start + q * bc + c;
      ci[e] = bci[q0 + q] * bc + c;
      map[e] = ((q0 + q) * br + r) * bc + c;
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
    if (!offsets_that_fit(counts, C.block_rows, C.rp, C.blocks)) {
      C.fits = false;  // no pattern
      return C;
    }
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

index_t block_expand(BlockPattern& P, DeviceArray<index_t>& rp, DeviceArray<index_t>& ci) {
  KRYSP_REQUIRE(P.fits, "AMG: a block pattern of ", P.values(), " values, more than index_t holds");
  const index_t rows = P.block_rows * P.br, nnz = index_t(P.values());
  rp = DeviceArray<index_t>(std::size_t(rows) + 1);
  ci = DeviceArray<index_t>(at_least_one(nnz));
  P.map = DeviceArray<index_t>(at_least_one(nnz));
  if (rows == 0) {
    rp.zero();
    return 0;
  }
  k_expand<<<blocks_for(rows), kThreads>>>(rows, P.br, P.bc, P.rp.data(), P.ci.data(), rp.data(), ci.data(),
                                           P.map.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_expand");
  return nnz;
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
    if (C.blocks > 0) {
      k_pairs<false><<<blocks_for(C.blocks), kThreads>>>(C.blocks, C.block_rows, C.rp.data(), C.ci.data(), A.rp.data(),
                                                         A.ci.data(), B.rp.data(), B.ci.data(), count.data(), nullptr,
                                                         nullptr);
      KRYSP_CUDA_CHECK_LAUNCH("k_pairs");
    }
    if (!offsets_that_fit(count, C.blocks, R.rp, R.pairs)) {
      R.fits = false;  // no pairs
      return R;
    }
  }
  if (A.block_rows > 0) {
    k_pairs_check<<<blocks_for(A.block_rows), kThreads>>>(A.block_rows, A.rp.data(), A.ci.data(), B.rp.data(),
                                                          C.rp.data(), R.rp.data(), missing);
    KRYSP_CUDA_CHECK_LAUNCH("k_pairs_check");
  }
  if (own.size() > 0)
    KRYSP_REQUIRE(download_flag(own) == 0, "AMG: a block product's pattern lacks blocks of the product");
  R.a = DeviceArray<index_t>(at_least_one(R.pairs));
  R.b = DeviceArray<index_t>(at_least_one(R.pairs));
  if (R.pairs > 0) {
    k_pairs<true><<<blocks_for(C.blocks), kThreads>>>(C.blocks, C.block_rows, C.rp.data(), C.ci.data(), A.rp.data(),
                                                      A.ci.data(), B.rp.data(), B.ci.data(), R.rp.data(), R.a.data(),
                                                      R.b.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_pairs");
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
