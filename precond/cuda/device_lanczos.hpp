#pragma once
/// \file device_lanczos.hpp
/// The Lanczos loop both GPU drivers share (device_chebyshev.cpp on one GPU,
/// device_dist_chebyshev.cpp over ranks; internal, CUDA-free): the vectors, α, β and ‖v‖ in
/// device memory (ab = β_{−1}, α_0, β_0, α_1, β_1, ..., ‖v‖ last), the rotation of v_prev, v and
/// w from step to step, and one download per batch of steps. A driver gives start() and step():
/// one step's launches, which differ in how they reduce (in one launch, or summed over the ranks
/// between launches).
#include <cstdint>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"

namespace krysp::detail {

/// Lanczos on S = D^{-1/2}·A·D^{-1/2} of n rows (see the file comment).
template <class T>
class DeviceLanczosLoop : public LanczosOperator {
 public:
  void steps(int count, double* alpha, double* beta) final {
    KRYSP_REQUIRE(count >= 1 && step_ + count <= max_steps_, "Chebyshev: Lanczos steps ", step_ + 1, "..",
                  step_ + count, " asked for, but at most ", max_steps_, " were planned");
    const int first = step_;
    for (int t = 0; t < count; ++t, ++step_) {
      double* prev_beta = ab_.data() + 2 * step_;  // β_{j−1}
      if (step_ > 0) {  // v_prev = v; v = w/β_{j−1} (the old v_prev becomes the next w)
        std::swap(vp_, v_);
        std::swap(v_, w_);
      }
      step(step_ > 0 ? prev_beta : norm(), prev_beta + 1, prev_beta + 2);
    }
    // One download for the batch (synchronises): α_j, β_j interleaved from α_first on.
    std::vector<double> h(2 * std::size_t(count));
    copy_to_host(h.data(), ab_.data() + 2 * first + 1, h.size() * sizeof(double));
    for (int t = 0; t < count; ++t) {
      alpha[t] = h[2 * std::size_t(t)];
      beta[t] = h[2 * std::size_t(t) + 1];
    }
  }

 protected:
  /// s: D^{-1/2} (n entries, taken over); at most max_steps steps are run (0: none, nothing made).
  DeviceLanczosLoop(index_t n, int max_steps, DeviceArray<T> s)
      : n_(n), grid_(lanczos_grid(n)), max_steps_(max_steps), s_(std::move(s)) {
    if (max_steps_ == 0) return;
    for (auto* a : {&v_, &vp_, &w_, &u_}) *a = DeviceArray<T>(std::size_t(n_));
    partials_ = DeviceArray<double>(std::size_t(grid_) + 1);  // + the ticket (zero at rest) in the last slot
    partials_.zero();
    ab_ = DeviceArray<double>(2 * std::size_t(max_steps_) + 2);  // + the start vector's norm at the end
  }
  /// Step j, with v, w and (j > 0) v_prev in place: v /= *d (β_{j−1}, or ‖v‖ at step 0), w = S·v
  /// − β_{j−1}·v_prev, *alpha = wᵀv, w −= α_j·v, *beta = ‖w‖ (device pointers into ab).
  virtual void step(const double* d, double* alpha, double* beta) = 0;
  /// v_prev, or null at step 0 (β_{−1}·v_{−1} = 0).
  const T* v_prev() const { return step_ > 0 ? vp_.data() : nullptr; }
  unsigned* ticket() { return reinterpret_cast<unsigned*>(partials_.data() + grid_); }
  double* norm() { return ab_.data() + 2 * max_steps_ + 1; }

  index_t n_;
  int grid_;
  int max_steps_;
  int step_ = 0;  ///< the step running (in step()), or the next
  DeviceArray<T> s_, v_, vp_, w_, u_;
  DeviceArray<double> partials_, ab_;
};

}  // namespace krysp::detail
