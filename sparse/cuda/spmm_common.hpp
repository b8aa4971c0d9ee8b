#pragma once
/// \file spmm_common.hpp
/// Index rules of the SpMM kernels shared by the device code and the host tests (KRYSP_HD: one
/// definition of each rule). No CUDA headers: the host tests emulate the kernels' lane layout,
/// reduction and merge-path partition with these same functions. Launch thresholds are data
/// (SpmmLaunchParams in the configuration), in waves of the device (DevicePolicy,
/// base/device_policy.hpp); the measurements that set them are in docs/tuning.md.
///
/// Layout of X and Y: row-major, X[k, j] = X[k·ldx + j], Y[i, j] = Y[i·ldy + j].
///
/// VDL lane layout: a sub-warp of S lanes works on one row. Lane l has column-lane q = l mod Q and
/// nonzero-lane p = l / Q; P = S / Q. Nonzero-lane p takes the row's nonzeros b+p, b+p+P, ...
/// Columns come in chunks of Q·NV·VW (VW = 16 / sizeof(T): one 16-byte vector); within a chunk
/// starting at column j0, lane q owns the NV vectors v = 0..NV-1 at columns
/// j0 + (q + v·Q)·VW + [0, VW): lanes of one vector slot are adjacent in memory (coalesced).
/// The lane's M = NV·VW partial sums are indexed i = v·VW + e. The sub-warp reduction is a
/// reduce-scatter: h = min(log2 M, log2 P) halving steps (step s pairs lanes p and p ^ 2^s; the
/// lane with bit s clear keeps the lower half of its live sums, the other the upper half), then
/// plain xor-butterfly steps for the remaining bits of p (only when P > M, one live sum left).
/// Afterwards lane p holds, in its live slots t < M >> h, the totals of sums i = t + offset(p),
/// and lanes with p < 2^h store them.
///
/// CSC lane layout: a sub-warp of S lanes per row; lane l owns columns j0 + l + c·S, c = 0..NC-1,
/// chunks of S·NC columns; paired (NC = 2, X and N allowing aligned two-element loads:
/// csc_paired), lane l owns the adjacent columns j0 + 2l and j0 + 2l + 1 instead, loaded together.
/// With ksplit KS (row kernel), KS consecutive sub-warps share a row, each taking one contiguous
/// slice of its nonzeros (csc_slice); the first adds the slices' sums in slice order. Chunks (VDL
/// and CSC) are spread over blockIdx.y (spmm_column_tiles).
///
/// Merge-path units (nonzero-balanced kernels): the path through the (row ends) × (nonzeros)
/// grid is cut at diagonals d = u·K (K = items_per_warp); unit u covers the path from coordinate
/// (i0, k0) = search(u·K) to (i1, k1) = search((u+1)·K) (clamped to rows + nnz). On the path,
/// row_ptr[i] <= k <= row_ptr[i+1]. Unit u processes rows i0..min(i1, rows-1), row r over the
/// nonzeros [max(row_ptr[r], k0), min(row_ptr[r+1], k1)), and sends the row's sums to:
///   - Tail slot of u when r == i1 (the row's end is not consumed in u);
///   - Head slot of u when r == i0 < i1 and row_ptr[r] < k0 (the row started in earlier units);
///   - Y directly otherwise (the whole row lies in u; includes every empty row).
/// A row whose sums went to a head slot is a split row: its first unit u_s is the first unit with
/// i1 == row, its last u_e is the unit whose head slot holds its end; the fix-up computes
/// Y[row] = alpha·(tail[u_s] + ... + tail[u_e - 1] + head[u_e]) + beta·Y[row] in that order.
///
/// SeqNnz lane layout (thread-sequential merge path inside a unit of L items): lane l takes the
/// P = ceil(L / 32) path items from diagonal min(l·P, L) of the unit to min((l+1)·P, L), its start
/// found by seq_unit_search, and walks them in order (a nonzero adds a·X[c, chunk] to its W sums, a
/// row end finishes a row). The lane's pieces: its first row end, when that row began before
/// the lane (row_ptr[r] < lane's first nonzero), is deferred; every later row end lies wholly in
/// the lane and is stored at once (Direct); what is left at the end is the lane's carry-out,
/// keyed by its end row. A segmented inclusive scan over the 32 carry-outs (Hillis-Steele, offsets
/// 1, 2, 4, 8, 16; lane l adds lane l-off's value, before its own, when l-off is in l's segment of
/// equal keys) gives S_l; a deferred row end of lane l > 0 totals S_{l-1} + its own piece (lane 0:
/// its piece), and goes to Y or the unit's head slot (spmm_unit_dest); S_31 is the row i1's part
/// in the unit, stored in the tail slot when i1 < rows. Columns in chunks of W (the kernel's
/// template width): the whole walk runs once per chunk.
#include <cstdint>

#include "krysp/base/device_policy.hpp"
#include "krysp/base/host_device.hpp"
#include "krysp/base/types.hpp"
#include "krysp/sparse/spmm_config.hpp"

namespace krysp::detail {

/// Threads per block of every SpMM kernel.
inline constexpr int kSpmmBlock = 256;
inline constexpr int kSpmmWarpsPerBlock = kSpmmBlock / 32;
/// The launchers' own choices, from the size of the grid and the thresholds of the configuration
/// (SpmmLaunchParams, sparse/spmm_config.hpp; the reasons are there).

/// Threads of the largest early launch on `device` (SpmmLaunchParams::early_max_waves).
inline std::int64_t spmm_early_max_threads(const DevicePolicy& device, const SpmmLaunchParams& lp = {}) {
  return std::int64_t(lp.early_max_waves * double(device.resident_threads()));
}
/// Whether a launch of `blocks` blocks takes the EARLY kernel (the EARLY row kernels:
/// spmm_vdl1_row_kernel, the CSC row kernel of batched launches; `early` from the plan: the matrix
/// unchanged since the last product, sparse/early_loads.hpp).
inline bool spmm_early_launch(std::int64_t blocks, bool early, const DevicePolicy& device,
                              const SpmmLaunchParams& lp = {}) {
  return early && blocks * kSpmmBlock <= spmm_early_max_threads(device, lp);
}

/// Threads from which a row-balanced CSC launch on `device` takes rounds
/// (SpmmLaunchParams::csc_rounds_min_waves).
inline std::int64_t spmm_csc_rounds_min_threads(const DevicePolicy& device, const SpmmLaunchParams& lp = {}) {
  return std::int64_t(lp.csc_rounds_min_waves * double(device.resident_threads()));
}
/// Rounds of consecutive rows a block of the row-balanced, unsplit CSC kernel takes (block b takes
/// R·(256/S) rows from there; in each round its sub-warps work on consecutive rows): csc_row_rounds
/// in launches of rows·S >= spmm_csc_rounds_min_threads, else 1.
inline int spmm_csc_row_rounds(index_t rows, int log2s, const DevicePolicy& device, const SpmmLaunchParams& lp = {}) {
  return (std::int64_t(rows) << log2s) >= spmm_csc_rounds_min_threads(device, lp) ? lp.csc_row_rounds : 1;
}

/// Threads below which a CSC launch on `device` walks 8 pairs at a time
/// (SpmmLaunchParams::csc_batch_max_waves).
inline std::int64_t spmm_csc_batch_max_threads(const DevicePolicy& device, const SpmmLaunchParams& lp = {}) {
  return std::int64_t(lp.csc_batch_max_waves * double(device.resident_threads()));
}
/// The shape of a CSC launch that decides its walk: sub-warp 2^log2s, 2^log2k sub-warps a row,
/// merge-path units (nonzero-balanced) or long-row pieces.
struct SpmmCscShape {
  bool nnz_balanced = false;
  int log2s = 0;
  int log2k = 0;
  index_t rows = 0;
  index_t nnz = 0;
  index_t units = 0;       ///< merge-path units (nonzero-balanced)
  index_t num_pieces = 0;  ///< long-row pieces (row kernel)
};
/// Does a CSC launch walk the cached pairs 8 at a time with all their X loads in flight
/// (csc_accumulate B = 8)? Sub-warps of at least csc_batch_min_subwarp lanes, and split rows,
/// long-row pieces, the merge path, rows of at least S nonzeros on average, or launches of fewer
/// than spmm_csc_batch_max_threads threads (rows·S·ksplit, or units·32).
inline bool spmm_csc_batched(const SpmmCscShape& l, const DevicePolicy& device, const SpmmLaunchParams& lp = {}) {
  const std::int64_t threads =
      l.nnz_balanced ? std::int64_t(l.units) * 32 : (std::int64_t(l.rows) << l.log2s) << l.log2k;
  const bool long_rows = std::int64_t(l.nnz) >= (std::int64_t(l.rows) << l.log2s);
  return (1 << l.log2s) >= lp.csc_batch_min_subwarp &&
         (l.log2k > 0 || l.nnz_balanced || l.num_pieces > 0 || long_rows ||
          threads < spmm_csc_batch_max_threads(device, lp));
}

/// CscNnz in batched launches (spmm_csc_batched): units of at most this many items (rows +
/// nonzeros) are staged in shared memory (12 bytes an item per warp: 33 KB a block with the row
/// offsets).
inline constexpr int kSpmmCscStaged = 256;
/// Staged CscNnz: nonzeros whose X loads are issued together (csc_stream_rows), for units whose
/// rows have fewer than kSpmmCscStreamMaxRow nonzeros on average; units of longer rows walk each
/// row (one round of loads per 8 nonzeros): streaming helps short rows and slows long ones
/// (docs/tuning.md, "Staged CscNnz streaming").
inline constexpr int kSpmmCscStreamBatch = 16;
inline constexpr int kSpmmCscStreamMaxRow = 8;

/// Elements of T per 16-byte vector (double: 2, float: 4).
template <class T>
inline constexpr int kSpmmVecWidth = int(16 / sizeof(T));

KRYSP_HD inline int spmm_log2(int v) {  // v a power of two
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

// ---- merge path -------------------------------------------------------------------------------

struct MergeCoord {
  index_t row;  ///< row ends consumed
  index_t nnz;  ///< nonzeros consumed
};

/// The merge-path coordinate (i, diag - i) on diagonal `diag` (0 <= diag <= rows + nnz), as in
/// Merrill & Garland's merge-based CSR SpMV: the path consumes the end of row i (the value
/// row_ptr[i+1]) before nonzero k exactly when row_ptr[i+1] <= k, so i is the number of rows
/// whose end comes among the first `diag` path items.
KRYSP_HD inline MergeCoord merge_path_search(std::int64_t diag, const index_t* row_ptr, index_t rows, index_t nnz) {
  std::int64_t lo = diag - nnz > 0 ? diag - nnz : 0;
  std::int64_t hi = diag < rows ? diag : rows;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (std::int64_t(row_ptr[mid + 1]) <= diag - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {index_t(lo), index_t(diag - lo)};
}

/// The merge-path coordinate on diagonal d of a unit from (i0, k0) to (i1, k1), 0 <= d <=
/// (i1 - i0) + (k1 - k0): the same point as merge_path_search on the global diagonal, with the
/// search bounded by the unit (reads row_ptr[i0 + 1 .. i1] only).
template <class RowPtr>  // const index_t*, or anything with row_ptr[i] for i in (i0, i1]
KRYSP_HD inline MergeCoord seq_unit_search(std::int64_t d, const RowPtr& row_ptr, index_t i0, index_t k0, index_t i1,
                                           index_t k1) {
  const std::int64_t nz = std::int64_t(k1) - k0;
  std::int64_t lo = d - nz > 0 ? d - nz : 0;
  std::int64_t hi = d < std::int64_t(i1) - i0 ? d : std::int64_t(i1) - i0;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (std::int64_t(row_ptr[i0 + mid + 1]) <= std::int64_t(k0) + d - mid - 1)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {index_t(i0 + lo), index_t(k0 + d - lo)};
}

/// SeqNnz: path items per lane in a unit of L items (ceil(L / 32)).
KRYSP_HD inline std::int64_t seq_lane_items(std::int64_t L) { return (L + 31) / 32; }
/// SeqNnz: the unit diagonal where lane `lane` starts (lane + 1: where it ends).
KRYSP_HD inline std::int64_t seq_lane_diag(int lane, std::int64_t L) {
  const std::int64_t d = std::int64_t(lane) * seq_lane_items(L);
  return d < L ? d : L;
}
/// SeqNnz: columns per pass for N columns: the power of two >= N, at most 8.
KRYSP_HD inline int seq_width(index_t N) { return N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8; }

enum class SpmmDest : int { Direct = 0, Head = 1, Tail = 2 };

/// Where unit (i0, k0) → (i1, ·) sends row r's sums (see the file comment); row_start = row_ptr[r].
KRYSP_HD inline SpmmDest spmm_unit_dest(index_t r, index_t i0, index_t k0, index_t i1, index_t row_start) {
  if (r == i1) return SpmmDest::Tail;
  if (r == i0 && row_start < k0) return SpmmDest::Head;
  return SpmmDest::Direct;
}

/// Offset (in T) of a carry slot: head slots [0, units·N), tail slots [units·N, 2·units·N).
KRYSP_HD inline std::int64_t spmm_carry_offset(SpmmDest d, index_t unit, index_t units, index_t N) {
  return (d == SpmmDest::Head ? std::int64_t(unit) : std::int64_t(units) + unit) * N;
}

// ---- VDL lane layout --------------------------------------------------------------------------

/// First column of vector slot v of column-lane q in the chunk starting at j0.
KRYSP_HD inline index_t vdl_slot_col(index_t j0, int q, int v, int Q, int VW) { return j0 + (q + v * Q) * VW; }
/// Valid columns of a vector starting at column `col`: clamp(N - col, 0, VW).
KRYSP_HD inline int vdl_valid(index_t N, index_t col, int VW) {
  const index_t m = N - col;
  return m <= 0 ? 0 : (m >= VW ? VW : int(m));
}
/// Halving steps of the reduce-scatter: min(log2 M, log2 P).
KRYSP_HD inline int vdl_halving_steps(int log2m, int log2p) { return log2m < log2p ? log2m : log2p; }
/// Index of the first partial sum lane p holds after h halving steps (M sums per lane).
KRYSP_HD inline int vdl_scatter_offset(int p, int h, int M) {
  int off = 0;
  for (int s = 0; s < h; ++s)
    if ((p >> s) & 1) off += M >> (s + 1);
  return off;
}

// ---- CSC lane layout --------------------------------------------------------------------------

/// Column c of lane l (sub-warp width S) in the chunk starting at j0; `paired`: the two columns of
/// a lane are adjacent.
KRYSP_HD inline index_t csc_col(index_t j0, int lane, int c, int S, bool paired = false) {
  return paired ? j0 + 2 * lane + c : j0 + lane + c * S;
}

/// Does a CSC launch with `per_lane` columns a lane use paired columns? Two columns a lane, X
/// vector-aligned (x_vec: 16-byte base, ldx a multiple of the vector width, so every row of X
/// starts on a pair) and N even (a lane's two columns are both in range or both past N).
KRYSP_HD inline bool csc_paired(int per_lane, bool x_vec, index_t N) { return per_lane == 2 && x_vec && N % 2 == 0; }

/// CscRow with ksplit KS: slice `slice` of a row [rs, re) is [*b, *e), the slices being KS
/// contiguous runs of ceil(len / KS) nonzeros (the last ones shorter or empty).
KRYSP_HD inline void csc_slice(index_t rs, index_t re, int slice, int KS, index_t* b, index_t* e) {
  const std::int64_t len = std::int64_t(re) - rs, per = (len + KS - 1) / KS;
  const std::int64_t lo = std::int64_t(slice) * per, hi = lo + per;
  *b = index_t(rs + (lo < len ? lo : len));
  *e = index_t(rs + (hi < len ? hi : len));
}

// ---- column tiles -----------------------------------------------------------------------------

/// Most column tiles of one launch (gridDim.y); beyond, each block loops over several chunks.
inline constexpr index_t kSpmmMaxTiles = 65535;
/// Column tiles of a launch whose sub-warps cover `chunk` columns at a time: the chunks of the
/// VDL and CSC layouts run in parallel, one per blockIdx.y, rather than one after another in a
/// sub-warp (more warps in flight on small matrices; the row's pairs are read once per chunk
/// either way).
KRYSP_HD inline index_t spmm_column_tiles(index_t N, index_t chunk) {
  const index_t t = (N + chunk - 1) / chunk;
  return t < 1 ? 1 : (t > kSpmmMaxTiles ? kSpmmMaxTiles : t);
}

// ---- long rows (SpmmConfig::long_row) -----------------------------------------------------------

/// CscRow long-row pieces: pairs a sub-warp walks in its slice of a piece (one batch of X loads,
/// csc_walk with B = 8).
inline constexpr int kSpmmLongSlicePairs = 8;

/// Nonzeros of one long-row piece (one block of kSpmmBlock threads): kSpmmLongSlicePairs per CSC
/// sub-warp of S lanes, two per VDL lane (vdl1_segment keeps two in flight). The block's
/// sub-warps take contiguous slices of the piece (csc_slice).
KRYSP_HD inline index_t spmm_long_piece_nnz(bool vdl, int S) {
  return vdl ? 2 * kSpmmBlock : index_t(kSpmmBlock / S) * kSpmmLongSlicePairs;
}

/// Columns a sub-warp covers at a time (its chunk): VDL Q·NV·VW (Q column lanes, NV vectors of VW
/// a lane), CSC S·NC; a launch has spmm_column_tiles(N, chunk) column tiles.
KRYSP_HD inline index_t spmm_chunk_columns(bool vdl, int S, int Q, int per_lane, int VW) {
  return vdl ? index_t(Q) * per_lane * VW : index_t(S) * per_lane;
}

}  // namespace krysp::detail
