#pragma once
/// \file spmm_config.hpp
/// The SpMM algorithms and their launch parameters (plain data: no Kokkos, no CUDA, so that the
/// kernels' .cu files can include it). See spmm_plan.hpp for what the algorithms do.
#include <string>

namespace krysp {

/// The SpMM design space: parallel (VDL) or sequential (CSC) reduction, times row- or
/// nonzero-balanced work, plus a thread-sequential merge-path kernel (SeqNnz) for short rows.
enum class SpmmAlgorithm : int {
  VdlRow = 0,  ///< parallel reduction, vector loads of X, a sub-warp per row
  VdlNnz = 1,  ///< parallel reduction, vector loads of X, merge-path units (nonzero-balanced)
  CscRow = 2,  ///< sequential reduction, (col, val) pairs cached in shared memory, a sub-warp per row
  CscNnz = 3,  ///< sequential reduction, cached pairs, merge-path units (nonzero-balanced)
  /// Thread-sequential merge path: each lane of a unit's warp walks its own slice of the unit's
  /// rows and nonzeros (all N columns, up to 8 at a time), rows split between lanes joined by a
  /// segmented warp scan (nonzero-balanced; aimed at short, irregular rows and N <= 8)
  SeqNnz = 4,
};
/// Number of SpmmAlgorithm values.
inline constexpr int kSpmmAlgorithmCount = 5;
/// "vdl-row", "vdl-nnz", "csc-row", "csc-nnz" or "seq-nnz".
const char* to_string(SpmmAlgorithm a);
/// True for the merge-path (nonzero-balanced) algorithms.
inline bool is_nnz_balanced(SpmmAlgorithm a) {
  return a == SpmmAlgorithm::VdlNnz || a == SpmmAlgorithm::CscNnz || a == SpmmAlgorithm::SeqNnz;
}
/// True for the vector-load, parallel-reduction algorithms.
inline bool is_vdl(SpmmAlgorithm a) { return a == SpmmAlgorithm::VdlRow || a == SpmmAlgorithm::VdlNnz; }

/// Version of the SpMM kernels, their partition, candidate set and tuning. Bump it whenever one
/// of them changes: SpMM tuning-cache entries of another version are ignored.
/// 7: graph-timed candidates; 8: S/2, c2; 9: paired c2; 10: padded CSC slots; 11: prefetched pairs;
/// 12: S/2 with two columns a lane also on large matrices; 13: batched walk for long rows and the merge path;
/// 14: long rows split into pieces of a block each (SpmmConfig::long_row); 15: ELL copies (tried, dropped);
/// 16: the last block's sum of a long row's pieces spread over the block; 17: overlapped launches;
/// 18: one thread a row (vdl-row/s1; tried, dropped); 19: the lean VDL kernel with column lanes;
/// 20: early matrix loads in the lean VDL and CSC row kernels, every SpMM kernel releases the next one.
inline constexpr int kSpmmKernelVersion = 20;

/// Most column panels a plan may use.
inline constexpr int kMaxSpmmPanels = 64;

/// Thresholds of the choices the SpMM launchers make from the size of the grid they launch (the
/// kernel variant, not the configuration's algorithm and geometry). Kept in the configuration, so
/// that a forced or tuned configuration and the tuning cache can carry other values; the defaults
/// are the measured ones (docs/tuning.md, sections named). Sizes are in waves: the threads resident
/// on the GPU at once (DevicePolicy::resident_threads). The kernels' compile-time sizes (staged
/// units, stream batches, long-row slices: sparse/cuda/spmm_common.hpp) are not here: they size
/// shared memory and unrolled loops, so changing one is a kernel change.
struct SpmmLaunchParams {
  /// Early matrix loads (the row kernels that may load A before waiting for the kernel ahead) only
  /// in grids of at most this many waves: larger grids lost more to the early release than they
  /// gained ("Early launches").
  double early_max_waves = 0.5;
  /// Row-balanced CSC: rounds of consecutive rows a block takes (1: none), so that X rows shared by
  /// neighbouring rows are reused from L1 ("CSC row rounds") ...
  int csc_row_rounds = 4;
  /// ... only in launches of at least this many waves (rows·S): on small matrices the rounds only
  /// add latency.
  double csc_rounds_min_waves = 8;
  /// CSC kernels walk the cached pairs 8 at a time with all their X loads in flight in launches of
  /// fewer than this many waves (rows·S·ksplit, or units·32) ("CSC batched walk"); split rows,
  /// long-row pieces, the merge path and rows of at least S nonzeros on average always do ...
  double csc_batch_max_waves = 1;
  /// ... when the sub-warp has at least this many lanes (fewer pairs a round waste most of a batch).
  int csc_batch_min_subwarp = 8;
  /// Every field equal.
  bool operator==(const SpmmLaunchParams& o) const {
    return early_max_waves == o.early_max_waves && csc_row_rounds == o.csc_row_rounds &&
           csc_rounds_min_waves == o.csc_rounds_min_waves && csc_batch_max_waves == o.csc_batch_max_waves &&
           csc_batch_min_subwarp == o.csc_batch_min_subwarp;
  }
  /// Some field differs.
  bool operator!=(const SpmmLaunchParams& o) const { return !(*this == o); }
};

/// Launch parameters of an SpMM kernel (tuning kept as data, not in kernels). Zero fields are
/// "derive from N and the matrix" (complete_spmm_config in spmm_select.hpp fills them in).
struct SpmmConfig {
  SpmmAlgorithm algorithm = SpmmAlgorithm::VdlRow;
  int subwarp = 0;         ///< S: lanes per row, a power of two in [2, 32]; SeqNnz: 32 (the warp)
  int col_lanes = 0;       ///< VDL: Q, lanes that split the columns (power of two <= S); CSC, SeqNnz: 0
  int per_lane = 0;  ///< VDL: vectors per lane (1, 2, or 4: vdl-row with one column lane); CSC: columns per lane (1 or
                     ///< 2); SeqNnz: 1
  int items_per_warp = 0;  ///< nonzero-balanced: rows + nonzeros per unit (one warp); 0 for row kernels
  /// CscRow: sub-warps that share one row (1, 2, 4 or 8; 0 = 1), each taking a contiguous slice
  /// of its nonzeros; their partial sums are added in shared memory in slice order
  /// (deterministic). Shortens the longest chain on latency-bound matrices with long rows.
  int ksplit = 0;
  /// Column panels (0 or 1: none): the plan splits the matrix into this many panels of equal
  /// column ranges and applies them one after another, each with the kernel above, so that the
  /// rows of X one panel gathers stay in L2 (large matrices with scattered columns; see
  /// sparse/spmm_panels.hpp).
  int panels = 0;
  /// Row kernels (CscRow unsplit, VdlRow with one column lane and one chunk): rows of more than
  /// long_row nonzeros (0: none) leave the sub-warp walk; each is cut into pieces of a block each
  /// (spmm_long_piece_nnz), the block's sub-warps sharing the piece, and the last block of a row to
  /// finish adds the pieces' sums in a fixed order (deterministic) into Y, in the same launch. For
  /// latency-bound matrices whose few long rows are the longest chain.
  int long_row = 0;
  /// Thresholds of the launchers' own choices (defaults: the measured ones).
  SpmmLaunchParams launch;
  /// A compact name with the parameters, e.g. "vdl-row/s8/q2/v1" ("/p3" with 3 panels, "/w4"
  /// with ksplit 4, "/l36" with long_row 36; SeqNnz: "seq-nnz/k256"; launch thresholds other than
  /// the defaults: "/e0.25" early_max_waves, "/r2@4" csc_row_rounds from csc_rounds_min_waves,
  /// "/b2@16" csc_batch_max_waves for sub-warps from csc_batch_min_subwarp).
  std::string to_string() const;
  /// Every field equal.
  bool operator==(const SpmmConfig& o) const {
    return algorithm == o.algorithm && subwarp == o.subwarp && col_lanes == o.col_lanes && per_lane == o.per_lane &&
           items_per_warp == o.items_per_warp && split_count() == o.split_count() && panel_count() == o.panel_count() &&
           long_row == o.long_row && launch == o.launch;
  }
  /// Sub-warps per row: max(1, ksplit).
  int split_count() const { return ksplit > 1 ? ksplit : 1; }
  /// Panels applied: max(1, panels).
  int panel_count() const { return panels > 1 ? panels : 1; }
  /// Some field differs.
  bool operator!=(const SpmmConfig& o) const { return !(*this == o); }
};

}  // namespace krysp
