#pragma once
/// \file device_chebyshev.hpp
/// Chebyshev preconditioning on the GPU (the method and why it is SPD: chebyshev.hpp). The vector
/// apply() runs on an SpMV plan: the matrix's own plan when the polynomial runs in the matrix's
/// precision, or a plan of the fp32 copy (PrecondOptions::cheb_single). apply_block(N, ...) with
/// N > 1 runs on an SpMM plan made lazily the first time a width N is seen; its three n × N work
/// blocks are shared by all widths and grow only when a wider N arrives (LOBPCG shrinks its
/// active block as pairs converge: no allocation then). N = 1 takes the SpMV path. Setup runs
/// on the GPU: D⁻¹, D^{-1/2} and the Gershgorin bound from A's device arrays (device_diagonal.hpp),
/// λmax by Lanczos through the matrix's SpMV plan with its scalars kept on the device (one
/// synchronisation per batch of steps, not two per step), and with cheb_single the conversion of
/// the values to fp32. CUDA-free header.
///
/// Device memory: D⁻¹ and three n-vectors of work, three n × ⌈N⌉₄ work blocks for the widest N
/// applied, and with cheb_single the fp32 values (nnz; the fp32 matrix shares A's device row
/// offsets and column indices). Not thread-safe: applies use the object's
/// work arrays and plans (like the plans themselves).
#include <cstddef>
#include <map>

#include "base/device_memory.hpp"
#include "precond/chebyshev.hpp"
#include "precond/preconditioner.hpp"
#include "sparse/spmm_plan.hpp"
#include "sparse/spmv_plan.hpp"

namespace krysp {

template <class T, class S = T>
class DeviceChebyshev final : public DevicePreconditioner<T> {
 public:
  /// `plan` must be A's SpMV plan (InputError otherwise); it is kept (plans share their state).
  DeviceChebyshev(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const PrecondOptions& o);
  PrecondKind kind() const override { return PrecondKind::Chebyshev; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  const ChebyshevInfo& info() const { return info_; }
  /// Block widths N > 1 for which an SpMM plan has been made.
  std::size_t block_widths() const { return block_plans_.size(); }

 private:
  /// The recurrence on n × N blocks; `spmv(x, ldx, y, ldy)` computes y = A·x.
  template <class Mul>
  void run(index_t N, const T* R, index_t ldr, T* Z, index_t ldz, S* u, S* v, S* w, index_t ld, Mul spmv) const;

  StructureFingerprint fingerprint_;
  DeviceArray<S> values_s_;  ///< cheb_single: the fp32 values As_ borrows (declared first: outlives As_)
  CsrMatrix<S> As_;          ///< A (shared storage) or its fp32 copy (on A's device index arrays)
  SpmvPlan<S> plan_;
  ChebyshevInfo info_;
  ChebyshevCoefficients coef_;
  DeviceArray<S> dinv_;
  mutable DeviceArray<S> u_, v_, w_;  ///< work vectors of apply()
  mutable std::map<index_t, SpmmPlan<S>> block_plans_;  ///< one per width N > 1 seen
  mutable index_t block_ld_ = 0;                       ///< the work blocks hold n × block_ld_ entries
  mutable DeviceArray<S> bu_, bv_, bw_;                ///< work blocks of apply_block
};

extern template class DeviceChebyshev<double, double>;
extern template class DeviceChebyshev<double, float>;
extern template class DeviceChebyshev<float, float>;

}  // namespace krysp
