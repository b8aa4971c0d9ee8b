#include "krysp/solvers/host/host_cg_ops.hpp"

#include "krysp/base/error.hpp"
#include "krysp/solvers/cg.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

namespace {
template <class T>
std::shared_ptr<const LinearOperator<T>> host_operator(const CsrMatrix<T>& A, const Preconditioner<T>* M) {
  // The structure check needs the matrix, which the operator constructor no longer sees.
  KRYSP_REQUIRE(!M || M->space() != MemorySpace::Host || M->matches(A),
                "CG: the preconditioner was set up for another matrix");
  return std::make_shared<MatrixOperator<T>>(MatrixOperator<T>::host(A));
}
}  // namespace

template <class T>
HostCgOps<T>::HostCgOps(const CsrMatrix<T>& A, const Preconditioner<T>* M)
    : HostCgOps(host_operator(A, M), M, Communicator()) {}

template <class T>
HostCgOps<T>::HostCgOps(const LinearOperator<T>& A, const Preconditioner<T>* M, const Communicator& comm)
    : HostCgOps(std::shared_ptr<const LinearOperator<T>>(std::shared_ptr<void>(), &A), M, comm) {}  // not owned

template <class T>
HostCgOps<T>::HostCgOps(std::shared_ptr<const LinearOperator<T>> A, const Preconditioner<T>* M,
                        const Communicator& comm)
    : A_(std::move(A)), M_(M), comm_(comm) {
  KRYSP_REQUIRE(A_->rows() == A_->cols(), "CG: matrix is ", A_->rows(), "x", A_->cols(), ", not square");
  KRYSP_REQUIRE(A_->space() == MemorySpace::Host, "CG: a ", to_string(A_->space()),
                " operator given to the host backend");
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Host, "CG: a ", to_string(M->space()),
                " preconditioner given to the host backend");
  KRYSP_REQUIRE(!M || M->rows() == A_->rows(), "CG: the preconditioner was set up for another matrix (order ",
                M->rows(), ", not ", A_->rows(), ")");
}

template <class T>
void HostCgOps<T>::dot(const Vector& a, const Vector& b, int slot) {
  double sum = 0;
  for (index_t i = 0; i < size(); ++i) sum += double(a(i)) * double(b(i));
  s_[slot] = comm_.sum(sum);
}

template <class T>
void HostCgOps<T>::residual(const Vector& b, const Vector& x, Vector& r) {
  A_->apply(x.data(), r.data());
  for (index_t i = 0; i < size(); ++i) r(i) = b(i) - r(i);
}

template <class T>
void HostCgOps<T>::precondition(const Vector& r, Vector& z, int rz, int rr) {
  if (M_) M_->apply(r.data(), z.data());
  double srz = 0, srr = 0;
  for (index_t i = 0; i < size(); ++i) {
    const T zi = M_ ? z(i) : r(i);
    srz += double(r(i)) * double(zi);
    srr += double(r(i)) * double(r(i));
  }
  double sums[2] = {srz, srr};
  comm_.sum(sums, 2);  // one message for both
  s_[rz] = sums[0];
  s_[rr] = sums[1];
}

template <class T>
void HostCgOps<T>::direction(const Vector& z, Vector& p, int rz_k, int rz_prev, bool first) {
  if (s_[CgSlots::flag] != kCgOk) return;
  const T beta = first ? T(0) : T(s_[rz_k] / s_[rz_prev]);
  for (index_t i = 0; i < size(); ++i) p(i) = first ? z(i) : z(i) + beta * p(i);
}

template <class T>
void HostCgOps<T>::update(int rz_k, int pq, const Vector& p, const Vector& q, Vector& x, Vector& r, Vector& z,
                          int rz_next, int rr_next, index_t iteration) {
  const bool frozen = s_[CgSlots::flag] != kCgOk;
  if (frozen) return;
  const int verdict = frozen ? kCgOk : cg_step_verdict(s_[rz_k], s_[pq]);
  if (verdict != kCgOk) {
    s_[CgSlots::flag] = verdict;
    s_[CgSlots::flag_iter] = double(iteration);
  }
  if (verdict == kCgOk) {
    const T alpha = T(s_[rz_k] / s_[pq]);
    for (index_t i = 0; i < size(); ++i) {
      x(i) += alpha * p(i);
      r(i) -= alpha * q(i);
    }
  }
  precondition(r, z, rz_next, rr_next);
  if (verdict == kCgOk && s_[rr_next] <= s_[CgSlots::tol2]) {
    s_[CgSlots::flag] = kCgConverged;
    s_[CgSlots::flag_iter] = double(iteration + 1);
  }
}

template class HostCgOps<double>;
template class HostCgOps<float>;

}  // namespace krysp
