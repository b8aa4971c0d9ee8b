#pragma once
/// \file spmm_select.hpp
/// SpMM kernel choice (plain host code, testable without a GPU): the rule, the geometry that
/// completes a partial configuration, the tuning candidates, and the SpMM tuning cache.
///
/// Every threshold is a field of SpmmRuleParams (data, with the tuned values as defaults); those
/// that depend on the size of the GPU are in waves (the threads resident at once:
/// DevicePolicy::resident_threads, base/device_policy.hpp), and the rules that use them take the
/// device's policy as data (device_policy() on a GPU, an explicit one in host tests). They come
/// from the kernels' design, the paper's rule and bench/bench_spmm runs; all are provisional:
/// retune from bench/bench_spmm on the full matrix set, which prints, for every (matrix, N), the
/// rule's pick next to the fastest tuning candidate (and the candidate table in --json). The
/// measurements behind each field are in docs/tuning.md, a section per rule ("Rule parameters"
/// says how to retune).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/base/device_policy.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_config.hpp"
#include "krysp/sparse/spmm_panels.hpp"

namespace krysp {

/// The SpMM rule's parameters: every threshold and cost-model weight of choose_spmm_rule and
/// spmm_candidates, as data (docs/tuning.md, "Rule parameters"). The defaults are the values tuned
/// on the reference GPU of docs/tuning.md; a retune or a per-architecture table changes these
/// values, not the code. The rule
/// functions below take one (defaulted to these values). Sizes that depend on the GPU are in waves
/// (DevicePolicy::resident_threads). Each field says what it decides and why in a line; the
/// measurements are in docs/tuning.md, in the section named.
struct SpmmRuleParams {
  // ---- the family: VDL (parallel reduction) or CSC (sequential reduction)
  /// Largest N for which VDL is chosen, CSC above: paper (Huang et al., DA-SpMM) and measured
  /// ("VDL or CSC").
  int vdl_max_n = 4;
  /// CSC for latency-bound matrices from this N (one column a lane, rows shared by sub-warps).
  constexpr int small_csc_min_n() const { return vdl_max_n + 1; }

  // ---- latency-bound matrices (rows·32 <= latency_bound_waves waves): the longest row's chain
  /// Latency-bound when rows·32 <= this many waves: the time is then the longest row's chain, not
  /// throughput.
  double latency_bound_waves = 4;
  /// VDL: 32 lanes a row while rows·32 <= this many waves (tiny launches: widest was fastest,
  /// "Latency-bound VDL sub-warp").
  double vdl_wide_waves = 0.75;
  /// VDL sub-warp S minimises ceil(longest row / P) + this · rows·S / resident threads (chain
  /// against threads launched; fit on graph-timed candidates, "Latency-bound VDL sub-warp").
  double vdl_subwarp_wave_cost = 10;
  /// Lean VDL kernel with column lanes (a vector a lane) only where the mean row is at most this;
  /// all columns in one lane above ("Lean VDL with column lanes").
  double vdl_column_lanes_max_mean = 16;
  /// CscRow rows shared by KS sub-warps: KS minimises ceil(longest row / KS) + this · rows·S·KS·tiles
  /// / resident threads ("Latency-bound CSC, rows shared by sub-warps").
  double split_wave_cost = 96;
  /// ... over the KS whose slices of the longest row hold at most this many pairs (longer rows go
  /// to the merge path or are cut).
  double split_max_slice = 64;
  /// Two columns a lane, unsplit: its chain counts this many times one column's (the second load
  /// is issued with the first).
  double csc_two_column_chain = 1.5;
  /// CscNnz streaming (N > tune_seq_max_n, the split does not share out the longest row): only
  /// where the mean row is below this ("Latency-bound CscNnz streaming").
  double small_stream_max_mean = 8;
  /// ... and the longest row is at least this long ...
  index_t small_stream_min_max_row = 33;
  /// ... and rows·32 is above this many waves (below, CscNnz's fixed cost of two launches loses).
  double small_stream_min_waves = 1;
  /// Rows longer than t = max(long_row_min, long_row_mean_factor · mean row) can be cut into
  /// pieces (SpmmConfig::long_row; "Long rows cut into pieces").
  index_t long_row_min = 32;
  /// See long_row_min.
  double long_row_mean_factor = 4;
  /// The rule cuts only when the longest row is at least this · t: below, a piece's block costs
  /// more than the chain it saves.
  double long_row_rule_min_cut = 2.5;
  /// SeqNnz (merge path, about two launches) for latency-bound matrices, vdl_max_n < N <=
  /// tune_seq_max_n, with a row at least this long ("SeqNnz on latency-bound matrices with a long
  /// row").
  index_t small_seq_min_max_row = 200;
  /// The same for N <= vdl_max_n, among rows of at most seq_max_mean_row on average (a 32-lane
  /// VDL sub-warp needs more than 32 trips; "The same for N <= vdl_max_n").
  index_t small_seq_narrow_min_max_row = 1024;

  // ---- matrices that fill the GPU
  /// Even N in [half_lanes_min_n, half_lanes_max_n]: CscRow with S / 2 lanes of two columns, one
  /// tile (faster at N = 16, 32, not 64: "Half the CSC lanes, two columns each").
  int half_lanes_min_n = 16;
  /// See half_lanes_min_n.
  int half_lanes_max_n = 32;
  /// Row-length coefficient of variation above which work is balanced by nonzeros (merge path).
  double nnz_balance_min_cv = 1.5;
  /// Row kernel refused when the longest row costs more than this · max(min_long_row_trips,
  /// average trips per resident sub-warp): a row kernel takes about the larger of the two.
  double long_row_factor = 4;
  /// See long_row_factor.
  double min_long_row_trips = 16;
  /// CSC row cost in trips: len / this (broadcast steps with independent loads, cheaper than a
  /// VDL trip).
  double csc_pairs_per_trip = 4;
  /// SeqNnz as the nonzero-balanced pick up to this N where not latency-bound ("SeqNnz for skewed
  /// matrices") ...
  int seq_max_n = 4;
  /// ... and the mean row is at most this long.
  double seq_max_mean_row = 32;

  // ---- geometry (complete_spmm_config)
  /// VDL nonzero lanes P = pow2 >= mean row / this: two a lane amortise the per-row cost and fill
  /// the lean kernel's two loads in flight ("VDL nonzero lanes").
  double vdl_nnz_per_lane = 2.5;
  /// VDL vectors (16 bytes) a lane when N allows: 2 halves the (col, val) loads per X vector.
  int vdl_vectors_per_lane = 2;
  /// Merge-path unit (rows + nonzeros a warp).
  int items_per_warp = 256;
  /// The smaller unit below small_items items (more warps for a latency-bound launch).
  int items_per_warp_small = 64;
  /// See items_per_warp_small.
  double small_items = 1 << 18;

  // ---- tuning (spmm_candidates, SpmmPlan's Select::Tune)
  /// VDL candidates up to this N (beyond, VDL re-reads the row per column chunk).
  int tune_vdl_max_n = 64;
  /// SeqNnz candidates up to this N (a lane keeps 8 sums; beyond, it re-walks its items); also
  /// the bound of the latency-bound SeqNnz / CscNnz rules above.
  int tune_seq_max_n = 8;
  /// Row-balanced candidates whose longest row needs more trips are not timed (one run could cost
  /// hundreds of SpMMs).
  double tune_max_row_trips = 2048;
  /// After the first timed round, candidates slower than this · the fastest are dropped.
  double tune_prune_factor = 2.0;
  /// A timed sample repeats a candidate back to back for about this many ms, so latency-bound
  /// candidates rank by their time in a stream of launches ("Tuning samples").
  double tune_sample_ms = 0.05;
  /// ... replayed from a CUDA graph of at most this many calls, so host submission does not make
  /// candidates tie ("Tuning samples").
  int tune_graph_max_calls = 16;
  /// Also time the rule's pick with the launchers' other choices (SpmmConfig::launch: early loads
  /// never or always, CSC row rounds never or always, the CSC batched walk never or always), to
  /// retune SpmmLaunchParams; off by default (more candidates, longer tuning).
  bool tune_launch = false;

  // ---- column panels (choose_spmm_panels)
  /// The panel rule's traffic model ("Column panels").
  SpmmPanelParams panel;
};

/// The smallest power of two >= v, clamped to [lo, hi] (lo, hi powers of two).
int spmm_pow2_at_least(double v, int lo, int hi);

/// Fills the zero fields of `c` for N columns of `value_bytes`-byte values (8 or 4) on a matrix
/// with these statistics (spmm_config.hpp): VDL vectors per lane NV = min(vdl_vectors_per_lane,
/// ceil(N / VW)), column lanes Q = pow2 >= ceil(N / (VW·NV)) (<= S), sub-warp S = Q · (pow2 >=
/// mean row length / vdl_nnz_per_lane) in [2, 32]; CSC S = pow2 >= N in [2, 32], columns per lane
/// 2 when N > S; items_per_warp for the nonzero-balanced ones; SeqNnz S = 32, per_lane 1, no
/// column lanes. Non-zero fields are kept as given. Field names here and below are
/// SpmmRuleParams's (`p`).
SpmmConfig complete_spmm_config(SpmmConfig c, index_t N, int value_bytes, const RowStats& s,
                                const SpmmRuleParams& p = SpmmRuleParams{});

/// Is `c` (complete) a configuration the kernels accept? When not and `why` is given, *why says
/// what is wrong.
bool is_valid(const SpmmConfig& c, std::string* why = nullptr);

/// The rows of a latency-bound matrix longer than this are cut into pieces by the rule's row
/// kernels (long_row_min, long_row_mean_factor); 0 when none is (not latency-bound on `device`, or
/// no row that long).
index_t spmm_long_row_threshold(const DevicePolicy& device, const RowStats& s,
                                const SpmmRuleParams& p = SpmmRuleParams{});

/// Can the kernels run `c` (complete, valid) for N columns of `value_bytes`-byte values? Long rows
/// cut (SpmmConfig::long_row): CscRow when its column tiles cover N in one chunk a block, VdlRow
/// with one column lane and N <= per_lane · VW (the lean kernel). Four vectors a lane (VDL only):
/// the lean kernel only, N <= 4 · VW. Anything else runs at any N.
bool spmm_runs_at(const SpmmConfig& c, index_t N, int value_bytes);

/// Is the matrix small enough for its kernels to be latency-bound on `device` (see
/// latency_bound_waves)?
bool spmm_latency_bound(const DevicePolicy& device, const RowStats& s, const SpmmRuleParams& p = SpmmRuleParams{});

/// Sub-warps per row for CscRow on a latency-bound matrix with N columns (small_csc_min_n and the
/// constants after it): 1 (no split), 2, 4 or 8.
int spmm_split_rule(const DevicePolicy& device, const RowStats& s, index_t N,
                    const SpmmRuleParams& p = SpmmRuleParams{});

/// The CscRow configuration for a latency-bound matrix with N >= small_csc_min_n columns: one column
/// a lane with KS = spmm_split_rule sub-warps a row, or two columns a lane, unsplit (S lanes above
/// S columns, S / 2 lanes from S = 16), whichever costs less in the same model.
SpmmConfig spmm_small_csc_rule(const DevicePolicy& device, const RowStats& s, index_t N,
                               const SpmmRuleParams& p = SpmmRuleParams{});

/// The VDL sub-warp for a latency-bound matrix (vdl_wide_waves, vdl_subwarp_wave_cost), with
/// `per_lane` vectors a lane (0: derived).
int spmm_small_vdl_subwarp(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8,
                           int per_lane = 0, const SpmmRuleParams& p = SpmmRuleParams{});

/// Vectors a lane for the lean VDL kernel at N columns of `value_bytes`-byte values: the power of
/// two >= N / VW (1, 2 or 4), 0 when N > 4 · VW.
int spmm_lean_vdl_vectors(index_t N, int value_bytes);

/// The cheap rule (complete configuration) for `device` (device_policy() on a GPU): on a
/// latency-bound matrix whose longest row is at least long_row_rule_min_cut times t =
/// spmm_long_row_threshold, spmm_uncut_rule for rows up to t long (the lean VDL kernel with one
/// column lane where N fits it, whatever the mean row),
/// unsplit, with the longer rows cut (long_row = t) where that kernel can cut them
/// (spmm_runs_at); spmm_uncut_rule otherwise.
SpmmConfig choose_spmm_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8,
                            const SpmmRuleParams& p = SpmmRuleParams{});

/// The rule for the rows as they are (no long_row; complete configuration):
///  - N <= vdl_max_n: VDL, else CSC (S / 2 lanes of two columns for even N in [half_lanes_min_n,
///    half_lanes_max_n]); on latency-bound matrices (spmm_latency_bound) the lean VDL kernel with
///    the sub-warp of spmm_small_vdl_subwarp where N fits it (column lanes: vdl_column_lanes_max_mean),
///    CSC with long rows shared by sub-warps or two columns a lane above (small_csc_min_n,
///    spmm_small_csc_rule);
///  - nonzero-balanced (VdlNnz / CscNnz / SeqNnz) when the rows are skewed: cv > nnz_balance_min_cv
///    (not on latency-bound matrices, where only the longest row counts), or the longest row is
///    too long for the row kernel (spmm_long_row; see long_row_factor), or on a latency-bound
///    matrix with vdl_max_n < N <= tune_seq_max_n it reaches small_seq_min_max_row (N <= vdl_max_n:
///    small_seq_narrow_min_max_row, with a mean row <= seq_max_mean_row) (SeqNnz), or above
///    tune_seq_max_n it reaches small_stream_min_max_row unsplit with a mean row below
///    small_stream_max_mean and rows·32 above small_stream_min_waves waves (CscNnz);
///  - row-balanced otherwise, and always for a matrix without rows or nonzeros.
SpmmConfig spmm_uncut_rule(const DevicePolicy& device, const RowStats& s, index_t N, int value_bytes = 8,
                           const SpmmRuleParams& p = SpmmRuleParams{});

/// Cost in loop trips of the longest row, and the average cost per resident sub-warp, for a
/// complete configuration (see long_row_factor).
double spmm_max_row_trips(const RowStats& s, const SpmmConfig& c, const SpmmRuleParams& p = SpmmRuleParams{});
/// The average cost per resident sub-warp of `device` (the other half of the comparison above).
double spmm_mean_trips_per_slot(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c,
                                const SpmmRuleParams& p = SpmmRuleParams{});
/// Is the longest row too long for the row-balanced version of `c`?
bool spmm_long_row(const DevicePolicy& device, const RowStats& s, const SpmmConfig& c,
                   const SpmmRuleParams& p = SpmmRuleParams{});

/// The configurations Select::Tune times: the rule's pick first; VDL (N <= tune_vdl_max_n) row
/// kernels at S/2, S, 2S and 32 and with one vector per lane, VdlNnz; CSC row kernels at the
/// derived S and 32, at S/2 with two columns a lane when S >= 16 (on latency-bound matrices also
/// with one column per lane and with rows shared by 2, 4 and 8 sub-warps), CscNnz; SeqNnz
/// (N <= tune_seq_max_n); where spmm_long_row_threshold cuts rows, VDL (lean) and CSC row kernels
/// with long_row; with tune_launch, the rule's pick with other launch thresholds. Row-balanced ones
/// over tune_max_row_trips are left out. All valid, no duplicates.
std::vector<SpmmConfig> spmm_candidates(const DevicePolicy& device, const RowStats& s, index_t N,
                                        int value_bytes = 8, const SpmmRuleParams& p = SpmmRuleParams{});

// ---- SpMM tuning cache ----------------------------------------------------------------------------
//
// Same folder as the SpMV cache (tune_cache.hpp: SpmmPlanOptions::cache_dir, else
// default_tune_cache_dir()), its own file `spmm_tune.txt`, same conventions: one entry per line
// of tab-separated name=value fields, `#` comments, every field validated on reading (bad lines
// ignored with a warning), atomic rewrite on store (io/atomic_file.hpp).
//   version=1 precision=double rows= cols= nnz= hash=<16 hex> n=<N> xvec=<0|1>
//   algorithm=<0..4> subwarp= col_lanes= per_lane= items_per_warp= ksplit= panels= long_row= ms= gpu=<name>
//   and, only where not the defaults, the launch thresholds (SpmmLaunchParams): early_max_waves=
//   csc_row_rounds= csc_rounds_min_waves= csc_batch_max_waves= csc_batch_min_subwarp= (missing: default)
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
