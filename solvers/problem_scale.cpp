#include "krysp/solvers/problem_scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "krysp/base/error.hpp"

namespace krysp {

double max_abs(const double* v, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(v[i]));
  return m;
}

int scale_exponent(const double* v, std::size_t n, int limit) {
  const double m = max_abs(v, n);
  if (!(m > 0) || !std::isfinite(m)) return 0;  // zero, NaN or Inf: the solvers report those
  int e = 0;
  std::frexp(m, &e);
  return std::abs(e) > limit ? e : 0;
}

int matrix_scale_exponent(const CsrMatrix<double>& A) {
  if (A.is_device_borrowed() || A.nnz() == 0) return 0;
  return scale_exponent(A.values().data(), std::size_t(A.nnz()));
}

CsrMatrix<double> scaled_matrix(const CsrMatrix<double>& A, int e) {
  std::vector<index_t> row_ptr(std::size_t(A.rows()) + 1), col(std::size_t(A.nnz()));
  std::vector<double> val(std::size_t(A.nnz()));
  for (index_t i = 0; i <= A.rows(); ++i) row_ptr[std::size_t(i)] = A.row_ptr()(i);
  for (index_t k = 0; k < A.nnz(); ++k) {
    col[std::size_t(k)] = A.col_idx()(k);
    val[std::size_t(k)] = std::ldexp(A.values()(k), -e);
  }
  return CsrMatrix<double>::from_arrays(A.rows(), A.cols(), row_ptr, col, val);
}

bool survives_scaling(const double* v, std::size_t n, int e) {
  for (std::size_t i = 0; i < n; ++i) {
    if (v[i] == 0) continue;
    const double y = std::ldexp(v[i], e);
    if (!std::isfinite(y) || std::abs(y) < std::numeric_limits<double>::min()) return false;
  }
  return true;
}

double eig_accuracy_floor(const EigReport& rep) {
  double least = std::numeric_limits<double>::infinity();
  for (double l : rep.eigenvalues) least = std::min(least, std::abs(l));
  return least > 0 ? std::numeric_limits<double>::epsilon() * rep.a_norm_estimate / least
                   : std::numeric_limits<double>::infinity();
}

void unscale_eig_report(EigReport& rep, int ea, int eb, bool fits) {
  if (!fits && rep.status != EigStatus::NotPositiveDefinite && rep.status != EigStatus::NonFinite)
    rep.status = EigStatus::OutOfRange;
  const int er = ea - eb / 2;  // the residuals' scale
  scale_by_power_of_two(rep.eigenvalues, ea - eb);
  scale_by_power_of_two(rep.residual_norms, er);
  scale_by_power_of_two(rep.eigenvectors, -eb / 2);
  rep.a_norm_estimate = std::ldexp(rep.a_norm_estimate, ea);
  rep.b_norm_estimate = std::ldexp(rep.b_norm_estimate, eb);
  rep.complement_bound = std::ldexp(rep.complement_bound, ea - eb);
  rep.accuracy_floor = eig_accuracy_floor(rep);
  if (rep.verification != "off")  // its figures are the rescaled pencil's
    rep.verification += detail::concat(" (figures of A scaled by 2^", -ea, ", B by 2^", -eb, ")");
}

void scale_columns(std::vector<double>& V, std::size_t n, std::size_t j, int e) {
  if (e == 0) return;
  for (std::size_t i = j * n; i < (j + 1) * n && i < V.size(); ++i) V[i] = std::ldexp(V[i], e);
}

void scale_by_power_of_two(std::vector<double>& v, int e) {
  if (e == 0) return;
  for (double& x : v) x = std::ldexp(x, e);
}

}  // namespace krysp
