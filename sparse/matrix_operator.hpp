#pragma once
/// \file matrix_operator.hpp
/// A CSR matrix as a LinearOperator (base/linear_operator.hpp): on the host through the reference
/// SpMV/SpMM, on the GPU through the matrix's SpMV plan and an SpMM plan per block width (made on
/// first use, then kept). This is how a matrix enters code written against operators (an AMG
/// level's smoother, a Krylov method on a composed operator); the solvers' own ops still call the
/// plans directly for their fused passes (docs/architecture.md).
#include <map>
#include <memory>
#include <tuple>

#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// A CsrMatrix as a LinearOperator, on the host or on the current GPU (see the file comment).
template <class T>
class MatrixOperator final : public LinearOperator<T> {
 public:
  /// A on the host (pointers in host memory). A is shared, not copied, and must outlive the operator.
  static MatrixOperator host(const CsrMatrix<T>& A);
  /// A on the current GPU (pointers in device memory): makes A's SpMV plan now (DeviceError
  /// without a device), SpMM plans per width when apply_block first meets it.
  static MatrixOperator device(const CsrMatrix<T>& A, const SpmvPlanOptions& spmv = {},
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

 private:
  MatrixOperator(const CsrMatrix<T>& A, MemorySpace space) : A_(A), space_(space) {}
  CsrMatrix<T> A_;  ///< shares storage with the caller's
  MemorySpace space_;
  std::shared_ptr<SpmvPlan<T>> spmv_;
  SpmmPlanOptions spmm_options_;
  mutable std::map<std::tuple<index_t, index_t, index_t>, SpmmPlan<T>> spmm_;  ///< by (N, ldx, ldy)
};

extern template class MatrixOperator<double>;
extern template class MatrixOperator<float>;

}  // namespace krysp
