#pragma once
/// \file device_chebyshev.hpp
/// Chebyshev preconditioning on the GPU (the method and why it is SPD: chebyshev.hpp).
///
/// apply() (and apply_block with N = 1), what CG uses: by default each step x_{k+1} = x_k + ... +
/// c2·D⁻¹(r − A·x_k) is ONE fused kernel that computes row i of A·x_k and applies the recurrence
/// in its epilogue, so A·x_k is never written and read back (chebyshev_fused.cu): a warp per 32
/// rows for short even rows (CSR-stream), or the SpMV plan's sub-warp width. Irregular matrices
/// (a nonzero-balanced plan with rows longer than kChebyshevStreamMaxRow) and
/// PrecondOptions::cheb_fused = false keep the plan's SpMV followed by a vector kernel. With an
/// fp32 polynomial of degree ≥ 3, r is converted to fp32 once per apply, in the first kernel.
/// apply_block(N, ...) with N > 1 runs on an SpMM plan made lazily the first time a width N is
/// seen; its three n × N work blocks are shared by all widths and grow only when a wider N
/// arrives (LOBPCG shrinks its active block as pairs converge: no allocation then).
///
/// Setup runs on the GPU: D⁻¹, D^{-1/2} and the Gershgorin bound from A's device arrays
/// (device_diagonal.hpp); with cheb_single the fp32 copy of the values and its SpMV plan copied
/// from A's (no new row statistics); then λmax by Lanczos — on the fp32 copy with cheb_single
/// (half the bytes; λmax needs ~1e-3), else on A — with its scalars kept on the device (one
/// synchronisation per batch of steps, not two per step). CUDA-free header.
///
/// Device memory: D⁻¹ and three n-vectors of work, three n × ⌈N⌉₄ work blocks for the widest N
/// applied, and with cheb_single the fp32 values (nnz; the fp32 matrix shares A's device row
/// offsets and column indices). Not thread-safe: applies use the object's
/// work arrays and plans (like the plans themselves).
#include <cstddef>
#include <map>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// DeviceChebyshev's `step` argument: choose the vector step's kernel by the rule.
inline constexpr int kChebyshevStepAuto = -2;

template <class T, class S = T>
class DeviceChebyshev final : public Preconditioner<T> {
 public:
  /// `plan` must be A's SpMV plan (InputError otherwise); it is kept (plans share their state).
  /// `step` forces the vector step's kernel (tests, benchmarks): kChebyshevStepAuto picks it by
  /// choose_chebyshev_step (chebyshev.hpp) unless o.cheb_fused is false; −1: unfused; 0: the
  /// CSR-stream kernel; 2, 4, 8, 16, 32: lanes per row. InputError for another value.
  DeviceChebyshev(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const PrecondOptions& o,
                  int step = kChebyshevStepAuto);
  PrecondKind kind() const override { return PrecondKind::Chebyshev; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  const ChebyshevInfo& info() const { return info_; }
  /// The vector step in use: −1 unfused, 0 CSR-stream, 2..32 lanes per row (see the constructor).
  int step_kernel() const { return step_; }
  /// Block widths N > 1 for which an SpMM plan has been made.
  std::size_t block_widths() const { return block_plans_.size(); }

 private:
  /// The recurrence on n × N blocks; `spmv(x, ldx, y, ldy)` computes y = A·x.
  template <class Mul>
  void run(index_t N, const T* R, index_t ldr, T* Z, index_t ldz, S* u, S* v, S* w, index_t ld, Mul spmv) const;

  /// The fused recurrence on vectors (R and Z with strides ldr, ldz); degree >= 2.
  void run_fused(const T* R, index_t ldr, T* Z, index_t ldz) const;

  StructureFingerprint fingerprint_;
  int step_ = -1;  ///< the vector step's kernel (step_kernel())
  DeviceArray<S> values_s_;  ///< cheb_single: the fp32 values As_ borrows (declared first: outlives As_)
  CsrMatrix<S> As_;          ///< A (shared storage) or its fp32 copy (on A's device index arrays)
  SpmvPlan<S> plan_;
  ChebyshevInfo info_;
  ChebyshevCoefficients coef_;
  DeviceArray<S> dinv_;
  mutable DeviceArray<S> u_, v_, w_;  ///< work vectors of apply(); w_: A·x_k (unfused) or r in S (fused)
  mutable std::map<index_t, SpmmPlan<S>> block_plans_;  ///< one per width N > 1 seen
  mutable index_t block_ld_ = 0;                       ///< the work blocks hold n × block_ld_ entries
  mutable DeviceArray<S> bu_, bv_, bw_;                ///< work blocks of apply_block
};

extern template class DeviceChebyshev<double, double>;
extern template class DeviceChebyshev<double, float>;
extern template class DeviceChebyshev<float, float>;

}  // namespace krysp
