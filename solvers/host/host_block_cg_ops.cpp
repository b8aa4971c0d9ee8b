#include "solvers/host/host_block_cg_ops.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "sparse/host/spmm_reference.hpp"

namespace krysp {

template <class T>
HostBlockCgOps<T>::HostBlockCgOps(const CsrMatrix<T>& A, index_t s, const HostPreconditioner<T>* M)
    : A_(A), s_(s), M_(M) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "block CG: matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(s >= 1, "block CG: ", s, " right-hand sides");
  KRYSP_REQUIRE(!M || M->matches(A), "block CG: the preconditioner was set up for another matrix");
}

template <class T>
void HostBlockCgOps<T>::zero_columns(Block& X, const std::vector<char>& zero) const {
  for (index_t i = 0; i < size(); ++i)
    for (index_t j = 0; j < s_; ++j)
      if (zero[j]) X(std::size_t(i) * s_ + j) = T(0);
}

template <class T>
void HostBlockCgOps<T>::residual(const Block& B, const Block& X, Block& R) const {
  std::copy(B.data(), B.data() + B.extent(0), R.data());
  spmm_host(A_, s_, T(-1), X.data(), s_, T(1), R.data(), s_);
}

template <class T>
std::vector<double> HostBlockCgOps<T>::spmm_gram(const Block& P, index_t w, Block& Q) const {
  spmm_host(A_, w, T(1), P.data(), s_, T(0), Q.data(), s_);
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
  return C;
}

template <class T>
void HostBlockCgOps<T>::combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta,
                                Block& Y, index_t by) const {
  KRYSP_REQUIRE(C.size() == std::size_t(bx) * by, "block CG combine: ", C.size(), " coefficients for a ", bx, "x", by,
                " matrix");
  KRYSP_REQUIRE(X.data() != Y.data(), "block CG combine: Y aliases X");
  blk_.combine(size(), X.data(), s_, bx, C.data(), alpha, beta, Y.data(), s_, by);
}

template class HostBlockCgOps<double>;

}  // namespace krysp
