#include "krysp/solvers/cuda/cuda_cg_ops.hpp"

#include "krysp/base/error.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/solvers/cuda/cg_kernels.hpp"
#include "krysp/solvers/cuda/device_operator.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

namespace {
template <class T>
std::shared_ptr<const LinearOperator<T>> device_operator(const CsrMatrix<T>& A, const SpmvPlan<T>& plan,
                                                         const Preconditioner<T>* M) {
  // The structure checks need the matrix, which the operator constructor does not see.
  KRYSP_REQUIRE(plan.matches(A), "CG: the SpMV plan was not made for this matrix");
  KRYSP_REQUIRE(!M || M->matches(A), "CG: the preconditioner was set up for another matrix");
  return std::make_shared<MatrixOperator<T>>(MatrixOperator<T>::device(A, detail::borrowed(plan)));
}
}  // namespace

template <class T>
CudaCgOps<T>::CudaCgOps(const CsrMatrix<T>& A, const SpmvPlan<T>& plan, const Preconditioner<T>* M)
    : CudaCgOps(device_operator(A, plan, M), M, Communicator()) {}

template <class T>
CudaCgOps<T>::CudaCgOps(const LinearOperator<T>& A, const Preconditioner<T>* M, const Communicator& comm)
    : CudaCgOps(detail::borrowed(A), M, comm) {}

template <class T>
CudaCgOps<T>::CudaCgOps(std::shared_ptr<const LinearOperator<T>> A, const Preconditioner<T>* M,
                        const Communicator& comm)
    : A_(std::move(A)), fused_(detail::fused_passes(*A_)), M_(M), comm_(comm),
      inv_diag_(M ? M->inverse_diagonal() : nullptr) {
  detail::require_device_operator("CG", *A_, comm_, true);
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Device, "CG: a ", to_string(M->space()),
                " preconditioner given to the GPU backend");
  KRYSP_REQUIRE(!M || M->rows() == A_->rows(), "CG: the preconditioner was set up for another matrix (order ",
                M->rows(), ", not ", A_->rows(), ")");
  grid_ = detail::reduce_grid();
  partials_ = DeviceArray<double>(std::size_t(grid_) * 2);
  ticket_ = DeviceArray<unsigned int>(1);
  ticket_.zero();
}

template <class T>
DeviceArray<T> CudaCgOps<T>::vector() const {
  DeviceArray<T> v(static_cast<std::size_t>(size()));
  v.zero();
  return v;
}

template <class T>
void CudaCgOps<T>::reset_scalars(int count) {
  scalars_ = DeviceArray<double>(static_cast<std::size_t>(count));
  scalars_.zero();
}

namespace {
detail::ReduceWorkspaceRef ws(DeviceArray<double>& partials, DeviceArray<unsigned int>& ticket, int grid) {
  return {partials.data(), ticket.data(), grid};
}
}  // namespace

template <class T>
void CudaCgOps<T>::dot(const Vector& a, const Vector& b, int slot) {
  detail::launch_dot(size(), a.data(), b.data(), scalars_.data(), slot, ws(partials_, ticket_, grid_));
  reduced({slot});
}

template <class T>
void CudaCgOps<T>::spmv_dot(const Vector& p, Vector& q, int pq) {
  if (!fused_) {
    spmv(p, q);
    return dot(p, q, pq);
  }
  fused_->apply_dot(p.data(), q.data(), scalars_.data() + pq);
  ++fused_passes_;
  reduced({pq});
}

template <class T>
void CudaCgOps<T>::residual(const Vector& b, const Vector& x, Vector& r) {
  if (fused_) {
    detail::launch_copy(size(), b.data(), r.data());
    fused_->apply_scaled(T(-1), x.data(), T(1), r.data());  // r = b − A·x
    ++fused_passes_;
    return;
  }
  A_->apply(x.data(), r.data());
  detail::launch_subtract_from(size(), b.data(), r.data());
}

template <class T>
bool CudaCgOps<T>::general() {
  if (general_ < 0) {
    const bool diagonal = detail::diagonal_on_every_rank(M_, comm_);
    if (!diagonal) inv_diag_ = nullptr;
    general_ = M_ && !diagonal ? 1 : 0;
  }
  return general_ == 1;
}

template <class T>
void CudaCgOps<T>::precondition(const Vector& r, Vector& z, int rz, int rr) {
  const bool general = this->general();  // neither none nor diagonal: apply M on its own first
  if (general) M_->apply(r.data(), z.data());
  detail::launch_precondition(size(), inv_diag_, r.data(), z.data(), general, scalars_.data(), rz, rr,
                              ws(partials_, ticket_, grid_));
  reduced({rz, rr});
}

template <class T>
void CudaCgOps<T>::direction(const Vector& z, Vector& p, int rz_k, int rz_prev, bool first) {
  detail::launch_direction(size(), z.data(), p.data(), scalars_.data(), rz_k, rz_prev, first, CgSlots::flag);
}

template <class T>
void CudaCgOps<T>::update(int rz_k, int pq, const Vector& p, const Vector& q, Vector& x, Vector& r, Vector& z,
                          int rz_next, int rr_next, index_t iteration) {
  // On several ranks this rank's rᵀr is a partial sum: the convergence test waits for the sum.
  const bool ranks = comm_.size() > 1;
  const bool general = this->general();
  detail::launch_cg_update(size(), scalars_.data(), rz_k, pq, CgSlots::flag, CgSlots::flag_iter,
                           ranks ? -1 : CgSlots::tol2, iteration, p.data(), q.data(), x.data(), r.data(), inv_diag_,
                           z.data(), rz_next, rr_next, ws(partials_, ticket_, grid_));
  reduced({rz_next, rr_next});
  if (ranks)
    detail::launch_cg_converged(scalars_.data(), rr_next, CgSlots::tol2, CgSlots::flag, CgSlots::flag_iter, iteration);
  if (general) precondition(r, z, rz_next, rr_next);  // z = M⁻¹·r, then ρ = rᵀz
}

template <class T>
void CudaCgOps<T>::reduced(std::initializer_list<int> slots) {
  if (comm_.size() == 1) return;  // one rank's partial sums are the sums
  for (int slot : slots) comm_.sum_device(scalars_.data() + slot, 1);  // in rank order: the same bits on every rank
}

template class CudaCgOps<double>;
template class CudaCgOps<float>;

}  // namespace krysp
