#pragma once
/// \file cuda_eig_ops.hpp
/// LOBPCG's operations on the GPU (see solvers/lobpcg.hpp for the contract; CUDA-free header):
/// tall products through cuBLAS (CudaBlockOps), A·X and B·X through SpMM plans made per block
/// width on first use, M⁻¹ through a device Preconditioner, and a fused residual/column-norm kernel
/// (solvers/cuda/eig_kernels.cu). Blocks are DeviceArray<double>; small matrices live on the host.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/cuda/cuda_block_ops.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"

namespace krysp {

class CudaEigOps {
 public:
  using Block = DeviceArray<double>;
  /// B null: the standard problem. M null: no preconditioner. max_cols: the widest small matrix
  /// the solver forms (3·b, or the constraint count if larger). A, B and M must outlive the ops.
  CudaEigOps(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const Preconditioner<double>* M,
             index_t max_cols, const SpmmPlanOptions& spmm = {});
  ~CudaEigOps();
  CudaEigOps(const CudaEigOps&) = delete;
  CudaEigOps& operator=(const CudaEigOps&) = delete;

  index_t size() const { return A_.rows(); }
  bool generalized() const { return B_ != nullptr; }
  bool has_preconditioner() const { return M_ != nullptr; }
  Block block(std::size_t count) const { return Block(count); }
  void upload(const double* host, double* dst, std::size_t count) const;
  void download(const double* src, double* host, std::size_t count) const;

  void gram(const double* X, index_t ldx, index_t bx, const double* Y, index_t ldy, index_t by, double* C) {
    blk_.gram(size(), X, ldx, bx, Y, ldy, by, C);
  }
  void gram2(const double* X, index_t ldx, index_t bx, const double* Y1, index_t ldy1, const double* Y2,
             index_t ldy2, index_t by, double* C1, double* C2) {
    blk_.gram2(size(), X, ldx, bx, Y1, ldy1, Y2, ldy2, by, C1, C2);
  }
  void gram_pair(const double* X1, index_t ldx1, index_t bx1, const double* Y1, index_t ldy1, index_t by1,
                 double* C1, const double* X2, index_t ldx2, index_t bx2, const double* Y2, index_t ldy2,
                 index_t by2, double* C2) {
    blk_.gram_pair(size(), X1, ldx1, bx1, Y1, ldy1, by1, C1, X2, ldx2, bx2, Y2, ldy2, by2, C2);
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
    plan(plans_a_, A_, N);
    if (B_) plan(plans_b_, *B_, N);
    warm_up_block_products(N);
  }
  /// The SpMM configuration of A's plan for N columns ("" when no such plan was made yet).
  std::string spmm_kernel(index_t N) const;
  /// SpMM plans made so far (for A and B together).
  std::size_t plans() const { return plans_a_.size() + plans_b_.size(); }

 private:
  const SpmmPlan<double>& plan(std::map<index_t, SpmmPlan<double>>& cache, const CsrMatrix<double>& M, index_t N);
  void warm_up_block_products(index_t N);
  const CsrMatrix<double>& A_;
  const CsrMatrix<double>* B_;
  const Preconditioner<double>* M_;
  SpmmPlanOptions spmm_;
  CudaBlockOps<double> blk_;
  std::map<index_t, SpmmPlan<double>> plans_a_, plans_b_;
  DeviceArray<double> partials_, sums_;
  int grid_ = 1;
};

}  // namespace krysp
