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
  if (M) Z_ = block();
}

template <class T>
void HostBlockCgOps<T>::zero_columns(Block& X, const std::vector<char>& zero) const {
  for (index_t i = 0; i < size(); ++i)
    for (index_t j = 0; j < s_; ++j)
      if (zero[j]) X(std::size_t(i) * s_ + j) = T(0);
}

template <class T>
void HostBlockCgOps<T>::spmm(const Block& P, index_t w, Block& Q) const {
  spmm_host(A_, w, T(1), P.data(), s_, T(0), Q.data(), s_);
}

template <class T>
void HostBlockCgOps<T>::residual(const Block& B, const Block& X, Block& R) const {
  std::copy(B.data(), B.data() + B.extent(0), R.data());
  spmm_host(A_, s_, T(-1), X.data(), s_, T(1), R.data(), s_);
}

template <class T>
void HostBlockCgOps<T>::precondition(const Block& R) {
  if (M_) M_->apply_block(s_, R.data(), s_, Z_.data(), s_);
}

template <class T>
std::vector<double> HostBlockCgOps<T>::gram(const Block& X, index_t bx, const Block& Y, index_t by) const {
  std::vector<double> C(std::size_t(bx) * by, 0.0);
  for (index_t r = 0; r < size(); ++r)
    for (index_t j = 0; j < by; ++j)
      for (index_t i = 0; i < bx; ++i)
        C[cm(i, j, bx)] += double(X(std::size_t(r) * s_ + i)) * double(Y(std::size_t(r) * s_ + j));
  return C;
}

template <class T>
BlockUpdateGrams HostBlockCgOps<T>::update(const Block& Qn, index_t a, const std::vector<double>& Ca, Block& R) {
  KRYSP_REQUIRE(Ca.size() == std::size_t(a) * s_, "block CG update: ", Ca.size(), " coefficients for a ", a, "x", s_,
                " matrix");
  for (index_t r = 0; r < size(); ++r)
    for (index_t j = 0; j < s_; ++j) {
      double dr = 0;  // Σ first, then one subtraction (the CUDA kernels round the same way)
      for (index_t i = 0; i < a; ++i) dr += double(Qn(std::size_t(r) * s_ + i)) * Ca[cm(i, j, a)];
      R(std::size_t(r) * s_ + j) -= T(dr);
    }
  precondition(R);
  BlockUpdateGrams g;
  g.rr.assign(s_, 0.0);
  for (index_t r = 0; r < size(); ++r)
    for (index_t j = 0; j < s_; ++j) g.rr[j] += double(R(std::size_t(r) * s_ + j)) * double(R(std::size_t(r) * s_ + j));
  Block Zv(const_cast<T*>(z(R)), R.extent(0));
  g.qz = gram(Qn, a, Zv, s_);
  return g;
}

template <class T>
void HostBlockCgOps<T>::update_x(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X) const {
  KRYSP_REQUIRE(Ca.size() == std::size_t(a) * s_, "block CG x update: ", Ca.size(), " coefficients for a ", a, "x",
                s_, " matrix");
  for (index_t r = 0; r < size(); ++r)
    for (index_t j = 0; j < s_; ++j) {
      double dx = 0;  // Σ first, then one addition; inactive columns have zero coefficients: x + 0
      for (index_t i = 0; i < a; ++i) dx += double(Pn(std::size_t(r) * s_ + i)) * Ca[cm(i, j, a)];
      X(std::size_t(r) * s_ + j) += T(dx);
    }
}

template <class T>
BlockDirectionGrams HostBlockCgOps<T>::direction(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                                                 const std::vector<double>& Cb, const std::vector<index_t>& active,
                                                 const Block& R, Block& Pnext, index_t ap,
                                                 const std::vector<double>& Cp) const {
  const index_t a2 = index_t(active.size());
  KRYSP_REQUIRE(Cb.size() == std::size_t(a) * a2, "block CG direction: ", Cb.size(), " coefficients for a ", a, "x",
                a2, " matrix");
  KRYSP_REQUIRE(Cp.size() == std::size_t(ap) * s_ && (Cp.empty() || !Ca.empty()), "block CG direction: ", Cp.size(),
                " previous x coefficients for a ", ap, "x", s_, " matrix", Ca.empty() ? " without this step's" : "");
  if (!Cp.empty()) update_x(Pnext, ap, Cp, X);  // from the previous direction, before Pnext is overwritten
  if (!Ca.empty()) update_x(Pn, a, Ca, X);  // from the old Pn: Pnext is another block
  const T* Z = z(R);
  for (index_t r = 0; r < size(); ++r)
    for (index_t j = 0; j < a2; ++j) {
      double v = double(Z[std::size_t(r) * s_ + active[j]]);
      for (index_t i = 0; i < a; ++i) v -= double(Pn(std::size_t(r) * s_ + i)) * Cb[cm(i, j, a)];
      Pnext(std::size_t(r) * s_ + j) = T(v);
    }
  return {gram(Pnext, a2, Pnext, a2), gram(Pnext, a2, R, s_), {}};
}

template class HostBlockCgOps<double>;

}  // namespace krysp
