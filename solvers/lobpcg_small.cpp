#include "krysp/solvers/lobpcg_small.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp::lobpcg_detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

bool all_finite(const std::vector<double>& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}

/// D = diag(G)^{-1/2} (0 for a column whose diagonal is not positive); Ĝ = D·G·D in place.
std::vector<double> scale_gram(index_t a, std::vector<double>& G) {
  std::vector<double> d(a);
  for (index_t j = 0; j < a; ++j) {
    const double g = G[cm(j, j, a)];
    d[j] = g > 0 ? 1.0 / std::sqrt(g) : 0.0;
  }
  for (index_t j = 0; j < a; ++j)
    for (index_t i = 0; i < a; ++i) G[cm(i, j, a)] *= d[i] * d[j];
  return d;
}

/// Upper bound of the condition of the symmetric G (a × a) from its Gershgorin discs:
/// hi/lo with lo = min_i (g_ii − r_i) > 0, hi = max_i (g_ii + r_i); +inf when lo ≤ 0. For the
/// nearly orthonormal bases LOBPCG mostly sees (scaled Gram matrices within ~1e-2 of I) it
/// decides "well conditioned, definite" in O(a²), without the eigenvalue solve.
double gershgorin_cond_bound(index_t a, const std::vector<double>& G) {
  double lo = kInf, hi = 0;
  for (index_t i = 0; i < a; ++i) {
    double r = 0;
    for (index_t j = 0; j < a; ++j)
      if (j != i) r += std::abs(G[cm(i, j, a)]);
    lo = std::min(lo, G[cm(i, i, a)] - r);
    hi = std::max(hi, G[cm(i, i, a)] + r);
  }
  return lo > 0 && std::isfinite(hi) ? hi / lo : kInf;
}
}  // namespace

OrthoCoefficients ortho_coefficients(index_t a, std::vector<double> G, const SmallTolerances& tol, double scale) {
  OrthoCoefficients out;
  if (a == 0) return out;
  if (!all_finite(G)) {
    out.finite = false;
    return out;
  }
  dense::symmetrize(a, G);
  double gmax = 0, gmin = kInf;
  for (index_t j = 0; j < a; ++j) {
    gmax = std::max(gmax, G[cm(j, j, a)]);
    gmin = std::min(gmin, G[cm(j, j, a)]);
  }
  if (gmin < -tol.indefinite * std::max(gmax, scale)) out.indefinite = true;  // vᵀBv < 0 is not rounding
  if (!(gmax > 0)) return out;  // every column is zero
  out.scale_spread = gmin > 0 ? std::sqrt(gmax / gmin) : kInf;
  // A column whose B-norm² is below ε²·max is zero for all purposes: scaling it up would only
  // magnify rounding. It gets d = 0 (SVQB drops it).
  const double zero_floor = gmax * 1e-30;
  for (index_t j = 0; j < a; ++j)
    if (G[cm(j, j, a)] <= zero_floor) G[cm(j, j, a)] = 0;
  const std::vector<double> d = scale_gram(a, G);  // G is now Ĝ
  const bool zero_column = std::count(d.begin(), d.end(), 0.0) > 0;
  for (index_t j = 0; j < a; ++j)
    for (index_t i = 0; i < a; ++i) out.deviation = std::max(out.deviation, std::abs(G[cm(i, j, a)] - (i == j)));
  if (zero_column) out.deviation = kInf;

  // Eigenvalues only for the condition test; the vectors only when SVQB needs them (below).
  // When the Gershgorin discs already bound the condition below both thresholds it is compared
  // with (Cholesky QR's, and the caller's "ill-conditioned" one), no eigenvalues are needed:
  // every decision is the same, and cond reports the bound.
  std::vector<double> theta, V;
  const double bound = zero_column ? kInf : gershgorin_cond_bound(a, G);
  if (bound <= std::min(tol.chol_cond_max, tol.rr_cond_max)) {
    out.cond = bound;
  } else {
    if (!dense::sym_eigenvalues(a, G, theta) || !all_finite(theta)) {
      out.finite = false;
      return out;
    }
    const double tmax = theta.back();
    if (!(tmax > 0)) return out;
    if (theta.front() < -tol.indefinite * tmax) out.indefinite = true;
    out.cond = theta.front() > 0 ? tmax / theta.front() : kInf;
  }

  if (!zero_column && out.cond <= tol.chol_cond_max) {  // Cholesky QR: K = D·R⁻¹
    std::vector<double> R = G;
    if (dense::cholesky_upper(a, R) && dense::invert_upper(a, R) && all_finite(R)) {
      out.rank = a;
      out.K = std::move(R);
      for (index_t j = 0; j < a; ++j)
        for (index_t i = 0; i < a; ++i) out.K[cm(i, j, a)] *= d[i];
      return out;
    }
  }
  // SVQB: K = D·V_kept·Θ_kept^{-1/2}, keeping θ > drop·a·θ_max (eigenvalues ascending).
  out.used_svqb = true;
  if (!dense::sym_eig(a, G, theta, V) || !all_finite(theta)) {
    out.finite = false;
    return out;
  }
  const double floor = tol.drop * a * theta.back();  // theta now from the run with vectors
  index_t first = 0;
  while (first < a && !(theta[first] > floor)) ++first;
  out.rank = a - first;
  out.K.assign(std::size_t(a) * out.rank, 0.0);
  for (index_t c = 0; c < out.rank; ++c) {
    const double s = 1.0 / std::sqrt(theta[first + c]);
    for (index_t i = 0; i < a; ++i) out.K[cm(i, c, a)] = d[i] * V[cm(i, first + c, a)] * s;
  }
  return out;
}

RitzStep rayleigh_ritz(index_t m, std::vector<double> GA, std::vector<double> GB, bool largest, index_t want,
                       bool allow_reduce, const SmallTolerances& tol) {
  RitzStep out;
  if (m == 0 || !all_finite(GA) || !all_finite(GB)) return out;
  dense::symmetrize(m, GA);
  dense::symmetrize(m, GB);
  const std::vector<double> d = scale_gram(m, GB);
  for (double e : d)
    if (e == 0) return out;  // a basis column with zero B-norm: the caller's basis is broken
  for (index_t j = 0; j < m; ++j)
    for (index_t i = 0; i < m; ++i) GA[cm(i, j, m)] *= d[i] * d[j];
  std::vector<double> tb, VB;  // eigenvalues for the condition test; VB only for the reduction below
  // Gershgorin first (as in ortho_coefficients): a bound within rr_cond_max decides the test
  // without the eigenvalue solve (~a third of this step's LAPACK time at m = 3b).
  const double bound = gershgorin_cond_bound(m, GB);
  if (bound <= tol.rr_cond_max) {
    out.gram_cond = bound;
  } else {
    if (!dense::sym_eigenvalues(m, GB, tb) || !all_finite(tb)) return out;
    const double tmax = tb.back();
    if (!(tmax > 0)) return out;
    out.gram_cond = tb.front() > 0 ? tmax / tb.front() : kInf;
    out.indefinite = tb.front() < -tol.indefinite * tmax;
  }
  out.ill_conditioned = !(out.gram_cond <= tol.rr_cond_max);

  std::vector<double> w, U;  // eigenvalues ascending, and coefficients in the scaled basis
  if (!out.ill_conditioned) {
    if (!dense::sym_gen_eig(m, GA, GB, w, U) || !all_finite(w)) {
      out.ill_conditioned = true;  // dsygvd's Cholesky of D·GB·D failed
    } else {
      out.rank = m;
      for (index_t j = 0; j < m; ++j)
        for (index_t i = 0; i < m; ++i) U[cm(i, j, m)] *= d[i];
    }
  }
  if (out.ill_conditioned) {
    if (!allow_reduce) return out;
    // SVQB reduction of the basis: K = D·VB_kept·Θ_kept^{-1/2} spans the numerically independent
    // part, Kᵀ·GB·K = I; then the standard problem (Kᵀ·GA·K) y = θ y.
    out.reduced = true;
    if (!dense::sym_eig(m, GB, tb, VB) || !all_finite(tb)) return out;
    const double floor = tol.drop * m * tb.back();
    index_t first = 0;
    while (first < m && !(tb[first] > floor)) ++first;
    const index_t r = m - first;
    std::vector<double> K(std::size_t(m) * r);
    for (index_t c = 0; c < r; ++c) {
      const double s = 1.0 / std::sqrt(tb[first + c]);
      for (index_t i = 0; i < m; ++i) K[cm(i, c, m)] = VB[cm(i, first + c, m)] * s;
    }
    std::vector<double> H = dense::at_b(m, r, r, K, dense::a_b(m, m, r, GA, K));
    dense::symmetrize(r, H);
    std::vector<double> Y;
    if (!dense::sym_eig(r, H, w, Y) || !all_finite(w)) return out;
    U = dense::a_b(m, r, r, K, Y);
    for (index_t j = 0; j < r; ++j)
      for (index_t i = 0; i < m; ++i) U[cm(i, j, m)] *= d[i];
    out.rank = r;
  }
  if (out.rank < want) return out;
  out.theta.resize(out.rank);
  out.C.resize(std::size_t(m) * out.rank);
  for (index_t c = 0; c < out.rank; ++c) {
    const index_t src = largest ? out.rank - 1 - c : c;
    out.theta[c] = w[src];
    std::copy(U.begin() + std::size_t(src) * m, U.begin() + std::size_t(src + 1) * m, out.C.begin() + std::size_t(c) * m);
  }
  out.ok = all_finite(out.C);
  return out;
}

std::vector<double> orth_columns(index_t rows, index_t cols, const std::vector<double>& F, index_t& rank,
                                 const SmallTolerances& tol) {
  rank = 0;
  if (rows == 0 || cols == 0 || !all_finite(F)) return {};
  std::vector<double> A = F, s(std::min(rows, cols)), U(std::size_t(rows) * std::min(rows, cols)), superb(s.size());
  double vt = 0;
  if (LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'N', rows, cols, A.data(), rows, s.data(), U.data(), rows, &vt, 1,
                     superb.data()) != 0)
    return {};
  if (!(s.front() > 0) || !std::isfinite(s.front())) return {};
  while (rank < index_t(s.size()) && s[rank] > tol.orth_drop * s.front()) ++rank;
  U.resize(std::size_t(rows) * rank);
  return U;
}

bool dense_eigenvalues(index_t n, std::vector<double> A, const std::vector<double>* B, std::vector<double>& w) {
  w.assign(n, 0.0);
  if (n == 0) return true;
  if (!B) return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', n, A.data(), n, w.data()) == 0;
  std::vector<double> b = *B;
  return LAPACKE_dsygvd(LAPACK_COL_MAJOR, 1, 'N', 'U', n, A.data(), n, b.data(), n, w.data()) == 0;
}

}  // namespace krysp::lobpcg_detail
