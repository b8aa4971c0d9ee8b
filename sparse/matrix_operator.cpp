#include "krysp/sparse/matrix_operator.hpp"

#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"

namespace krysp {

template <class T>
MatrixOperator<T> MatrixOperator<T>::host(const CsrMatrix<T>& A) {
  return MatrixOperator(A, MemorySpace::Host);
}

template <class T>
MatrixOperator<T> MatrixOperator<T>::device(const CsrMatrix<T>& A, const SpmvPlanOptions& spmv,
                                            const SpmmPlanOptions& spmm) {
  return device(A, std::make_shared<const SpmvPlan<T>>(A, spmv), spmm);
}

template <class T>
MatrixOperator<T> MatrixOperator<T>::device(const CsrMatrix<T>& A, std::shared_ptr<const SpmvPlan<T>> spmv,
                                            const SpmmPlanOptions& spmm) {
  KRYSP_REQUIRE(!spmv || spmv->matches(A), "MatrixOperator: the SpMV plan was not made for this matrix");
  MatrixOperator op(A, MemorySpace::Device);
  op.spmv_ = std::move(spmv);
  op.spmm_options_ = spmm;
  return op;
}

template <class T>
const SpmvPlan<T>* MatrixOperator<T>::spmv_plan() const {
  if (space_ == MemorySpace::Host) return nullptr;
  if (!spmv_) spmv_ = std::make_shared<const SpmvPlan<T>>(A_);  // left to first use: by the rule
  return spmv_.get();
}

template <class T>
void MatrixOperator<T>::apply(const T* x, T* y) const {
  KRYSP_REQUIRE(x && y, "MatrixOperator: null vector");
  if (space_ == MemorySpace::Host) A_.multiply_host(x, y);
  else spmv_plan()->apply(A_, T(1), x, T(0), y);
}

template <class T>
void MatrixOperator<T>::apply_dot(const T* x, T* y, double* dot) const {
  KRYSP_REQUIRE(x && y && dot, "MatrixOperator: null vector");
  if (space_ == MemorySpace::Device) return spmv_plan()->apply_dot(A_, x, y, dot);
  A_.multiply_host(x, y);
  double s = 0;
  for (index_t i = 0; i < A_.rows(); ++i) s += double(x[i]) * double(y[i]);
  *dot = s;
}

template <class T>
void MatrixOperator<T>::apply_scaled(T alpha, const T* x, T beta, T* y) const {
  KRYSP_REQUIRE(x && y, "MatrixOperator: null vector");
  if (space_ == MemorySpace::Device) return spmv_plan()->apply(A_, alpha, x, beta, y);
  std::vector<T> ax(static_cast<std::size_t>(A_.rows()));
  A_.multiply_host(x, ax.data());
  for (index_t i = 0; i < A_.rows(); ++i) y[i] = alpha * ax[std::size_t(i)] + (beta == T(0) ? T(0) : beta * y[i]);
}

template <class T>
const SpmmPlan<T>& MatrixOperator<T>::spmm_plan(index_t N, index_t ldx, index_t ldy) const {
  KRYSP_REQUIRE(space_ == MemorySpace::Device, "MatrixOperator: SpMM plans are for the device");
  const auto key = std::make_tuple(N, ldx, ldy);
  auto it = spmm_.find(key);
  if (it == spmm_.end()) {
    SpmmPlanOptions o = spmm_options_;
    o.ldx = ldx;
    o.ldy = ldy;
    it = spmm_.emplace(key, SpmmPlan<T>(A_, N, o)).first;
  }
  return it->second;
}

template <class T>
void MatrixOperator<T>::apply_block_scaled(index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y,
                                           index_t ldy) const {
  KRYSP_REQUIRE(N >= 1 && ldx >= N && ldy >= N && X && Y, "MatrixOperator: block of ", N, " columns with ld ", ldx,
                " and ", ldy);
  if (space_ == MemorySpace::Host) return spmm_host(A_, N, alpha, X, ldx, beta, Y, ldy);
  spmm_plan(N, ldx, ldy).apply(A_, alpha, X, ldx, beta, Y, ldy);
}

template <class T>
void MatrixOperator<T>::apply_block(index_t N, const T* X, index_t ldx, T* Y, index_t ldy) const {
  apply_block_scaled(N, T(1), X, ldx, T(0), Y, ldy);
}

template class MatrixOperator<double>;
template class MatrixOperator<float>;

}  // namespace krysp
