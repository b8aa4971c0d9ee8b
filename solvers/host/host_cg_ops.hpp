#pragma once
/// \file host_cg_ops.hpp
/// CG's operations on the host: the reference the GPU backend is tested against, and the
/// fallback when no GPU is present, and the distributed path (docs/distributed.md). Vectors are
/// Kokkos host views of this rank's entries; scalars are double. A is any host LinearOperator
/// (a CsrMatrix through MatrixOperator, a DistCsrMatrix); every dot product is summed over the
/// communicator's ranks (a no-op on one rank, so a serial solve is bitwise what it was).
#include <Kokkos_Core.hpp>

#include <memory>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The host backend of cg() (solvers/cg.hpp): each operation as that file lists it.
template <class T>
class HostCgOps {
 public:
  /// A vector of n entries.
  using Vector = Kokkos::View<T*, Kokkos::HostSpace>;
  /// M (null for none) must have been set up for A; A and M must outlive the ops.
  HostCgOps(const CsrMatrix<T>& A, const Preconditioner<T>* M);
  /// A as a host operator (this rank's rows), M (null for none) of A's order, dot products summed
  /// over comm; A and M must outlive the ops.
  HostCgOps(const LinearOperator<T>& A, const Preconditioner<T>* M, const Communicator& comm = {});

  /// n, the order of A (this rank's rows when distributed).
  index_t size() const { return A_->rows(); }
  /// A new zeroed vector of n entries.
  Vector vector() const { return Vector("cg_vector", static_cast<std::size_t>(size())); }
  /// True when a preconditioner was given.
  bool has_preconditioner() const { return M_ != nullptr; }
  /// Makes `count` scalar slots, all zero.
  void reset_scalars(int count) { s_.assign(static_cast<std::size_t>(count), 0.0); }
  /// Copies every scalar slot to out.
  void read_scalars(double* out) const { std::copy(s_.begin(), s_.end(), out); }
  /// scalars[slot] = v.
  void set_scalar(int slot, double v) { s_[slot] = v; }
  /// x = 0.
  void set_zero(Vector& x) const { Kokkos::deep_copy(x, T(0)); }

  /// scalars[slot] = aᵀb (accumulated in double).
  void dot(const Vector& a, const Vector& b, int slot);
  /// r = b − A·x.
  void residual(const Vector& b, const Vector& x, Vector& r);
  /// q = A·p.
  void spmv(const Vector& p, Vector& q) { A_->apply(p.data(), q.data()); }
  /// q = A·p and scalars[pq] = pᵀq
  void spmv_dot(const Vector& p, Vector& q, int pq) {
    spmv(p, q);
    dot(p, q, pq);
  }
  /// z = M⁻¹·r (z = r without M); scalars[rz] = rᵀz, scalars[rr] = rᵀr.
  void precondition(const Vector& r, Vector& z, int rz, int rr);
  /// p = z (first) or p = z + (ρ_k/ρ_{k−1})·p, ρ from the slots rz_k and rz_prev.
  void direction(const Vector& z, Vector& p, int rz_k, int rz_prev, bool first);
  /// The CG step: α = ρ_k/pᵀAp; x += α·p, r −= α·q, z = M⁻¹·r; scalars[rz_next] = rᵀz and
  /// scalars[rr_next] = rᵀr, or a flag (cg_step_verdict) that freezes x and r.
  void update(int rz_k, int pq, const Vector& p, const Vector& q, Vector& x, Vector& r, Vector& z, int rz_next,
              int rr_next, index_t iteration);

 private:
  HostCgOps(std::shared_ptr<const LinearOperator<T>> A, const Preconditioner<T>* M, const Communicator& comm);
  std::shared_ptr<const LinearOperator<T>> A_;  ///< owns the MatrixOperator made for a CsrMatrix
  const Preconditioner<T>* M_;
  Communicator comm_;
  std::vector<double> s_;
};

extern template class HostCgOps<double>;
extern template class HostCgOps<float>;

}  // namespace krysp
