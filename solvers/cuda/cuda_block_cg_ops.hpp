#pragma once
/// \file cuda_block_cg_ops.hpp
/// Block CG's operations on the GPU (see solvers/block_cg.hpp), CUDA-free header. A is a device
/// LinearOperator; when it offers its fused passes (FusedOperator: a device MatrixOperator), the
/// SpMM runs through its per-width plans, fused with the Gram matrix where that is faster;
/// otherwise A is applied and the Gram matrix formed apart. Gram matrices by deterministic tall-skinny kernels (block_cg_kernels.hpp) whose
/// small products come back through mapped memory; block updates through cuBLAS; s × s work on
/// the host.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"
#include "krysp/solvers/cuda/cuda_block_ops.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/fused_operator.hpp"
#include "krysp/sparse/spmm_plan.hpp"

namespace krysp {

/// The GPU backend of block_cg() (solvers/block_cg.hpp): each operation as that file lists it.
template <class T>
class CudaBlockCgOps {
 public:
  using Block = DeviceArray<T>;  ///< n × s, row-major, ld = s
  /// A with SpMM plans made with `plan`; M (null for none) must have been set up for A. A and M
  /// must outlive the ops.
  CudaBlockCgOps(const CsrMatrix<T>& A, index_t s, const Preconditioner<T>* M, const SpmmPlanOptions& plan = {});
  /// A as a device operator (this rank's rows when distributed), M (null for none) of A's order;
  /// Gram matrices summed over comm. A and M must outlive the ops.
  CudaBlockCgOps(const LinearOperator<T>& A, index_t s, const Preconditioner<T>* M, const Communicator& comm = {});

  index_t size() const { return A_->rows(); }
  index_t cols() const { return s_; }
  Block block() const;
  void zero_columns(Block& X, const std::vector<char>& zero);
  void spmm(const Block& P, index_t w, Block& Q);
  void residual(const Block& B, const Block& X, Block& R);
  std::vector<double> gram(const Block& X, index_t bx, const Block& Y, index_t by);
  /// Q = A·P (first w columns) and PᵀQ (w × w, column-major), in one fused pass where that is
  /// faster (spmm_gram_choice).
  std::vector<double> spmm_gram(const Block& P, index_t w, Block& Q);
  /// How spmm_gram() runs at width w: a fused kernel, or none (the SpMM plan, then the Gram
  /// kernel).
  using SpmmGramChoice = std::optional<detail::SpmmGramVariant>;
  /// The choice for width w, made on first use: by timing the candidates on P and Q when the plan
  /// options say Select::Tune, else by a rule on the row statistics (spmm_gram_rule).
  SpmmGramChoice spmm_gram_choice(index_t w, const Block& P, Block& Q, std::size_t out_offset = 0);
  /// Fixes the choice for width w (tests and benchmarks); InputError if the variant cannot serve w.
  void force_spmm_gram(index_t w, SpmmGramChoice choice);
  /// Z = M⁻¹·R for the first w columns (Z = R without M).
  void precondition(const Block& R, index_t w, Block& Z);
  /// {Xᵀ·Y1, Xᵀ·Y2} of the first b columns of each, read back in one copy (one wait).
  std::pair<std::vector<double>, std::vector<double>> gram2(const Block& X, index_t b, const Block& Y1,
                                                            const Block& Y2);
  /// W = Q·Cq − AP·ξ (Cq: wq × w, ξ: w × w) into the first w columns of Q, from its first wq, and
  /// Z = M⁻¹·W; returns {WᵀZ, WᵀW}. Up to 8 columns one pass (a diagonal M applied on the fly: Z
  /// is not stored), up to kMaxStepCols a pass and the Gram kernels, block updates beyond.
  std::pair<std::vector<double>, std::vector<double>> step(const Block& AP, index_t w, const std::vector<double>& xi,
                                                           Block& Q, index_t wq, const std::vector<double>& Cq,
                                                           Block& Z);
  /// X += P·Cx (Cx: w × s), then P = Z·Cw + P·Tt (Cw, Tt: w × w2, w2 ≤ w), Z as step() left it
  /// (from W in Q where it is not stored): one pass in place up to kMaxStepCols columns, block
  /// updates into a spare block (swapped in) beyond.
  void rotate(const Block& Q, const Block& Z, Block& P, Block& X, index_t w, index_t w2,
              const std::vector<double>& Cw, const std::vector<double>& Tt, const std::vector<double>& Cx);
  /// Y = alpha·X·C + beta·Y for the first bx columns of X and by of Y (C bx × by, column-major,
  /// host); does not wait for the device.
  void combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta, Block& Y,
               index_t by);
  /// The plan for width w (made on first use; the plan for s is made in the constructor).
  /// InputError when A offers no fused passes (it has no plans then).
  const SpmmPlan<T>& plan(index_t w);
  /// The SpMM kernel for s columns, for reports: the plan's configuration, or "operator" when A
  /// is applied through LinearOperator only.
  std::string spmm_kernel();
  /// True when A offered its fused passes (FusedOperator) and the ops use them.
  bool fused() const { return fused_ != nullptr; }
  /// SpMMs that ran with the Gram matrix in one kernel so far (spmm_gram on a fused variant).
  std::int64_t fused_passes() const { return fused_passes_; }

 private:
  std::vector<double> read_out(std::size_t count) const;
  /// Launches spmm_gram's kernels; the product goes to the outputs from out_offset on.
  void run_spmm_gram(const SpmmGramChoice& c, const Block& P, index_t w, Block& Q, std::size_t out_offset = 0);
  detail::TallWorkspace workspace();
  /// Where step() and rotate() take Z = M⁻¹·W from (by the preconditioner's kind).
  detail::ZSource zsource() const;
  CudaBlockCgOps(std::shared_ptr<const LinearOperator<T>> A, index_t s, const Preconditioner<T>* M,
                 const Communicator& comm);
  /// Where every Gram matrix read back goes: summed over the ranks on the host (deterministic, so
  /// every rank takes the same small factorizations); a no-op on one rank.
  void reduced(std::vector<double>& values) const;
  std::shared_ptr<const LinearOperator<T>> A_;  ///< owns the MatrixOperator made for a CsrMatrix
  const FusedOperator<T>* fused_;               ///< A's fused passes, or null
  index_t s_;
  const Preconditioner<T>* M_;
  Communicator comm_;
  SpmmPlanOptions plan_options_;
  std::map<index_t, SpmmGramChoice> spmm_gram_;  ///< spmm_gram's choice per width
  int grid_ = 1;               ///< blocks of every tall-skinny launch (fixed: reproducible sums)
  std::size_t partials_ = 0;   ///< doubles of partials in work_
  DeviceArray<double> work_;   ///< the reductions' partials
  MappedArray<double> out_;    ///< their outputs, written by the device into host memory
  CudaBlockOps<T> blk_;        ///< combine() and copies
  const T* inv_diag_;          ///< M's inverse diagonal when M is diagonal (applied inside step())
  DeviceArray<T> spare_;       ///< step()'s and rotate()'s outputs beyond kMaxStepCols columns
  std::int64_t fused_passes_ = 0;
};

/// The rule of spmm_gram_choice: the fused kernel when rows are short and regular (the SpMM plan's
/// rule picked a row-balanced kernel and no row exceeds a few sub-warp loads), with the widest
/// vector loads that fit; otherwise none.
std::optional<detail::SpmmGramVariant> spmm_gram_rule(const RowStats& stats, const SpmmConfig& plan, index_t w,
                                                      index_t ld);

extern template class CudaBlockCgOps<double>;

}  // namespace krysp
