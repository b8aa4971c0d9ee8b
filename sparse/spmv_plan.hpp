#pragma once
/// \file spmv_plan.hpp
/// The per-matrix SpMV plan. Made once (features, kernel choice, row partition, workspace: every
/// allocation happens here), then applied every iteration. A plan belongs to one sparsity
/// structure: it refuses any other matrix, and survives value updates that keep the structure.
///
/// Kernels (Huang et al., "Efficient Sparse Matrix Kernels based on Adaptive Workload-Balancing
/// and Parallel-Reduction"): row- or nonzero-balanced work, times sequential or warp-parallel
/// reduction. All four are deterministic: the same inputs give bitwise the same y on every run
/// (no floating-point atomics; partial sums of rows split between blocks are combined in a fixed
/// order: within the launch by decoupled look-back on small matrices, by a second tiny kernel on
/// large ones).
///
/// Selection: the rule (choose_spmv_rule in spmv_select.hpp) looks at row-length statistics;
/// Select::Tune times every candidate on the matrix itself, keeps the fastest and records the
/// table, and remembers the choice in the tuning cache (tune_cache.hpp) so that later runs skip
/// the profiling.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/stream.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_config.hpp"

namespace krysp {

/// How the plan picks its kernel.
struct SpmvPlanOptions {
  /// Rule: the row-statistics rule picks the kernel; Tune: time the candidates on the matrix.
  enum class Select { Rule, Tune } select = Select::Rule;
  bool force = false;  ///< use `forced` as is (tests and benchmarks); InputError if it is invalid
  SpmvConfig forced;
  /// Nonzero-balanced kernels, rows split between blocks: Auto = LookBack below
  /// SpmvRuleParams::look_back_max_nnz nonzeros (one launch: latency matters there), FixUp above (a
  /// second tiny kernel: waiting blocks would cost bandwidth). Both are deterministic; forcing one
  /// is for tests and benchmarks.
  enum class Carry { Auto, LookBack, FixUp } carry = Carry::Auto;
  // Select::Tune only:
  bool use_cache = true;  ///< look the matrix up in the tuning cache first, store the result after
  std::string cache_dir;  ///< tuning-cache folder; empty: default_tune_cache_dir() (tune_cache.hpp)
  int tune_warmup = 0;    ///< untimed rounds over all candidates before timing (kernels are preloaded)
  int tune_reps = 2;      ///< timed rounds (CUDA events, median); after the first, candidates slower
                          ///< than SpmvRuleParams::tune_prune_factor × the fastest are not run
                          ///< again, and none is when the fastest took less than
                          ///< SpmvRuleParams::tune_one_round_max_ms
};

/// How a plan's configuration was chosen, and what tuning measured (for `krysp tune`).
struct SpmvSelection {
  /// Where the configuration came from.
  enum class Source { Rule, Forced, Tuned, Cache };
  /// One timed candidate of a tuning run.
  struct Candidate {
    SpmvConfig config;
    double ms = 0;  ///< median time of one y = A·x (alpha 1, beta 0), milliseconds
  };
  Source source = Source::Rule;
  SpmvConfig rule;                    ///< what choose_spmv_rule() picks for this matrix
  std::vector<Candidate> candidates;  ///< Tuned: every candidate timed, in the order tried
  double tuning_seconds = 0;          ///< Tuned: wall time of profiling (partitions, runs, sync)
  double chosen_ms = 0;               ///< Tuned or Cache: measured time of the chosen kernel
  std::string cache_file;             ///< Tune with use_cache: the cache file consulted
};
/// "rule", "forced", "tuned" or "cache".
const char* to_string(SpmvSelection::Source s);

/// The SpMV plan of one matrix structure (see the file comment); copies share it.
template <class T>
class SpmvPlan {
 public:
  /// An invalid plan (valid() is false): a placeholder to assign to.
  SpmvPlan() = default;
  /// Makes the plan for A on the current CUDA device (uploads A if needed; throws DeviceError).
  explicit SpmvPlan(const CsrMatrix<T>& A, const SpmvPlanOptions& options = {});
  /// A plan for A copied from `like`, a plan of the same structure in the other precision (the
  /// fp32 copy of an fp64 matrix, sharing its index arrays): the configuration, row statistics and
  /// selection are reused as they are, so no row statistics are recomputed (no synchronisation for
  /// a row-balanced kernel); a nonzero-balanced kernel gets its own partition and carry workspace
  /// (one kernel, one small copy back; carry mode Auto). InputError when the structures differ.
  template <class U>
  SpmvPlan(const CsrMatrix<T>& A, const SpmvPlan<U>& like);
  /// y = alpha·A·x + beta·y on the device; beta = 0 never reads y. x and y are device pointers of
  /// A.cols() and A.rows() entries, none shared. Throws InputError when A is not the plan's matrix
  /// structure, or x or y is null or they share entries.
  /// Asynchronous on `stream` (default: the default stream); only kernels are enqueued, so a call
  /// on another stream can be captured into a CUDA graph and replayed (the look-back carry counts
  /// its launches on the device). The plan owns a small workspace that apply() writes, so one plan
  /// (and its copies, which share it) must not be applied from two host threads, or on two
  /// streams, at once.
  void apply(const CsrMatrix<T>& A, T alpha, const T* x, T beta, T* y, DeviceStream stream = {}) const;
  /// y = A·x and, fused into the same pass, *dot_xy = xᵀy (dot_xy: one device double), summed in
  /// double in a fixed order, so bitwise reproducible: CG's q = A·p and pᵀq without re-reading p
  /// and q. A must be square. The first call allocates the reduction's small workspace.
  void apply_dot(const CsrMatrix<T>& A, const T* x, T* y, double* dot_xy) const;

  /// False for a default-constructed plan (apply() then throws InputError).
  bool valid() const { return state_ != nullptr; }
  /// The kernel and launch parameters in use.
  const SpmvConfig& config() const;
  /// The row statistics the choice was made from.
  const RowStats& stats() const;
  /// The structure this plan was made for.
  const StructureFingerprint& fingerprint() const;
  /// How the configuration was chosen (rule, forced, tuned with its candidate table, or cache).
  const SpmvSelection& selection() const;
  /// How rows split between blocks of a nonzero-balanced kernel get their partial sums: "none"
  /// (no such row, or a row-balanced kernel; one launch), "look-back" (one launch) or "fix-up"
  /// (a second, small kernel). See SpmvPlanOptions::carry.
  const char* carry_mode() const;
  /// True when `A` has the structure this plan was made for.
  bool matches(const CsrMatrix<T>& A) const;
  /// How many plans this process has made (lets callers show a plan is made once, not per step).
  static std::uint64_t plans_created();

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

extern template class SpmvPlan<double>;
extern template class SpmvPlan<float>;

}  // namespace krysp
