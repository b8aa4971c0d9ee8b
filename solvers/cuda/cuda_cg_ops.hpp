#pragma once
/// \file cuda_cg_ops.hpp
/// CG's operations on the GPU (CUDA-free header): SpMV through the matrix's plan, fused vector
/// kernels, deterministic reductions, and scalars kept in device slots.
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

template <class T>
class CudaCgOps {
 public:
  using Vector = DeviceArray<T>;
  /// The plan must belong to A; M (null for none) must have been set up for A. Both must outlive
  /// the ops.
  CudaCgOps(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const Preconditioner<T>* M);

  index_t size() const { return A_.rows(); }
  Vector vector() const;  ///< zero-filled
  bool has_preconditioner() const { return M_ != nullptr; }
  void reset_scalars(int count);
  void read_scalars(double* out) const { scalars_.download(out, scalars_.size()); }
  void set_scalar(int slot, double v) { detail::copy_to_device(scalars_.data() + slot, &v, sizeof v); }
  void set_zero(Vector& x) const { x.zero(); }

  void dot(const Vector& a, const Vector& b, int slot);
  void residual(const Vector& b, const Vector& x, Vector& r);
  void spmv(const Vector& p, Vector& q) { plan_.apply(A_, T(1), p.data(), T(0), q.data()); }
  /// q = A·p and scalars[pq] = pᵀq, in one pass (the plan's fused dot)
  void spmv_dot(const Vector& p, Vector& q, int pq) { plan_.apply_dot(A_, p.data(), q.data(), scalars_.data() + pq); }
  void precondition(const Vector& r, Vector& z, int rz, int rr);
  void direction(const Vector& z, Vector& p, int rz_k, int rz_prev, bool first);
  void update(int rz_k, int pq, const Vector& p, const Vector& q, Vector& x, Vector& r, Vector& z, int rz_next,
              int rr_next, index_t iteration);

 private:
  const CsrMatrix<T>& A_;
  const SpmvPlan<T>& plan_;
  const Preconditioner<T>* M_;
  const T* inv_diag_;  ///< M's inverse diagonal when M is diagonal (fused into the vector kernels)
  DeviceArray<double> scalars_;
  DeviceArray<double> partials_;
  DeviceArray<unsigned int> ticket_;
  int grid_ = 1;
};

extern template class CudaCgOps<double>;
extern template class CudaCgOps<float>;

}  // namespace krysp
