#include "krysp/solvers/small_dense.hpp"

#include <lapacke.h>

#include <cmath>

namespace krysp::dense {

bool cholesky_upper(index_t n, std::vector<double>& A) {
  if (n == 0) return true;
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', n, A.data(), n) != 0) return false;
  for (index_t j = 0; j < n; ++j)
    for (index_t i = j + 1; i < n; ++i) A[std::size_t(j) * n + i] = 0.0;
  for (index_t i = 0; i < n; ++i)
    if (!std::isfinite(A[std::size_t(i) * n + i])) return false;
  return true;
}

bool invert_upper(index_t n, std::vector<double>& R) {
  return n == 0 || LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'U', 'N', n, R.data(), n) == 0;
}

bool sym_eig(index_t n, const std::vector<double>& A, std::vector<double>& w, std::vector<double>& V) {
  V = A;
  w.assign(n, 0.0);
  if (n == 0) return true;
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', n, V.data(), n, w.data()) == 0;
}

bool sym_eigenvalues(index_t n, std::vector<double> A, std::vector<double>& w) {
  w.assign(n, 0.0);
  if (n == 0) return true;
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', n, A.data(), n, w.data()) == 0;
}

bool sym_gen_eig(index_t n, const std::vector<double>& A, const std::vector<double>& B, std::vector<double>& w,
                 std::vector<double>& V) {
  V = A;
  std::vector<double> b = B;
  w.assign(n, 0.0);
  if (n == 0) return true;
  return LAPACKE_dsygvd(LAPACK_COL_MAJOR, 1, 'V', 'U', n, V.data(), n, b.data(), n, w.data()) == 0;
}

std::vector<double> at_b(index_t k, index_t m, index_t n, const std::vector<double>& A, const std::vector<double>& B) {
  std::vector<double> C(std::size_t(m) * n, 0.0);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      double s = 0;
      for (index_t l = 0; l < k; ++l) s += A[std::size_t(i) * k + l] * B[std::size_t(j) * k + l];
      C[std::size_t(j) * m + i] = s;
    }
  return C;
}

std::vector<double> a_b(index_t m, index_t k, index_t n, const std::vector<double>& A, const std::vector<double>& B) {
  std::vector<double> C(std::size_t(m) * n, 0.0);
  for (index_t j = 0; j < n; ++j)
    for (index_t l = 0; l < k; ++l) {
      const double b = B[std::size_t(j) * k + l];
      for (index_t i = 0; i < m; ++i) C[std::size_t(j) * m + i] += A[std::size_t(l) * m + i] * b;
    }
  return C;
}

void symmetrize(index_t n, std::vector<double>& A) {
  for (index_t j = 0; j < n; ++j)
    for (index_t i = j + 1; i < n; ++i) {
      const double s = 0.5 * (A[std::size_t(j) * n + i] + A[std::size_t(i) * n + j]);
      A[std::size_t(j) * n + i] = A[std::size_t(i) * n + j] = s;
    }
}

}  // namespace krysp::dense
