#include "krysp/solvers/host/host_block_cg_ops.hpp"

#include <algorithm>

#include "krysp/base/error.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

namespace {
template <class T>
std::shared_ptr<const LinearOperator<T>> host_operator(const CsrMatrix<T>& A, const Preconditioner<T>* M) {
  // The structure check needs the matrix, which the operator constructor no longer sees.
  KRYSP_REQUIRE(!M || M->space() != MemorySpace::Host || M->matches(A),
                "block CG: the preconditioner was set up for another matrix");
  return std::make_shared<MatrixOperator<T>>(MatrixOperator<T>::host(A));
}
}  // namespace

template <class T>
HostBlockCgOps<T>::HostBlockCgOps(const CsrMatrix<T>& A, index_t s, const Preconditioner<T>* M)
    : HostBlockCgOps(host_operator(A, M), s, M, Communicator()) {}

template <class T>
HostBlockCgOps<T>::HostBlockCgOps(const LinearOperator<T>& A, index_t s, const Preconditioner<T>* M,
                                  const Communicator& comm)
    : HostBlockCgOps(std::shared_ptr<const LinearOperator<T>>(std::shared_ptr<void>(), &A), s, M, comm) {}  // not owned

template <class T>
HostBlockCgOps<T>::HostBlockCgOps(std::shared_ptr<const LinearOperator<T>> A, index_t s, const Preconditioner<T>* M,
                                  const Communicator& comm)
    : A_(std::move(A)), s_(s), M_(M), comm_(comm) {
  KRYSP_REQUIRE(A_->rows() == A_->cols(), "block CG: matrix is ", A_->rows(), "x", A_->cols(), ", not square");
  KRYSP_REQUIRE(A_->space() == MemorySpace::Host, "block CG: a ", to_string(A_->space()),
                " operator given to the host backend");
  KRYSP_REQUIRE(s >= 1, "block CG: ", s, " right-hand sides");
  KRYSP_REQUIRE(!M || M->space() == MemorySpace::Host, "block CG: a ", to_string(M->space()),
                " preconditioner given to the host backend");
  KRYSP_REQUIRE(!M || M->rows() == A_->rows(), "block CG: the preconditioner was set up for another matrix (order ",
                M->rows(), ", not ", A_->rows(), ")");
}

template <class T>
void HostBlockCgOps<T>::zero_columns(Block& X, const std::vector<char>& zero) const {
  for (index_t i = 0; i < size(); ++i)
    for (index_t j = 0; j < s_; ++j)
      if (zero[j]) X(std::size_t(i) * s_ + j) = T(0);
}

template <class T>
void HostBlockCgOps<T>::residual(const Block& B, const Block& X, Block& R) const {
  // R = A·X, then R = B − R: bitwise what SpMM's alpha = −1, beta = 1 gave (−a + b = b − a).
  A_->apply_block(s_, X.data(), s_, R.data(), s_);
  for (std::size_t k = 0; k < B.extent(0); ++k) R(k) = B(k) - R(k);
}

template <class T>
std::vector<double> HostBlockCgOps<T>::spmm_gram(const Block& P, index_t w, Block& Q) const {
  A_->apply_block(w, P.data(), s_, Q.data(), s_);
  return gram(P, w, Q, w);
}

template <class T>
void HostBlockCgOps<T>::precondition(const Block& R, index_t w, Block& Z) const {
  if (M_) M_->apply_block(w, R.data(), s_, Z.data(), s_);
  else blk_.copy(size(), w, R.data(), s_, Z.data(), s_);
}

template <class T>
std::vector<double> HostBlockCgOps<T>::gram(const Block& X, index_t bx, const Block& Y, index_t by) const {
  std::vector<double> C(std::size_t(bx) * by);
  blk_.gram(size(), X.data(), s_, bx, Y.data(), s_, by, C.data());
  comm_.sum(C.data(), C.size());  // every Gram matrix the algorithm sees comes through here
  return C;
}

template <class T>
void HostBlockCgOps<T>::combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta,
                                Block& Y, index_t by) const {
  KRYSP_REQUIRE(C.size() == std::size_t(bx) * by, "block CG combine: ", C.size(), " coefficients for a ", bx, "x", by,
                " matrix");
  // Blocks of no rows (an empty rank) may hold no storage, so their pointers may compare equal.
  KRYSP_REQUIRE(size() == 0 || X.data() != Y.data(), "block CG combine: Y aliases X");
  blk_.combine(size(), X.data(), s_, bx, C.data(), alpha, beta, Y.data(), s_, by);
}

template <class T>
std::pair<std::vector<double>, std::vector<double>> HostBlockCgOps<T>::step(const Block& AP, index_t w,
                                                                             const std::vector<double>& xi, Block& Q,
                                                                             index_t wq, const std::vector<double>& Cq,
                                                                             Block& Z) const {
  KRYSP_REQUIRE(xi.size() == std::size_t(w) * w && Cq.size() == std::size_t(wq) * w && wq <= s_,
                "block CG step: ", xi.size(), " and ", Cq.size(), " coefficients for width ", w, " from ", wq);
  std::vector<double> q(w);
  for (index_t r = 0; r < size(); ++r) {
    const std::size_t row = std::size_t(r) * s_;
    for (index_t j = 0; j < w; ++j) {
      double a = 0, dq = 0;  // Σ first, then one subtraction (the CUDA kernels round the same way)
      for (index_t i = 0; i < wq; ++i) a += double(Q(row + i)) * Cq[cm(i, j, wq)];
      for (index_t i = 0; i < w; ++i) dq += double(AP(row + i)) * xi[cm(i, j, w)];
      q[j] = a - dq;
    }
    for (index_t j = 0; j < w; ++j) Q(row + j) = T(q[j]);
  }
  precondition(Q, w, Z);
  return gram2(Q, w, Z, Q);
}

template <class T>
void HostBlockCgOps<T>::rotate(const Block&, const Block& Z, Block& P, Block& X, index_t w, index_t w2,
                               const std::vector<double>& Cw, const std::vector<double>& Tt,
                               const std::vector<double>& Cx) const {
  KRYSP_REQUIRE(Cw.size() == std::size_t(w) * w2 && Tt.size() == std::size_t(w) * w2 &&
                    Cx.size() == std::size_t(w) * s_ && w2 <= w,
                "block CG rotate: ", Cw.size(), ", ", Tt.size(), " and ", Cx.size(), " coefficients for ", w, " x ",
                w2);
  std::vector<double> p(w2);
  for (index_t r = 0; r < size(); ++r) {
    const std::size_t row = std::size_t(r) * s_;
    for (index_t j = 0; j < s_; ++j) {
      double dx = 0;  // Σ first, then one add; columns that do not move have zero coefficients
      for (index_t i = 0; i < w; ++i) dx += double(P(row + i)) * Cx[cm(i, j, w)];
      X(row + j) += T(dx);
    }
    for (index_t j = 0; j < w2; ++j) {
      double b = 0;
      for (index_t i = 0; i < w; ++i) b += double(Z(row + i)) * Cw[cm(i, j, w)] + double(P(row + i)) * Tt[cm(i, j, w)];
      p[j] = b;
    }
    for (index_t j = 0; j < w2; ++j) P(row + j) = T(p[j]);
  }
}

template class HostBlockCgOps<double>;

}  // namespace krysp
