#pragma once
/// \file spmm_choose.hpp
/// The SpMM plan's choice, apart from its construction (internal): from the matrix's row
/// statistics, the block width and the device policy to a configuration, by the rule
/// (choose_spmm_rule, choose_spmm_panels), forced, from the tuning cache, or by timing the
/// candidates (spmm_candidates) on the matrix. SpmmPlan takes the choice and prepares its data
/// (spmm_prepared.hpp).
#include <memory>

#include "krysp/base/device_policy.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmm_config.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmm_prepared.hpp"
#include "krysp/sparse/spmm_select.hpp"

namespace krysp::detail {

/// A configuration chosen for (A, N), how it was chosen, and what the choice already made.
template <class T>
struct SpmmChoice {
  RowStats stats;           ///< A's row statistics (the rule's input)
  DevicePolicy device;      ///< the device the choice was made for
  SpmmConfig config;        ///< complete and valid
  SpmmSelection selection;  ///< rule, forced, tuned (with the candidate table) or cache
  /// A panel split made while choosing (the rule's), for the plan to reuse when config has its
  /// panel count; may be null.
  std::unique_ptr<SpmmPanels<T>> panels;
};

/// Chooses the configuration of Y = A·X with N columns on `device` (see the file comment).
template <class T>
class SpmmChooser {
 public:
  /// Computes A's row statistics and the rule's pick (panels where X outgrows L2, the split fits
  /// in memory and pays); uploads A (device_view), so that timing and the plan find it there.
  SpmmChooser(const CsrMatrix<T>& A, index_t N, const DevicePolicy& device, const SpmmRuleParams& params = {});
  /// The rule's pick (complete; panels > 1 when split).
  const SpmmConfig& rule() const { return choice_.selection.rule; }
  /// The choice `options` ask for: forced (InputError when invalid), Select::Tune (the cache, else
  /// timing the candidates and storing the fastest), or the rule. Once per chooser.
  SpmmChoice<T> choose(const SpmmPlanOptions& options);

 private:
  void force(const SpmmConfig& forced);
  void tune(const SpmmPlanOptions& options);
  /// Panel split of P panels (made once, reused), holding A's values.
  SpmmPanels<T>& panels_of(int P);
  /// Row statistics of the first of P panels: a split's kernel is chosen from them.
  RowStats first_panel_stats(int P) const;

  const CsrMatrix<T>& A_;
  index_t N_;
  SpmmRuleParams params_;
  SpmmChoice<T> choice_;
};

}  // namespace krysp::detail
