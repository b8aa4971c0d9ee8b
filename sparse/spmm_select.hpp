#pragma once
/// \file spmm_select.hpp
/// SpMM kernel choice (plain host code, testable without a GPU): the rule, the geometry that
/// completes a partial configuration, the tuning candidates, and the SpMM tuning cache.
///
/// Every threshold is a named constant in `spmm_rule`; those that depend on the size of the GPU
/// are in waves (the threads resident at once: DevicePolicy::resident_threads, base/device_policy.hpp),
/// and the rules that use them take the device's policy as data (device_policy() on a GPU, an
/// explicit one in host tests). They come from the kernels' design, the paper's rule and
/// bench/bench_spmm runs; all are provisional: retune from bench/bench_spmm on the full matrix
/// set, which prints, for every (matrix, N), the rule's pick next to the fastest tuning candidate
/// (and the candidate table in --json). The measurements behind each constant are in
/// docs/tuning.md, a section per rule.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/base/device_policy.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_config.hpp"

namespace krysp {

namespace spmm_rule {
/// Largest N for which VDL (parallel reduction, vector loads) is chosen; CSC (sequential
/// reduction) above. Paper (Huang et al., DA-SpMM): parallel reduction up to N = 4, as measured
/// (docs/tuning.md, "VDL or CSC").
inline constexpr int kVdlMaxN = 4;
/// Latency-bound (small) matrices: rows·32 <= kLatencyBoundWaves waves. There the time is the
/// latency of the longest chain of one row, not throughput: wide VDL sub-warps up to kVdlMaxN,
/// CSC with one column per lane and long rows shared by sub-warps above (kSmallCscMinN).
inline constexpr double kLatencyBoundWaves = 4;
/// Latency-bound matrices, VDL: 32 lanes a row while rows·32 <= kVdlWideWaves waves (tiny
/// launches: the widest sub-warps were fastest even on rows of 5); above, the S in [Q, 32]
/// (Q column lanes, P = S / Q nonzero lanes) minimising
///   ceil(longest row / P) + kVdlSubwarpWaveCost · rows·S / resident threads,
/// the chain of the longest row against the threads launched. Fit on graph-timed tuning
/// candidates (docs/tuning.md, "Latency-bound VDL sub-warp").
inline constexpr double kVdlWideWaves = 0.75;
inline constexpr double kVdlSubwarpWaveCost = 10;
/// Latency-bound matrices, N >= kSmallCscMinN and too wide for the lean VDL kernel
/// (kVdlColumnLanesMaxMean): CscRow with one column per lane, S = pow2 >= N (at
/// most 32), rows shared by KS sub-warps (ksplit). KS in {1, 2, 4, 8} minimises
///   ceil(longest row / KS) + kSplitWaveCost · rows·S·KS·tiles / resident threads
/// (the chain of the longest slice, in pairs, against the threads launched, with column tiles
/// = ceil(N / S)), over the KS whose slices of the longest row hold at most kSplitMaxSlice pairs
/// (longer rows are left to the merge path, or cut: kLongRowRuleMinCut). Two columns a lane,
/// unsplit, when that costs less, its chain counted kCscTwoColumnChain times (the second
/// column's load is issued with the first): with S lanes above S columns (one tile instead of
/// two), and with S / 2 lanes from S = 16 (a pair's shared-memory reads and address serve two
/// columns). Fit on tuning candidates timed over back-to-back calls (docs/tuning.md,
/// "Latency-bound CSC, rows shared by sub-warps"; scripts/spmm_report.py).
inline constexpr int kSmallCscMinN = kVdlMaxN + 1;
/// Latency-bound matrices whose N columns fit the lean VDL kernel (N <= 4 vectors: 8 in fp64, 16
/// in fp32): that kernel with the sub-warp of spmm_small_vdl_subwarp, instead of CSC (above
/// kVdlMaxN) or the general VDL kernel; with one vector a lane on pow2 >= N / VW column lanes
/// (2 at N = 3, 4 and 4 at N = 5..8 in fp64) where the mean row is at most
/// kVdlColumnLanesMaxMean, all columns in one lane above (where the column lanes would leave
/// too few nonzero lanes for the row) and wherever long rows are cut (only that layout cuts).
/// Column lanes won on most small meshes, all columns a lane on tiny FEM matrices with rows of
/// 17-20 (docs/tuning.md, "Lean VDL with column lanes").
inline constexpr double kVdlColumnLanesMaxMean = 16;
inline constexpr double kSplitWaveCost = 96;
inline constexpr double kSplitMaxSlice = 64;
inline constexpr double kCscTwoColumnChain = 1.5;
/// Latency-bound matrices, N > kTuneSeqMaxN, whose longest row (>= kSmallStreamMinMaxRow) the
/// split does not share out (too many rows: spmm_split_rule) and whose mean row is shorter than
/// kSmallStreamMaxMean: CscNnz, whose staged units stream short rows with few rounds of loads
/// (sparse/cuda/spmm_common.hpp, kSpmmCscStreamMaxRow). Only from rows·32 >
/// kSmallStreamMinWaves waves: below, CscNnz's fixed cost (two launches, a staged unit) loses to
/// the row kernels (docs/tuning.md, "Latency-bound CscNnz streaming").
inline constexpr double kSmallStreamMaxMean = 8;
inline constexpr index_t kSmallStreamMinMaxRow = 33;
inline constexpr double kSmallStreamMinWaves = 1;
/// Latency-bound matrices: rows longer than t = max(kLongRowMin, kLongRowMeanFactor · mean row)
/// (spmm_long_row_threshold) can be cut into pieces of a block each (SpmmConfig::long_row); the rule
/// does so when the longest row is at least kLongRowRuleMinCut · t, and picks the row kernel for
/// the rest of the rows as if the longest were t long: below 2.5 t a piece's block costs more
/// than the chain it saves (docs/tuning.md, "Long rows cut into pieces").
inline constexpr index_t kLongRowMin = 32;
inline constexpr double kLongRowMeanFactor = 4;
inline constexpr double kLongRowRuleMinCut = 2.5;
/// Matrices that fill the GPU, even N in [kHalfLanesMinN, kHalfLanesMaxN]: CscRow with S / 2 lanes
/// of two (paired) columns each, one tile, rather than S lanes of one: faster on the large
/// Laplacians and banded matrices at N = 16 and 32, not at 64 (docs/tuning.md, "Half the CSC
/// lanes, two columns each").
inline constexpr int kHalfLanesMinN = 16;
inline constexpr int kHalfLanesMaxN = 32;
/// Coefficient of variation (stddev / mean) of the row lengths above which work is balanced by
/// nonzeros (merge-path units). Retune from bench/bench_spmm.
inline constexpr double kNnzBalanceMinCv = 1.5;
/// Long rows: a row-balanced kernel takes about max(average work per resident sub-warp, work of
/// the longest row), so it is refused when the longest row costs more than kLongRowFactor times
/// max(kMinLongRowTrips, the average cost per resident sub-warp). Cost of a row of len entries in
/// loop trips: VDL max(1, len / P) (P nonzero lanes); CSC max(1, len / kCscPairsPerTrip) (its
/// steps are shared-memory broadcasts with independent loads, cheaper than a VDL trip). Resident
/// sub-warps: resident threads / S. Retune from bench/bench_spmm.
inline constexpr double kLongRowFactor = 4;
inline constexpr double kMinLongRowTrips = 16;
inline constexpr double kCscPairsPerTrip = 4;
/// VDL: nonzeros of a mean-length row per nonzero lane; P = the power of two >= mean / this. Two
/// per lane amortize the per-row cost (row offsets, reduction, store) that bounds short rows, and
/// fill the lean kernel's two loads in flight (docs/tuning.md, "VDL nonzero lanes").
inline constexpr double kVdlNnzPerLane = 2.5;
/// VDL: vectors (16 bytes each) per lane when N allows: 2 halves the (col, val) loads per X
/// vector compared with 1. Retune from bench/bench_spmm.
inline constexpr int kVdlVectorsPerLane = 2;
/// Merge-path unit size (rows + nonzeros per warp), and the smaller one used when the matrix
/// has fewer than kSmallItems items (more warps for a latency-bound launch).
/// Retune from bench/bench_spmm.
inline constexpr int kItemsPerWarp = 256;
inline constexpr int kItemsPerWarpSmall = 64;
inline constexpr double kSmallItems = 1 << 18;
/// Tuning: VDL candidates are timed up to this N (beyond, VDL loops over column chunks and
/// re-reads the row). Retune from bench/bench_spmm.
inline constexpr int kTuneVdlMaxN = 64;
/// Tuning: SeqNnz candidates are timed up to this N (a lane keeps up to 8 sums; beyond, it walks
/// its items once per 8 columns). Retune from bench/bench_spmm.
inline constexpr int kTuneSeqMaxN = 8;
/// The rule's nonzero-balanced choice: SeqNnz (a lane per slice of the merge path) up to this N
/// when the mean row is at most kSeqMaxMeanRow long and the matrix is not latency-bound (not
/// measured there), VDL / CSC otherwise: SeqNnz was fastest on a large power-law matrix up to
/// N = 4 (docs/tuning.md, "SeqNnz for skewed matrices"; bench_spmm --panel-sweep).
inline constexpr int kSeqMaxN = 4;
inline constexpr double kSeqMaxMeanRow = 32;
/// Latency-bound matrices with a row at least this long, kVdlMaxN < N <= kTuneSeqMaxN: SeqNnz (a
/// merge-path kernel and its fix-up, about two launches), faster there than the row kernels;
/// not at N = 2 and 4, where VDL with 32 lanes a row wins (docs/tuning.md, "SeqNnz on
/// latency-bound matrices with a long row"). These are spmm_uncut_rule's: where
/// choose_spmm_rule cuts the long rows (kLongRowRuleMinCut), the rows left decide.
inline constexpr index_t kSmallSeqMinMaxRow = 200;
/// The same for N <= kVdlMaxN once a row needs more than 32 trips of a 32-lane VDL sub-warp, among
/// rows of at most kSeqMaxMeanRow on average: shorter longest rows were faster with VDL
/// (docs/tuning.md, "The same for N <= kVdlMaxN").
inline constexpr index_t kSmallSeqNarrowMinMaxRow = 1024;
/// Tuning: row-balanced candidates whose longest row needs more than this many trips are not
/// timed at all (one run could cost hundreds of SpMMs). Retune from bench/bench_spmm.
inline constexpr double kTuneMaxRowTrips = 2048;
/// Tuning: after the first timed round, candidates slower than this factor times the fastest are
/// not run again (time_device_interleaved_ms). Retune from bench/bench_spmm.
inline constexpr double kTunePruneFactor = 2.0;
/// Tuning: a timed sample of a candidate repeats it back to back for about this long (at least
/// one call): with one call per sample, latency-bound candidates were ranked by their latency
/// rather than by their time in a stream of launches (docs/tuning.md, "Tuning samples").
inline constexpr double kTuneSampleMs = 0.05;
/// Tuning: the back-to-back calls of a sample are replayed from a CUDA graph of at most this many
/// calls (CapturedCalls), so that the host's submission of each launch (several µs, more than most
/// small matrices' kernels take) does not make the candidates tie (docs/tuning.md, "Tuning
/// samples").
inline constexpr int kTuneGraphMaxCalls = 16;
}  // namespace spmm_rule

/// The smallest power of two >= v, clamped to [lo, hi] (lo, hi powers of two).
int spmm_pow2_at_least(double v, int lo, int hi);

/// Fills the zero fields of `c` for N columns of `value_bytes`-byte values (8 or 4) on a matrix
/// with these statistics (spmm_config.hpp): VDL vectors per lane NV = min(kVdlVectorsPerLane,
/// ceil(N / VW)), column lanes Q = pow2 >= ceil(N / (VW·NV)) (<= S), sub-warp S = Q · (pow2 >=
/// mean row length / kVdlNnzPerLane) in [2, 32]; CSC S = pow2 >= N in [2, 32], columns per lane 2 when N > S;
/// items_per_warp for the nonzero-balanced ones; SeqNnz S = 32, per_lane 1, no column lanes. Non-zero
/// fields are kept as given.
SpmmConfig complete_spmm_config(SpmmConfig c, index_t N, int value_bytes, const RowStats& s);

/// Is `c` (complete) a configuration the kernels accept? When not and `why` is given, *why says
/// what is wrong.
bool is_valid(const SpmmConfig& c, std::string* why = nullptr);

/// The rows of a latency-bound matrix longer than this are cut into pieces by the rule's row
/// kernels (kLongRowMin, kLongRowMeanFactor); 0 when none is (not latency-bound on `device`, or
/// no row that long).
index_t spmm_long_row_threshold(const DevicePolicy& device, const RowStats& s);

/// Can the kernels run `c` (complete, valid) for N columns of `value_bytes`-byte values? Long rows
/// cut (SpmmConfig::long_row): CscRow when its column tiles cover N in one chunk a block, VdlRow
/// with one column lane and N <= per_lane · VW (the lean kernel). Four vectors a lane (VDL only):
/// the lean kernel only, N <= 4 · VW. Anything else runs at any N.
bool spmm_runs_at(const SpmmConfig& c, index_t N, int value_bytes);

/// Is the matrix small enough for its kernels to be latency-bound on `device` (see
/// kLatencyBoundWaves)?
bool spmm_latency_bound(const DevicePolicy& device, const RowStats& s);

/// Sub-warps per row for CscRow on a latency-bound matrix with N columns (kSmallCscMinN and the
/// constants after it): 1 (no split), 2, 4 or 8.
int spmm_split_rule(const DevicePolicy& device, const RowStats& s, index_t N);

/// The CscRow configuration for a latency-bound matrix with N >= kSmallCscMinN columns: one column
/// a lane with KS = spmm_split_rule sub-warps a row, or two columns a lane, unsplit (S lanes above
/// S columns, S / 2 lanes from S = 16), whichever costs less in the same model.
SpmmConfig spmm_small_csc_rule(const DevicePolicy& device, const RowStats& s, index_t N);

/// The VDL sub-warp for a latency-bound matrix (kVdlWideWaves, kVdlSubwarpWaveCost), with
/// `per_lane` vectors a lane (0: derived).
int spmm_small_vdl_subwarp(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8,
                           int per_lane = 0);

/// Vectors a lane for the lean VDL kernel at N columns of `value_bytes`-byte values: the power of
/// two >= N / VW (1, 2 or 4), 0 when N > 4 · VW.
int spmm_lean_vdl_vectors(index_t N, int value_bytes);

/// The cheap rule (complete configuration) for `device` (device_policy() on a GPU): on a
/// latency-bound matrix whose longest row is at least kLongRowRuleMinCut times t =
/// spmm_long_row_threshold, spmm_uncut_rule for rows up to t long (the lean VDL kernel with one
/// column lane where N fits it, whatever the mean row),
/// unsplit, with the longer rows cut (long_row = t) where that kernel can cut them
/// (spmm_runs_at); spmm_uncut_rule otherwise.
SpmmConfig choose_spmm_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8);

/// The rule for the rows as they are (no long_row; complete configuration):
///  - N <= kVdlMaxN: VDL, else CSC (S / 2 lanes of two columns for even N in [kHalfLanesMinN,
///    kHalfLanesMaxN]); on latency-bound matrices (spmm_latency_bound) the lean VDL kernel with
///    the sub-warp of spmm_small_vdl_subwarp where N fits it (column lanes: kVdlColumnLanesMaxMean),
///    CSC with long rows shared by sub-warps or two columns a lane above (kSmallCscMinN,
///    spmm_small_csc_rule);
///  - nonzero-balanced (VdlNnz / CscNnz / SeqNnz) when the rows are skewed: cv > kNnzBalanceMinCv
///    (not on latency-bound matrices, where only the longest row counts), or the longest row is
///    too long for the row kernel (spmm_long_row; see kLongRowFactor), or on a latency-bound
///    matrix with kVdlMaxN < N <= kTuneSeqMaxN it reaches kSmallSeqMinMaxRow (N <= kVdlMaxN:
///    kSmallSeqNarrowMinMaxRow, with a mean row <= kSeqMaxMeanRow) (SeqNnz), or above
///    kTuneSeqMaxN it reaches kSmallStreamMinMaxRow unsplit with a mean row below
///    kSmallStreamMaxMean and rows·32 above kSmallStreamMinWaves waves (CscNnz);
///  - row-balanced otherwise, and always for a matrix without rows or nonzeros.
SpmmConfig spmm_uncut_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8);

/// Cost in loop trips of the longest row, and the average cost per resident sub-warp, for a
/// complete configuration (see kLongRowFactor).
double spmm_max_row_trips(const RowStats& s, const SpmmConfig& c);
/// The average cost per resident sub-warp of `device` (the other half of the comparison above).
double spmm_mean_trips_per_slot(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c);
/// Is the longest row too long for the row-balanced version of `c`?
bool spmm_long_row(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c);

/// The configurations Select::Tune times: the rule's pick first; VDL (N <= kTuneVdlMaxN) row
/// kernels at S/2, S, 2S and 32 and with one vector per lane, VdlNnz; CSC row kernels at the
/// derived S and 32, at S/2 with two columns a lane when S >= 16 (on latency-bound matrices also
/// with one column per lane and with rows shared by 2, 4 and 8 sub-warps), CscNnz; SeqNnz
/// (N <= kTuneSeqMaxN); where spmm_long_row_threshold cuts rows, VDL (lean) and CSC row kernels
/// with long_row. Row-balanced ones over kTuneMaxRowTrips are left out. All valid, no
/// duplicates.
std::vector<SpmmConfig> spmm_candidates(const DevicePolicy& device, const RowStats& s, index_t N,
                                        int value_bytes = 8);

// ---- SpMM tuning cache ----------------------------------------------------------------------------
//
// Same folder as the SpMV cache (tune_cache.hpp: SpmmPlanOptions::cache_dir, else
// default_tune_cache_dir()), its own file `spmm_tune.txt`, same conventions: one entry per line
// of tab-separated name=value fields, `#` comments, every field validated on reading (bad lines
// ignored with a warning), atomic rewrite on store (io/atomic_file.hpp).
//   version=1 precision=double rows= cols= nnz= hash=<16 hex> n=<N> xvec=<0|1>
//   algorithm=<0..4> subwarp= col_lanes= per_lane= items_per_warp= ms= gpu=<name>
// Key: fingerprint, precision, GPU name, kSpmmKernelVersion, N and whether X was vector-aligned.

/// What an SpMM tuning entry is looked up by.
struct SpmmTuneKey {
  StructureFingerprint fingerprint;
  std::string precision;  ///< "double" or "float"
  std::string gpu;
  index_t n = 0;
  bool x_vec = true;  ///< X 16-byte aligned with ldx a multiple of the vector width
  int kernel_version = kSpmmKernelVersion;
};

/// One SpMM tuning-cache line: the key, the chosen configuration and its measured time.
struct SpmmTuneEntry {
  SpmmTuneKey key;
  SpmmConfig config;
  double ms = 0;  ///< measured time of the chosen kernel, milliseconds
};

/// The SpMM tuning-cache file (format above).
class SpmmTuneCache {
 public:
  /// `dir` empty: default_tune_cache_dir(); no folder known: disabled.
  explicit SpmmTuneCache(const std::string& dir = "");
  /// The cache file, or "" when no folder is known.
  const std::string& file() const { return file_; }
  /// False when no folder is known (lookups miss, stores do nothing).
  bool enabled() const { return !file_.empty(); }
  /// The valid entry for `key`, if any. Never throws on a bad file (warns).
  std::optional<SpmmTuneEntry> lookup(const SpmmTuneKey& key) const;
  /// Adds or replaces the entry; false (with a warning) when it cannot be written. Never throws
  /// for that.
  bool store(const SpmmTuneEntry& e) const;

 private:
  std::string file_;
};

namespace detail {
/// Parses the text of a whole SpMM cache file: the valid entries of the current kernel version, in
/// file order (stale ones are dropped silently). Each corrupt line adds "<name>:<line>: <why>" to
/// *warnings when given. Never throws on bad text. Exposed for tests and the fuzz target.
std::vector<SpmmTuneEntry> parse_spmm_tune_text(std::string_view text, const std::string& name,
                                                std::vector<std::string>* warnings);
/// Parses one cache line; on failure returns nullopt and sets *why.
std::optional<SpmmTuneEntry> parse_spmm_tune_line(const std::string& line, std::string* why);
/// Formats one entry as a cache line (without the newline).
std::string format_spmm_tune_line(const SpmmTuneEntry& e);
}  // namespace detail

}  // namespace krysp
