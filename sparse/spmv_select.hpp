#pragma once
/// \file spmv_select.hpp
/// The rule-based kernel choice and the tuning candidates: plain host code, testable without a GPU.
///
/// Every threshold is a named constant in `spmv_rule` below, so that a benchmark run can retune
/// them in one place. They come from bench/bench_spmv runs (fp64, CUDA 13.0) during development
/// (docs/tuning.md, "The SpMV rule", has the measurements) and are provisional: bench_spmv prints,
/// for every matrix, the rule's pick next to the tuned one, and `bench_spmv --sweep` the time of
/// every candidate across sizes.
#include <cstddef>
#include <vector>

#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

namespace spmv_rule {
/// Matrices with at least this many nonzeros are bandwidth-bound: nonzero-balanced work with
/// per-thread runs (NnzSequential, k = kNnzPerLaneLarge) was fastest on every large matrix of
/// bench/bench_spmv (2-D/3-D Laplacians, banded, power-law: 1.3-1.7x the best row kernel), even
/// at a coefficient of variation near 0. Below it an SpMV is close to one launch's latency, and
/// the row kernels, which need no partition, win (the crossover on 3-D Laplacians lay between
/// ~1.8e6 and ~3.5e6 nonzeros; provisional, retune with bench_spmv --sweep).
inline constexpr double kLargeNnz = 2e6;
inline constexpr int kNnzPerLaneLarge = 8;
/// Mean row length from which a sub-warp per row (parallel reduction) beats one thread per row
/// (sequential reduction). Paper: parallel reduction pays once rows fill the lanes. From
/// bench/bench_spmv (provisional).
inline constexpr double kSubwarpMinMean = 2.5;
/// Row kernels: the sub-warp is widened (up to 32 lanes) until the longest row needs at most this
/// many loop trips, since one long row sets the latency of the whole launch (bench/bench_spmv:
/// ~0.1-0.15 us per trip on top of ~4.5 us; rajat19 went from 10.7 to 5.7 us with 16 lanes
/// instead of 8).
inline constexpr double kMaxRowTrips = 16;
/// ... and when even a full warp would need more than this many trips, the small matrix is
/// nonzero-balanced too (paper: nonzero-balancing for skewed rows; hangGlider_2, max row 1463).
inline constexpr double kMaxRowTripsWarp = 32;
/// Small skewed matrices: nonzeros per lane of NnzSequential (smaller tiles: more warps).
inline constexpr int kNnzPerLaneSmall = 8;
/// Nonzero-balanced kernels: below this many nonzeros, rows split between blocks are completed by
/// look-back inside the launch (saves a launch, nearly halving a small SpMV); above, by a second
/// tiny kernel (waiting blocks cost bandwidth: look-back made the large 3-D Laplacian 1.4x
/// slower). From bench/bench_spmv (docs/tuning.md).
inline constexpr double kLookBackMaxNnz = 1e6;
/// Tuning: after the first timed round, candidates slower than this factor times the fastest are
/// not run again. With 2 finalists, 2 rounds (SpmvPlanOptions::tune_reps) and only the tile
/// shapes a candidate can use, this is meant to keep plan creation with profiling under 50
/// SpMV-equivalents on small matrices (it came to at most 51 with 3 finalists: docs/tuning.md).
inline constexpr double kTunePruneFactor = 1.5;
/// Tuning: at most this many candidates (the fastest of the first round) are timed again.
inline constexpr std::size_t kTuneFinalists = 2;
/// Tuning: no second round when the fastest candidate of the first took less than this: every
/// candidate is then at the launch floor, where more rounds separate noise rather than kernels.
/// Overlapped launches made small SpMVs faster, so the same plan times came to more
/// SpMV-equivalents (up to 65: docs/tuning.md); one round leaves out two launches, four events
/// and a synchronisation of each plan.
inline constexpr double kTuneOneRoundMaxMs = 0.01;
/// Tuning: RowSequential is a candidate only up to this mean row length.
inline constexpr double kTuneRowSequentialMaxMean = 16;
}  // namespace spmv_rule

/// Sub-warp width for RowSubwarp: the smallest power of two in [2, 32] not below the mean row length.
int subwarp_for_mean(double mean_row_length);

/// The cheap rule: features in, configuration out.
///  - no rows or no nonzeros: RowSequential (nothing to balance);
///  - nnz >= kLargeNnz (bandwidth-bound): NnzSequential, k = kNnzPerLaneLarge;
///  - otherwise (latency-bound) a row kernel: one thread per row when mean < kSubwarpMinMean, else
///    a sub-warp of subwarp_for_mean(mean) lanes, widened until the longest row needs at most
///    kMaxRowTrips trips; but when even 32 lanes would need more than kMaxRowTripsWarp trips,
///    NnzSequential with k = kNnzPerLaneSmall.
SpmvConfig choose_spmv_rule(const RowStats& s);

/// The configurations Select::Tune times: the rule's pick first, then
///  - small matrices: RowSequential (mean <= kTuneRowSequentialMaxMean, longest row at most
///    4·kMaxRowTripsWarp), RowSubwarp at half, equal and twice the rule's width (or of the mean's
///    width when the rule is nonzero-balanced) while the longest row needs at most
///    4·kMaxRowTripsWarp trips, NnzSequential k=8 and NnzSegmented k=4;
///  - large matrices: NnzSequential k=4, 8, 16, NnzSegmented k=4, 8, both with k=8 and 8 warps per
///    block (bench_spmv: 8 warps won on the banded matrix, 4 on the Laplacians), and
///    RowSubwarp at the mean's width if its longest row needs at most 4·kMaxRowTripsWarp trips.
/// No duplicates; all valid.
std::vector<SpmvConfig> spmv_candidates(const RowStats& s);

}  // namespace krysp
