#include "krysp/sparse/matrix_operator.hpp"

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
  MatrixOperator op(A, MemorySpace::Device);
  op.spmv_ = std::make_shared<SpmvPlan<T>>(A, spmv);
  op.spmm_options_ = spmm;
  return op;
}

template <class T>
void MatrixOperator<T>::apply(const T* x, T* y) const {
  KRYSP_REQUIRE(x && y, "MatrixOperator: null vector");
  if (space_ == MemorySpace::Host) A_.multiply_host(x, y);
  else spmv_->apply(A_, T(1), x, T(0), y);
}

template <class T>
void MatrixOperator<T>::apply_block(index_t N, const T* X, index_t ldx, T* Y, index_t ldy) const {
  KRYSP_REQUIRE(N >= 1 && ldx >= N && ldy >= N && X && Y, "MatrixOperator: block of ", N, " columns with ld ", ldx,
                " and ", ldy);
  if (space_ == MemorySpace::Host) return spmm_host(A_, N, T(1), X, ldx, T(0), Y, ldy);
  const auto key = std::make_tuple(N, ldx, ldy);
  auto it = spmm_.find(key);
  if (it == spmm_.end()) {
    SpmmPlanOptions o = spmm_options_;
    o.ldx = ldx;
    o.ldy = ldy;
    it = spmm_.emplace(key, SpmmPlan<T>(A_, N, o)).first;
  }
  it->second.apply(A_, T(1), X, ldx, T(0), Y, ldy);
}

template class MatrixOperator<double>;
template class MatrixOperator<float>;

}  // namespace krysp
