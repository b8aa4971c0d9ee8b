#include "krysp/precond/jacobi.hpp"

#include <cmath>
#include <cstdint>

#include "krysp/base/error.hpp"

namespace krysp {

void throw_bad_diagonal(const char* who, const char* needs, index_t row, double d) {
  const std::int64_t r = std::int64_t(row) + 1;
  KRYSP_REQUIRE(std::isfinite(d), who, ": diagonal entry A(", r, ",", r, ") = ", d, " is not finite");
  KRYSP_THROW(InputError, who, ": diagonal entry A(", r, ",", r, ") = ", d, d == 0 ? " is zero (or missing)" : " is negative",
              "; ", needs, " (1-based row)");
}

template <class T>
std::vector<T> jacobi_inverse_diagonal(const CsrMatrix<T>& A) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "Jacobi: matrix is ", A.rows(), "x", A.cols(), ", not square");
  std::vector<T> inv(static_cast<std::size_t>(A.rows()));
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  for (index_t i = 0; i < A.rows(); ++i) {
    T d = 0;
    for (index_t k = rp(i); k < rp(i + 1); ++k)
      if (ci(k) == i) d = va(k);
    if (!(std::isfinite(double(d)) && d > 0)) throw_bad_diagonal("Jacobi", kJacobiNeeds, i, double(d));
    inv[i] = T(1) / d;
  }
  return inv;
}

template <class T>
void HostJacobi<T>::apply(const T* r, T* z) const {
  for (std::size_t i = 0; i < inv_.size(); ++i) z[i] = inv_[i] * r[i];
}

template <class T>
void HostJacobi<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  for (std::size_t i = 0; i < inv_.size(); ++i)
    for (index_t j = 0; j < N; ++j) Z[i * ldz + j] = inv_[i] * R[i * ldr + j];
}

template std::vector<double> jacobi_inverse_diagonal(const CsrMatrix<double>&);
template std::vector<float> jacobi_inverse_diagonal(const CsrMatrix<float>&);
template class HostJacobi<double>;
template class HostJacobi<float>;

}  // namespace krysp
