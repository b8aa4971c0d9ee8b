#pragma once
/// \file amg_device_lanczos.hpp
/// λmax of a level's D^{-1/2}·A·D^{-1/2}, or of the node-block smoother's L⁻¹·A·L⁻ᵀ, on the GPU
/// for the AMG set-up (the host's LevelLanczos, amg.cpp, step for step). Internal; CUDA-free.
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/types.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/amg_device_csr.hpp"

namespace krysp::detail {

/// Lanczos on D^{-1/2}·A·D^{-1/2} on the device: α and β stay in device memory; a batch of steps
/// is queued and downloaded with one synchronisation (steps past a stop are wasted, never a
/// different result: lanczos_largest decides from the α, β). Levels of at most 4,096 rows and
/// 65,536 entries run a batch in one launch of one block (the same bits), larger ones a launch a
/// phase.
///
/// A full set-up may record the first kAmgLanczosRecordSteps Lanczos vectors (in float) and form the
/// largest Ritz vector from them (ritz_vector); a numeric re-set-up starts from it (`warm`).
/// From a Ritz vector of the old values the new λmax is near after a few steps, so the settling
/// test may stop the run after kAmgWarmLanczosMinSteps instead of kLanczosMinSteps: the re-set-up's
/// Lanczos was 40% of its time on the 3-D Laplacian (docs/amg.md, "The numeric re-set-up").
class GpuLevelLanczos final : public LanczosOperator {
 public:
  /// s: D^{-1/2} (n entries). warm: a start vector of n entries (null: the fixed one); record:
  /// keep the basis for ritz_vector() when device memory allows (a quarter of what is free at
  /// most). one_block: run each batch in one launch (k_lz_block_steps; the same bits) when the
  /// level is small enough and the device gives it the shared memory; false: a launch a phase.
  GpuLevelLanczos(const DCsr& A, const double* s, const float* warm = nullptr, double old_lambda = 0,
                  bool record = false, bool one_block = true);
  /// The block smoother's operator L⁻¹·A·L⁻ᵀ (similar to D_b⁻¹A), L⁻¹ the node blocks' factors'
  /// inverses (b × b a node, lower triangular): the host's LevelLanczos for blocks; the rest as above.
  GpuLevelLanczos(const DCsr& A, const double* linv, int b, const float* warm, double old_lambda, bool record,
                  bool one_block = true);
  void start() override;
  void steps(int count, double* alpha, double* beta) override;
  int batch() const override { return 4; }
  int first_batch() const override;
  int min_steps(double theta) const override;

  /// The largest Ritz vector of the first m steps (in S's coordinates, float; n entries), or an
  /// empty array when the basis was not recorded or m is past it.
  DeviceArray<float> ritz_vector(int m) const;

 private:
  void launch_steps(int count);        // steps step_ .. step_ + count − 1, a launch a phase
  void launch_block_steps(int count);  // the same steps (and a pending start) in one launch of one block
  void init();
  double* norm();
  const DCsr& A_;
  const double* s_;
  const float* warm_;
  double old_lambda_;  // the estimate the warm start's Ritz vector came with
  index_t n_;
  int grid_;
  int lanes_;  // of the SpMV
  bool one_block_;
  int pending_start_ = 0;  // one_block_: LzBlockArgs::start for the next launch
  int step_ = 0;
  DeviceArray<double> v_, vp_, w_, u_, y_, partials_, ab_;
  DeviceArray<unsigned> counter_;  // finish_if_last's arrivals
  DeviceArray<float> basis_;
  const double* linv_ = nullptr;  // node blocks' L⁻¹ (block smoother), else D^{-1/2} in s_
  int b_ = 1;
  std::vector<double> alpha_, beta_;  // every step's, as downloaded
};

}  // namespace krysp::detail
