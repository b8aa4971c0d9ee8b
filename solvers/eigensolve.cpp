#include "krysp/solvers/eigensolve.hpp"

#include <algorithm>
#include <limits>
#include <chrono>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/phase_profile.hpp"
#include "krysp/solvers/dense_eigensolve.hpp"
#include "krysp/solvers/envelope_cholesky.hpp"
#include "krysp/solvers/executor.hpp"
#include "krysp/solvers/inner_solve.hpp"
#include "krysp/solvers/inverse_refine.hpp"
#include "krysp/solvers/lobpcg.hpp"
#include "krysp/solvers/problem_scale.hpp"
#include "krysp/solvers/missed_eigenvalue_check.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

const char* to_string(EigWhich w) { return w == EigWhich::Largest ? "largest" : "smallest"; }

EigWhich parse_which(const std::string& name) {
  if (name == "smallest") return EigWhich::Smallest;
  if (name == "largest") return EigWhich::Largest;
  KRYSP_THROW(InputError, "unknown --which '", name, "' (expected smallest or largest)");
}

const char* to_string(EigConvergence c) {
  switch (c) {
    case EigConvergence::Relative: return "rel";
    case EigConvergence::Norm: return "norm";
    case EigConvergence::Absolute: return "abs";
  }
  return "unknown";
}

EigConvergence parse_convergence(const std::string& name) {
  if (name == "rel") return EigConvergence::Relative;
  if (name == "norm") return EigConvergence::Norm;
  if (name == "abs") return EigConvergence::Absolute;
  KRYSP_THROW(InputError, "unknown convergence test '", name, "' (expected rel, norm or abs)");
}

const char* to_string(EigStatus s) {
  switch (s) {
    case EigStatus::Converged: return "converged";
    case EigStatus::MaxIterations: return "max-iterations";
    case EigStatus::Stagnated: return "stagnated";
    case EigStatus::NotPositiveDefinite: return "not-positive-definite";
    case EigStatus::NonFinite: return "non-finite";
    case EigStatus::Unverified: return "unverified";
    case EigStatus::OutOfRange: return "out-of-range";
  }
  return "unknown";
}

index_t default_block_size(index_t k, index_t n, index_t constraints) {
  const index_t guard = std::max<index_t>(2, (k + 1) / 2);
  const std::int64_t fit = (std::int64_t(n) - constraints) / 3;  // 3b + c ≤ n
  const std::int64_t b = std::min<std::int64_t>({std::int64_t(k) + guard, fit, kMaxLobpcgBlock});
  return index_t(std::max<std::int64_t>(k, b));  // never below k: lobpcg_block_size then names the problem
}

index_t default_max_iters(index_t) { return 5000; }

void choose_auto_preconditioner(EigOptions& o, const CsrMatrix<double>& A, const CsrMatrix<double>* B) {
  o.precond_from_b = false;
  o.spectral_flip = false;
  o.inner_iters = 0;
  o.precond.kind = PrecondKind::None;
  if (o.lobpcg.which == EigWhich::Smallest) {
    o.inner_iters = kDefaultInnerIters;
    o.precond_fallback = true;  // also: no inner CG where it finds A not positive definite
    if (positive_diagonal(A)) o.precond.kind = PrecondKind::Chebyshev;
  } else if (B) {  // eigensolve refuses a B with a non-positive diagonal anyway
    o.precond.kind = PrecondKind::Jacobi;
    o.precond_from_b = true;
  } else if (A.rows() >= kSpectralFlipMinRows) {  // largest of a large A: smallest of σI − A, preconditioned
    o.spectral_flip = true;
    o.precond.kind = PrecondKind::Chebyshev;
    o.precond_fallback = true;
  }
}

bool positive_diagonal(const CsrMatrix<double>& A) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  for (index_t i = 0; i < A.rows(); ++i) {
    bool ok = false;
    for (index_t k = rp(i); k < rp(i + 1); ++k)
      if (ci(k) == i) ok = va(k) > 0 && std::isfinite(va(k));
    if (!ok) return false;
  }
  return true;
}

namespace detail {
double max_abs_diagonal(const CsrMatrix<double>& A) {
  // An O(nnz) host pass (~40 us at 100k entries): once per values version, like the symmetry
  // check (the bits of the double travel in the memo's string).
  const std::string bits = A.memo("max_abs_diagonal", [&] {
    const auto& rp = A.row_ptr();
    const auto& ci = A.col_idx();
    const auto& va = A.values();
    double m = 0;
    for (index_t i = 0; i < A.rows(); ++i)
      for (index_t k = rp(i); k < rp(i + 1); ++k)
        if (ci(k) == i) m = std::max(m, std::abs(va(k)));
    return std::string(reinterpret_cast<const char*>(&m), sizeof m);
  });
  double m = 0;
  std::memcpy(&m, bits.data(), std::min(bits.size(), sizeof m));
  return m;
}
}  // namespace detail

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


/// Column-major rows × cols → row-major.
std::vector<double> to_row_major(const ColumnBlock& blk) {
  std::vector<double> out(std::size_t(blk.rows) * blk.cols);
  for (index_t j = 0; j < blk.cols; ++j)
    for (index_t i = 0; i < blk.rows; ++i)
      out[std::size_t(i) * blk.cols + j] = blk.values[std::size_t(j) * blk.rows + i];
  return out;
}

/// The direct solver of the refinement (EigOptions::refine): A's envelope Cholesky factor, made
/// on first use when its cost is within `max_flops` and kRefineDirectMaxEntries and A is
/// numerically positive definite; otherwise the refinement solves by PCG.
class Refinement {
 public:
  Refinement(const CsrMatrix<double>& A, double max_flops) : A_(A), max_flops_(max_flops) {}
  /// The factor, or null (why_not_direct() says why).
  const EnvelopeCholesky* cholesky() const {
    if (!tried_) {
      tried_ = true;
      const EnvelopeCholesky::Cost c = EnvelopeCholesky::cost(A_);
      if (c.flops > max_flops_ || double(c.entries) > kRefineDirectMaxEntries)
        why_ = detail::concat("the envelope Cholesky factor would take ", c.entries, " entries and ", c.flops,
                              " multiply-adds");
      else if (!(chol_ = EnvelopeCholesky::factor(A_, c)))
        why_ = "the envelope Cholesky factorization found A not numerically positive definite";
    }
    return chol_ ? &*chol_ : nullptr;
  }
  /// Why cholesky() is null.
  const std::string& why_not_direct() const { return why_; }

 private:
  const CsrMatrix<double>& A_;
  double max_flops_;
  mutable bool tried_ = false;
  mutable std::optional<EnvelopeCholesky> chol_;
  mutable std::string why_;
};

/// LOBPCG, then — for a stagnated run on the smallest pairs without constraints or flip — the
/// refinement by inverse iteration on the backend's own operations `base` (EigOptions::refine).
template <class Ops, class Base>
EigResult lobpcg_refined(Ops& ops, Base& base, const Refinement& rf, const EigOptions& o, const LobpcgStart& st,
                         EigReport& rep) {
  EigResult r = lobpcg(ops, o.lobpcg, st);
  if (o.refine && r.status == EigStatus::Stagnated && o.lobpcg.which == EigWhich::Smallest && !st.flipped &&
      st.constraint_cols == 0) {
    auto ph = phase(st.profile, "refine: block inverse iteration");
    const EnvelopeCholesky* chol = rf.cholesky();
    // With PCG, the inner solve's error enters the eigen-residual relative to |λ| at about its
    // tolerance; its attainable accuracy, not this, is what usually stops it.
    const index_t n = r.n;
    InverseSolver<Base> solve(base, chol, std::min(1e-3 * o.lobpcg.tol, 1e-9),
                              std::max<index_t>(1000, index_t(std::min<std::int64_t>(20 * std::int64_t(n), 20000))));
    const RefineOutcome ro = refine_smallest(base, o.lobpcg, r, solve);
    rep.refine_sweeps += ro.sweeps;
    rep.refine_inner_iterations += ro.inner_iterations;
    rep.refine_method = chol ? detail::concat("envelope cholesky (", chol->entries(), " entries)")
                             : std::string("pcg, ") + rf.why_not_direct();
  }
  return r;
}

template <class Ops, class Base>
void run_verified(Ops& ops, Base& base, const Refinement& rf, const EigOptions& o, const LobpcgStart& st,
                  EigReport& rep) {
  static_cast<EigResult&>(rep) = lobpcg_refined(ops, base, rf, o, st, rep);
  if (!o.verify) return;
  auto ph = phase(st.profile, "verify: check for missed eigenvalues");
  check_missed_eigenvalues(ops, rep.n, o, st, rep,
                           [&](const LobpcgStart& rs) { return lobpcg_refined(ops, base, rf, o, rs, rep); });
}

/// Runs LOBPCG (with the inner solve where o.inner_iters > 0); returns whether the inner CG met
/// pᵀA·p ≤ 0, i.e. found A not positive definite.
template <class Ops>
bool run(Ops& ops, const Refinement& rf, const EigOptions& o, const LobpcgStart& st, EigReport& rep) {
  auto solve_phase = phase(st.profile, "solve (lobpcg, total)");
  const auto t = Clock::now();
  bool indefinite = false;
  if (o.inner_iters > 0) {
    InnerSolveOps<Ops> inner(ops, o.inner_iters, o.inner_rtol);
    run_verified(inner, ops, rf, o, st, rep);
    indefinite = inner.met_nonpositive_curvature();
  } else {
    run_verified(ops, ops, rf, o, st, rep);
  }
  rep.solve_seconds = since(t);
  return indefinite;
}
}  // namespace

namespace {
/// Gershgorin's upper bound on the eigenvalues of A: max_i (a_ii + Σ_{j≠i} |a_ij|).
double gershgorin_upper(const CsrMatrix<double>& A) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  double g = -std::numeric_limits<double>::infinity();
  for (index_t i = 0; i < A.rows(); ++i) {
    double r = 0;
    for (index_t k = rp(i); k < rp(i + 1); ++k) r += ci(k) == i ? va(k) : std::abs(va(k));
    g = std::max(g, r);
  }
  return g;
}
/// max_i (Σ_j a_ij²)^½: a lower bound on ‖A‖₂ (‖A·e_i‖ is the norm of row i when A is symmetric).
double max_row_norm(const CsrMatrix<double>& A) {
  double m = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double r = 0;
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) r += A.values()(k) * A.values()(k);
    m = std::max(m, std::sqrt(r));
  }
  return m;
}
/// max_i Σ_j |a_ij| (an upper bound on ‖A‖₂ for symmetric A).
double max_abs_row_sum(const CsrMatrix<double>& A) {
  double m = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double r = 0;
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) r += std::abs(A.values()(k));
    m = std::max(m, r);
  }
  return m;
}
/// F = σI − A (every diagonal entry stored), in one pass over A's rows (columns stay sorted).
CsrMatrix<double> shifted_negative(const CsrMatrix<double>& A, double sigma) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  std::vector<index_t> row_ptr{0}, col;
  std::vector<double> val;
  col.reserve(std::size_t(A.nnz()) + std::size_t(A.rows()));
  val.reserve(col.capacity());
  for (index_t i = 0; i < A.rows(); ++i) {
    bool diag = false;
    for (index_t k = rp(i); k < rp(i + 1); ++k) {
      if (!diag && ci(k) >= i) {
        diag = true;
        if (ci(k) > i) {  // no stored diagonal: insert it here
          col.push_back(i);
          val.push_back(sigma);
        } else {
          col.push_back(i);
          val.push_back(sigma - va(k));
          continue;
        }
      }
      col.push_back(ci(k));
      val.push_back(-va(k));
    }
    if (!diag) {
      col.push_back(i);
      val.push_back(sigma);
    }
    KRYSP_REQUIRE(col.size() <= std::size_t(kMaxNnz), "eigs: sigma*I - A needs ", col.size(),
                  " stored entries, more than the index type allows");
    row_ptr.push_back(index_t(col.size()));
  }
  return CsrMatrix<double>::from_arrays(A.rows(), A.cols(), row_ptr, col, val);
}
}  // namespace

namespace {
/// LOBPCG drops a constraint direction whose share of its column, projected off the columns
/// before it, is below about 1e-7 (SVQB's threshold on the B-Gram matrix). That is right where the
/// share is rounding (a column that combines others) and wrong where it is not: the span the
/// caller meant loses a direction, and its eigenvector comes back as a wanted pair (columns
/// [v0, v0 + 1e-9·v1] returned v1's eigenvalue). Shares between rounding (1e-12) and 1e-6 are
/// refused; the share is computed by Gram–Schmidt on the columns themselves (twice), not from the
/// Gram matrix, whose square root cannot resolve it. Not checked for a device-borrowed B.
void check_constraint_independence(const CsrMatrix<double>* B, const ColumnBlock& Y) {
  if (Y.cols < 2 || (B && B->is_device_borrowed())) return;
  const std::size_t n = std::size_t(Y.rows);
  auto times_b = [&](const std::vector<double>& v) {
    if (!B) return v;
    std::vector<double> w(n);
    B->multiply_host(v.data(), w.data());
    return w;
  };
  auto dot = [n](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  };
  std::vector<std::vector<double>> Q, BQ;  // the kept columns, B-orthonormal, and B times them
  for (index_t j = 0; j < Y.cols; ++j) {
    std::vector<double> v(Y.values + std::size_t(j) * n, Y.values + std::size_t(j + 1) * n);
    const double norm0 = std::sqrt(dot(v, times_b(v)));
    if (!(norm0 > 0) || !std::isfinite(norm0)) continue;  // zero: no direction (LOBPCG drops it)
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t k = 0; k < Q.size(); ++k) {
        const double c = dot(BQ[k], v);
        for (std::size_t i = 0; i < n; ++i) v[i] -= c * Q[k][i];
      }
    std::vector<double> bv = times_b(v);
    const double norm = std::sqrt(std::max(dot(v, bv), 0.0)), share = norm / norm0;
    if (share <= 1e-12) continue;  // a combination of the columns before it, to rounding
    KRYSP_REQUIRE(share > 1e-6, "eigs: constraint column ", j + 1, " is within ", share,
                  " (relative, B-norm) of the span of the columns before it: too close to tell from rounding, "
                  "so the span is not determined; give linearly independent constraints (ideally B-orthonormal)");
    for (std::size_t i = 0; i < n; ++i) v[i] /= norm, bv[i] /= norm;
    Q.push_back(std::move(v));
    BQ.push_back(std::move(bv));
  }
}

/// flip_sigma (not NaN): A is σI − A_user of the spectral flip, whose eigenvalues θ are the
/// user's λ = σ − θ.
EigReport eigensolve_impl(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& o,
                          const ColumnBlock& x0, const ColumnBlock& Y, PhaseProfile* prof,
                          double flip_sigma = std::numeric_limits<double>::quiet_NaN()) {
  // The flip serves LOBPCG; a problem too small for it is solved densely below, as asked.
  if (o.spectral_flip && o.lobpcg.which == EigWhich::Largest && !B && A.rows() == A.cols() && A.rows() > 0 &&
      !detail::dense_eigensolve_applies(o, A.rows(), Y.cols)) {
    const auto t0 = Clock::now();
    if (o.check_symmetry) {
      const std::string sa = symmetry_violation_cached(A, "A");
      KRYSP_REQUIRE(sa.empty(), "eigs: ", sa, " (LOBPCG needs a symmetric matrix)");
    }
    const double g = gershgorin_upper(A);
    KRYSP_REQUIRE(std::isfinite(g), "eigs: A has a non-finite entry (Gershgorin bound ", g, ")");
    const double sigma = g + 1e-6 * std::max(std::abs(g), 1e-300);
    const CsrMatrix<double> F = [&] {
      auto ph = phase(prof, "setup: spectral flip (host, sigma*I - A)");
      return shifted_negative(A, sigma);
    }();
    // The flipped run's test ‖r‖ ≤ tol_F·(‖F‖ₑ + |μ|) ≤ 2·tol_F·‖F‖∞ must imply A's, ‖r‖ ≤
    // tol·(‖A‖ₑ + |λ|), with ‖A‖ₑ ≥ a_floor = the largest row 2-norm (≤ ‖A‖₂ for symmetric A):
    // tol_F = tol·a_floor / (2·‖F‖∞). (A = 0: every vector is an eigenvector; tol as given.)
    // The Relative and Absolute tests are the same for A and F (same residual, |λ| = |σ − θ|).
    const double a_floor = max_row_norm(A), f_inf = max_abs_row_sum(F);
    const bool norm_test = o.lobpcg.convergence == EigConvergence::Norm;
    EigOptions of = o;
    if (a_floor > 0 && norm_test) of.lobpcg.tol = o.lobpcg.tol * std::min(1.0, a_floor / (2 * f_inf));
    of.spectral_flip = false;
    of.check_symmetry = false;  // F is symmetric when A is
    of.lobpcg.which = EigWhich::Smallest;
    const double flip_seconds = since(t0);  // the bound and F: part of the setup
    EigReport rep = eigensolve_impl(F, nullptr, of, x0, Y, prof, sigma);
    rep.setup_seconds += flip_seconds;
    for (double& l : rep.eigenvalues) l = sigma - l;  // ascending μ: descending λ, largest first
    if (norm_test) {
      // Residual norms ‖F·x − μ·x‖ = ‖A·x − λ·x‖; A's measure with ‖A‖ₑ = max|a_ii| ≤ ‖A‖₂ (x has unit norm).
      rep.a_norm_estimate = a_floor;
      for (std::size_t j = 0; j < rep.relative_residuals.size(); ++j)
        rep.relative_residuals[j] = rep.residual_norms[j] / (a_floor + std::abs(rep.eigenvalues[j]));
    }
    rep.which = to_string(EigWhich::Largest);
    rep.preconditioner += detail::concat(" (of sigma*I - A, sigma = ", sigma, ")");
    return rep;
  }
  const auto t0 = Clock::now();
  const index_t n = A.rows();
  KRYSP_REQUIRE(A.rows() == A.cols(), "eigs: A is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(n > 0, "eigs: A is empty (0 x 0): no eigenpairs to compute");
  if (B) {
    KRYSP_REQUIRE(B->rows() == B->cols(), "eigs: B is ", B->rows(), "x", B->cols(), ", not square");
    KRYSP_REQUIRE(B->rows() == n, "eigs: B is ", B->rows(), "x", B->cols(), " but A is ", n, "x", n,
                  "; they must have the same size");
  }
  KRYSP_REQUIRE(x0.cols == 0 || (x0.rows == n && x0.values), "eigs: x0 is ", x0.rows, "x", x0.cols,
                ", but A has ", n, " rows");
  KRYSP_REQUIRE(Y.cols == 0 || (Y.rows == n && Y.values), "eigs: the constraint block is ", Y.rows, "x", Y.cols,
                ", but A has ", n, " rows");
  KRYSP_REQUIRE(o.lobpcg.k <= n, "eigs: k = ", o.lobpcg.k, " eigenpairs requested, but A is ", n, " x ", n);
  // Too small for LOBPCG's basis: the whole spectrum densely (dense_eigensolve.hpp), after the checks.
  const bool dense = std::isnan(flip_sigma) && detail::dense_eigensolve_applies(o, n, Y.cols);
  const index_t b = dense ? 0 : lobpcg_block_size(o.lobpcg, n, x0.cols, Y.cols);  // InputError naming k, b, n
  if (o.check_symmetry) {
    const std::string sa = symmetry_violation_cached(A, "A");
    KRYSP_REQUIRE(sa.empty(), "eigs: ", sa, " (LOBPCG needs a symmetric matrix)");
    if (B) {
      const std::string sb = symmetry_violation_cached(*B, "B");
      KRYSP_REQUIRE(sb.empty(), "eigs: ", sb, " (B must be symmetric positive definite)");
    }
  }
  double bdiag = 1;
  if (B) {  // a non-positive diagonal entry proves B is not positive definite
    const auto& rp = B->row_ptr();
    const auto& ci = B->col_idx();
    const auto& va = B->values();
    bdiag = 0;
    for (index_t i = 0; i < n; ++i) {
      double d = 0;
      for (index_t k = rp(i); k < rp(i + 1); ++k)
        if (ci(k) == i) d = va(k);
      KRYSP_REQUIRE(d > 0, "eigs: B(", i + 1, ",", i + 1, ") = ", d,
                    d == 0 ? " (zero or not stored)" : "", "; B must be symmetric positive definite");
      bdiag = std::max(bdiag, d);
    }
    // A positive diagonal does not make B positive definite, and LOBPCG may then converge to pairs
    // of the wrong pencil and miss others (a B slightly indefinite leaves its Gram matrices SPD on
    // the search space). Where factoring it is cheap, its Cholesky factor decides.
    if (EnvelopeCholesky::shows_indefinite(*B, kBCheckMaxFlops)) {
      EigReport rep;
      rep.status = EigStatus::NotPositiveDefinite;
      rep.status_note = "its Cholesky factorization met a pivot <= 0";
      rep.k = o.lobpcg.k;
      rep.n = n;
      rep.which = to_string(o.lobpcg.which);
      rep.preconditioner = "none (not run)";
      rep.backend = to_string(resolve_backend(o.backend));
      rep.setup_seconds = since(t0);
      return rep;
    }
  }
  if (dense) {
    EigReport rep = detail::dense_eigensolve(A, B, o);
    rep.setup_seconds = since(t0) - rep.solve_seconds;
    return rep;
  }
  check_constraint_independence(B, Y);
  const std::vector<double> x0r = x0.cols > 0 ? to_row_major(x0) : std::vector<double>();
  const std::vector<double> yr = Y.cols > 0 ? to_row_major(Y) : std::vector<double>();
  LobpcgStart st;
  st.x0 = x0r.data();
  st.x0_cols = x0.cols;
  st.constraints = yr.data();
  st.constraint_cols = Y.cols;
  st.a_norm_floor = detail::max_abs_diagonal(A);
  st.b_norm_floor = bdiag;
  st.profile = prof;
  st.flipped = !std::isnan(flip_sigma);
  st.flip_sigma = st.flipped ? flip_sigma : 0.0;

  EigReport rep;
  rep.which = to_string(o.lobpcg.which);
  const Refinement refinement(A, o.refine_direct_max_flops);
  const index_t max_cols = std::max<index_t>(3 * b, Y.cols + (o.verify ? o.lobpcg.k : 0));
  KRYSP_REQUIRE(!o.precond_from_b || B, "eigs: a preconditioner from B needs the generalized problem");
  const CsrMatrix<double>& P = o.precond_from_b ? *B : A;  // the matrix M is built from
  // Makes the preconditioner with `make(options)`; with precond_fallback, a failure other than a
  // device error falls back to Jacobi, then to none, and the report says why.
  PrecondOptions po = o.precond;
  auto build = [&](auto make) {
    try {
      return make(po);
    } catch (const DeviceError&) {
      throw;
    } catch (const Error& e) {
      if (!o.precond_fallback || po.kind == PrecondKind::None) throw;
      rep.precond_note = detail::concat(to_string(po.kind), " could not be set up (", e.what(), ")");
      po.kind = positive_diagonal(P) ? PrecondKind::Jacobi : PrecondKind::None;
      return make(po);
    }
  };
  auto name = [&](const Preconditioner<double>* M) {
    const std::string m = (M ? M->summary() : std::string("none")) + (o.precond_from_b && M ? "(B)" : "");
    return o.inner_iters > 0 ? detail::concat("inner-cg(", o.inner_iters, " steps, ", m, ")") : m;
  };
  // The rest once per backend (solvers/executor.hpp); the GPU's extra setup steps are timed apart.
  auto run_on = [&](const auto& ex) {
    constexpr bool cuda = std::decay_t<decltype(ex)>::backend == Backend::Cuda;
    if constexpr (cuda) {
      auto ph = phase(prof, "setup: matrix upload");
      A.device_view();  // the plans below would upload it anyway; here it is timed on its own
      if (B) B->device_view();
    }
    const auto Aop = ex.matrix(A);
    const auto Bop = B ? ex.matrix(*B) : nullptr;
    const MatrixOperator<double>& Pop = o.precond_from_b ? *Bop : *Aop;  // the matrix M is built from
    if constexpr (cuda) {
      if (po.kind != PrecondKind::None) {  // the preconditioner factory takes the matrix's SpMV plan
        auto ph = phase(prof, "setup: spmv plan (preconditioner)");
        Pop.spmv_plan();
      }
    }
    const auto M = [&] {
      auto ph = phase(prof, "setup: preconditioner");
      return build([&](const PrecondOptions& opts) { return ex.preconditioner(Pop, opts); });
    }();
    std::optional<typename std::decay_t<decltype(ex)>::EigOps> ops;
    if constexpr (cuda) {
      auto ph = phase(prof, "setup: eig ops + spmm plans");
      ops.emplace(*Aop, Bop.get(), M.get(), max_cols, Communicator(), o.spmm);
      ops->prepare(b);  // the SpMM plans for N = b now; narrower ones (W shrinks by soft locking) on first use
    } else {
      ops.emplace(*Aop, Bop.get(), M.get(), Communicator());
    }
    ex.synchronize();
    rep.setup_seconds = since(t0);
    rep.preconditioner = name(M.get());
    const EigReport before = rep;
    if (run(*ops, refinement, o, st, rep) && !rep.converged() && o.precond_fallback) {
      // A symmetric but indefinite A: LOBPCG itself needs only symmetry, the inner CG and a
      // preconditioner made for an SPD A do not. The run that failed is replaced by one without.
      const double failed_seconds = rep.solve_seconds;
      rep = before;
      rep.precond_note = detail::concat(rep.preconditioner, " met p^T A p <= 0 (A is not positive definite)");
      EigOptions plain = o;
      plain.inner_iters = 0;
      ops.reset();
      if constexpr (cuda) {
        ops.emplace(*Aop, Bop.get(), nullptr, max_cols, Communicator(), o.spmm);
        ops->prepare(b);
      } else {
        ops.emplace(*Aop, Bop.get(), nullptr, Communicator());
      }
      rep.preconditioner = "none";
      run(*ops, refinement, plain, st, rep);
      rep.solve_seconds += failed_seconds;
    }
    rep.backend = to_string(std::decay_t<decltype(ex)>::backend);
    rep.device = ex.device();
    if constexpr (cuda) rep.spmm_kernel = ops->spmm_kernel(b);
    else rep.spmm_kernel = "host-reference";
  };
  if (resolve_backend(o.backend) == Backend::Cuda) {
    CudaExecutor ex;
    ex.spmm = o.spmm;
    ex.spmv_now = false;
    run_on(ex);
  } else {
    run_on(HostExecutor{});
  }
  return rep;
}

bool profile_requested(const EigOptions& o) {
  const char* e = std::getenv("KRYSP_PROFILE");
  return o.profile || (e && *e && std::string(e) != "0");
}

void set_accuracy_floor(EigReport& rep) { rep.accuracy_floor = eig_accuracy_floor(rep); }
}  // namespace

EigReport eigensolve(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& o,
                     const ColumnBlock& x0, const ColumnBlock& Y) {
  // Start vectors and constraints are orthonormalized first, but their squares must not overflow
  // or underflow on the way: columns far from 1 are scaled by a power of two (no rounding).
  for (const ColumnBlock* v : {&x0, &Y}) {
    const std::size_t count = v->values ? std::size_t(v->rows) * std::size_t(v->cols) : 0;
    if (const int e = scale_exponent(v->values, count); e != 0) {
      std::vector<double> scaled(v->values, v->values + count);
      scale_by_power_of_two(scaled, -e);
      const ColumnBlock sv{v->rows, v->cols, scaled.data()};
      return v == &x0 ? eigensolve(A, B, o, sv, Y) : eigensolve(A, B, o, x0, sv);
    }
  }
  // problem_scale.hpp: entries far from 1 would under- or overflow in LOBPCG's Gram matrices and
  // norms. A = 2^ea·A', B = 2^eb·B' (eb even): the pencil (A', B') has the eigenvalues
  // λ' = λ·2^(eb−ea) and the B'-orthonormal vectors x' = x·2^(eb/2), its residuals 2^(eb/2−ea)
  // times A's, exactly; the relative and norm-relative measures are the same.
  const int ea = A.rows() == A.cols() ? matrix_scale_exponent(A) : 0;
  const int eb_raw = B && B->rows() == B->cols() ? matrix_scale_exponent(*B) : 0;
  const int eb = eb_raw + eb_raw % 2;  // even
  if (ea != 0 || eb != 0) {
    EigOptions os = o;
    const int er = ea - eb / 2;  // the residuals' scale
    if (o.lobpcg.convergence == EigConvergence::Absolute) os.lobpcg.tol = std::ldexp(o.lobpcg.tol, -er);
    const CsrMatrix<double> As = ea != 0 ? scaled_matrix(A, ea) : A;
    const std::optional<CsrMatrix<double>> Bs =
        B ? std::optional<CsrMatrix<double>>(eb != 0 ? scaled_matrix(*B, eb) : *B) : std::nullopt;
    EigReport rep = eigensolve(As, Bs ? &*Bs : nullptr, os, x0, Y);
    unscale_eig_report(rep, ea, eb,
                       survives_scaling(rep.eigenvalues, ea - eb) && survives_scaling(rep.eigenvectors, -eb / 2));
    return rep;
  }
  if (!profile_requested(o)) {
    EigReport rep = eigensolve_impl(A, B, o, x0, Y, nullptr);
    set_accuracy_floor(rep);
    return rep;
  }
  const bool cuda = resolve_backend(o.backend) == Backend::Cuda;
  PhaseProfile prof(cuda ? std::function<void()>(cuda_synchronize) : std::function<void()>(),
                    cuda ? std::function<std::uint64_t()>(device_to_host_copies) : std::function<std::uint64_t()>());
  EigReport rep;
  {
    auto total = phase(&prof, "eigensolve (total)");
    rep = eigensolve_impl(A, B, o, x0, Y, &prof);
  }
  prof.print(stderr, detail::concat("krysp profile: lobpcg ", rep.backend, ", n = ", rep.n, ", b = ", rep.block_size,
                                    ", ", rep.iterations, " iterations, ", to_string(rep.status)));
  set_accuracy_floor(rep);
  return rep;
}

}  // namespace krysp
