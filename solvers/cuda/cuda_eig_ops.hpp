#pragma once
/// \file cuda_eig_ops.hpp
/// LOBPCG's operations on the GPU (see solvers/lobpcg.hpp for the contract; CUDA-free header):
/// tall products through cuBLAS (CudaBlockOps), A·X and B·X through device LinearOperators (for a
/// device matrix, FusedOperator: SpMM plans per block width, made on first use and kept here), M⁻¹
/// through a device Preconditioner, and a fused residual/column-norm kernel
/// (solvers/cuda/eig_kernels.cu). Blocks are DeviceArray<double>; small matrices live on the host.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/cuda/cuda_block_ops.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/fused_operator.hpp"
#include "krysp/sparse/spmm_plan.hpp"

namespace krysp {

/// The GPU backend of lobpcg() (solvers/lobpcg.hpp): each operation as that file lists it.
class CudaEigOps {
 public:
  using Block = DeviceArray<double>;
  /// B null: the standard problem. M null: no preconditioner. max_cols: the widest small matrix
  /// the solver forms (3·b, or the constraint count if larger). A, B and M must outlive the ops.
  CudaEigOps(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const Preconditioner<double>* M,
             index_t max_cols, const SpmmPlanOptions& spmm = {});
  /// A and B (null: B = I) as device operators on this rank's rows, whose first is global row
  /// first_row; a device matrix among them (FusedOperator) gets SpMM plans per block width made
  /// with `spmm`. Gram matrices and column norms are summed over comm. Collective (sums the rows).
  /// A, B and M must outlive the ops.
  CudaEigOps(const LinearOperator<double>& A, const LinearOperator<double>* B, const Preconditioner<double>* M,
             index_t max_cols, const Communicator& comm = {}, const SpmmPlanOptions& spmm = {},
             std::int64_t first_row = 0);
  ~CudaEigOps();
  CudaEigOps(const CudaEigOps&) = delete;
  CudaEigOps& operator=(const CudaEigOps&) = delete;

  index_t size() const { return A_->rows(); }
  /// The order of the problem: all ranks' rows (size() on one rank).
  std::int64_t global_size() const { return global_rows_; }
  bool generalized() const { return B_ != nullptr; }
  bool has_preconditioner() const { return M_ != nullptr; }
  Block block(std::size_t count) const { return Block(count); }
  void upload(const double* host, double* dst, std::size_t count) const;
  void download(const double* src, double* host, std::size_t count) const;

  void gram(const double* X, index_t ldx, index_t bx, const double* Y, index_t ldy, index_t by, double* C) {
    blk_.gram(size(), X, ldx, bx, Y, ldy, by, C);
    reduced(C, std::size_t(bx) * by);
  }
  void gram2(const double* X, index_t ldx, index_t bx, const double* Y1, index_t ldy1, const double* Y2,
             index_t ldy2, index_t by, double* C1, double* C2) {
    blk_.gram2(size(), X, ldx, bx, Y1, ldy1, Y2, ldy2, by, C1, C2);
    reduced(C1, std::size_t(bx) * by);
    reduced(C2, std::size_t(bx) * by);
  }
  void gram_pair(const double* X1, index_t ldx1, index_t bx1, const double* Y1, index_t ldy1, index_t by1,
                 double* C1, const double* X2, index_t ldx2, index_t bx2, const double* Y2, index_t ldy2,
                 index_t by2, double* C2) {
    blk_.gram_pair(size(), X1, ldx1, bx1, Y1, ldy1, by1, C1, X2, ldx2, bx2, Y2, ldy2, by2, C2);
    reduced(C1, std::size_t(bx1) * by1);
    reduced(C2, std::size_t(bx2) * by2);
  }
  void combine(const double* X, index_t ldx, index_t bx, const double* C, double alpha, double beta, double* Y,
               index_t ldy, index_t by) {
    blk_.combine(size(), X, ldx, bx, C, alpha, beta, Y, ldy, by);
  }
  void copy(index_t cols, const double* X, index_t ldx, double* Y, index_t ldy) {
    if (cols > 0) blk_.copy(size(), cols, X, ldx, Y, ldy);
  }
  void apply_a(index_t N, const double* X, index_t ldx, double* Y, index_t ldy);
  void apply_b(index_t N, const double* X, index_t ldx, double* Y, index_t ldy);
  void precondition(index_t N, const double* R, index_t ldr, double* Z, index_t ldz);
  void residuals(index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx, const double* X,
                 index_t ldx, const double* lambda, const index_t* dest, double* R, index_t ldr, double* rr,
                 double* xx);
  void fill_random(index_t cols, double* X, index_t ldx, std::uint64_t seed, index_t first_col);

  /// Makes the SpMM plans of A (and B) for N columns now (they are otherwise made on first use),
  /// and runs the block products LOBPCG makes with a block of N once (warm_up_block_products).
  void prepare(index_t N) {
    if (fused_a_) plan(plans_a_, fused_a_->csr(), N);
    if (fused_b_) plan(plans_b_, fused_b_->csr(), N);
    warm_up_block_products(N);
  }
  /// The SpMM configuration of A's plan for N columns ("" when no such plan was made yet;
  /// "operator" when A is applied through LinearOperator only).
  std::string spmm_kernel(index_t N) const;
  /// SpMM plans made so far (for A and B together).
  std::size_t plans() const { return plans_a_.size() + plans_b_.size(); }
  /// True when A offered its fused passes (FusedOperator) and the ops use its plans.
  bool fused() const { return fused_a_ != nullptr; }
  /// Products A·X and B·X that ran through the ops' own plans so far.
  std::int64_t fused_passes() const { return fused_passes_; }

 private:
  CudaEigOps(std::shared_ptr<const LinearOperator<double>> A, std::shared_ptr<const LinearOperator<double>> B,
             const Preconditioner<double>* M, index_t max_cols, const Communicator& comm, const SpmmPlanOptions& spmm,
             std::int64_t first_row);
  const SpmmPlan<double>& plan(std::map<index_t, SpmmPlan<double>>& cache, const CsrMatrix<double>& M, index_t N);
  /// Y = Op·X through the ops' plan for N columns when Op is a device matrix, else Op.apply_block.
  void apply(const LinearOperator<double>& Op, const FusedOperator<double>* fused,
             std::map<index_t, SpmmPlan<double>>& plans, index_t N, const double* X, index_t ldx, double* Y,
             index_t ldy);
  /// Where every reduction read back goes (Gram matrices, column norms): summed over the ranks on
  /// the host (deterministic, so every rank takes the same small factorizations); a no-op on one
  /// rank.
  void reduced(double* values, std::size_t count) const {
    if (comm_.size() > 1) comm_.sum(values, count);
  }
  void warm_up_block_products(index_t N);
  std::shared_ptr<const LinearOperator<double>> A_, B_;  ///< own the MatrixOperators made for CsrMatrices
  const FusedOperator<double>* fused_a_;                  ///< A's fused passes, or null
  const FusedOperator<double>* fused_b_;                  ///< B's, or null
  const Preconditioner<double>* M_;
  Communicator comm_;
  std::int64_t first_row_ = 0;    ///< global row of this rank's first
  std::int64_t global_rows_ = 0;  ///< all ranks' rows
  std::int64_t fused_passes_ = 0;
  SpmmPlanOptions spmm_;
  CudaBlockOps<double> blk_;
  std::map<index_t, SpmmPlan<double>> plans_a_, plans_b_;
  DeviceArray<double> partials_, sums_;
  int grid_ = 1;
};

}  // namespace krysp
