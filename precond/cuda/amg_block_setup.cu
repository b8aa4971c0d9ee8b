// The GPU set-up's pieces for K > 1 near-nullspace vectors (amg_block_setup.hpp): the strength
// graph on nodes, the tentative prolongator by per-aggregate QR, S·P_tent's values and the
// coarse matrix's unit diagonal, each in the host's operation order (amg_setup.cpp, amg.cpp).
#include "krysp/precond/cuda/amg_block_setup.hpp"

#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/amg_device_primitives.cuh"
#include "krysp/precond/cuda/amg_galerkin.hpp"
#include "krysp/precond/cuda/sorted_search.cuh"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) { return int(std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads)); }

std::size_t at_least_one(index_t n) { return std::size_t(std::max<index_t>(n, 1)); }

// ---------------------------------------------------------------------------------------------
// Strength on nodes (amg::strength_graph for b > 1).

// A node's b rows are walked by a group of kGroup lanes, lane r on row r: a thread a node would
// follow one dependent load after another through the node's entries, which on coarse levels
// (few nodes, rows of hundreds of entries) costs milliseconds. Within a row the entries of one
// node column are at most b ≤ kGroup (sorted unique columns), so each lane loads its run at once.
constexpr int kGroup = kBlockSetupMaxK;
static_assert(32 % kGroup == 0, "node groups tile a warp");

struct NodeGroup {
  index_t node;   // the group's node
  int lane;       // 0..kGroup-1: the row of the node this lane walks (lanes ≥ b idle)
  unsigned mask;  // the group's lanes in the warp
};

__device__ NodeGroup node_group() {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int w = int(threadIdx.x % 32u);
  return {index_t(t / kGroup), w % kGroup, 0xffu << (w / kGroup * kGroup)};
}

// Σ v² over the lanes' runs, lane 0's run first, each run in order: the host's order for a
// block's sum of squares (the node's rows in order, each row's entries in order). Lane r holds
// its run's squares in sq[0..len-1]; every lane gets the sum.
__device__ double ordered_run_sum(const NodeGroup& g, int b, int len, const double (&sq)[kGroup]) {
  double acc = 0;
  for (int r = 0; r < b; ++r) {
    const int n = __shfl_sync(g.mask, len, r, kGroup);
#pragma unroll
    for (int t = 0; t < kGroup; ++t) {
      const double v = __shfl_sync(g.mask, sq[t], r, kGroup);
      if (t < n) acc = __dadd_rn(acc, v);
    }
  }
  return acc;
}

// The run of node column J at entry cur of a row ending at end: its squares and length (≤
// kGroup), and the node column after it (kEnd at the row's end).
constexpr index_t kEnd = 0x7fffffff;
__device__ int load_run(int b, index_t J, index_t cur, index_t end, const index_t* ci, const double* va,
                        double (&sq)[kGroup], index_t& next) {
  int len = 0;
  next = kEnd;
#pragma unroll
  for (int t = 0; t <= kGroup; ++t) {
    const index_t k = cur + t;
    const index_t c = k < end ? ci[k] / b : kEnd;
    if (t < kGroup) sq[t] = c == J ? __dmul_rn(va[k], va[k]) : 0.0;
    if (t < kGroup && c == J && len == t) len = t + 1;
    else if (next == kEnd && len == t) next = c;
  }
  return len;
}

__device__ index_t group_min(const NodeGroup& g, index_t v) {
  for (int off = kGroup / 2; off > 0; off >>= 1) v = min(v, __shfl_xor_sync(g.mask, v, off, kGroup));
  return v;
}

// dm[I] = sqrt(Σ a_ij² over the node's diagonal block): the host's `diag`. Lane r finds the block
// in row r by bisection.
__global__ void k_node_block_magnitude(index_t nodes, int b, const index_t* rp, const index_t* ci, const double* va,
                                       double* dm) {
  const NodeGroup g = node_group();
  if (g.node >= nodes) return;  // the whole group
  const index_t I = g.node;
  double sq[kGroup];
  index_t next;
  int len = 0;
  if (g.lane < b) {
    const index_t begin = rp[I * b + g.lane], end = rp[I * b + g.lane + 1];
    const index_t first = begin + lower_bound(ci + begin, end - begin, I * b);  // the first column ≥ I·b
    len = load_run(b, I, first, end, ci, va, sq, next);
  } else {
    for (double& v : sq) v = 0;
  }
  const double d = ordered_run_sum(g, b, len, sq);
  if (g.lane == 0) dm[I] = sqrt(d);
}

// Node I's strong neighbours in ascending order: the group steps through the node columns of its
// b rows together (the smallest next column over the rows), each block's sum of squares in the
// host's order. fill: null counts only (count[I]); else the neighbours go to gci from grp[I].
__global__ void k_block_strength(index_t nodes, int b, const index_t* rp, const index_t* ci, const double* va,
                                 const double* dm, double theta, index_t* count, const index_t* grp, index_t* gci) {
  const NodeGroup g = node_group();
  if (g.node >= nodes) return;
  const index_t I = g.node;
  index_t cur = 0, end = 0;
  if (g.lane < b) {
    cur = rp[I * b + g.lane];
    end = rp[I * b + g.lane + 1];
  }
  const double di = dm[I];
  index_t c = 0, p = grp ? grp[I] : 0;
  index_t J = group_min(g, cur < end ? ci[cur] / b : kEnd);
  while (J != kEnd) {
    double sq[kGroup];
    index_t next = kEnd;
    const int len = load_run(b, J, cur, end, ci, va, sq, next);
    cur += len;
    const double acc = ordered_run_sum(g, b, len, sq);
    if (J != I && sqrt(acc) >= __dmul_rn(theta, sqrt(__dmul_rn(di, dm[J]))) && acc > 0) {
      if (gci && g.lane == 0) gci[p] = J;
      ++p;
      ++c;
    }
    J = group_min(g, next);
  }
  if (count && g.lane == 0) count[I] = c;
}

// ---------------------------------------------------------------------------------------------
// The tentative prolongator (amg::tentative_prolongator).

// Σ_r term(r) over r = 0..m−1 in order, lane l of the warp forming the terms of rows l, l + 32,
// ...: the host's order of a dot product over an aggregate's rows. Every lane gets the sum.
template <class Term>
__device__ double warp_ordered_sum(index_t m, int lane, Term term) {
  double acc = 0;
  for (index_t base = 0; base < m; base += 32) {
    const double v = base + lane < m ? term(base + lane) : 0.0;
    const int n = int(min(index_t(32), m - base));
    for (int t = 0; t < n; ++t) acc = __dadd_rn(acc, __shfl_sync(0xffffffffu, v, t));
  }
  return acc;
}

// One aggregate a warp: the host's QR, operation for operation, each lane on the rows r ≡ lane
// (mod 32) of Q (so no lane reads another's entries) and the sums in row order through the
// shuffles (a thread an aggregate would walk its m·K² products one load after another). Q: the
// aggregate's m × K block of `scratch` (column-major, at first·b·K), R in registers, the same in
// every lane; then Q's rows go to qrows (n × K row-major) and R to coarse_b.
__global__ void k_aggregate_qr(index_t count, int b, int K, const index_t* start, const index_t* members,
                               const double* B, double* scratch, double* qrows, double* coarse_b) {
  const index_t g = index_t((std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const int lane = int(threadIdx.x % 32u);
  if (g >= count) return;  // the whole warp
  const index_t first = start[g], m = (start[g + 1] - first) * b;
  double* Q = scratch + std::int64_t(first) * b * K;
  double R[kBlockSetupMaxK * kBlockSetupMaxK];
  for (int t = 0; t < K * K; ++t) R[t] = 0;
  auto row_of = [&](index_t r) { return members[first + r / b] * b + r % b; };
  auto square = [](double v) { return __dmul_rn(v, v); };
  // q −= (q·q_c) q_c for c < k, twice; R's column k gets the coefficients when r_col is set.
  auto orthogonalise = [&](double* q, int k, bool r_col) {
    for (int pass = 0; pass < 2; ++pass)
      for (int c = 0; c < k; ++c) {
        const double* qc = Q + std::int64_t(c) * m;
        const double h = warp_ordered_sum(m, lane, [&](index_t r) { return __dmul_rn(qc[r], q[r]); });
        if (r_col) R[c * K + k] = __dadd_rn(R[c * K + k], h);
        for (index_t r = lane; r < m; r += 32) q[r] = __dsub_rn(q[r], __dmul_rn(h, qc[r]));
      }
  };
  for (int k = 0; k < K; ++k) {
    double* q = Q + std::int64_t(k) * m;
    for (index_t r = lane; r < m; r += 32) q[r] = B[std::int64_t(row_of(r)) * K + k];
    const double norm0 = sqrt(warp_ordered_sum(m, lane, [&](index_t r) { return square(q[r]); }));
    orthogonalise(q, k, true);
    double norm = sqrt(warp_ordered_sum(m, lane, [&](index_t r) { return square(q[r]); }));
    if (norm > __dmul_rn(1e-10, norm0) && norm > 0) {
      R[k * K + k] = norm;
      for (index_t r = lane; r < m; r += 32) q[r] = __ddiv_rn(q[r], norm);
      continue;
    }
    // A dependent column: the unit vector that keeps the most of its norm (R's entry stays 0),
    // the first such row in row order.
    index_t best = 0;
    double best_norm = -1;
    for (index_t base = 0; base < m; base += 32) {
      const index_t e = base + lane;
      double s = 1;
      if (e < m)
        for (int c = 0; c < k; ++c) s = __dsub_rn(s, square(Q[std::int64_t(c) * m + e]));
      const int n = int(min(index_t(32), m - base));
      for (int t = 0; t < n; ++t) {
        const double st = __shfl_sync(0xffffffffu, s, t);
        if (st > __dadd_rn(best_norm, 1e-12)) best_norm = st, best = base + t;
      }
    }
    for (index_t r = lane; r < m; r += 32) q[r] = 0;
    if (!(best_norm > 1e-8)) continue;  // fewer unknowns than K: a zero column
    if (best % 32 == lane) q[best] = 1;  // its row's lane
    orthogonalise(q, k, false);
    norm = sqrt(warp_ordered_sum(m, lane, [&](index_t r) { return square(q[r]); }));
    for (index_t r = lane; r < m; r += 32) q[r] = __ddiv_rn(q[r], norm);
  }
  for (index_t r = lane; r < m; r += 32)
    for (int k = 0; k < K; ++k) qrows[std::int64_t(row_of(r)) * K + k] = Q[std::int64_t(k) * m + r];
  if (lane == 0)
    for (int i = 0; i < K; ++i)
      for (int k = 0; k < K; ++k) coarse_b[(std::int64_t(g) * K + i) * K + k] = R[i * K + k];
}

// P_tent's rows: row i (node i/b in aggregate g) holds qrows' nonzeros of its K columns, at
// columns g·K + k. fill: null counts only.
__global__ void k_tent_rows(index_t n, int b, int K, const index_t* agg, const double* qrows, index_t* count,
                            const index_t* rp, index_t* ci, double* va) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const index_t g = agg[i / b];
  index_t c = 0, p = rp ? rp[i] : 0;
  if (g >= 0)
    for (int k = 0; k < K; ++k) {
      const double v = qrows[std::int64_t(i) * K + k];
      if (v == 0) continue;  // exact zeros stay out (unit vectors): P_tent stays sparse
      if (ci) {
        ci[p] = g * K + k;
        va[p++] = v;
      }
      ++c;
    }
  if (count) count[i] = c;
}

__global__ void k_unit_vectors(index_t n, int b, double* B) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < b; ++k) B[std::int64_t(i) * b + k] = k == i % b ? 1.0 : 0.0;
}

// ---------------------------------------------------------------------------------------------
// S = I − ω·D⁻¹A's values, as amg.cpp forms them: δ_ij − (ω·dinv_i)·a_ij.
// A warp a row (a coarse level has few rows of many entries: a thread a row would walk them
// one after another).
__global__ void k_smoothing_values(index_t n, const index_t* rp, const index_t* ci, const double* va,
                                   const double* dinv, double omega, double* s) {
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(t / 32);
  if (i >= n) return;
  const double w = __dmul_rn(omega, dinv[i]);
  for (index_t k = rp[i] + index_t(t % 32); k < rp[i + 1]; k += 32)
    s[k] = __dsub_rn(ci[k] == i ? 1.0 : 0.0, __dmul_rn(w, va[k]));
}

// ---------------------------------------------------------------------------------------------
// amg::unit_diagonal_on_empty_rows.
__global__ void k_unit_count(index_t n, const index_t* rp, const double* va, index_t* count, int* empty_rows) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  bool empty = true;
  for (index_t k = rp[i]; k < rp[i + 1]; ++k) empty = empty && va[k] == 0;
  count[i] = empty ? 1 : rp[i + 1] - rp[i];
  if (empty) atomicAdd(empty_rows, 1);
}
__global__ void k_unit_fill(index_t n, const index_t* rp, const index_t* ci, const double* va, const index_t* orp,
                            index_t* oci, double* ova, index_t* map) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  index_t o = orp[i];
  bool empty = true;
  for (index_t k = rp[i]; k < rp[i + 1]; ++k) empty = empty && va[k] == 0;
  if (empty) {
    oci[o] = i;
    ova[o] = 1.0;
    map[o] = -1;
    return;
  }
  for (index_t k = rp[i]; k < rp[i + 1]; ++k, ++o) {
    oci[o] = ci[k];
    ova[o] = va[k];
    map[o] = k;
  }
}
__global__ void k_unit_gather(index_t nnz, const index_t* map, const double* va, double* out) {
  const index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o < nnz) out[o] = map[o] >= 0 ? va[map[o]] : 1.0;
}

}  // namespace

DeviceArray<double> block_unit_nullspace(index_t n, int b) {
  DeviceArray<double> B(at_least_one(index_t(std::int64_t(n) * b)));
  if (n > 0) {
    k_unit_vectors<<<blocks_for(n), kThreads>>>(n, b, B.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_unit_vectors");
  }
  return B;
}

index_t block_strength_graph(index_t rows, int b, const index_t* rp, const index_t* ci, const double* va, double theta,
                             DeviceArray<index_t>& grp, DeviceArray<index_t>& gci) {
  KRYSP_REQUIRE(b >= 1 && rows % b == 0, "AMG: block size ", b, " does not divide ", rows, " rows");
  KRYSP_REQUIRE(b <= kBlockSetupMaxK, "AMG: the GPU set-up takes at most ", kBlockSetupMaxK,
                " unknowns per node, not ", b);
  const index_t nodes = rows / b;
  DeviceArray<double> dm(at_least_one(nodes));
  DeviceArray<index_t> count(at_least_one(nodes));
  grp = DeviceArray<index_t>(std::size_t(nodes) + 1);
  if (nodes > 0) {
    k_node_block_magnitude<<<blocks_for(std::int64_t(nodes) * kGroup), kThreads>>>(nodes, b, rp, ci, va, dm.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_node_block_magnitude");
    k_block_strength<<<blocks_for(std::int64_t(nodes) * kGroup), kThreads>>>(nodes, b, rp, ci, va, dm.data(), theta,
                                                                             count.data(), nullptr, nullptr);
    KRYSP_CUDA_CHECK_LAUNCH("k_block_strength (count)");
  }
  const index_t edges = exclusive_scan(count.data(), grp.data(), nodes);
  gci = DeviceArray<index_t>(at_least_one(edges));
  if (nodes > 0) {
    k_block_strength<<<blocks_for(std::int64_t(nodes) * kGroup), kThreads>>>(nodes, b, rp, ci, va, dm.data(), theta,
                                                                             nullptr, grp.data(), gci.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_block_strength (fill)");
  }
  return edges;
}

BlockTentative block_tentative_prolongator(index_t nodes, int b, int K, index_t count, const index_t* agg,
                                          const double* B) {
  KRYSP_REQUIRE(K >= 1 && K <= kBlockSetupMaxK && b >= 1 && b <= kBlockSetupMaxK, "AMG: the GPU set-up takes ",
                "at most ", kBlockSetupMaxK, " near-nullspace vectors and unknowns per node, not ", K, " and ", b);
  const index_t n = nodes * b;
  BlockTentative t;
  t.rows = n;
  t.cols = count * K;
  t.rp = DeviceArray<index_t>(std::size_t(n) + 1);
  t.coarse_b = DeviceArray<double>(at_least_one(index_t(std::int64_t(count) * K * K)));
  DeviceArray<double> qrows(std::size_t(std::max<std::int64_t>(std::int64_t(n) * K, 1)));
  qrows.zero();
  if (nodes > 0 && count > 0) {
    // The nodes of each aggregate in node order: a stable radix sort by aggregate.
    const std::size_t N = std::size_t(nodes);
    DeviceArray<index_t> keys(N), iota(N), sorted(N), members(N), start(std::size_t(count) + 1);
    k_sort_keys<<<blocks_for(nodes), kThreads>>>(nodes, agg, keys.data(), iota.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_sort_keys");
    sort_pairs(nodes, keys.data(), sorted.data(), iota.data(), members.data(), bits_for(count));
    k_starts<<<blocks_for(nodes), kThreads>>>(nodes, sorted.data(), count, start.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_starts");
    // Left-out nodes sort first: the aggregates' members start at start[0].
    DeviceArray<double> scratch(std::size_t(std::max<std::int64_t>(std::int64_t(n) * K, 1)));
    k_aggregate_qr<<<blocks_for(std::int64_t(count) * 32), kThreads>>>(count, b, K, start.data(), members.data(), B,
                                                                      scratch.data(), qrows.data(), t.coarse_b.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_aggregate_qr");
  }
  DeviceArray<index_t> rc(at_least_one(n));
  if (n > 0) {
    k_tent_rows<<<blocks_for(n), kThreads>>>(n, b, K, agg, qrows.data(), rc.data(), nullptr, nullptr, nullptr);
    KRYSP_CUDA_CHECK_LAUNCH("k_tent_rows (count)");
  }
  t.nnz = exclusive_scan(rc.data(), t.rp.data(), n);
  t.ci = DeviceArray<index_t>(at_least_one(t.nnz));
  t.va = DeviceArray<double>(at_least_one(t.nnz));
  if (n > 0) {
    k_tent_rows<<<blocks_for(n), kThreads>>>(n, b, K, agg, qrows.data(), nullptr, t.rp.data(), t.ci.data(),
                                             t.va.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_tent_rows (fill)");
  }
  return t;
}

void block_prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va, index_t a_nnz,
                              const double* dinv, double omega, index_t t_nnz, const index_t* t_rp,
                              const index_t* t_ci, const double* t_va, const index_t* p_rp, const index_t* p_ci,
                              index_t p_nnz, double* p_va) {
  DeviceArray<double> s(at_least_one(a_nnz));
  if (n > 0) {
    k_smoothing_values<<<blocks_for(std::int64_t(n) * 32), kThreads>>>(n, a_rp, a_ci, a_va, dinv, omega, s.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_smoothing_values");
  }
  spgemm_numeric(n, a_rp, a_ci, s.data(), n, t_nnz, t_rp, t_ci, t_va, p_rp, p_ci, p_nnz, p_va);
}

bool unit_diagonal_on_empty_rows(index_t n, index_t nnz, const index_t* rp, const index_t* ci, const double* va,
                                 UnitDiagonal& out) {
  (void)nnz;
  if (n == 0) return false;
  DeviceArray<index_t> count(at_least_one(n));
  DeviceArray<int> empty_rows(1);
  empty_rows.zero();
  k_unit_count<<<blocks_for(n), kThreads>>>(n, rp, va, count.data(), empty_rows.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_unit_count");
  int empty = 0;
  copy_to_host(&empty, empty_rows.data(), sizeof empty);
  if (empty == 0) return false;
  out.rp = DeviceArray<index_t>(std::size_t(n) + 1);
  out.nnz = exclusive_scan(count.data(), out.rp.data(), n);
  out.ci = DeviceArray<index_t>(at_least_one(out.nnz));
  out.va = DeviceArray<double>(at_least_one(out.nnz));
  out.map = DeviceArray<index_t>(at_least_one(out.nnz));
  k_unit_fill<<<blocks_for(n), kThreads>>>(n, rp, ci, va, out.rp.data(), out.ci.data(), out.va.data(),
                                           out.map.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_unit_fill");
  return true;
}

void unit_diagonal_gather(index_t nnz, const index_t* map, const double* va, double* out) {
  if (nnz == 0) return;
  k_unit_gather<<<blocks_for(nnz), kThreads>>>(nnz, map, va, out);
  KRYSP_CUDA_CHECK_LAUNCH("k_unit_gather");
}

}  // namespace krysp::detail
