#include "krysp/solvers/dense_eigensolve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/lobpcg_start.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp::detail {

namespace {

// M densified, column-major (symmetric: rows and columns alike).
std::vector<double> densify(const CsrMatrix<double>& M) {
  const index_t n = M.rows();
  std::vector<double> D(std::size_t(n) * std::size_t(n), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = M.row_ptr()(i); k < M.row_ptr()(i + 1); ++k)
      D[std::size_t(M.col_idx()(k)) * std::size_t(n) + std::size_t(i)] += M.values()(k);
  return D;
}

bool finite_values(const CsrMatrix<double>& M) {
  for (index_t k = 0; k < M.nnz(); ++k)
    if (!std::isfinite(M.values()(k))) return false;
  return true;
}

}  // namespace

bool dense_eigensolve_applies(const EigOptions& o, index_t n, index_t constraint_cols) {
  return o.lobpcg.block_size == 0 && constraint_cols == 0 && o.lobpcg.k >= 1 && o.lobpcg.k <= n &&
         3 * std::int64_t(o.lobpcg.k) > std::int64_t(n);
}

EigReport dense_eigensolve(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const index_t n = A.rows(), k = o.lobpcg.k;
  KRYSP_REQUIRE(std::isfinite(o.lobpcg.tol) && o.lobpcg.tol > 0, "LOBPCG: tol = ", o.lobpcg.tol,
                " must be a positive number");
  EigReport rep;
  rep.solver = B ? "dense-dsygvd" : "dense-dsyevd";  // LAPACK's routine
  rep.which = to_string(o.lobpcg.which);
  rep.preconditioner = "none";
  rep.backend = "host";
  rep.device = "host";
  rep.spmm_kernel = "none (dense)";
  rep.k = k;
  rep.n = n;
  rep.convergence = o.lobpcg.convergence;
  if (!finite_values(A) || (B && !finite_values(*B))) {
    rep.status = EigStatus::NonFinite;
    return rep;
  }
  // The whole spectrum, ascending; V's columns B-orthonormal.
  std::vector<double> w, V;
  const bool ok = B ? dense::sym_gen_eig(n, densify(A), densify(*B), w, V) : dense::sym_eig(n, densify(A), w, V);
  if (!ok) {
    rep.status = B ? EigStatus::NotPositiveDefinite : EigStatus::NonFinite;
    return rep;
  }
  // Norm estimates for the Norm test, from below as LOBPCG's are: ‖A‖₂ = max|λ| without B,
  // else the largest diagonal entries.
  const double bnorm = B ? max_abs_diagonal(*B) : 1.0;
  rep.a_norm_estimate = B ? max_abs_diagonal(A) : std::max(std::abs(w.front()), std::abs(w.back()));
  rep.b_norm_estimate = bnorm;
  rep.eigenvectors.assign(std::size_t(n) * std::size_t(k), 0.0);
  bool all = true;
  std::vector<double> x(static_cast<std::size_t>(n)), ax(x.size()), bx(x.size());
  for (index_t j = 0; j < k; ++j) {
    const index_t c = o.lobpcg.which == EigWhich::Smallest ? j : n - 1 - j;
    const double lambda = w[std::size_t(c)];
    for (index_t i = 0; i < n; ++i) x[std::size_t(i)] = V[std::size_t(c) * std::size_t(n) + std::size_t(i)];
    A.multiply_host(x.data(), ax.data());
    if (B)
      B->multiply_host(x.data(), bx.data());
    else
      bx = x;
    double rr = 0, xx = 0, bxx = 0;  // ‖A·x − λ·B·x‖², ‖x‖², ‖B·x‖²
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = ax[i] - lambda * bx[i];
      rr += r * r;
      xx += x[i] * x[i];
      bxx += bx[i] * bx[i];
    }
    const double measure =
        convergence_measure(o.lobpcg.convergence, rr, xx, bxx, lambda, lambda, rep.a_norm_estimate, bnorm);
    rep.eigenvalues.push_back(lambda);
    rep.residual_norms.push_back(std::sqrt(rr));
    rep.relative_residuals.push_back(measure);
    all = all && measure <= o.lobpcg.tol;
    for (index_t i = 0; i < n; ++i)
      rep.eigenvectors[std::size_t(i) * std::size_t(k) + std::size_t(j)] = x[std::size_t(i)];
  }
  rep.history = rep.relative_residuals;  // one row: the measures of the answer, as of an iteration 0
  rep.history_rows = 1;
  rep.status = all ? EigStatus::Converged : EigStatus::Stagnated;
  rep.verification = "passed: the whole spectrum solved densely (no eigenvalue can be missed)";
  rep.solve_seconds = rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace krysp::detail
