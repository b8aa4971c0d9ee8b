#pragma once
/// \file spmm_plan.hpp
/// The per-(matrix, N) SpMM plan: Y = alpha·A·X + beta·Y, where X (A.cols() × N) and Y
/// (A.rows() × N) are dense ROW-MAJOR blocks (the N values of a row are contiguous) with leading
/// dimensions ldx, ldy >= N. Made for small N (block methods: N = 2..64), any N >= 1 works.
///
/// Kernels (Huang et al., DA-SpMM / GE-SpMM design space): parallel or sequential reduction,
/// times row- or nonzero-balanced work:
///  - VDL (vector-type dense-row loading, parallel reduction): the lanes of a sub-warp share the
///    nonzeros of a row; each lane loads X[k, j:j+w] with 16-byte vector loads (double2 / float4)
///    and keeps w partial sums per vector; one reduce-scatter over the sub-warp per row. Aimed at
///    N = 1..16. The vector loads need X + k·ldx + j 16-byte aligned (X aligned and ldx a
///    multiple of the vector width): apply() checks, and the same kernel falls back to scalar
///    loads when that does not hold.
///  - CSC (coalesced sparse-row caching, sequential reduction): a sub-warp loads up to 32
///    (column, value) pairs of a row into shared memory in one coalesced access; then each lane
///    walks them for its own columns of Y (lane j: columns j, j+S, ...). Aimed at larger N.
///    On small matrices a row may be shared by 2..8 sub-warps (SpmmConfig::ksplit), each
///    walking one slice of it, the slices' sums added in shared memory in slice order; small
///    launches walk the cached pairs 8 at a time with all their X loads in flight.
///  - SeqNnz (thread-sequential merge path, nonzero-balanced only): for short, irregular rows
///    at small N, where a sub-warp per row idles most of its lanes. Every lane of a unit's warp
///    walks its own equal share of the unit's rows and nonzeros with up to 8 columns in
///    registers (16-byte loads of X when aligned, as VDL), finishing rows as it goes; rows split
///    between lanes are joined by a segmented warp scan. N > 8 loops over chunks of 8 columns.
///  - row-balanced: one sub-warp per row; nonzero-balanced: merge-path units of equal
///    (rows + nonzeros), one warp each; a row split between units leaves partial sums that a
///    fix-up kernel combines in unit order.
///  - long rows (SpmmConfig::long_row, row kernels on latency-bound matrices): the few rows far
///    longer than the others are cut into pieces of a block each, the block's sub-warps sharing a
///    piece; the last block of a row to finish adds the pieces' sums in a fixed order, in the same
///    launch (a ticket per row in the plan's workspace), so the longest chain is a piece's.
/// Every variant is deterministic (bitwise equal results across runs: no floating-point atomics).
/// Any N: columns come in tiles (the VDL and CSC chunks run in parallel over blockIdx.y); the
/// last tile is masked, so N = 17 does not fall back to a scalar path. beta = 0 never reads Y
/// (NaN in Y does not propagate); columns >= N of a row of Y (the padding up to ldy) are never
/// read or written, nor are columns >= N of X read.
///
/// Column panels (SpmmConfig::panels, spmm_panels.hpp): where X outgrows L2 and the columns are
/// scattered, the plan splits the matrix into column panels applied one after another, so that
/// each panel's gathers hit L2; the split copies the structure and values, and apply() gathers
/// the values again after A's values change.
///
/// Selection: choose_spmm_rule (spmm_select.hpp) and choose_spmm_panels, or Select::Tune, which times the candidates on
/// the matrix with CUDA events, keeps the fastest, records the table and remembers the choice in
/// the SpMM tuning cache (spmm_select.hpp; same folder as the SpMV cache, key includes N).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/stream.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_config.hpp"

namespace krysp {

/// How a plan picks its kernel.
struct SpmmPlanOptions {
  /// Rule: the row-statistics rule picks the kernel; Tune: time the candidates on the matrix.
  enum class Select { Rule, Tune } select = Select::Rule;
  bool force = false;  ///< use `forced` (zero fields derived); InputError if it is invalid
  SpmmConfig forced;
  // Select::Tune only:
  index_t ldx = 0, ldy = 0;  ///< leading dimensions to tune with (0: N); they decide vector alignment
  bool use_cache = true;     ///< look up / store the SpMM tuning cache
  std::string cache_dir;     ///< empty: default_tune_cache_dir() (tune_cache.hpp)
  int tune_warmup = 1;       ///< untimed runs per candidate
  int tune_reps = 5;  ///< timed samples per candidate (CUDA events; a sample repeats a short call
                      ///< back to back: SpmmRuleParams::tune_sample_ms); the median counts
  /// Also time the rule's pick with the launchers' other choices (SpmmConfig::launch;
  /// SpmmRuleParams::tune_launch): more candidates, to retune the launch thresholds.
  bool tune_launch = false;
};

/// How the plan's configuration was chosen and what tuning measured.
struct SpmmSelection {
  /// Where the configuration came from.
  enum class Source { Rule, Forced, Tuned, Cache };
  /// One timed candidate of a tuning run.
  struct Candidate {
    SpmmConfig config;
    double ms = 0;  ///< median time per call of Y = A·X (alpha 1, beta 0) in back-to-back calls, ms
  };
  Source source = Source::Rule;
  SpmmConfig rule;                    ///< what the rule picks (completed)
  std::vector<Candidate> candidates;  ///< Tuned: every candidate timed, in the order tried
  double tuning_seconds = 0;          ///< Tuned: wall time of profiling
  double chosen_ms = 0;               ///< Tuned or Cache: time of the chosen kernel
  std::string cache_file;             ///< the cache file consulted ("" when none)
};
/// "rule", "forced", "tuned" or "cache".
const char* to_string(SpmmSelection::Source s);

/// The SpMM plan of one matrix structure and block width N (see the file comment); copies share it.
template <class T>
class SpmmPlan {
 public:
  /// An invalid plan (valid() is false): a placeholder to assign to.
  SpmmPlan() = default;
  /// Makes the plan for A and N columns on the current CUDA device (uploads A if needed; all
  /// device allocations happen here). InputError for N < 1 or an invalid forced configuration.
  SpmmPlan(const CsrMatrix<T>& A, index_t N, const SpmmPlanOptions& options = {});
  /// Y = alpha·A·X + beta·Y on the device, asynchronous on `stream` (default: the default stream).
  /// X: device pointer to A.cols() rows of ldx entries (first N used); Y: A.rows() rows of ldy
  /// entries; X and Y must not share entries (they may be interleaved column blocks of one array).
  /// InputError when A is not the plan's matrix structure, ldx < N or ldy < N, or X and Y share
  /// entries. The plan owns a small workspace (carries of the nonzero-balanced kernels)
  /// that apply() writes: one plan (and its copies) must not run twice at once, from two host
  /// threads or on two streams. Only kernels are enqueued (A's device arrays exist since the plan
  /// was made), so apply() on a stream other than the default one can be captured into a CUDA
  /// graph. A matrix split into column panels (config().panels > 1) reads copies of its values
  /// gathered when they change: after a change of A's values, capture again (a device-borrowed
  /// matrix without promise_notify gathers them in every apply(), captured too).
  ///
  /// Early matrix loads (may_load_early): on small launches, when krysp tracks A's values
  /// (CsrMatrix::values_tracked: a host-built matrix, or a device-borrowed one whose caller called
  /// CsrMatrix::promise_notify) and they are those of this plan's last apply() on the same stream
  /// (CsrMatrix::values_stamp), the kernel loads A before the kernel ahead of it on the stream has
  /// finished (X and Y only after). For such a matrix, new values written by a kernel must be
  /// declared (CsrMatrix::notify_values_changed, set_values, set_values_device) before the next
  /// apply(). A device-borrowed matrix without the promise never loads early: values its caller
  /// changed in place are read right, notified or not.
  void apply(const CsrMatrix<T>& A, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy,
             DeviceStream stream = {}) const;
  /// Whether the next apply(A, ..., stream) may load A early (see apply(); the kernels then do in
  /// small launches only): A has this plan's structure, krysp tracks its values, they are those of
  /// this plan's last apply() and it ran on `stream`, and overlapped launches are on
  /// (early_loads.hpp, spmm_may_load_early). False for an invalid plan.
  bool may_load_early(const CsrMatrix<T>& A, DeviceStream stream = {}) const;

  /// False for a default-constructed plan (apply() then throws InputError).
  bool valid() const { return state_ != nullptr; }
  index_t n() const;  ///< N, the number of columns of X and Y
  /// The kernel and launch parameters in use.
  const SpmmConfig& config() const;
  /// The row statistics the choice was made from.
  const RowStats& stats() const;
  /// The structure this plan was made for.
  const StructureFingerprint& fingerprint() const;
  /// How the configuration was chosen (rule, forced, tuned with its candidate table, or cache).
  const SpmmSelection& selection() const;
  /// Kernel launches per apply() (1, or 2 with the fix-up of rows split between units).
  int launches_per_apply() const;
  /// Would apply() use 16-byte vector loads of X for these X and ldx? (VDL kernels only.)
  static bool vector_aligned(const T* X, index_t ldx);
  /// True when A has the structure and N this plan was made for.
  bool matches(const CsrMatrix<T>& A, index_t N) const;
  /// How many SpMM plans this process has made.
  static std::uint64_t plans_created();

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

extern template class SpmmPlan<double>;
extern template class SpmmPlan<float>;

}  // namespace krysp
