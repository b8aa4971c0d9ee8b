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

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) { return int(std::max<std::int64_t>(1, (n + kThreads - 1) / kThreads)); }

std::size_t at_least_one(index_t n) { return std::size_t(std::max<index_t>(n, 1)); }

// ---------------------------------------------------------------------------------------------
// Strength on nodes (amg::strength_graph for b > 1).

// dm[I] = sqrt(Σ a_ij² over the node's diagonal block), rows in order, each row's entries in
// order: the host's `diag`.
__global__ void k_node_block_magnitude(index_t nodes, int b, const index_t* rp, const index_t* ci, const double* va,
                                       double* dm) {
  const index_t I = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I >= nodes) return;
  double d = 0;
  for (index_t i = I * b; i < (I + 1) * b; ++i)
    for (index_t k = rp[i]; k < rp[i + 1]; ++k)
      if (ci[k] / b == I) d = __dadd_rn(d, __dmul_rn(va[k], va[k]));
  dm[I] = sqrt(d);
}

// Node I's strong neighbours in ascending order: the node's b rows merged by node column (each
// row's columns are sorted, so a node column's entries in a row are consecutive). Each block's
// sum of squares takes the rows in order and each row's entries in order, as the host's `acc`.
// fill: null counts only (count[I]); else the neighbours go to gci from grp[I].
__global__ void k_block_strength(index_t nodes, int b, const index_t* rp, const index_t* ci, const double* va,
                                 const double* dm, double theta, index_t* count, const index_t* grp, index_t* gci) {
  const index_t I = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I >= nodes) return;
  constexpr index_t kEnd = 0x7fffffff;
  index_t cur[kBlockSetupMaxK], end[kBlockSetupMaxK];
  for (int r = 0; r < b; ++r) {
    cur[r] = rp[I * b + r];
    end[r] = rp[I * b + r + 1];
  }
  const double di = dm[I];
  index_t c = 0, p = grp ? grp[I] : 0;
  for (;;) {
    index_t J = kEnd;
    for (int r = 0; r < b; ++r)
      if (cur[r] < end[r]) J = min(J, ci[cur[r]] / b);
    if (J == kEnd) break;
    double acc = 0;
    for (int r = 0; r < b; ++r)
      for (; cur[r] < end[r] && ci[cur[r]] / b == J; ++cur[r]) acc = __dadd_rn(acc, __dmul_rn(va[cur[r]], va[cur[r]]));
    if (J == I) continue;
    if (sqrt(acc) >= __dmul_rn(theta, sqrt(__dmul_rn(di, dm[J]))) && acc > 0) {
      if (gci) gci[p++] = J;
      ++c;
    }
  }
  if (count) count[I] = c;
}

// ---------------------------------------------------------------------------------------------
// The tentative prolongator (amg::tentative_prolongator).

// One aggregate a thread: the host's QR, operation for operation. Q: the aggregate's m × K block
// of `scratch` (column-major, at first·b·K), R in registers; then Q's rows go to qrows (n × K
// row-major) and R to coarse_b.
__global__ void k_aggregate_qr(index_t count, int b, int K, const index_t* start, const index_t* members,
                               const double* B, double* scratch, double* qrows, double* coarse_b) {
  const index_t g = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= count) return;
  const index_t first = start[g], m = (start[g + 1] - first) * b;
  double* Q = scratch + std::int64_t(first) * b * K;
  double R[kBlockSetupMaxK * kBlockSetupMaxK];
  for (int t = 0; t < K * K; ++t) R[t] = 0;
  auto row_of = [&](index_t r) { return members[first + r / b] * b + r % b; };
  for (int k = 0; k < K; ++k) {
    double* q = Q + std::int64_t(k) * m;
    double norm0 = 0;
    for (index_t r = 0; r < m; ++r) {
      q[r] = B[std::int64_t(row_of(r)) * K + k];
      norm0 = __dadd_rn(norm0, __dmul_rn(q[r], q[r]));
    }
    norm0 = sqrt(norm0);
    for (int pass = 0; pass < 2; ++pass)  // Gram-Schmidt twice
      for (int c = 0; c < k; ++c) {
        const double* qc = Q + std::int64_t(c) * m;
        double h = 0;
        for (index_t r = 0; r < m; ++r) h = __dadd_rn(h, __dmul_rn(qc[r], q[r]));
        R[c * K + k] = __dadd_rn(R[c * K + k], h);
        for (index_t r = 0; r < m; ++r) q[r] = __dsub_rn(q[r], __dmul_rn(h, qc[r]));
      }
    double norm = 0;
    for (index_t r = 0; r < m; ++r) norm = __dadd_rn(norm, __dmul_rn(q[r], q[r]));
    norm = sqrt(norm);
    if (norm > __dmul_rn(1e-10, norm0) && norm > 0) {
      R[k * K + k] = norm;
      for (index_t r = 0; r < m; ++r) q[r] = __ddiv_rn(q[r], norm);
      continue;
    }
    // A dependent column: the unit vector that keeps the most of its norm (R's entry stays 0).
    index_t best = 0;
    double best_norm = -1;
    for (index_t e = 0; e < m; ++e) {
      double s = 1;
      for (int c = 0; c < k; ++c) s = __dsub_rn(s, __dmul_rn(Q[std::int64_t(c) * m + e], Q[std::int64_t(c) * m + e]));
      if (s > __dadd_rn(best_norm, 1e-12)) best_norm = s, best = e;
    }
    for (index_t r = 0; r < m; ++r) q[r] = 0;
    if (!(best_norm > 1e-8)) continue;  // fewer unknowns than K: a zero column
    q[best] = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (int c = 0; c < k; ++c) {
        const double* qc = Q + std::int64_t(c) * m;
        double h = 0;
        for (index_t r = 0; r < m; ++r) h = __dadd_rn(h, __dmul_rn(qc[r], q[r]));
        for (index_t r = 0; r < m; ++r) q[r] = __dsub_rn(q[r], __dmul_rn(h, qc[r]));
      }
    norm = 0;
    for (index_t r = 0; r < m; ++r) norm = __dadd_rn(norm, __dmul_rn(q[r], q[r]));
    norm = sqrt(norm);
    for (index_t r = 0; r < m; ++r) q[r] = __ddiv_rn(q[r], norm);
  }
  for (index_t r = 0; r < m; ++r)
    for (int k = 0; k < K; ++k) qrows[std::int64_t(row_of(r)) * K + k] = Q[std::int64_t(k) * m + r];
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
    k_node_block_magnitude<<<blocks_for(nodes), kThreads>>>(nodes, b, rp, ci, va, dm.data());
    KRYSP_CUDA_CHECK_LAUNCH("k_node_block_magnitude");
    k_block_strength<<<blocks_for(nodes), kThreads>>>(nodes, b, rp, ci, va, dm.data(), theta, count.data(), nullptr,
                                                      nullptr);
    KRYSP_CUDA_CHECK_LAUNCH("k_block_strength (count)");
  }
  const index_t edges = exclusive_scan(count.data(), grp.data(), nodes);
  gci = DeviceArray<index_t>(at_least_one(edges));
  if (nodes > 0) {
    k_block_strength<<<blocks_for(nodes), kThreads>>>(nodes, b, rp, ci, va, dm.data(), theta, nullptr, grp.data(),
                                                      gci.data());
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
    k_aggregate_qr<<<blocks_for(count), kThreads>>>(count, b, K, start.data(), members.data(), B, scratch.data(),
                                                   qrows.data(), t.coarse_b.data());
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
