#pragma once
/// \file cuda_block_cg_ops.hpp
/// Block CG's operations on the GPU (see solvers/block_cg.hpp), CUDA-free header: SpMM through
/// per-width plans (made once per width the solver uses), each remaining step one fused,
/// deterministic tall-skinny kernel (block_cg_kernels.hpp) whose small products come back in one
/// copy, s × s work on the host. A diagonal preconditioner is applied on the fly inside those
/// kernels (Z = D⁻¹·R is never stored); others fill a Z block first.
#include <map>
#include <optional>
#include <vector>

#include "base/device_memory.hpp"
#include "precond/preconditioner.hpp"
#include "solvers/block_ops.hpp"
#include "solvers/cuda/block_cg_kernels.hpp"
#include "sparse/csr.hpp"
#include "sparse/spmm_plan.hpp"

namespace krysp {

template <class T>
class CudaBlockCgOps {
 public:
  using Block = DeviceArray<T>;  ///< n × s, row-major, ld = s
  CudaBlockCgOps(const CsrMatrix<T>& A, index_t s, const DevicePreconditioner<T>* M, const SpmmPlanOptions& plan = {});

  index_t size() const { return A_.rows(); }
  index_t cols() const { return s_; }
  Block block() const;
  void zero_columns(Block& X, const std::vector<char>& zero);
  void spmm(const Block& P, index_t w, Block& Q);
  void residual(const Block& B, const Block& X, Block& R);
  void precondition(const Block& R);
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
  BlockUpdateGrams update(const Block& Qn, index_t a, const std::vector<double>& Ca, Block& R);
  BlockDirectionGrams direction(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                                const std::vector<double>& Cb, const std::vector<index_t>& active, const Block& R,
                                Block& Pnext, index_t ap = 0, const std::vector<double>& Cp = {});
  /// direction(), then Qnext = A·Pnext and PnextᵀQnext (aqa), all read back in one copy (one
  /// wait for the host instead of two).
  BlockDirectionGrams direction_spmm_gram(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                                          const std::vector<double>& Cb, const std::vector<index_t>& active,
                                          const Block& R, Block& Pnext, Block& Qnext, index_t ap = 0,
                                          const std::vector<double>& Cp = {});
  void update_x(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X);
  /// Whether block_cg should leave every other X step to the next direction pass: up to 8
  /// columns, where the direction kernel takes both steps in its pass (3-D Laplacian 160³, s = 8,
  /// H100: 0.407 ms without X, 0.703 ms with two steps, against 0.582 ms with one every time);
  /// wider blocks would need a pass of their own.
  bool pairs_x_steps() const { return s_ <= 8; }
  /// The plan for width w (made on first use; the plan for s is made in the constructor).
  const SpmmPlan<T>& plan(index_t w);

 private:
  std::vector<double> read_out(std::size_t count) const;
  /// Launches spmm_gram's kernels; the product goes to the outputs from out_offset on.
  void run_spmm_gram(const SpmmGramChoice& c, const Block& P, index_t w, Block& Q, std::size_t out_offset = 0);
  /// Launches direction's kernels; returns how many outputs they leave.
  std::size_t launch_direction(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                               const std::vector<double>& Cb, const std::vector<index_t>& active, const Block& R,
                               Block& Pnext, index_t ap, const std::vector<double>& Cp);
  detail::TallWorkspace workspace();
  const CsrMatrix<T>& A_;
  index_t s_;
  const DevicePreconditioner<T>* M_;
  const T* inv_diag_;  ///< M's inverse diagonal when M is diagonal
  SpmmPlanOptions plan_options_;
  std::map<index_t, SpmmPlan<T>> plans_;
  std::map<index_t, SpmmGramChoice> spmm_gram_;  ///< spmm_gram's choice per width
  DeviceArray<T> Z_;           ///< M⁻¹·R, for a preconditioner that is not diagonal
  int grid_ = 1;               ///< blocks of every tall-skinny launch (fixed: reproducible sums)
  std::size_t partials_ = 0;   ///< doubles of partials in work_
  DeviceArray<double> work_;   ///< the reductions' partials
  MappedArray<double> out_;    ///< their outputs, written by the device into host memory
  DeviceArray<double> coef_;   ///< coefficients of the staged kernels (s > 8): 3·s²
  DeviceArray<int> active_;    ///< active column indices (idem)
};

/// The rule of spmm_gram_choice: the fused kernel when rows are short and regular (the SpMM plan's
/// rule picked a row-balanced kernel and no row exceeds a few sub-warp loads), with the widest
/// vector loads that fit; otherwise none.
std::optional<detail::SpmmGramVariant> spmm_gram_rule(const RowStats& stats, const SpmmConfig& plan, index_t w,
                                                      index_t ld);

extern template class CudaBlockCgOps<double>;

}  // namespace krysp
