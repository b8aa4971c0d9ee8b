// The AMG set-up on the GPU (amg_device_setup.hpp): strength, MIS-2 aggregation, P_tent, the
// Lanczos estimate, prolongator smoothing and the Galerkin products, level by level.
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/amg_filter.hpp"
#include "krysp/precond/cuda/amg_block_setup.hpp"
#include "krysp/precond/cuda/amg_block_product.hpp"
#include "krysp/precond/cuda/amg_galerkin.hpp"

#include <cub/cub.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg_mis2_rules.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/amg_device_common.cuh"
#include "krysp/precond/cuda/amg_device_lanczos.hpp"
#include "krysp/precond/cuda/amg_device_primitives.cuh"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"
#include "krysp/precond/cuda/row_groups.cuh"
#include "krysp/precond/cuda/sorted_search.cuh"
#include "krysp/precond/jacobi.hpp"
#include "krysp/precond/spd_block.hpp"
#include "krysp/sparse/csr_trusted.hpp"

namespace krysp::detail {

namespace {

// The host set-up's constants (amg.cpp): both set-ups must stop and scale alike.
constexpr double kStallRatio = 1.2;
constexpr int kLanczosSteps = kAmgLanczosMaxSteps;

using Clock = std::chrono::steady_clock;

// AmgOptions::profile_setup: each phase ends with a device synchronisation and its wall time is
// added to AmgInfo::setup_phases. Off (the default): mark() does nothing, so the set-up gains no
// synchronisation.
class PhaseClock {
 public:
  PhaseClock(bool on, std::vector<AmgSetupPhase>* out) : on_(on && out), out_(out) {
    if (on_) {
      cuda_synchronize();
      t_ = Clock::now();
    }
  }
  // The time since the last mark (or the start) goes to (level, name).
  void mark(int level, const std::string& name) {
    if (!on_) return;
    cuda_synchronize();
    const auto now = Clock::now();
    const double sec = std::chrono::duration<double>(now - t_).count();
    t_ = now;
    for (auto& p : *out_)
      if (p.level == level && p.name == name) {
        p.seconds += sec;
        ++p.count;
        return;
      }
    out_->push_back(AmgSetupPhase{level, name, sec, 1});
  }

 private:
  bool on_;
  std::vector<AmgSetupPhase>* out_;
  Clock::time_point t_{};
};

// ---------------------------------------------------------------------------------------------
// Kernels.

template <class S, class D>
__global__ void k_convert(std::int64_t n, const S* src, D* dst) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = D(src[i]);
}

__global__ void k_fill(std::int64_t n, double v, double* x) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

// The row kernels below (k_diagonal, k_strength_count, k_strength_fill; amg_filter.cu likewise):
// a group of W lanes a row (row_groups.cuh; W from fold_lanes below). Lane t reads the row's
// entries t, t + W, ... a chunk of W at a time (coalesced; one thread a row read level 1's rows of
// ~35 entries uncoalesced). The results are the one-thread-a-row loop's bits for any W: a sum
// takes its terms one by one in the row's order (fold_in_order), a compaction writes in the row's
// order (a ballot).

// D⁻¹, D_l1⁻¹ (dl1 null: not written), D^{-1/2}, the row ratios Σ|a_ij|/a_ii; bad[0]: first row
// with a diagonal that is not positive and finite, bad[1]: first row whose sum is not finite
// (atomicMin: the smallest index, whatever the order). W lanes a row: a_ii the row's last
// diagonal entry and Σ|a_ij| in the row's order, as one thread a row takes them.
template <int W>
__global__ void k_diagonal(index_t n, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                           const double* __restrict__ va, double* dinv, double* dl1, double* s, double* ratio,
                           double* diag, int* bad) {
  const auto [i, lane] = row_lane<W>();
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const unsigned mask = group_mask<W>();
  const index_t e = rp[i + 1];
  double d = 0, sum = 0;
  for (index_t k0 = rp[i]; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    const bool in = k < e;
    const double v = in ? va[k] : 0.0;
    const unsigned on = group_ballot<W>(mask, in && ci[k] == i);
    if (on != 0u) d = __shfl_sync(mask, v, 31 - __clz(int(on)), W);  // the chunk's last diagonal entry
    sum = fold_in_order<W>(mask, first_lanes(min(index_t(W), e - k0)), fabs(v), sum);
  }
  if (lane != 0) return;
  if (!(isfinite(d) && d > 0)) atomicMin(bad, int(i));
  if (!isfinite(sum)) atomicMin(bad + 1, int(i));
  dinv[i] = 1.0 / d;
  if (dl1) dl1[i] = 1.0 / sum;
  s[i] = sqrt(1.0 / d);
  ratio[i] = sum / d;
  diag[i] = d;
}

// Strength of connection for b = 1, the host's test (amg::strength_graph) entry by entry.
__device__ __forceinline__ bool strong(double v, double di, double dj, double theta) {
  const double acc = __dmul_rn(v, v);
  return sqrt(acc) >= __dmul_rn(theta, sqrt(__dmul_rn(di, dj))) && acc > 0;
}
// dm_i = sqrt(a_ii²) (the host's node magnitude for b = 1)
__global__ void k_node_magnitude(index_t n, const double* diag, double* dm) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dm[i] = sqrt(__dmul_rn(diag[i], diag[i]));
}
// count[i] = row i's strong off-diagonal entries; k_strength_fill: their columns, in A's row order,
// into gci from grp[i]. W lanes a row (k_diagonal's comment); the chunk's strong entries are
// placed by a ballot, each after those of the lower lanes.
template <int W>
__global__ void k_strength_count(index_t n, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                                 const double* __restrict__ va, const double* __restrict__ dm, double theta,
                                 index_t* count) {
  const auto [i, lane] = row_lane<W>();
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const unsigned mask = group_mask<W>();
  const index_t e = rp[i + 1];
  const double dmi = dm[i];
  index_t c = 0;
  for (index_t k0 = rp[i]; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    const index_t j = k < e ? ci[k] : i;
    c += __popc(group_ballot<W>(mask, j != i && strong(va[k], dmi, dm[j], theta)));
  }
  if (lane == 0) count[i] = c;
}
template <int W>
__global__ void k_strength_fill(index_t n, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                                const double* __restrict__ va, const double* __restrict__ dm, double theta,
                                const index_t* __restrict__ grp, index_t* __restrict__ gci) {
  const auto [i, lane] = row_lane<W>();
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const unsigned mask = group_mask<W>();
  const index_t e = rp[i + 1];
  const double dmi = dm[i];
  index_t p = grp[i];
  for (index_t k0 = rp[i]; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    const index_t j = k < e ? ci[k] : i;
    const bool on = j != i && strong(va[k], dmi, dm[j], theta);
    const unsigned bits = group_ballot<W>(mask, on);
    if (on) gci[p + lanes_below(bits, lane)] = j;
    p += __popc(bits);
  }
}

// MIS-2 (amg_mis2_rules.hpp).
__global__ void k_mis_init(index_t n, const index_t* grp, std::uint64_t* keys, int* isolated) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const bool none = grp[i] == grp[i + 1];
  keys[i] = amg::mis2::key(none ? amg::mis2::kOut : amg::mis2::kUndecided, i);
  if (none) atomicAdd(isolated, 1);
}
__global__ void k_mis_max(index_t n, const index_t* grp, const index_t* gci, const std::uint64_t* in,
                          std::uint64_t* out) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = amg::mis2::max_over_row(grp, gci, i, in);
}
__global__ void k_mis_decide(index_t n, std::uint64_t* keys, const std::uint64_t* max2, int* undecided) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t k = amg::mis2::decide(keys[i], max2[i], i);
  keys[i] = k;
  if (amg::mis2::state_of(k) == amg::mis2::kUndecided) atomicAdd(undecided, 1);
}
__global__ void k_root_flags(index_t n, const std::uint64_t* keys, index_t* flag) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flag[i] = amg::mis2::state_of(keys[i]) == amg::mis2::kRoot ? 1 : 0;
}
// agg1: roots their number (exclusive scan of the flags), other nodes −1.
__global__ void k_root_numbers(index_t n, const std::uint64_t* keys, const index_t* scan, index_t* agg1) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) agg1[i] = amg::mis2::state_of(keys[i]) == amg::mis2::kRoot ? scan[i] : -1;
}
__global__ void k_join_root(index_t n, const index_t* grp, const index_t* gci, const std::uint64_t* keys,
                           const index_t* roots, index_t* agg1) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || amg::mis2::state_of(keys[i]) == amg::mis2::kRoot || grp[i] == grp[i + 1]) return;
  agg1[i] = amg::mis2::join_root(grp, gci, i, keys, roots);
}
__global__ void k_join_neighbour(index_t n, const index_t* grp, const index_t* gci, const index_t* agg1, index_t* agg,
                                 int* attached, index_t* leftover) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  index_t g = agg1[i];
  if (g < 0 && grp[i] < grp[i + 1]) {
    g = amg::mis2::join_neighbour(grp, gci, i, agg1);
    if (g >= 0) atomicAdd(attached, 1);
  }
  agg[i] = g;
  leftover[i] = g < 0 && grp[i] < grp[i + 1] ? 1 : 0;
}
__global__ void k_leftovers(index_t n, const index_t* leftover, const index_t* scan, index_t base, index_t* agg) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && leftover[i]) agg[i] = base + scan[i];
}

// P_tent for one near-nullspace vector b, once the nodes are grouped by aggregate (k_sort_keys,
// sort_pairs, k_starts: amg_device_primitives.cuh).
// ‖b over aggregate g‖, the squares summed in node order (amg::tentative_prolongator's order).
__global__ void k_aggregate_norms(index_t count, const index_t* start, const index_t* members, const double* b,
                                  double* norm) {
  const index_t g = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= count) return;
  double ss = 0;
  for (index_t p = start[g]; p < start[g + 1]; ++p) ss = __dadd_rn(ss, __dmul_rn(b[members[p]], b[members[p]]));
  norm[g] = sqrt(ss);
}
__global__ void k_aggregated_flags(index_t n, const index_t* agg, index_t* flag) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) flag[i] = agg[i] >= 0 ? 1 : 0;
}
__global__ void k_tent_fill(index_t n, const index_t* agg, const index_t* rp, const double* b, const double* norm,
                            index_t* ci, double* va) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n || agg[i] < 0) return;
  ci[rp[i]] = agg[i];
  va[rp[i]] = b[i] / norm[agg[i]];
}

// Transpose helpers: the row of every entry, and the column counts.
__global__ void k_entry_rows(index_t n, const index_t* rp, index_t* rows) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (index_t k = rp[i]; k < rp[i + 1]; ++k) rows[k] = i;
}
__global__ void k_iota(index_t n, index_t* x) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}
__global__ void k_column_counts(index_t nnz, const index_t* ci, int* count) {
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < nnz) atomicAdd(count + ci[k], 1);
}
__global__ void k_gather_transpose(index_t nnz, const index_t* perm, const index_t* rows, const double* va,
                                   index_t* tci, double* tva) {
  const index_t p = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= nnz) return;
  tci[p] = rows[perm[p]];
  if (va) tva[p] = va[perm[p]];
}

// (A + B)/2 over the union pattern (amg::add(0.5, A, 0.5, B)): count, then fill.
__global__ void k_union_count(index_t n, const index_t* arp, const index_t* aci, const index_t* brp,
                              const index_t* bci, index_t* count) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  index_t p = arp[i], q = brp[i], c = 0;
  const index_t pe = arp[i + 1], qe = brp[i + 1];
  while (p < pe || q < qe) {
    const index_t ja = p < pe ? aci[p] : 0x7fffffff, jb = q < qe ? bci[q] : 0x7fffffff;
    const index_t j = ja < jb ? ja : jb;
    if (ja == j) ++p;
    if (jb == j) ++q;
    ++c;
  }
  count[i] = c;
}
// With maps (B = Aᵀ, b_perm its transpose permutation): map_a[o], map_b[o] = the positions in A
// of the two halves of entry o (−1: absent), so a re-set-up of the same pattern is a gather.
__global__ void k_union_fill(index_t n, const index_t* arp, const index_t* aci, const double* ava, const index_t* brp,
                             const index_t* bci, const double* bva, const index_t* crp, index_t* cci, double* cva,
                             const index_t* b_perm, index_t* map_a, index_t* map_b) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  index_t p = arp[i], q = brp[i], o = crp[i];
  const index_t pe = arp[i + 1], qe = brp[i + 1];
  while (p < pe || q < qe) {
    const index_t ja = p < pe ? aci[p] : 0x7fffffff, jb = q < qe ? bci[q] : 0x7fffffff;
    const index_t j = ja < jb ? ja : jb;
    double v = 0;
    index_t ma = -1, mb = -1;
    if (ja == j) {
      ma = p;
      v = __dadd_rn(v, __dmul_rn(0.5, ava[p++]));
    }
    if (jb == j) {
      mb = b_perm ? b_perm[q] : -1;
      v = __dadd_rn(v, __dmul_rn(0.5, bva[q++]));
    }
    cci[o] = j;
    cva[o] = v;
    if (map_a) {
      map_a[o] = ma;
      map_b[o] = mb;
    }
    ++o;
  }
}
// The same values from kept maps: the same operations in the same order, so bitwise equal.
__global__ void k_half_sum_gather(index_t nnz, const index_t* map_a, const index_t* map_b, const double* va,
                                  double* out) {
  const index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= nnz) return;
  double v = 0;
  if (map_a[o] >= 0) v = __dadd_rn(v, __dmul_rn(0.5, va[map_a[o]]));
  if (map_b[o] >= 0) v = __dadd_rn(v, __dmul_rn(0.5, va[map_b[o]]));
  out[o] = v;
}
// A structurally symmetric pattern's transpose map, by search: for entry o = (i, j), map_b[o] =
// the position of (j, i) in row j (rows sorted), map_a[o] = o; *asym = 1 when one is missing.
__global__ void k_symmetric_maps(index_t nnz, const index_t* rows, const index_t* rp, const index_t* ci,
                                 index_t* map_a, index_t* map_b, int* asym) {
  const index_t o = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= nnz) return;
  const index_t i = rows[o], j = ci[o];
  const index_t lo = rp[j] + lower_bound(ci + rp[j], rp[j + 1] - rp[j], i);
  const bool found = lo < rp[j + 1] && ci[lo] == i;
  if (!found) *asym = 1;
  map_a[o] = o;
  map_b[o] = found ? lo : -1;
}
// Transposed values from a kept permutation (k_gather_transpose's values).
__global__ void k_gather(index_t nnz, const index_t* perm, const double* va, double* out) {
  const index_t p = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < nnz) out[p] = va[perm[p]];
}

// ---------------------------------------------------------------------------------------------
// Host-side helpers.

int download_int(const int* p) {
  int v = 0;
  copy_to_host(&v, p, sizeof(int));
  return v;
}

/// A level matrix downloaded, for the host's analysis of what the GPU refused.
amg::Csr<double> download(const DCsr& Al) {
  amg::Csr<double> C;
  C.rows = C.cols = Al.rows;
  C.row_ptr.resize(std::size_t(Al.rows) + 1);
  C.col_idx.resize(static_cast<std::size_t>(Al.nnz));
  C.values.resize(static_cast<std::size_t>(Al.nnz));
  copy_to_host(C.row_ptr.data(), Al.rp, C.row_ptr.size() * sizeof(index_t));
  if (Al.nnz > 0) {
    copy_to_host(C.col_idx.data(), Al.ci, C.col_idx.size() * sizeof(index_t));
    copy_to_host(C.values.data(), Al.va, C.values.size() * sizeof(double));
  }
  return C;
}

/// The coarsest matrix (level l) downloaded and factored by amg::coarse_cholesky, as HostAmg
/// factors it, its pinned pivots counted in *pinned: where the GPU's factor refused a pivot, to
/// pin it or name it in the InputError.
std::vector<double> host_coarse_cholesky(std::size_t l, const DCsr& Al, index_t* pinned) {
  return amg::coarse_cholesky(l, download(Al), pinned);
}

/// amg::node_block_inverses on the device, one thread a node, the host's operations in its order
/// (detail::invert_spd_block): inv and linv (rows × b each); flags[0] the first node whose block
/// is not positive definite (left as is when none), flags[1] set to 1 where a block couples its
/// unknowns (amg::node_block_inverses' test).
__global__ void k_node_blocks(index_t nodes, int b, const index_t* rp, const index_t* ci, const double* va,
                              double* inv, double* linv, int* flags) {
  const index_t I = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (I >= nodes) return;
  double a[kMaxBlockSize * kMaxBlockSize], w[kMaxBlockSize * kMaxBlockSize];
  for (int q = 0; q < b * b; ++q) a[q] = 0;
  for (int r = 0; r < b; ++r) {
    // The block's entries by bisection: coarse rows hold hundreds of entries, walked one load
    // after another they cost more than the inversion.
    const index_t i = I * b + r, end = rp[i + 1];
    const index_t first = rp[i] + lower_bound(ci + rp[i], end - rp[i], I * b);
    for (index_t k = first; k < end && ci[k] / b == I; ++k) a[r * b + ci[k] % b] = va[k];
  }
  bool coupled = false;
  for (int r = 0; r < b; ++r)
    for (int c = 0; c < b; ++c)
      if (c != r && fabs(a[r * b + c]) > kAmgNodeCoupling * sqrt(fabs(a[r * b + r] * a[c * b + c]))) coupled = true;
  if (coupled) atomicOr(flags + 1, 1);
  double pivot = 0;
  if (detail::invert_spd_block(b, a, w, &pivot) != 0) {
    atomicMin(flags, int(I));
    return;
  }
  const std::size_t at = std::size_t(I) * std::size_t(b) * std::size_t(b);
  for (int r = 0; r < b; ++r)
    for (int c = 0; c < b; ++c) {
      inv[at + std::size_t(r * b + c)] = w[r * b + c];
      linv[at + std::size_t(r * b + c)] = c <= r ? a[r * b + c] : 0.0;  // L⁻¹, left in a's lower triangle
    }
}

/// Aᵀ by a stable sort of the entries by column: rows of the result come out sorted. perm_out:
/// receives the permutation (entry p of Aᵀ is entry perm[p] of A), for numeric re-set-ups. A.va
/// null: the pattern alone (T.va null).
DCsr transpose(const DCsr& A, DeviceArray<index_t>* perm_out = nullptr) {
  DCsr T;
  T.rows = A.cols;
  T.cols = A.rows;
  T.nnz = A.nnz;
  T.rp_own = DeviceArray<index_t>(std::size_t(T.rows) + 1);
  T.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(A.nnz, 1)));
  if (A.va) T.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(A.nnz, 1)));
  T.own();
  DeviceArray<int> count(std::size_t(std::max<index_t>(T.rows, 1)));
  count.zero();
  if (A.nnz > 0) {
    DeviceArray<index_t> rows(static_cast<std::size_t>(A.nnz)), iota(static_cast<std::size_t>(A.nnz)), keys(static_cast<std::size_t>(A.nnz)),
        perm(static_cast<std::size_t>(A.nnz));
    k_entry_rows<<<blocks_for(A.rows), kThreads>>>(A.rows, A.rp, rows.data());
    check_launch("k_entry_rows");
    k_iota<<<blocks_for(A.nnz), kThreads>>>(A.nnz, iota.data());
    check_launch("k_iota");
    sort_pairs(A.nnz, A.ci, keys.data(), iota.data(), perm.data(), bits_for(A.cols));
    k_gather_transpose<<<blocks_for(A.nnz), kThreads>>>(A.nnz, perm.data(), rows.data(), A.va, T.ci_own.data(),
                                                        T.va_own.data());
    check_launch("k_gather_transpose");
    k_column_counts<<<blocks_for(A.nnz), kThreads>>>(A.nnz, A.ci, count.data());
    check_launch("k_column_counts");
    if (perm_out) *perm_out = std::move(perm);
  }
  static_assert(sizeof(int) == sizeof(index_t), "index_t is int32");
  exclusive_scan(reinterpret_cast<const index_t*>(count.data()), T.rp_own.data(), T.rows);
  return T;
}

/// The row offsets of a product from its row lengths (exclusive_scan's), the total summed in 64
/// bits so that a product too large for index_t is refused instead of wrapping. One
/// synchronisation, for the total.
index_t product_scan(const index_t* counts, index_t* rp, index_t n) {
  const std::int64_t t = exclusive_scan64(counts, rp, n);
  KRYSP_REQUIRE(t <= kMaxNnz, "AMG: a sparse product has ", t, " nonzeros, more than index_t (32-bit) holds");
  return index_t(t);
}

/// The structure of A·B (B's rows sorted) with storage for its values: spgemm_symbolic_count, a
/// scan, spgemm_symbolic_fill (amg_galerkin.hpp: each row's distinct columns, sorted; the
/// structural product; with B = P_tent, P = S·P_tent's structure), timed as `name`: symbolic
/// count and symbolic fill. `values` false: no storage for them (fill_product allocates it).
DCsr symbolic_product(const DCsr& A, const DCsr& B, PhaseClock& pc, int level, const char* name,
                      bool values = true) {
  KRYSP_REQUIRE(A.cols == B.rows, "AMG: sparse product of ", A.rows, "x", A.cols, " and ", B.rows, "x", B.cols);
  DCsr C;
  C.rows = A.rows;
  C.cols = B.cols;
  C.rp_own = DeviceArray<index_t>(std::size_t(C.rows) + 1);
  {
    DeviceArray<index_t> counts(std::size_t(std::max<index_t>(C.rows, 1)));
    spgemm_symbolic_count(A.rows, A.rp, A.ci, A.nnz, B.rp, B.ci, B.cols, counts.data());
    C.nnz = product_scan(counts.data(), C.rp_own.data(), C.rows);
  }
  pc.mark(level, std::string(name) + ": symbolic count");
  C.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(C.nnz, 1)));
  if (values) C.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(C.nnz, 1)));
  C.own();
  spgemm_symbolic_fill(A.rows, A.rp, A.ci, A.nnz, B.rp, B.ci, B.cols, C.rp, C.ci_own.data());
  pc.mark(level, std::string(name) + ": symbolic fill");
  return C;
}

/// (A + B)/2 over the union of the patterns (A, B: same shape, sorted rows). With b_perm (B = Aᵀ
/// and its transpose permutation): map_a, map_b receive the gather maps (k_union_fill).
DCsr half_sum(const DCsr& A, const DCsr& B, const index_t* b_perm = nullptr, DeviceArray<index_t>* map_a = nullptr,
              DeviceArray<index_t>* map_b = nullptr) {
  DCsr C;
  C.rows = A.rows;
  C.cols = A.cols;
  C.rp_own = DeviceArray<index_t>(std::size_t(C.rows) + 1);
  DeviceArray<index_t> count(std::size_t(std::max<index_t>(C.rows, 1)));
  k_union_count<<<blocks_for(C.rows), kThreads>>>(C.rows, A.rp, A.ci, B.rp, B.ci, count.data());
  check_launch("k_union_count");
  C.nnz = exclusive_scan(count.data(), C.rp_own.data(), C.rows);
  C.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(C.nnz, 1)));
  C.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(C.nnz, 1)));
  C.own();
  if (map_a) {
    *map_a = DeviceArray<index_t>(std::size_t(std::max<index_t>(C.nnz, 1)));
    *map_b = DeviceArray<index_t>(std::size_t(std::max<index_t>(C.nnz, 1)));
  }
  k_union_fill<<<blocks_for(C.rows), kThreads>>>(C.rows, A.rp, A.ci, A.va, B.rp, B.ci, B.va, C.rp, C.ci_own.data(),
                                                 C.va_own.data(), map_a ? b_perm : nullptr,
                                                 map_a ? map_a->data() : nullptr, map_b ? map_b->data() : nullptr);
  check_launch("k_union_fill");
  return C;
}

/// (M + Mᵀ)/2 when M's pattern is symmetric (the usual case: R = Pᵀ and A's pattern symmetric):
/// the pattern is M's, and the transpose map comes by a search per entry instead of a sort.
/// The values are k_union_fill's operations (0 + ½·m_o, then + ½·m_o'), so bitwise what
/// half_sum(M, Mᵀ) gives. False, with nothing built, when the pattern is not symmetric.
bool symmetric_half_sum(const DCsr& M, DCsr& C, DeviceArray<index_t>& map_a, DeviceArray<index_t>& map_b) {
  const std::size_t nz = std::size_t(std::max<index_t>(M.nnz, 1));
  DeviceArray<index_t> rows(nz), a(nz), b(nz);
  DeviceArray<int> asym(1);
  asym.zero();
  if (M.nnz > 0) {
    k_entry_rows<<<blocks_for(M.rows), kThreads>>>(M.rows, M.rp, rows.data());
    check_launch("k_entry_rows");
    k_symmetric_maps<<<blocks_for(M.nnz), kThreads>>>(M.nnz, rows.data(), M.rp, M.ci, a.data(), b.data(), asym.data());
    check_launch("k_symmetric_maps");
  }
  if (download_int(asym.data()) != 0) return false;
  C.rows = M.rows;
  C.cols = M.cols;
  C.nnz = M.nnz;
  C.rp_own = DeviceArray<index_t>(std::size_t(M.rows) + 1);
  C.ci_own = DeviceArray<index_t>(nz);
  C.va_own = DeviceArray<double>(nz);
  C.own();
  copy_device_to_device(C.rp_own.data(), M.rp, (std::size_t(M.rows) + 1) * sizeof(index_t));
  if (M.nnz > 0) {
    copy_device_to_device(C.ci_own.data(), M.ci, std::size_t(M.nnz) * sizeof(index_t));
    k_half_sum_gather<<<blocks_for(M.nnz), kThreads>>>(M.nnz, a.data(), b.data(), M.va, C.va_own.data());
    check_launch("k_half_sum_gather");
  }
  map_a = std::move(a);
  map_b = std::move(b);
  return true;
}

/// A device copy of M's arrays.
DCsr copy_of(const DCsr& M) {
  DCsr C;
  C.rows = M.rows;
  C.cols = M.cols;
  C.nnz = M.nnz;
  C.rp_own = DeviceArray<index_t>(std::size_t(M.rows) + 1);
  C.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(M.nnz, 1)));
  C.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(M.nnz, 1)));
  copy_device_to_device(C.rp_own.data(), M.rp, (std::size_t(M.rows) + 1) * sizeof(index_t));
  if (M.nnz > 0) {
    copy_device_to_device(C.ci_own.data(), M.ci, std::size_t(M.nnz) * sizeof(index_t));
    copy_device_to_device(C.va_own.data(), M.va, std::size_t(M.nnz) * sizeof(double));
  }
  C.own();
  return C;
}

/// A view of M's arrays (M keeps them).
DCsr view_of(const DCsr& M) {
  DCsr V;
  V.rows = M.rows;
  V.cols = M.cols;
  V.nnz = M.nnz;
  V.rp = M.rp;
  V.ci = M.ci;
  V.va = M.va;
  return V;
}

/// A product's kept structure (not owned) with fresh storage for its values.
DCsr with_structure(index_t rows, index_t cols, index_t nnz, const index_t* rp, const index_t* ci) {
  DCsr C;
  C.rows = rows;
  C.cols = cols;
  C.nnz = nnz;
  C.rp = rp;
  C.ci = ci;
  C.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(nnz, 1)));
  C.va = C.va_own.data();
  return C;
}

/// C's values = A·B into C's structure (spgemm_numeric: fixed order, so a re-set-up fills what a
/// fresh set-up does, bitwise), timed as `name`: numeric. Allocates C's values where it has none.
void fill_product(const DCsr& A, const DCsr& B, DCsr& C, PhaseClock& pc, int level, const char* name) {
  if (!C.va) {
    C.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(C.nnz, 1)));
    C.va = C.va_own.data();
  }
  KRYSP_REQUIRE(A.cols == B.rows && C.rows == A.rows && C.cols == B.cols && C.va == C.va_own.data(),
                "AMG: numeric product of ", A.rows, "x", A.cols, " and ", B.rows, "x", B.cols, " into ", C.rows, "x",
                C.cols);
  spgemm_numeric(C.rows, A.rp, A.ci, A.va, B.rows, B.nnz, B.rp, B.ci, B.va, C.rp, C.ci, C.nnz, C.va_own.data());
  pc.mark(level, std::string(name) + ": numeric");
}

BlockProducts g_block_products = BlockProducts::Auto;

/// Whether a level of b unknowns a node and K near-nullspace vectors may take its products in
/// blocks (not Never; b and K from 2 to kBlockProductMaxDim).
bool block_products_allowed(int b, int K) {
  return g_block_products != BlockProducts::Never && b >= 2 && K >= 2 && b <= kBlockProductMaxDim &&
         K <= kBlockProductMaxDim;
}

/// Whether a level is looked at for full blocks of P (which then take the products in blocks),
/// given A·P's terms and whether a finer level took the blocks (kBlockExpansionMinTerms).
bool block_expansion_applies(int b, int K, double ap_terms, bool finer_in_blocks) {
  return block_products_allowed(b, K) && (g_block_products == BlockProducts::Always || finer_in_blocks ||
                                          ap_terms >= kBlockExpansionMinTerms);
}

/// Whether a level whose P's blocks have holes takes its products in blocks all the same, given
/// their estimated scalar terms (kBlockProductMinTerms).
bool block_products_apply(int b, int K, double terms) {
  return block_products_allowed(b, K) &&
         (g_block_products == BlockProducts::Always || terms >= kBlockProductMinTerms);
}

}  // namespace

/// What a re-set-up keeps to form A·P and R·(A·P) in blocks: the maps of A, P and R·(A·P) into
/// their dense blocks (patterns of b×b, b×K and K×K blocks), R's blocks as P's transposed, and
/// the pair lists of the two products.
struct BlockedProducts {
  bool on = false;
  BlockPattern a, p, rap;     ///< maps and block counts (the patterns' rp, ci released)
  BlockPattern r;             ///< R = Pᵀ's block counts (no map: its blocks are P's, transposed)
  DeviceArray<index_t> perm;  ///< R's block q is P's block perm[q]
  std::size_t ap_values = 0;  ///< entries of A·P's dense blocks
  BlockPairs ap, rap_pairs;
  std::size_t bytes() const {
    return a.bytes() + p.bytes() + r.bytes() + rap.bytes() + perm.size() * sizeof(index_t) + ap.bytes() +
           rap_pairs.bytes();
  }
};

namespace {

/// The block patterns and pairs of A·P and R·(A·P) from the level's structures (b unknowns a node,
/// K vectors; R = Pᵀ; p: P's block pattern, without map). RAP: R·(A·P)'s scalar structure (the
/// symbolic products'), or with `expand` (P's blocks full) made here as its block pattern's
/// expansion (block_expand), values' storage included, so that the level needs no scalar symbolic
/// product. `on` false (RAP untouched) when a dense array, a pattern or the pairs would be too
/// large for index_t offsets: the level keeps the scalar products.
BlockedProducts blocked_products(BlockPattern p, const DCsr& A, const DCsr& P, DCsr& RAP, bool expand, int b, int K,
                                 PhaseClock& pc, int level) {
  BlockedProducts out;
  DeviceArray<int> missing(1);  // one check for the level's maps and pairs (by construction, none)
  missing.zero();
  BlockPattern a = block_pattern(A.rows, A.cols, A.nnz, A.rp, A.ci, b, b, false);
  add_block_map(a, A.rows, A.nnz, A.rp, A.ci, missing.data());
  add_block_map(p, P.rows, P.nnz, P.rp, P.ci, missing.data());
  pc.mark(level, "blocks: patterns of A, P");
  // R's pattern: P's transposed (a sort of P's blocks, not of its entries).
  BlockPattern r;
  {
    DCsr pb;  // the pattern alone
    pb.rows = p.block_rows;
    pb.cols = p.block_cols;
    pb.nnz = p.blocks;
    pb.rp = p.rp.data();
    pb.ci = p.ci.data();
    DCsr rb = transpose(pb, &out.perm);
    r.br = K;
    r.bc = b;
    r.block_rows = p.block_cols;
    r.block_cols = p.block_rows;
    r.blocks = p.blocks;
    r.fits = p.fits;
    r.rp = std::move(rb.rp_own);
    r.ci = std::move(rb.ci_own);
  }
  // The products' patterns from the blocks' (cheaper than from the scalar products' patterns,
  // and holding them): A·P's values stay in blocks, R·(A·P)'s are scattered through its map.
  if (!(a.fits && p.fits)) return out;  // too large for index_t offsets: the scalar products
  const BlockPattern ap = block_product_pattern(a, p);
  if (!ap.fits) return out;
  BlockPattern rap = block_product_pattern(r, ap);
  if (!rap.fits) return out;
  DCsr expanded;
  if (expand) {
    expanded.rows = expanded.cols = rap.block_rows * K;
    expanded.nnz = block_expand(rap, expanded.rp_own, expanded.ci_own);
    expanded.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(expanded.nnz, 1)));
    expanded.own();
  } else {
    add_block_map(rap, RAP.rows, RAP.nnz, RAP.rp, RAP.ci, missing.data());
  }
  pc.mark(level, expand ? "blocks: patterns of R, A*P, R*(AP), whose expansion is R*(AP)'s"
                        : "blocks: patterns of R, A*P, R*(AP)");
  out.ap = block_pairs(a, p, ap, missing.data());
  pc.mark(level, "blocks: pairs of A*P");
  if (!out.ap.fits) return out;
  out.rap_pairs = block_pairs(r, ap, rap, missing.data());
  pc.mark(level, "blocks: pairs of R*(AP)");
  if (!out.rap_pairs.fits) return out;
  KRYSP_REQUIRE(download_int(missing.data()) == 0, "AMG: level ", level,
                "'s block patterns lack blocks of its products");
  out.ap_values = ap.values();
  for (BlockPattern* m : {&a, &p, &r, &rap}) {  // only the maps and counts are read from here on
    m->rp = DeviceArray<index_t>();
    m->ci = DeviceArray<index_t>();
  }
  out.a = std::move(a);
  out.p = std::move(p);
  out.r = std::move(r);
  out.rap = std::move(rap);
  out.on = true;
  if (expand) RAP = std::move(expanded);
  return out;
}

/// RAP's values = R·(A·P) through the blocks: A and P gathered, A·P in blocks, R's blocks as P's
/// transposed, the product in blocks scattered into RAP's structure.
void fill_blocked_products(const BlockedProducts& bp, const DCsr& A, const DCsr& P, DCsr& RAP) {
  DeviceArray<double> ap(std::max<std::size_t>(bp.ap_values, 1)), r(std::max<std::size_t>(bp.r.values(), 1));
  {
    DeviceArray<double> a(std::max<std::size_t>(bp.a.values(), 1)), p(std::max<std::size_t>(bp.p.values(), 1));
    block_gather(bp.a, A.nnz, A.va, a.data());
    block_gather(bp.p, P.nnz, P.va, p.data());
    block_multiply(bp.ap, a.data(), p.data(), ap.data());
    block_transpose(bp.r, bp.perm.data(), p.data(), r.data());
  }
  DeviceArray<double> rap(std::max<std::size_t>(bp.rap.values(), 1));
  block_multiply(bp.rap_pairs, r.data(), ap.data(), rap.data());
  block_scatter(bp.rap, RAP.nnz, rap.data(), RAP.va_own.data());
}

}  // namespace

void set_block_products(BlockProducts mode) { g_block_products = mode; }

/// What a numeric re-set-up keeps (amg_device_setup.hpp).
struct GpuAmgPlan {
  struct Level {
    bool next = false;     ///< a coarser level follows
    index_t aggregates = 0;
    index_t isolated = 0;
    double theta = 0;      ///< the θ it aggregated at
    bool retried = false;  ///< aggregated again at θ·kAmgThetaRetry (amg::retry_aggregation)
    DCsr tent;             ///< P_tent (when next)
    // The structure work a numeric re-set-up skips (same structure of A, same aggregates, so the
    // same patterns: the products' values are filled into them by spgemm_numeric):
    DeviceArray<index_t> ap_rp, ap_ci, rap_rp, rap_ci;  ///< the patterns of A·P and R·(A·P)
    index_t ap_nnz = 0, rap_nnz = 0;
    /// P's structure in the hierarchy this plan came from (with prolongator smoothing).
    const index_t *p_rp = nullptr, *p_ci = nullptr;
    index_t p_nnz = 0;
    DeviceArray<index_t> r_perm;             ///< R = Pᵀ: entry k of R is entry r_perm[k] of P
    DeviceArray<index_t> sym_a, sym_b;       ///< Aᶜ = (RAP + RAPᵀ)/2 as a gather from RAP
    /// The structures of R and of Aᶜ (the next level's A) in the hierarchy this plan came from,
    /// which the plan's user keeps alive (DeviceAmg does): a re-set-up reads them, not copies.
    const index_t *r_rp = nullptr, *r_ci = nullptr, *ac_rp = nullptr, *ac_ci = nullptr;
    index_t ac_nnz = 0;
    /// With the filter (AmgOptions::filter on): A_l's entries that A_F keeps (empty when it keeps
    /// them all), and the next level's near-nullspace (the aggregates' norms), which the next
    /// level's lumping reads.
    DeviceArray<std::uint8_t> filter_keep;
    DeviceArray<double> coarse_b;
    /// With filter_keep: A_F's structure (a re-set-up fills only its values).
    DeviceArray<index_t> af_rp, af_ci;
    index_t af_nnz = 0;
    /// K > 1, when Aᶜ had rows of zeros (amg::unit_diagonal_on_empty_rows): the symmetrisation's
    /// structure (ac_rp, ac_ci point into it), the final one with the unit diagonals (the next
    /// level's A, kept alive by the plan's user), and for each of its entries the position in the
    /// first, or −1 for a unit diagonal. Empty otherwise.
    DeviceArray<index_t> pre_unit_rp, pre_unit_ci, unit_map;
    const index_t *unit_rp = nullptr, *unit_ci = nullptr;
    index_t unit_nnz = 0;
    /// A·P and R·(A·P) in blocks (blocked_products; `on` false: by spgemm_numeric). A re-set-up
    /// then keeps no structure of A·P (ap_rp, ap_ci empty).
    BlockedProducts blocked;
  };
  std::vector<Level> levels;
  std::string stop_reason;
  bool stalled = false;
  /// Per level, the largest Ritz vector of D^{-1/2}·A_l·D^{-1/2} of the full set-up's Lanczos run
  /// (float; empty where it was not recorded): a re-set-up's warm start.
  std::vector<DeviceArray<float>> ritz;
  std::vector<double> ritz_lambda;  ///< the λ estimate of each of them
  /// The same for the node-block smoother's L⁻¹·A_l·L⁻ᵀ (empty where a level smooths by points).
  std::vector<DeviceArray<float>> block_ritz;
  std::vector<double> block_ritz_lambda;
  /// What the aggregates and patterns were decided from: A's structure and the options that shape
  /// them (θ, the level and size limits, b and K, the filter, a smoothed or a tentative P). A
  /// re-set-up under others would reuse structures that are not theirs: gpu_amg_setup refuses it.
  struct Shape {
    StructureFingerprint structure;
    double theta = 0;
    int max_levels = 0;
    index_t coarse_size = 0, dense_coarse_rows = 0;
    int b = 0, K = 0;
    AmgFilter filter = AmgFilter::Off;
    bool smoothed = false;
    bool operator==(const Shape& s) const {
      return structure == s.structure && theta == s.theta && max_levels == s.max_levels &&
             coarse_size == s.coarse_size && dense_coarse_rows == s.dense_coarse_rows && b == s.b && K == s.K &&
             filter == s.filter && smoothed == s.smoothed;
    }
    std::string to_string() const {
      return concat("theta ", theta, ", max_levels ", max_levels, ", coarse_size ", coarse_size, ", dense_coarse_rows ",
                    dense_coarse_rows, ", b ", b, ", K ", K,
                    ", filter ", krysp::to_string(filter), smoothed ? ", smoothed P" : ", tentative P", ", structure ",
                    structure.to_string());
    }
  } shape;
};

/// amg_device_setup.hpp. Recorded by the first full set-up given it empty, read by the next.
struct GpuLevel0Seed {
  bool recorded = false;
  int uses = 0;  ///< the pieces taken so far
  // What it was recorded for: A's arrays (the same object's, within one DeviceAmg) and b.
  const void* values = nullptr;
  index_t rows = 0, nnz = 0;
  int b = 0;
  bool lanczos_ran = false;
  LanczosResult lanczos;  ///< of D^{-1/2}·A·D^{-1/2}
  DeviceArray<float> ritz;
  struct Aggregation {
    double theta = 0;
    index_t count = 0, isolated = 0;
    DeviceArray<index_t> of_node;
  };
  std::vector<Aggregation> aggregations;  ///< in the order they ran (a retry's after the first)
  bool node_blocks_ran = false;
  bool coupled = false;         ///< the node blocks couple their unknowns (else point smoothing)
  LanczosResult block_lanczos;  ///< of L⁻¹·A·L⁻ᵀ, when coupled
  DeviceArray<float> block_ritz;
  DeviceArray<double> binv;  ///< the node blocks' inverses, when coupled
  bool matches(const void* v, index_t r, index_t z, int bl) const {
    return recorded && values == v && rows == r && nnz == z && b == bl;
  }
};

std::shared_ptr<GpuLevel0Seed> make_level0_seed() { return std::make_shared<GpuLevel0Seed>(); }
int level0_seed_uses(const GpuLevel0Seed& seed) { return seed.uses; }

namespace {

template <class T>
DeviceArray<T> device_copy(const DeviceArray<T>& x) {
  if (x.size() == 0) return DeviceArray<T>();
  DeviceArray<T> out(x.size());
  out.copy_from(x);
  return out;
}

/// The V-cycle's copy of a double device CSR in T: for double, its arrays taken over. A structure
/// M does not own (kept by a plan) is copied when copy_structure, else left out (values only).
template <class T>
DeviceCsrArrays<T> level_copy(DCsr&& M, bool copy_structure) {
  DeviceCsrArrays<T> out;
  out.rows = M.rows;
  out.cols = M.cols;
  out.nnz = M.nnz;
  if (M.rp_own.size() > 0) {
    out.row_ptr = std::move(M.rp_own);
    out.col_idx = std::move(M.ci_own);
  } else if (copy_structure) {  // a re-set-up's structure is the kept one: its own copy
    out.row_ptr = DeviceArray<index_t>(std::size_t(M.rows) + 1);
    out.col_idx = DeviceArray<index_t>(std::size_t(std::max<index_t>(M.nnz, 1)));
    copy_device_to_device(out.row_ptr.data(), M.rp, (std::size_t(M.rows) + 1) * sizeof(index_t));
    if (M.nnz > 0) copy_device_to_device(out.col_idx.data(), M.ci, std::size_t(M.nnz) * sizeof(index_t));
  }  // else values only: a re-set-up that copies them into matrices made before
  if constexpr (std::is_same_v<T, double>) {
    out.values = std::move(M.va_own);
  } else {
    out.values = DeviceArray<T>(std::size_t(std::max<index_t>(M.nnz, 1)));
    k_convert<double, T><<<blocks_for(M.nnz), kThreads>>>(M.nnz, M.va_own.data(), out.values.data());
    check_launch("k_convert");
    M.va_own = DeviceArray<double>();
  }
  M.rp = nullptr;
  M.ci = nullptr;
  M.va = nullptr;
  return out;
}

/// A device-borrowed CsrMatrix over arrays the hierarchy owns (krysp alone writes them).
template <class T>
CsrMatrix<T> borrow(DeviceCsrArrays<T>& a) {
  // Built here, sorted and in range by construction: no O(nnz) host check of the structure.
  CsrMatrix<T> M = detail::CsrTrustedBorrow::from_device_pointers(a.rows, a.cols, a.nnz, a.row_ptr.data(),
                                                                   a.col_idx.data(), a.values.data());
  M.promise_notify();
  return M;
}

template <class T>
DeviceArray<T> to_t(const DeviceArray<double>& x, index_t n) {
  DeviceArray<T> out(std::size_t(std::max<index_t>(n, 1)));
  k_convert<double, T><<<blocks_for(n), kThreads>>>(n, x.data(), out.data());
  check_launch("k_convert");
  return out;
}

}  // namespace

template <class T>
bool gpu_amg_setup_applies(const CsrMatrix<T>&, const AmgOptions& o) {
  // Any block size and the rigid-body modes (amg_block_setup.hpp); the greedy passes decide one
  // node after another and stay on the host.
  return o.aggregation == AmgAggregation::Mis2;
}

template <class T>
GpuAmgHierarchy<T> gpu_amg_setup(const CsrMatrix<T>& A, const AmgOptions& given, bool keep_aggregates,
                                 std::shared_ptr<const GpuAmgPlan> reuse, bool make_matrices, bool warm_lanczos,
                                 AmgCoarseSolver* coarse, const AmgAutoChoice* choice, double max_complexity,
                                 GpuLevel0Seed* seed) {
  const auto t0 = Clock::now();
  GpuAmgHierarchy<T> H;
  AmgInfo& info = H.info;
  PhaseClock pc(given.profile_setup, &info.setup_phases);
  {
    PrecondOptions po;
    po.kind = PrecondKind::Amg;
    po.amg = given;
    validate(po);
  }
  // θ and the degree at kAmgAuto chosen as HostAmg chooses them (the levels below take numbers:
  // a θ of −1 would make every connection strong). DeviceAmg passes the options it resolved:
  // explicit values are kept and nothing is counted.
  const AmgOptions o = amg::resolve_auto(A, given, &info.auto_choice, true);
  if (choice) {  // `given` was resolved by the caller: its choice decides the retries below
    info.auto_choice = *choice;
    info.auto_choice.theta_retries = 0;
  }
  KRYSP_REQUIRE(A.rows() == A.cols(), "AMG: matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(gpu_amg_setup_applies(A, o), "AMG: the GPU set-up takes the mis2 aggregation only");
  auto plan = std::make_shared<GpuAmgPlan>();  // what this set-up decides (a full one)
  const index_t n0 = A.rows();
  // Unknowns per node (amg::node_block_size) and the near-nullspace's K vectors, as
  // HostAmg::set_up decides them: the constant (b = 1), the b unit vectors of each node, or the
  // rigid-body modes of the coordinates (K = 6 in 3-D, 3 in 2-D), or the vectors given. K > 1
  // takes the block pieces (amg_block_setup.hpp).
  const int b = amg::node_block_size(A, o);
  const int K = amg::near_nullspace_size(o, b);
  KRYSP_REQUIRE(o.filter != AmgFilter::On || K == 1, "AMG: amg.filter on needs one unknown per node and no "
                "coordinates (its lumping keeps a single near-nullspace vector); here b = ", b,
                o.coordinates.empty() ? "" : " with coordinates");
  // Each aggregate's QR (the block pieces) for K > 1 and for any vectors given: a given vector
  // may vanish on an aggregate, which the QR turns into a zero column as the host does.
  const bool explicit_b = !o.coordinates.empty() || !o.near_nullspace.empty();
  const bool per_aggregate_qr = K > 1 || explicit_b;
  // A numeric re-set-up keeps P_tent and the coarse near-nullspace; only the filter's lumping reads
  // level 0's again. So it does not make and upload the rigid-body modes or given vectors (n × K
  // values, made on the host).
  const bool level0_b = !reuse || o.filter == AmgFilter::On;
  const std::vector<double> B0 = explicit_b && level0_b ? amg::explicit_near_nullspace(o, n0) : std::vector<double>{};
  int bl = b;  // unknowns per node on the current level: b on A, K on the coarse levels
  // Level 0's near-nullspace-free work: taken from a seed recorded for this A and b, or recorded.
  const GpuLevel0Seed* from_seed = nullptr;
  GpuLevel0Seed* to_seed = nullptr;
  if (seed && !reuse) {
    if (seed->matches(A.device_view().values, n0, A.nnz(), b)) {
      from_seed = seed;
    } else if (!seed->recorded) {
      to_seed = seed;
      *seed = GpuLevel0Seed{};
      seed->recorded = true;
      seed->values = A.device_view().values;
      seed->rows = n0;
      seed->nnz = A.nnz();
      seed->b = b;
    }
  }
  plan->shape = {A.fingerprint(), o.theta, o.max_levels, o.coarse_size, o.dense_coarse_rows, b, K, o.filter,
                 o.prolongation_weight > 0};
  KRYSP_REQUIRE(!reuse || reuse->shape == plan->shape, "AMG: a numeric re-set-up for ", plan->shape.to_string(),
                " was given the plan of a set-up for ", reuse->shape.to_string(),
                ": the aggregates and patterns are not theirs; set up again");

  // Level 0 in double: A's own device arrays, its values converted for T = float.
  const CsrView<T> dA = A.device_view();
  DCsr Al;
  Al.rows = Al.cols = n0;
  Al.nnz = A.nnz();
  Al.rp = dA.row_ptr;
  Al.ci = dA.col_idx;
  if constexpr (std::is_same_v<T, double>) {
    Al.va = dA.values;
  } else {
    Al.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(Al.nnz, 1)));
    k_convert<T, double><<<blocks_for(Al.nnz), kThreads>>>(Al.nnz, dA.values, Al.va_own.data());
    check_launch("k_convert");
    Al.va = Al.va_own.data();
  }
  // The near-nullspace on the current level (rows × K row-major: the constant on A, or the unit
  // vectors, or the rigid-body modes or given vectors from the host; the coarse near-nullspace below).
  DeviceArray<double> B;
  if (level0_b) {
    if (!B0.empty()) {
      B = DeviceArray<double>(B0.size());
      B.upload(B0.data(), B0.size());
    } else if (K > 1) {
      B = block_unit_nullspace(n0, b);
    } else {
      B = DeviceArray<double>(std::size_t(std::max<index_t>(n0, 1)));
      k_fill<<<blocks_for(n0), kThreads>>>(n0, 1.0, B.data());
      check_launch("k_fill");
    }
  }
  pc.mark(-1, "start (checks, level 0 in double)");

  bool finer_in_blocks = false;  // a finer level of this set-up took its products in blocks
  for (std::size_t l = 0;; ++l) {
    const int lv = int(l);
    const index_t n = Al.rows;
    const index_t above = l > 0 ? info.levels[l - 1].rows : 0;
    const std::size_t N = std::size_t(std::max<index_t>(n, 1));
    const index_t nodes = n / bl;  // of the strength graph and the aggregates
    const std::size_t NN = std::size_t(std::max<index_t>(nodes, 1));
    DeviceArray<double> dinv(N), s(N), ratio(N), diag(N);
    DeviceArray<double> dl1(o.smoother == AmgSmoother::Chebyshev ? 0 : N);  // the l1-Jacobi smoother's only
    // check[0]: the Gershgorin bound; flags (ints, in check[1] and check[2]): k_diagonal's two,
    // then the MIS-2 rounds' count. One download reads the first two with the bound: each copy
    // to or from the host waits for the device.
    DeviceArray<double> check(3);
    int* flags = reinterpret_cast<int*>(check.data() + 1);
    double gershgorin = 0;
    int bad[2] = {0x7fffffff, 0x7fffffff};
    amg_init_flags(flags, 4, bad[0], bad[1]);
    if (n > 0) {
      DeviceArray<double> partials(std::size_t(partial_blocks(n)));
      with_lanes(fold_lanes(n, Al.nnz), [&](auto W) {
        k_diagonal<decltype(W)::value><<<blocks_for(std::int64_t(n) * W), kThreads>>>(
            n, Al.rp, Al.ci, Al.va, dinv.data(), dl1.size() > 0 ? dl1.data() : nullptr, s.data(), ratio.data(),
            diag.data(), flags);
      });
      check_launch("k_diagonal");
      k_max_partials<<<partial_blocks(n), kThreads>>>(n, ratio.data(), partials.data());
      check_launch("k_max_partials");
      k_finish<true><<<1, kThreads>>>(partial_blocks(n), partials.data(), check.data(), false);
      check_launch("k_finish");
      double h[2];
      copy_to_host(h, check.data(), sizeof h);
      gershgorin = h[0];
      std::memcpy(bad, h + 1, sizeof bad);
    }
    if (bad[0] != 0x7fffffff) {
      double d = 0;
      copy_to_host(&d, diag.data() + bad[0], sizeof d);
      if (l == 0) throw_bad_diagonal("AMG", "AMG needs a positive diagonal", index_t(bad[0]), d);
      KRYSP_THROW(InputError, "AMG: diagonal entry ", bad[0] + 1, " of the level-", l, " coarse matrix is ", d,
                  " (not positive): A is not symmetric positive definite");
    }
    KRYSP_REQUIRE(bad[1] == 0x7fffffff, "AMG: row ", bad[1] + 1, " of the level-", l,
                  " matrix has entries that are NaN or Inf");
    pc.mark(lv, "diagonals, Gershgorin bound");
    AmgLevelInfo li;
    li.rows = n;
    li.nnz = Al.nnz;
    li.block_size = bl;
    li.gershgorin = gershgorin;
    LanczosResult lr;
    // A coarsest level that is factored needs no λ (no smoother, no prolongator): known here when
    // the coarse size or the level limit ends the hierarchy (a stall is found later, and runs it).
    const bool direct_last = n <= kAmgMaxDenseRows &&
                             (reuse ? l < reuse->levels.size() && !reuse->levels[l].next
                                    : amg::coarsest_by_size(o, l, n, above) || int(l) + 1 >= o.max_levels);
    if (!direct_last) {
      // A re-set-up starts from the full set-up's Ritz vector of this level; a full set-up keeps
      // its own for the re-set-ups to come (GpuLevelLanczos).
      const float* warm = reuse && warm_lanczos && l < reuse->ritz.size() && reuse->ritz[l].size() == std::size_t(n) && n > 0
                              ? reuse->ritz[l].data()
                              : nullptr;
      const double old_lambda = warm ? reuse->ritz_lambda[l] : 0.0;
      DeviceArray<float> ritz;
      if (l == 0 && from_seed && from_seed->lanczos_ran) {
        lr = from_seed->lanczos;
        ritz = device_copy(from_seed->ritz);
        ++seed->uses;
      } else {
        GpuLevelLanczos lanczos(Al, s.data(), warm, old_lambda, !reuse);
        lr = lanczos_largest(lanczos, n, kLanczosSteps, std::numeric_limits<double>::infinity(), kAmgLanczosSettleTol);
        if (!reuse) ritz = lanczos.ritz_vector(std::min(lr.steps, kAmgLanczosRecordSteps));
        if (l == 0 && to_seed) {
          to_seed->lanczos_ran = true;
          to_seed->lanczos = lr;
          to_seed->ritz = device_copy(ritz);
        }
      }
      if (!reuse) {
        plan->ritz.resize(l + 1);
        plan->ritz_lambda.resize(l + 1, 0.0);
        plan->ritz[l] = std::move(ritz);
        plan->ritz_lambda[l] = lr.theta;
      }
    }
    pc.mark(lv, "Lanczos lambda_max");
    KRYSP_REQUIRE(direct_last || (std::isfinite(lr.theta) && (n == 0 || lr.theta > 0)), "AMG: the estimate of lambda_max(D^-1 A) on level ",
                  l, " is ", lr.theta, ": A is not symmetric positive definite or has NaN/Inf entries");
    li.lambda_estimate = lr.theta;
    li.lanczos_steps = lr.steps;
    const double rho = std::min(lr.theta, gershgorin);

    bool last = false;
    bool retried = false;  // this level aggregated again (amg::retry_aggregation)
    index_t count = 0;
    DeviceArray<index_t> agg;
    const GpuAmgPlan::Level* kept = nullptr;
    if (reuse) {
      KRYSP_REQUIRE(l < reuse->levels.size(), "AMG: the numeric re-set-up has no plan for level ", l);
      kept = &reuse->levels[l];
      last = !kept->next;
      li.isolated = kept->isolated;
      li.theta = last ? 0 : kept->theta;
      if (kept->retried) ++info.auto_choice.theta_retries;  // the summary says so after a re-set-up too
      if (!last) li.aggregates = count = kept->aggregates;
    } else if (amg::coarsest_by_size(o, l, n, above)) {
      last = true;
      info.stop_reason = amg::coarsest_by_size_reason(o, l, n, above);
    } else if (int(l) + 1 >= o.max_levels) {
      last = true;
      info.stop_reason = concat("max_levels (", o.max_levels, ") reached at ", n, " rows");
    } else {
      li.theta = o.theta * std::pow(kAmgThetaDecay, double(l));
      retried = false;
      // At most twice: again at θ·kAmgThetaRetry when the first aggregation coarsens slowly
      // (amg::retry_aggregation, as the host set-up).
      for (int attempt = 0;; ++attempt) {
        // Level 0 at a θ the seed aggregated at: its aggregates (the same graph, the same rounds).
        const GpuLevel0Seed::Aggregation* seeded = nullptr;
        if (l == 0 && from_seed)
          for (const GpuLevel0Seed::Aggregation& a : from_seed->aggregations)
            if (a.theta == li.theta) seeded = &a;
        if (seeded) {
          count = seeded->count;
          li.isolated = seeded->isolated;
          agg = device_copy(seeded->of_node);
          ++seed->uses;
        } else {
          if (attempt > 0) KRYSP_CUDA_CHECK(cudaMemset(flags + 2, 0, sizeof(int)));  // k_mis_init's count
          // Strength graph, on nodes of bl unknowns (bl > 1: amg_block_setup.hpp, the host's
          // amg::strength_graph on b×b blocks; the MIS-2 rounds below take any graph).
          DeviceArray<index_t> grp, gci;
          if (bl > 1) {
            block_strength_graph(n, bl, Al.rp, Al.ci, Al.va, li.theta, grp, gci);
          } else {
            DeviceArray<double> dm(N);
            k_node_magnitude<<<blocks_for(n), kThreads>>>(n, diag.data(), dm.data());
            check_launch("k_node_magnitude");
            DeviceArray<index_t> gcount(N);
            grp = DeviceArray<index_t>(N + 1);
            const int lanes = fold_lanes(n, Al.nnz);
            with_lanes(lanes, [&](auto W) {
              k_strength_count<decltype(W)::value><<<blocks_for(std::int64_t(n) * W), kThreads>>>(
                  n, Al.rp, Al.ci, Al.va, dm.data(), li.theta, gcount.data());
            });
            check_launch("k_strength_count");
            const index_t gnnz = exclusive_scan(gcount.data(), grp.data(), n);
            gci = DeviceArray<index_t>(std::size_t(std::max<index_t>(gnnz, 1)));
            with_lanes(lanes, [&](auto W) {
              k_strength_fill<decltype(W)::value><<<blocks_for(std::int64_t(n) * W), kThreads>>>(
                  n, Al.rp, Al.ci, Al.va, dm.data(), li.theta, grp.data(), gci.data());
            });
            check_launch("k_strength_fill");
          }
          pc.mark(lv, "strength graph");
          // MIS-2 rounds until no node is undecided.
          DeviceArray<std::uint64_t> keys(NN), k1(NN), k2(NN);
          k_mis_init<<<blocks_for(nodes), kThreads>>>(nodes, grp.data(), keys.data(), flags + 2);
          check_launch("k_mis_init");
          for (int round = 0;; ++round) {
            // Each round decides a node at least.
            KRYSP_REQUIRE(round <= nodes, "AMG: the MIS-2 rounds did not finish");
            k_mis_max<<<blocks_for(nodes), kThreads>>>(nodes, grp.data(), gci.data(), keys.data(), k1.data());
            check_launch("k_mis_max");
            k_mis_max<<<blocks_for(nodes), kThreads>>>(nodes, grp.data(), gci.data(), k1.data(), k2.data());
            check_launch("k_mis_max");
            KRYSP_CUDA_CHECK(cudaMemset(flags + 3, 0, sizeof(int)));
            k_mis_decide<<<blocks_for(nodes), kThreads>>>(nodes, keys.data(), k2.data(), flags + 3);
            check_launch("k_mis_decide");
            const bool done = download_int(flags + 3) == 0;
            pc.mark(lv, "MIS-2 rounds");
            if (done) break;
          }
          li.isolated = index_t(download_int(flags + 2));
          // Aggregates: roots numbered in node order, then the joins, then any leftovers.
          DeviceArray<index_t> flag(NN), scan(NN + 1), agg1(NN), leftover(NN);
          agg = DeviceArray<index_t>(NN);
          k_root_flags<<<blocks_for(nodes), kThreads>>>(nodes, keys.data(), flag.data());
          check_launch("k_root_flags");
          count = exclusive_scan(flag.data(), scan.data(), nodes);
          k_root_numbers<<<blocks_for(nodes), kThreads>>>(nodes, keys.data(), scan.data(), agg1.data());
          check_launch("k_root_numbers");
          {
            // join_root reads the roots' numbers from a snapshot, so the writes below cannot race it.
            DeviceArray<index_t> roots(NN);
            roots.copy_from(agg1);
            k_join_root<<<blocks_for(nodes), kThreads>>>(nodes, grp.data(), gci.data(), keys.data(), roots.data(),
                                                         agg1.data());
            check_launch("k_join_root");
          }
          KRYSP_CUDA_CHECK(cudaMemset(flags + 3, 0, sizeof(int)));
          k_join_neighbour<<<blocks_for(nodes), kThreads>>>(nodes, grp.data(), gci.data(), agg1.data(), agg.data(),
                                                            flags + 3, leftover.data());
          check_launch("k_join_neighbour");
          const index_t left = exclusive_scan(leftover.data(), scan.data(), nodes);
          if (left > 0) {
            k_leftovers<<<blocks_for(nodes), kThreads>>>(nodes, leftover.data(), scan.data(), count, agg.data());
            check_launch("k_leftovers");
            count += left;
          }
          pc.mark(lv, "aggregates (roots, joins, leftovers)");
          if (l == 0 && to_seed) to_seed->aggregations.push_back({li.theta, count, li.isolated, device_copy(agg)});
        }
        if (attempt > 0 || !amg::retry_aggregation(info.auto_choice, n, count * K)) break;
        li.theta *= kAmgThetaRetry;
        ++info.auto_choice.theta_retries;
        retried = true;
      }
      const index_t nc = count * K;  // coarse unknowns: K a node (aggregate)
      if (nc == 0 || double(n) < kStallRatio * double(nc)) {
        last = true;
        info.stalled = true;
        info.stop_reason = concat("coarsening stalled at level ", l, ": ", n, " rows would become ", nc,
                                  " (shrinking by less than ", kStallRatio, "x)");
      } else {
        li.aggregates = count;
      }
    }

    GpuAmgLevel<T> L;
    L.n = n;
    if (o.smoother == AmgSmoother::Chebyshev) {
      const double lmax = lr.converged ? std::min(kAmgLambdaBoost * lr.theta, gershgorin) : gershgorin;
      L.coef = chebyshev_coefficients(lmax / o.smoother_ratio, lmax, o.smoother_degree);
      L.dinv = to_t<T>(dinv, n);
    } else {
      L.dinv = to_t<T>(dl1, n);
    }
    if ((!last || n > kAmgMaxDenseRows) && n > 0 && amg::node_block_smoothing(o, bl, n)) {
      // Chebyshev in D_b⁻¹A, as HostAmg: the node blocks' inverses, then their own Lanczos; point
      // smoothing where the blocks are diagonal or the run does not settle.
      const std::size_t nb = std::size_t(n) * std::size_t(bl);
      bool coupled = false;  // the blocks couple their unknowns; else D_b⁻¹ is D⁻¹ (point smoothing)
      LanczosResult br;
      DeviceArray<float> block_ritz;
      DeviceArray<double> binv;
      if (l == 0 && from_seed && from_seed->node_blocks_ran) {
        coupled = from_seed->coupled;
        br = from_seed->block_lanczos;
        block_ritz = device_copy(from_seed->block_ritz);
        binv = device_copy(from_seed->binv);
        ++seed->uses;
      } else {
        binv = DeviceArray<double>(nb);
        DeviceArray<double> linv(nb);
        DeviceArray<int> flags(2);
        const int init[2] = {0x7fffffff, 0};
        amg_init_flags(flags.data(), 2, init[0], init[1]);
        k_node_blocks<<<blocks_for(nodes), kThreads>>>(nodes, bl, Al.rp, Al.ci, Al.va, binv.data(), linv.data(),
                                                       flags.data());
        check_launch("k_node_blocks");
        int got[2];
        copy_to_host(got, flags.data(), sizeof got);
        if (got[0] != init[0]) {  // the host's analysis, for its message
          std::vector<double> host_inv, host_linv;
          amg::node_block_inverses(l, download(Al), bl, host_inv, host_linv);
          KRYSP_THROW(InputError, "AMG: a node block of the level-", l,
                      " matrix was refused on the GPU, not on the host: A is nearly singular there");
        }
        coupled = got[1] != 0;
        if (coupled) {
          // Warm in a re-set-up from the full set-up's Ritz vector, as the point Lanczos above.
          const float* warm = reuse && warm_lanczos && l < reuse->block_ritz.size() &&
                                      reuse->block_ritz[l].size() == std::size_t(n)
                                  ? reuse->block_ritz[l].data()
                                  : nullptr;
          GpuLevelLanczos block_lanczos(Al, linv.data(), bl, warm, warm ? reuse->block_ritz_lambda[l] : 0.0,
                                        !reuse);
          br = lanczos_largest(block_lanczos, n, kLanczosSteps, std::numeric_limits<double>::infinity(),
                               kAmgLanczosSettleTol);
          if (!reuse) block_ritz = block_lanczos.ritz_vector(std::min(br.steps, kAmgLanczosRecordSteps));
        }
        if (l == 0 && to_seed) {
          to_seed->node_blocks_ran = true;
          to_seed->coupled = coupled;
          to_seed->block_lanczos = br;
          to_seed->block_ritz = device_copy(block_ritz);
          if (coupled) to_seed->binv = device_copy(binv);
        }
      }
      if (coupled) {
        if (!reuse) {
          plan->block_ritz.resize(l + 1);
          plan->block_ritz_lambda.resize(l + 1, 0.0);
          plan->block_ritz[l] = std::move(block_ritz);
          plan->block_ritz_lambda[l] = br.theta;
        }
        if (amg::node_block_interval(br, o, bl, li, L.coef)) {
          L.block = bl;
          L.binv = to_t<T>(binv, index_t(nb));
        }
      }
      pc.mark(lv, "node-block smoother (inverses, Lanczos)");
    }
    if (keep_aggregates && !last && !kept) {
      L.aggregates.resize(std::size_t(nodes));
      agg.download(L.aggregates.data(), std::size_t(nodes));
    }
    pc.mark(lv, "smoother diagonal in T");

    DCsr Ac;
    if (!last) {
      // P_tent: b_i / ‖b over i's aggregate‖, the members of each aggregate in node order; kept
      // by a numeric re-set-up (it depends on the aggregates alone). K > 1: each aggregate's QR
      // of the near-nullspace rows (amg_block_setup.hpp), `norms` then the coarse near-nullspace
      // (count·K × K, R of the QRs).
      const index_t nc = count * K;
      DCsr Pt;
      DeviceArray<double> norms;
      if (kept) {
        Pt = view_of(kept->tent);
      } else if (per_aggregate_qr) {
        BlockTentative bt = block_tentative_prolongator(nodes, bl, K, count, agg.data(), B.data());
        Pt.rows = bt.rows;
        Pt.cols = bt.cols;
        Pt.nnz = bt.nnz;
        Pt.rp_own = std::move(bt.rp);
        Pt.ci_own = std::move(bt.ci);
        Pt.va_own = std::move(bt.va);
        Pt.own();
        norms = std::move(bt.coarse_b);
      } else {
        DeviceArray<index_t> skeys(N), nodes(N), sorted_keys(N), members(N), start(std::size_t(nc) + 1);
        k_sort_keys<<<blocks_for(n), kThreads>>>(n, agg.data(), skeys.data(), nodes.data());
        check_launch("k_sort_keys");
        sort_pairs(n, skeys.data(), sorted_keys.data(), nodes.data(), members.data(), bits_for(nc));
        k_starts<<<blocks_for(n), kThreads>>>(n, sorted_keys.data(), nc, start.data());
        check_launch("k_starts");
        norms = DeviceArray<double>(static_cast<std::size_t>(nc));
        k_aggregate_norms<<<blocks_for(nc), kThreads>>>(nc, start.data(), members.data(), B.data(), norms.data());
        check_launch("k_aggregate_norms");
        Pt.rows = n;
        Pt.cols = nc;
        Pt.rp_own = DeviceArray<index_t>(N + 1);
        DeviceArray<index_t> f(N);
        k_aggregated_flags<<<blocks_for(n), kThreads>>>(n, agg.data(), f.data());
        check_launch("k_aggregated_flags");
        Pt.nnz = exclusive_scan(f.data(), Pt.rp_own.data(), n);
        Pt.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(Pt.nnz, 1)));
        Pt.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(Pt.nnz, 1)));
        Pt.own();
        k_tent_fill<<<blocks_for(n), kThreads>>>(n, agg.data(), Pt.rp, B.data(), norms.data(), Pt.ci_own.data(),
                                                 Pt.va_own.data());
        check_launch("k_tent_fill");
      }
      pc.mark(lv, "P_tent");

      // The filtered matrix A_F for the prolongator smoothing (amg_filter.hpp: the host's
      // amg::filter_entries and amg::filtered_matrix); a re-set-up reads the kept entries.
      DCsr Af;
      DeviceArray<double> dinv_f;
      DeviceArray<std::uint8_t> keep;
      bool filtered = false;
      if (kept && kept->filter_keep.size() > 0 && o.filter == AmgFilter::On && o.prolongation_weight > 0) {
        // A re-set-up: the kept entries and A_F's kept structure, only the values to fill.
        filtered = true;
        li.filtered = Al.nnz - kept->af_nnz;
        Af = with_structure(n, n, kept->af_nnz, kept->af_rp.data(), kept->af_ci.data());
        dinv_f = DeviceArray<double>(N);
        amg_filter_fill(n, Al.rp, Al.ci, Al.va, diag.data(), kept->filter_keep.data(), B.data(), Af.rp, nullptr,
                        Af.va_own.data(), dinv_f.data(), fold_lanes(n, Al.nnz));
        pc.mark(lv, "filtered matrix A_F (values)");
      } else if (!kept && o.filter == AmgFilter::On && o.prolongation_weight > 0) {
        keep = DeviceArray<std::uint8_t>(std::size_t(std::max<index_t>(Al.nnz, 1)));
        DeviceArray<index_t> fcount(N);
        amg_filter_count(n, Al.rp, Al.ci, Al.va, diag.data(), li.theta, nullptr, keep.data(), fcount.data(),
                         fold_lanes(n, Al.nnz));
        Af.rows = Af.cols = n;
        Af.rp_own = DeviceArray<index_t>(N + 1);
        Af.nnz = exclusive_scan(fcount.data(), Af.rp_own.data(), n);
        filtered = Af.nnz < Al.nnz;  // else A_F = A (the host keeps no mask either)
        if (filtered) {
          li.filtered = Al.nnz - Af.nnz;
          Af.ci_own = DeviceArray<index_t>(std::size_t(std::max<index_t>(Af.nnz, 1)));
          Af.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(Af.nnz, 1)));
          Af.own();
          dinv_f = DeviceArray<double>(N);
          amg_filter_fill(n, Al.rp, Al.ci, Al.va, diag.data(), keep.data(), B.data(), Af.rp, Af.ci_own.data(),
                          Af.va_own.data(), dinv_f.data(), fold_lanes(n, Al.nnz));
        }
        pc.mark(lv, "filtered matrix A_F");
      }
      const DCsr& As = filtered ? Af : Al;  // the matrix of S = I − ω·D⁻¹A (D_F, A_F when filtered)

      DCsr P;
      if (o.prolongation_weight > 0) {
        li.omega = o.prolongation_weight / rho;
        // P = (I − ω·D⁻¹A)·P_tent: P_tent has one entry a row at most, so P is a column
        // aggregation of S = I − ω·D⁻¹A, which is never formed. The structure: the symbolic
        // product of A's pattern and P_tent (each row's distinct aggregates, sorted) on a full
        // set-up, the kept one on a re-set-up; the values by the same kernel on both, so both
        // give the same bits.
        if (kept && kept->p_rp)
          P = with_structure(n, nc, kept->p_nnz, kept->p_rp, kept->p_ci);
        else
          P = symbolic_product(As, Pt, pc, lv, "P = S*P_tent");
        if (per_aggregate_qr)  // P_tent has up to K entries a row: S formed as the host forms it, spgemm_numeric
          block_prolongator_values(n, As.rp, As.ci, As.va, As.nnz, dinv.data(), li.omega, Pt.nnz, Pt.rp, Pt.ci, Pt.va,
                                   P.rp, P.ci, P.nnz, P.va_own.data());
        else
          prolongator_values(n, As.rp, As.ci, As.va, filtered ? dinv_f.data() : dinv.data(), li.omega, Pt.rp, Pt.ci,
                             Pt.va, P.rp, P.ci, P.va_own.data(), As.nnz);
        pc.mark(lv, "P = S*P_tent: numeric");
      } else {
        P = copy_of(Pt);
        pc.mark(lv, "P = P_tent (copy)");
      }
      // R = Pᵀ and Aᶜ = (RAP + RAPᵀ)/2: by sorts on a full set-up (keeping the permutations), by
      // gathers on a re-set-up (the patterns are the kept ones: same structure of A, same
      // aggregates).
      GpuAmgPlan::Level& pl = plan->levels.emplace_back();
      const bool exact = kept && kept->r_rp && kept->ac_rp;
      DCsr R;
      if (exact) {
        R.rows = P.cols;
        R.cols = P.rows;
        R.nnz = P.nnz;
        R.rp = kept->r_rp;
        R.ci = kept->r_ci;
        R.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(R.nnz, 1)));
        R.va = R.va_own.data();
        k_gather<<<blocks_for(R.nnz), kThreads>>>(R.nnz, kept->r_perm.data(), P.va, R.va_own.data());
        check_launch("k_gather");
        pc.mark(lv, "R = P^T (kept permutation)");
      } else {
        R = transpose(P, &pl.r_perm);
        pc.mark(lv, "transpose R = P^T");
      }
      // Nodes of b > 1 unknowns and K > 1 vectors: the two products in dense blocks
      // (amg_block_product.hpp, the same bits); a re-set-up then needs no structure of A·P.
      // Where P's b×K blocks are full, R·(A·P)'s scalar pattern is its block pattern expanded
      // (block_expand), and the blocks replace the scalar symbolic products too
      // (block_expansion_applies); elsewhere they pay only on large levels (block_products_apply).
      bool blocked = exact && kept->blocked.on;
      DCsr AP, RAP;
      if (exact) {
        if (!blocked) AP = with_structure(n, nc, kept->ap_nnz, kept->ap_rp.data(), kept->ap_ci.data());
        RAP = with_structure(nc, nc, kept->rap_nnz, kept->rap_rp.data(), kept->rap_ci.data());
      } else {
        BlockPattern pb;
        bool full = false;
        if (n > 0 && block_expansion_applies(bl, K, double(Al.nnz) * double(P.nnz) / double(n), finer_in_blocks)) {
          pb = block_pattern(P.rows, P.cols, P.nnz, P.rp, P.ci, bl, K, false);
          full = pb.fits && pb.values() == std::size_t(P.nnz);
          pc.mark(lv, "blocks: pattern of P");
        }
        if (full) {
          pl.blocked = blocked_products(std::move(pb), Al, P, RAP, true, bl, K, pc, lv);
          blocked = pl.blocked.on;
        }
        if (!blocked) {
          AP = symbolic_product(Al, P, pc, lv, "SpGEMM A*P", false);  // values where not in blocks
          RAP = symbolic_product(R, AP, pc, lv, "SpGEMM R*(AP)");
          if (!full && n > 0 &&
              block_products_apply(bl, K, (double(Al.nnz) + double(AP.nnz)) * double(P.nnz) / double(n))) {
            if (pb.rp.size() == 0) pb = block_pattern(P.rows, P.cols, P.nnz, P.rp, P.ci, bl, K, false);
            if (pb.fits) {
              pl.blocked = blocked_products(std::move(pb), Al, P, RAP, false, bl, K, pc, lv);
              blocked = pl.blocked.on;
            }
          }
        }
        finer_in_blocks = finer_in_blocks || blocked;
      }
      if (blocked) {
        fill_blocked_products(kept ? kept->blocked : pl.blocked, Al, P, RAP);
        pc.mark(lv, "A*P and R*(AP) in blocks: numeric");
      } else {
        fill_product(Al, P, AP, pc, lv, "SpGEMM A*P");
        fill_product(R, AP, RAP, pc, lv, "SpGEMM R*(AP)");
      }
      if (exact) {
        Ac.rows = Ac.cols = RAP.rows;
        Ac.nnz = kept->ac_nnz;
        Ac.rp = kept->ac_rp;
        Ac.ci = kept->ac_ci;
        Ac.va_own = DeviceArray<double>(std::size_t(std::max<index_t>(Ac.nnz, 1)));
        Ac.va = Ac.va_own.data();
        k_half_sum_gather<<<blocks_for(Ac.nnz), kThreads>>>(Ac.nnz, kept->sym_a.data(), kept->sym_b.data(), RAP.va,
                                                            Ac.va_own.data());
        check_launch("k_half_sum_gather");
        pc.mark(lv, "symmetrise (kept maps)");
      } else if (symmetric_half_sum(RAP, Ac, pl.sym_a, pl.sym_b)) {  // symmetric to rounding: now exactly
        pc.mark(lv, "symmetrise (RAP + (RAP)^T)/2, symmetric pattern (search)");
      } else {
        DeviceArray<index_t> perm_t;
        const DCsr RAPt = transpose(RAP, &perm_t);
        pc.mark(lv, "transpose (RAP)^T");
        Ac = half_sum(RAP, RAPt, perm_t.data(), &pl.sym_a, &pl.sym_b);
        pc.mark(lv, "symmetrise (RAP + (RAP)^T)/2");
      }
      pl.next = true;
      pl.aggregates = count;
      pl.isolated = li.isolated;
      pl.theta = li.theta;
      pl.retried = kept ? kept->retried : retried;
      if (!kept) {  // what a re-set-up of this level gathers from (pointers stay valid: moves below)
        pl.tent = std::move(Pt);
        if (o.prolongation_weight > 0) {
          pl.p_rp = P.rp;
          pl.p_ci = P.ci;
          pl.p_nnz = P.nnz;
        }
        pl.r_rp = R.rp;
        pl.r_ci = R.ci;
        if (!blocked) {
          pl.ap_nnz = AP.nnz;
          pl.ap_rp = std::move(AP.rp_own);
          pl.ap_ci = std::move(AP.ci_own);
        }
        pl.rap_nnz = RAP.nnz;
        pl.rap_rp = std::move(RAP.rp_own);
        pl.rap_ci = std::move(RAP.ci_own);
        pl.ac_rp = Ac.rp;
        pl.ac_ci = Ac.ci;
        pl.ac_nnz = Ac.nnz;
        if (filtered) {
          pl.filter_keep = std::move(keep);
          pl.af_nnz = Af.nnz;
          pl.af_rp = std::move(Af.rp_own);
          pl.af_ci = std::move(Af.ci_own);
        }
        if (o.filter == AmgFilter::On) {
          pl.coarse_b = DeviceArray<double>(norms.size());
          pl.coarse_b.copy_from(norms);
        }
      }
      // K > 1 or vectors given: the coarse unknowns of P_tent's zero columns (aggregates with fewer
      // than K unknowns) have empty rows in Aᶜ; they get a unit diagonal, as amg::unit_diagonal_on_empty_rows
      // gives them (amg_block_setup.hpp). A re-set-up repeats it through the kept map.
      if (per_aggregate_qr) {
        if (!kept) {
          UnitDiagonal ud;
          if (unit_diagonal_on_empty_rows(Ac.rows, Ac.nnz, Ac.rp, Ac.ci, Ac.va, ud)) {
            pl.pre_unit_rp = std::move(Ac.rp_own);  // the structure pl.ac_rp, pl.ac_ci point to
            pl.pre_unit_ci = std::move(Ac.ci_own);
            Ac.nnz = ud.nnz;
            Ac.rp_own = std::move(ud.rp);
            Ac.ci_own = std::move(ud.ci);
            Ac.va_own = std::move(ud.va);
            Ac.own();
            pl.unit_map = std::move(ud.map);
            pl.unit_rp = Ac.rp;
            pl.unit_ci = Ac.ci;
            pl.unit_nnz = Ac.nnz;
          }
        } else if (kept->unit_map.size() > 0) {
          DCsr U = with_structure(Ac.rows, Ac.cols, kept->unit_nnz, kept->unit_rp, kept->unit_ci);
          unit_diagonal_gather(U.nnz, kept->unit_map.data(), Ac.va, U.va_own.data());
          Ac = std::move(U);
        }
        pc.mark(lv, "unit diagonal on empty rows");
      }
      L.p = level_copy<T>(std::move(P), make_matrices);
      L.r = level_copy<T>(std::move(R), make_matrices);
      if (!kept) {
        B = std::move(norms);  // the coarse near-nullspace: R of each aggregate's QR, its norm
      } else if (kept->coarse_b.size() > 0) {  // the filter's lumping on the next level reads it
        B = DeviceArray<double>(kept->coarse_b.size());
        B.copy_from(kept->coarse_b);
      }
    } else if (n <= kAmgMaxDenseRows) {
      // Dense Cholesky of the coarsest level on the GPU. A pivot it refuses (below the pinning
      // threshold, or not finite) is analysed again on the host, whose amg::cholesky pins it or
      // names it as HostAmg does; the host's factor is taken (the two differ by rounding).
      std::unique_ptr<AmgCoarseSolver> own;
      if (!coarse) coarse = (own = std::make_unique<AmgCoarseSolver>()).get();
      DeviceArray<double> factor(std::size_t(n) * std::size_t(n));
      if (coarse->factor(n, Al.rp, Al.ci, Al.va, factor.data()) >= 0) {
        const std::vector<double> dense = host_coarse_cholesky(l, Al, &info.coarse_pinned);
        factor.upload(dense.data(), dense.size());
      }
      H.coarse_factor = std::move(factor);
      info.coarse_direct = true;
      pc.mark(lv, "coarse Cholesky");
    } else {
      info.coarse_direct = false;
    }
    if (last) {
      plan->levels.emplace_back();
      plan->levels.back().isolated = li.isolated;
    }
    if (l == 0) {
      L.A = A;
    } else {
      L.a = level_copy<T>(std::move(Al), make_matrices);
    }
    pc.mark(lv, "level arrays (P, R, A_l in T)");
    H.levels.push_back(std::move(L));
    info.levels.push_back(li);
    if (last) break;
    if (!reuse && amg::complexity_with_next(info.levels, Ac.nnz) > max_complexity) {
      H.capped = true;  // summed as the final complexity below is
      cuda_synchronize();
      info.setup_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return H;
    }
    Al = std::move(Ac);
    bl = K;
  }
  // The V-cycle's matrices, over the arrays the levels own (moved into place above: the
  // pointers are final now).
  for (std::size_t l = 0; make_matrices && l < H.levels.size(); ++l) {
    GpuAmgLevel<T>& L = H.levels[l];
    if (l > 0) {
      L.A = borrow(L.a);
      pc.mark(int(l), "CsrMatrix A_l (device fingerprint)");
    }
    if (l + 1 < H.levels.size()) {
      L.P = borrow(L.p);
      L.R = borrow(L.r);
      pc.mark(int(l), "CsrMatrix P, R (device fingerprint)");
    }
  }
  if (reuse) {
    info.stop_reason = reuse->stop_reason;
    info.stalled = reuse->stalled;
    H.plan = std::move(reuse);
  } else {
    plan->stop_reason = info.stop_reason;
    plan->stalled = info.stalled;
    H.plan = std::move(plan);
  }
  double rows = 0;
  for (const auto& li : info.levels) rows += double(li.rows);
  info.operator_complexity = amg::complexity_with_next(info.levels, 0);
  info.grid_complexity = info.levels[0].rows > 0 ? rows / double(info.levels[0].rows) : 1.0;
  cuda_synchronize();
  info.setup_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return H;
}

std::size_t plan_device_bytes(const GpuAmgPlan& plan) {
  std::size_t bytes = 0;
  for (const GpuAmgPlan::Level& l : plan.levels) {
    bytes += (l.tent.rp_own.size() + l.tent.ci_own.size()) * sizeof(index_t) + l.tent.va_own.size() * sizeof(double);
    bytes += (l.r_perm.size() + l.sym_a.size() + l.sym_b.size()) * sizeof(index_t);
    bytes += (l.ap_rp.size() + l.ap_ci.size() + l.rap_rp.size() + l.rap_ci.size()) * sizeof(index_t);
    bytes += l.filter_keep.size() + l.coarse_b.size() * sizeof(double);
    bytes += (l.af_rp.size() + l.af_ci.size()) * sizeof(index_t);
    bytes += (l.pre_unit_rp.size() + l.pre_unit_ci.size() + l.unit_map.size()) * sizeof(index_t);
    bytes += l.blocked.bytes();
  }
  for (const DeviceArray<float>& r : plan.ritz) bytes += r.size() * sizeof(float);
  for (const DeviceArray<float>& r : plan.block_ritz) bytes += r.size() * sizeof(float);
  return bytes;
}

void gpu_lanczos_trace(const CsrMatrix<double>& A, int b, int steps, int batch, bool one_block,
                       std::vector<double>& alpha, std::vector<double>& beta) {
  KRYSP_REQUIRE(A.rows() == A.cols() && A.rows() > 0 && b >= 1 && b <= kMaxBlockSize && A.rows() % b == 0 &&
                    steps >= 1 && steps <= kLanczosSteps && batch >= 1,
                "gpu_lanczos_trace: ", A.rows(), "x", A.cols(), ", b ", b, ", ", steps, " steps");
  const CsrView<double> dA = A.device_view();
  DCsr Al;
  Al.rows = Al.cols = A.rows();
  Al.nnz = A.nnz();
  Al.rp = dA.row_ptr;
  Al.ci = dA.col_idx;
  Al.va = dA.values;
  const index_t n = A.rows();
  const std::size_t N = std::size_t(n);
  DeviceArray<double> dinv(N), s(N), ratio(N), diag(N);
  DeviceArray<int> flags(4);
  const int init[4] = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0};  // k_diagonal's two, k_node_blocks' two
  copy_to_device(flags.data(), init, sizeof init);
  with_lanes(fold_lanes(n, Al.nnz), [&](auto W) {
    k_diagonal<decltype(W)::value><<<blocks_for(std::int64_t(n) * W), kThreads>>>(
        n, Al.rp, Al.ci, Al.va, dinv.data(), nullptr, s.data(), ratio.data(), diag.data(), flags.data());
  });
  check_launch("k_diagonal");
  DeviceArray<double> binv, linv;
  if (b > 1) {
    binv = DeviceArray<double>(N * std::size_t(b));
    linv = DeviceArray<double>(N * std::size_t(b));
    k_node_blocks<<<blocks_for(n / b), kThreads>>>(n / b, b, Al.rp, Al.ci, Al.va, binv.data(), linv.data(),
                                                   flags.data() + 2);
    check_launch("k_node_blocks");
  }
  int got[3];
  copy_to_host(got, flags.data(), sizeof got);
  KRYSP_REQUIRE(got[0] == 0x7fffffff && got[1] == 0x7fffffff && got[2] == 0x7fffffff,
                "gpu_lanczos_trace: A's diagonal or node blocks are not positive definite");
  GpuLevelLanczos lz = b > 1 ? GpuLevelLanczos(Al, linv.data(), b, nullptr, 0.0, false, one_block)
                             : GpuLevelLanczos(Al, s.data(), nullptr, 0.0, false, one_block);
  alpha.assign(std::size_t(steps), 0.0);
  beta.assign(std::size_t(steps), 0.0);
  lz.start();
  for (int j = 0; j < steps; j += batch)
    lz.steps(std::min(batch, steps - j), alpha.data() + j, beta.data() + j);
}

template bool gpu_amg_setup_applies(const CsrMatrix<double>&, const AmgOptions&);
template bool gpu_amg_setup_applies(const CsrMatrix<float>&, const AmgOptions&);
template GpuAmgHierarchy<double> gpu_amg_setup(const CsrMatrix<double>&, const AmgOptions&, bool,
                                               std::shared_ptr<const GpuAmgPlan>, bool, bool, AmgCoarseSolver*,
                                               const AmgAutoChoice*, double, GpuLevel0Seed*);
template GpuAmgHierarchy<float> gpu_amg_setup(const CsrMatrix<float>&, const AmgOptions&, bool,
                                              std::shared_ptr<const GpuAmgPlan>, bool, bool, AmgCoarseSolver*,
                                              const AmgAutoChoice*, double, GpuLevel0Seed*);

}  // namespace krysp::detail
