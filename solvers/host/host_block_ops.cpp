#include "krysp/solvers/host/host_block_ops.hpp"

#include <vector>

namespace krysp {

template <class T>
void HostBlockOps<T>::gram(index_t n, const T* X, index_t ldx, index_t bx, const T* Y, index_t ldy, index_t by,
                           double* C) const {
  std::fill(C, C + std::size_t(bx) * by, 0.0);
  for (index_t k = 0; k < n; ++k) {
    const T* x = X + std::size_t(k) * ldx;
    const T* y = Y + std::size_t(k) * ldy;
    for (index_t j = 0; j < by; ++j)
      for (index_t i = 0; i < bx; ++i) C[cm(i, j, bx)] += double(x[i]) * double(y[j]);
  }
}

template <class T>
void HostBlockOps<T>::combine(index_t n, const T* X, index_t ldx, index_t bx, const double* C, double alpha,
                              double beta, T* Y, index_t ldy, index_t by) const {
  std::vector<double> row(by);
  for (index_t k = 0; k < n; ++k) {
    const T* x = X + std::size_t(k) * ldx;
    T* y = Y + std::size_t(k) * ldy;
    for (index_t j = 0; j < by; ++j) {
      double s = 0;
      for (index_t i = 0; i < bx; ++i) s += double(x[i]) * C[cm(i, j, bx)];
      row[j] = s;
    }
    for (index_t j = 0; j < by; ++j) y[j] = T(beta == 0 ? alpha * row[j] : alpha * row[j] + beta * double(y[j]));
  }
}

template <class T>
void HostBlockOps<T>::copy(index_t n, index_t b, const T* X, index_t ldx, T* Y, index_t ldy) const {
  for (index_t k = 0; k < n; ++k)
    for (index_t j = 0; j < b; ++j) Y[std::size_t(k) * ldy + j] = X[std::size_t(k) * ldx + j];
}

template struct HostBlockOps<double>;
template struct HostBlockOps<float>;

}  // namespace krysp
