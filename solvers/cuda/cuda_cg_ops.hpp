#pragma once
/// \file cuda_cg_ops.hpp
/// CG's operations on the GPU (CUDA-free header): A is a device LinearOperator, the vector work
/// fused kernels, the reductions deterministic and kept in device slots. When A offers its fused
/// passes (FusedOperator: a device MatrixOperator), q = A·p comes with pᵀq in one pass and the
/// residual in one; otherwise A is applied and the dot product reduced apart. On several ranks
/// (a distributed device operator) every reduction is summed over the communicator.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/fused_operator.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// The GPU backend of cg() (solvers/cg.hpp): each operation as that file lists it.
template <class T>
class CudaCgOps {
 public:
  /// A device vector of n entries.
  using Vector = DeviceArray<T>;
  /// A with its SpMV plan (which must belong to A); M (null for none) must have been set up for A.
  /// A, the plan and M must outlive the ops.
  CudaCgOps(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const Preconditioner<T>* M);
  /// A as a device operator (this rank's rows when distributed), M (null for none) of A's order;
  /// dot products summed over comm on the device. A and M must outlive the ops.
  CudaCgOps(const LinearOperator<T>& A, const Preconditioner<T>* M, const Communicator& comm = {});

  /// n, the order of A.
  index_t size() const { return A_->rows(); }
  /// A new zero-filled vector.
  Vector vector() const;
  /// True when a preconditioner was given.
  bool has_preconditioner() const { return M_ != nullptr; }
  /// Makes `count` zeroed device scalar slots.
  void reset_scalars(int count);
  /// Copies every scalar slot to out (waits for the device).
  void read_scalars(double* out) const { scalars_.download(out, scalars_.size()); }
  /// scalars[slot] = v.
  void set_scalar(int slot, double v) { detail::copy_to_device(scalars_.data() + slot, &v, sizeof v); }
  /// x = 0.
  void set_zero(Vector& x) const { x.zero(); }

  /// scalars[slot] = aᵀb.
  void dot(const Vector& a, const Vector& b, int slot);
  /// r = b − A·x.
  void residual(const Vector& b, const Vector& x, Vector& r);
  /// q = A·p.
  void spmv(const Vector& p, Vector& q) { A_->apply(p.data(), q.data()); }
  /// q = A·p and scalars[pq] = pᵀq: one pass when A offers it, else the product and a dot.
  void spmv_dot(const Vector& p, Vector& q, int pq);
  /// z = M⁻¹·r (z = r without M); scalars[rz] = rᵀz, scalars[rr] = rᵀr.
  void precondition(const Vector& r, Vector& z, int rz, int rr);
  /// p = z (first) or p = z + (ρ_k/ρ_{k−1})·p.
  void direction(const Vector& z, Vector& p, int rz_k, int rz_prev, bool first);
  /// The CG step (cg.hpp), with a diagonal M fused in.
  void update(int rz_k, int pq, const Vector& p, const Vector& q, Vector& x, Vector& r, Vector& z, int rz_next,
              int rr_next, index_t iteration);

  /// True when A offered its fused passes (FusedOperator) and the ops use them.
  bool fused() const { return fused_ != nullptr; }
  /// Passes run through A's fused entry points so far (spmv_dot and residual).
  std::int64_t fused_passes() const { return fused_passes_; }

 private:
  CudaCgOps(std::shared_ptr<const LinearOperator<T>> A, const Preconditioner<T>* M, const Communicator& comm);
  /// Where every reduction's slots go: summed over the ranks on the device (Communicator::
  /// sum_device, deterministic), so every rank branches on the same bits; a no-op on one rank.
  void reduced(std::initializer_list<int> slots);
  /// True when M is applied on its own, false when none or fused as a diagonal (inv_diag_, null
  /// on a rank without rows). Decided at the first call, the same on every rank
  /// (detail::diagonal_on_every_rank: collective on several ranks, at the solve's first step).
  bool general();
  std::shared_ptr<const LinearOperator<T>> A_;  ///< owns the MatrixOperator made for a CsrMatrix
  const FusedOperator<T>* fused_;               ///< A's fused passes, or null
  const Preconditioner<T>* M_;
  Communicator comm_;
  const T* inv_diag_;  ///< M's inverse diagonal when M is diagonal (fused into the vector kernels)
  int general_ = -1;   ///< general(), once decided
  DeviceArray<double> scalars_;
  DeviceArray<double> partials_;
  DeviceArray<unsigned int> ticket_;
  int grid_ = 1;
  std::int64_t fused_passes_ = 0;
};

extern template class CudaCgOps<double>;
extern template class CudaCgOps<float>;

}  // namespace krysp
