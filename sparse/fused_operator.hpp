#pragma once
/// \file fused_operator.hpp
/// What an operator can do beyond LinearOperator::apply: passes fused with its product. The GPU
/// ops (solvers/cuda/) take A as a LinearOperator and ask for this with a dynamic_cast; a device
/// operator that offers it (MatrixOperator::device) gets the fused paths measurements justified
/// (CG's SpMV with pᵀq, block CG's SpMM with the Gram matrix, SpMM plans per block width), any
/// other device operator (a distributed matrix, a matrix-free one) gets apply() plus separate
/// reductions. Results are the same up to rounding; speed is what differs.
#include "krysp/base/types.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"

namespace krysp {

/// The fused passes of a CSR matrix on the device (see the file comment). Pointers are in device
/// memory; every call is asynchronous on the default stream.
template <class T>
class FusedOperator {
 public:
  virtual ~FusedOperator() = default;
  /// y = A·x and *dot = xᵀy (a double in device memory), in one pass over A.
  virtual void apply_dot(const T* x, T* y, double* dot) const = 0;
  /// y = alpha·A·x + beta·y (a residual b − A·x in one pass).
  virtual void apply_scaled(T alpha, const T* x, T beta, T* y) const = 0;
  /// Y = alpha·A·X + beta·Y for N columns of row-major blocks (ld ≥ N).
  virtual void apply_block_scaled(index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy) const = 0;
  /// The matrix, for kernels that fuse its product with more (block CG's SpMM and Gram matrix) and
  /// for plans that the ops keep themselves (LOBPCG's, one per block width).
  virtual const CsrMatrix<T>& csr() const = 0;
  /// The SpMM plan for N columns and leading dimensions ldx, ldy (made on first use, then kept).
  virtual const SpmmPlan<T>& spmm_plan(index_t N, index_t ldx, index_t ldy) const = 0;
  /// The options its SpMM plans are made with (Select::Tune also makes the ops time their fused
  /// variants).
  virtual const SpmmPlanOptions& spmm_options() const = 0;
};

}  // namespace krysp
