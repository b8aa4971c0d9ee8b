#pragma once
/// \file matrix_operator.hpp
/// A CSR matrix as a LinearOperator (base/linear_operator.hpp): on the host through the reference
/// SpMV/SpMM, on the GPU through the matrix's SpMV plan and an SpMM plan per block width (made on
/// first use, then kept). This is how a matrix enters code written against operators (an AMG
/// level's smoother, a Krylov method on a composed operator, the solvers' GPU ops). On the device it
/// also offers the fused passes of FusedOperator (sparse/fused_operator.hpp), which the GPU ops take
/// when present (docs/architecture.md).
#include <map>
#include <memory>
#include <tuple>

#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/fused_operator.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// A CsrMatrix as a LinearOperator, on the host or on the current GPU (see the file comment).
template <class T>
class MatrixOperator final : public LinearOperator<T>, public FusedOperator<T> {
 public:
  /// A on the host (pointers in host memory). A is shared, not copied, and must outlive the operator.
  static MatrixOperator host(const CsrMatrix<T>& A);
  /// A on the current GPU (pointers in device memory): makes A's SpMV plan now (DeviceError
  /// without a device), SpMM plans per width when apply_block first meets it.
  static MatrixOperator device(const CsrMatrix<T>& A, const SpmvPlanOptions& spmv = {},
                               const SpmmPlanOptions& spmm = {});
  /// A on the current GPU with an SpMV plan made already (shared, e.g. with the preconditioner
  /// that was set up from it; it must belong to A), or null: made by the rule on first use.
  static MatrixOperator device(const CsrMatrix<T>& A, std::shared_ptr<const SpmvPlan<T>> spmv,
                               const SpmmPlanOptions& spmm = {});

  /// A's rows.
  index_t rows() const override { return A_.rows(); }
  /// A's columns.
  index_t cols() const override { return A_.cols(); }
  /// Host or Device, as made.
  MemorySpace space() const override { return space_; }
  /// y = A·x.
  void apply(const T* x, T* y) const override;
  /// Y = A·X for N columns of row-major blocks (ld ≥ N). Not thread-safe on the device: plans for
  /// new widths are made inside.
  void apply_block(index_t N, const T* X, index_t ldx, T* Y, index_t ldy) const override;
  /// The matrix.
  const CsrMatrix<T>& matrix() const { return A_; }
  /// The SpMV plan (device; made now if it was left to first use); null on the host.
  const SpmvPlan<T>* spmv_plan() const;

  /// y = A·x and *dot = xᵀy (dot in space()'s memory), on the device in one pass (the plan's).
  void apply_dot(const T* x, T* y, double* dot) const override;
  /// y = alpha·A·x + beta·y.
  void apply_scaled(T alpha, const T* x, T beta, T* y) const override;
  /// Y = alpha·A·X + beta·Y for N columns (ld ≥ N).
  void apply_block_scaled(index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy) const override;
  /// The matrix (as matrix()).
  const CsrMatrix<T>& csr() const override { return A_; }
  /// The SpMM plan for (N, ldx, ldy), made on first use (device only; InputError on the host).
  const SpmmPlan<T>& spmm_plan(index_t N, index_t ldx, index_t ldy) const override;
  /// The options SpMM plans are made with.
  const SpmmPlanOptions& spmm_options() const override { return spmm_options_; }

 private:
  MatrixOperator(const CsrMatrix<T>& A, MemorySpace space) : A_(A), space_(space) {}
  CsrMatrix<T> A_;  ///< shares storage with the caller's
  MemorySpace space_;
  mutable std::shared_ptr<const SpmvPlan<T>> spmv_;  ///< device: made on first use when not given
  SpmmPlanOptions spmm_options_;
  mutable std::map<std::tuple<index_t, index_t, index_t>, SpmmPlan<T>> spmm_;  ///< by (N, ldx, ldy)
};

extern template class MatrixOperator<double>;
extern template class MatrixOperator<float>;

}  // namespace krysp
