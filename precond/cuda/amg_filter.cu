// The filtered matrix of the AMG prolongator smoothing on the GPU (amg_filter.hpp).
#include "krysp/precond/cuda/amg_filter.hpp"

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/row_groups.cuh"

namespace krysp::detail {

namespace {

constexpr int kThreads = 256;

// W lanes a row (row_groups.cuh, as amg_device_setup.cu's row kernels): lane t reads the row's
// entries t, t + W, ... a chunk of W at a time (coalesced: one thread a row read level 1's rows of
// ~35 entries uncoalesced). Every result is the one-thread-a-row loop's, bit for bit, for any W.
unsigned blocks_for(index_t n, int w) { return unsigned((std::int64_t(n) * w + kThreads - 1) / kThreads); }

// amg::filter_entries's test for entry v of row i (di, dj: the diagonal values of rows i and j):
// strong, |v| ≥ θ·sqrt(|a_ii|·|a_jj|), or strong from row i's side, |v| ≥ θ·|a_ii|; the node
// magnitudes as strength_graph forms them, sqrt(a²).
__device__ __forceinline__ bool kept(double v, double di, double dj, double theta) {
  const double mi = sqrt(__dmul_rn(di, di)), mj = sqrt(__dmul_rn(dj, dj));
  const double acc = __dmul_rn(v, v), m = sqrt(acc);
  return acc > 0 && (m >= __dmul_rn(theta, sqrt(__dmul_rn(mi, mj))) || m >= __dmul_rn(theta, mi));
}

// An integer count: the chunk's kept entries by a ballot.
template <int W>
__global__ void k_filter_count(index_t n, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                               const double* __restrict__ va, const double* __restrict__ diag, double theta,
                               const std::uint8_t* __restrict__ given, std::uint8_t* __restrict__ keep,
                               index_t* __restrict__ count) {
  const auto [i, lane] = row_lane<W>();
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const unsigned mask = group_mask<W>();
  const index_t e = rp[i + 1];
  const double di = diag[i];
  index_t c = 0;
  for (index_t k0 = rp[i]; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    bool on = false;
    if (k < e) {
      const index_t j = ci[k];
      on = j == i;
      if (given) {
        on = on || given[k] != 0;
      } else {
        on = on || kept(va[k], di, diag[j], theta);
        keep[k] = on ? 1 : 0;
      }
    }
    c += __popc(group_ballot<W>(mask, on));
  }
  if (lane == 0) count[i] = c;
}

// Two passes over the row, as one thread a row: the lumping (the dropped entries' terms, each on
// its lane, folded one at a time in the row's order), then the kept entries, each chunk's placed
// by a ballot after those of the lower lanes.
template <int W>
__global__ void k_filter_fill(index_t n, const index_t* __restrict__ rp, const index_t* __restrict__ ci,
                              const double* __restrict__ va, const double* __restrict__ diag,
                              const std::uint8_t* __restrict__ keep, const double* __restrict__ b,
                              const index_t* __restrict__ f_rp, index_t* f_ci, double* __restrict__ f_va,
                              double* __restrict__ dinv_f) {
  const auto [i, lane] = row_lane<W>();
  if (i >= n) return;  // whole groups leave together (rows are W-aligned)
  const unsigned mask = group_mask<W>();
  const index_t rb = rp[i], e = rp[i + 1];
  const double aii = diag[i], bi = b[i];
  double lump = 0;
  for (index_t k0 = rb; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    const index_t j = k < e ? ci[k] : i;
    const bool drop = j != i && keep[k] == 0;
    const double t = drop ? __ddiv_rn(__dmul_rn(va[k], b[j]), bi) : 0.0;
    lump = fold_in_order<W>(mask, group_ballot<W>(mask, drop), t, lump);
  }
  double d = __dadd_rn(aii, lump);
  if (!(d > 0 && isfinite(d))) d = aii;  // lumping would make it indefinite: keep a_ii (as the host)
  index_t p = f_rp[i];
  for (index_t k0 = rb; k0 < e; k0 += W) {
    const index_t k = k0 + lane;
    const bool in = k < e;
    const index_t j = in ? ci[k] : i;
    const bool on = in && (keep[k] != 0 || j == i);
    const unsigned bits = group_ballot<W>(mask, on);
    if (on) {
      const index_t q = p + lanes_below(bits, lane);
      if (f_ci) f_ci[q] = j;
      f_va[q] = j == i ? d : va[k];
    }
    p += __popc(bits);
  }
  if (lane == 0) dinv_f[i] = 1.0 / d;
}

// The lane counts amg_filter.hpp takes (with_lanes would run any other as 32).
void check_lanes(int w) {
  KRYSP_REQUIRE(w == 1 || w == 2 || w == 4 || w == 8 || w == 16 || w == 32, "AMG filtered matrix: lanes = ", w,
                " (1, 2, 4, 8, 16 or 32)");
}

}  // namespace

void amg_filter_count(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                      double theta, const std::uint8_t* given, std::uint8_t* keep, index_t* count, int lanes) {
  check_lanes(lanes);
  with_lanes(lanes, [&](auto W) {
    if (n > 0)
      k_filter_count<decltype(W)::value>
          <<<blocks_for(n, W), kThreads>>>(n, rp, ci, va, diag, theta, given, keep, count);
  });
  if (n > 0) KRYSP_CUDA_CHECK_LAUNCH("k_filter_count");
}

void amg_filter_fill(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* diag,
                     const std::uint8_t* keep, const double* b, const index_t* f_rp, index_t* f_ci, double* f_va,
                     double* dinv_f, int lanes) {
  check_lanes(lanes);
  with_lanes(lanes, [&](auto W) {
    if (n > 0)
      k_filter_fill<decltype(W)::value>
          <<<blocks_for(n, W), kThreads>>>(n, rp, ci, va, diag, keep, b, f_rp, f_ci, f_va, dinv_f);
  });
  if (n > 0) KRYSP_CUDA_CHECK_LAUNCH("k_filter_fill");
}

}  // namespace krysp::detail
