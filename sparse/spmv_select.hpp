#pragma once
/// \file spmv_select.hpp
/// The rule-based kernel choice and the tuning candidates: plain host code, testable without a GPU.
///
/// Every threshold is a field of SpmvRuleParams below (data, the tuned values as defaults), so that
/// a benchmark run can retune them in one place. They come from bench/bench_spmv runs (fp64, CUDA
/// 13.0) during development (docs/tuning.md, "The SpMV rule", has the measurements) and are
/// provisional: bench_spmv prints,
/// for every matrix, the rule's pick next to the tuned one, and `bench_spmv --sweep` the time of
/// every candidate across sizes.
#include <cstddef>
#include <vector>

#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// The SpMV rule's parameters: every threshold of choose_spmv_rule, spmv_candidates and SpmvPlan's
/// tuning, as data (docs/tuning.md, "Rule parameters"). The defaults are the values tuned on an
/// H100 (fp64); a retune changes these values, not the code. Each field says what it decides and
/// why in a line; the measurements are in docs/tuning.md, "The SpMV rule".
struct SpmvRuleParams {
  /// Bandwidth-bound from this many nonzeros: NnzSequential was fastest on every large matrix
  /// (1.3-1.7x the best row kernel), even at cv near 0; below, row kernels (no partition) win.
  double large_nnz = 2e6;
  /// Nonzeros per lane of NnzSequential on bandwidth-bound matrices.
  int nnz_per_lane_large = 8;
  /// Mean row length from which a sub-warp per row (parallel reduction) beats a thread per row.
  double subwarp_min_mean = 2.5;
  /// Row kernels: the sub-warp widens (up to 32 lanes) until the longest row needs at most this
  /// many loop trips (one long row sets the whole launch's latency).
  double max_row_trips = 16;
  /// ... and when even a full warp needs more trips than this, nonzero-balanced instead (skewed
  /// rows, paper).
  double max_row_trips_warp = 32;
  /// Nonzeros per lane of NnzSequential on small skewed matrices (smaller tiles: more warps).
  int nnz_per_lane_small = 8;
  /// Nonzero-balanced kernels: rows split between blocks completed by look-back inside the launch
  /// below this many nonzeros (saves a launch), by a second tiny kernel above (waiting blocks cost
  /// bandwidth).
  double look_back_max_nnz = 1e6;
  /// Tuning: after the first round, candidates slower than this · the fastest are not run again
  /// (keeps plan creation with tuning near 50 SpMV-equivalents on small matrices).
  double tune_prune_factor = 1.5;
  /// Tuning: at most this many candidates (the fastest of the first round) are timed again.
  std::size_t tune_finalists = 2;
  /// Tuning: no second round when the fastest candidate of the first took less than this (ms):
  /// every candidate is then at the launch floor, where rounds separate noise, not kernels.
  double tune_one_round_max_ms = 0.01;
  /// Tuning: RowSequential is a candidate only up to this mean row length.
  double tune_row_sequential_max_mean = 16;
};

/// Sub-warp width for RowSubwarp: the smallest power of two in [2, 32] not below the mean row length.
int subwarp_for_mean(double mean_row_length);

/// The cheap rule: features in, configuration out (field names: SpmvRuleParams's, `p`).
///  - no rows or no nonzeros: RowSequential (nothing to balance);
///  - nnz >= large_nnz (bandwidth-bound): NnzSequential, k = nnz_per_lane_large;
///  - otherwise (latency-bound) a row kernel: one thread per row when mean < subwarp_min_mean, else
///    a sub-warp of subwarp_for_mean(mean) lanes, widened until the longest row needs at most
///    max_row_trips trips; but when even 32 lanes would need more than max_row_trips_warp trips,
///    NnzSequential with k = nnz_per_lane_small.
SpmvConfig choose_spmv_rule(const RowStats& s, const SpmvRuleParams& p = SpmvRuleParams{});

/// The configurations Select::Tune times: the rule's pick first, then
///  - small matrices: RowSequential (mean <= tune_row_sequential_max_mean, longest row at most
///    4·max_row_trips_warp), RowSubwarp at half, equal and twice the rule's width (or of the mean's
///    width when the rule is nonzero-balanced) while the longest row needs at most
///    4·max_row_trips_warp trips, NnzSequential k=8 and NnzSegmented k=4;
///  - large matrices: NnzSequential k=4, 8, 16, NnzSegmented k=4, 8, both with k=8 and 8 warps per
///    block (bench_spmv: 8 warps won on the banded matrix, 4 on the Laplacians), and
///    RowSubwarp at the mean's width if its longest row needs at most 4·max_row_trips_warp trips.
/// No duplicates; all valid.
std::vector<SpmvConfig> spmv_candidates(const RowStats& s, const SpmvRuleParams& p = SpmvRuleParams{});

}  // namespace krysp
