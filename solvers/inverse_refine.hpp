#pragma once
/// \file inverse_refine.hpp
/// Refinement of the smallest eigenpairs by block inverse iteration, for runs that LOBPCG ends
/// `stagnated` at its rounding floor. Written once over LOBPCG's backend operations (lobpcg.hpp).
///
/// Why: LOBPCG's Rayleigh–Ritz basis holds directions with components on the stiff end of the
/// spectrum, so its Gram matrices carry errors of about ε·‖A‖, and the smallest pairs of an
/// ill-conditioned A stop at a relative residual near ε·‖A‖/|λ| (docs/eigensolver.md). Inverse
/// iteration does not multiply by A to form its projection: with Y = A⁻¹·B·X,
///     YᵀAY = Yᵀ·B·X   (exactly when A·Y = B·X),
/// so the Rayleigh–Ritz pencil (Yᵀ·B·X, Yᵀ·B·Y) has no ‖A‖-sized term, and the error A·Y − B·X
/// of the inner solve enters the eigen-residual relative to |λ| at about the inner tolerance.
///
/// One sweep: F = B·X; Y ≈ A⁻¹·F (InverseSolver: a sparse Cholesky factor where affordable, which
/// is backward stable; else PCG with the backend's M and true-residual restarts); Ritz pairs of
/// (Yᵀ·F, Yᵀ·B·Y), smallest first, while far from converged on [Y_prev | Y] (refine_smallest);
/// X = Y·C. The verdict comes from fresh products r = A·x − λ·B·x, as everywhere else.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/envelope_cholesky.hpp"
#include "krysp/solvers/lobpcg_result.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/solvers/small_dense.hpp"

namespace krysp {

/// What a refinement did (EigReport::refine_*).
struct RefineOutcome {
  index_t sweeps = 0;            ///< inverse-iteration sweeps
  index_t inner_iterations = 0;  ///< PCG iterations of the inner solves (per column block)
  bool converged = false;        ///< every wanted pair met the test after the last sweep
};

namespace refine_detail {

/// Y ≈ A⁻¹·F for the N columns of F by PCG with the backend's M, from Y = 0, until every
/// column's TRUE residual ‖f_j − A·y_j‖ ≤ rtol·‖f_j‖, at most max_iters iterations in all. When the
/// recursive residuals say done but the true ones do not, PCG restarts from the true residual;
/// it gives up once a restart no longer halves the worst true residual (the rounding floor).
/// All blocks have leading dimension ld ≥ N; `work` holds 4 blocks of n × ld. Returns the
/// iterations taken.
template <class Ops, class Block>
index_t pcg_columns(Ops& ops, index_t N, index_t ld, const double* F, double* Y, double rtol, index_t max_iters,
                    std::vector<Block>& work) {
  double *r = work[0].data(), *z = work[1].data(), *p = work[2].data(), *q = work[3].data();
  std::vector<double> I(std::size_t(N) * N, 0.0), D(std::size_t(N) * N, 0.0), G(std::size_t(N) * N),
      G2(std::size_t(N) * N), ff(N), rho(N), target(N);
  for (index_t j = 0; j < N; ++j) I[cm(j, j, N)] = 1.0;
  auto diag = [&](const std::vector<double>& M, index_t j) { return M[cm(j, j, N)]; };
  auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
  ops.gram(F, ld, N, F, ld, N, G.data());
  for (index_t j = 0; j < N; ++j) {
    ff[j] = diag(G, j);
    target[j] = rtol * rtol * ff[j];
  }
  ops.copy(N, F, ld, Y, ld);  // Y = 0 (F − F): keeps the backends' blocks the only storage
  ops.combine(F, ld, N, I.data(), -1.0, 1.0, Y, ld, N);
  index_t its = 0;
  double last_worst = std::numeric_limits<double>::infinity();
  for (;;) {
    // r = F − A·Y, the true residual
    ops.apply_a(N, Y, ld, q, ld);
    ops.copy(N, F, ld, r, ld);
    ops.combine(q, ld, N, I.data(), -1.0, 1.0, r, ld, N);
    ops.gram(r, ld, N, r, ld, N, G.data());
    double worst = 0;
    bool done = true;
    for (index_t j = 0; j < N; ++j) {
      const double rr = diag(G, j);
      if (!std::isfinite(rr)) return its;
      done &= rr <= target[j];
      worst = std::max(worst, ff[j] > 0 ? rr / ff[j] : 0.0);
    }
    if (done || its >= max_iters || !(worst < 0.25 * last_worst)) return its;
    last_worst = worst;
    std::vector<char> live(N, 1);
    ops.precondition(N, r, ld, z, ld);
    ops.gram(r, ld, N, z, ld, N, G.data());
    for (index_t j = 0; j < N; ++j) {
      rho[j] = diag(G, j);
      live[j] = finite_positive(rho[j]);
    }
    ops.copy(N, z, ld, p, ld);
    while (its < max_iters) {
      ++its;
      ops.apply_a(N, p, ld, q, ld);
      ops.gram(p, ld, N, q, ld, N, G.data());
      for (index_t j = 0; j < N; ++j) {
        const double pq = diag(G, j);
        live[j] = live[j] && finite_positive(pq);
        D[cm(j, j, N)] = live[j] ? rho[j] / pq : 0.0;  // α_j
      }
      ops.combine(p, ld, N, D.data(), 1.0, 1.0, Y, ld, N);   // y += α·p
      ops.combine(q, ld, N, D.data(), -1.0, 1.0, r, ld, N);  // r −= α·q
      ops.precondition(N, r, ld, z, ld);
      ops.gram2(r, ld, N, z, ld, r, ld, N, G.data(), G2.data());  // rᵀM⁻¹r and rᵀr, one wait
      bool all_done = true;
      for (index_t j = 0; j < N; ++j) {
        const double next = diag(G, j);
        live[j] = live[j] && finite_positive(next) && diag(G2, j) > 0.25 * target[j];
        D[cm(j, j, N)] = live[j] ? next / rho[j] : 0.0;  // β_j
        rho[j] = next;
        all_done = all_done && !live[j];
      }
      if (all_done) break;
      ops.combine(p, ld, N, D.data(), 1.0, 1.0, z, ld, N);  // z + β·p: the next p
      std::swap(p, z);
    }
  }
}

}  // namespace refine_detail

/// Y ≈ A⁻¹·F for the refinement: by the envelope Cholesky factor of A when one is given (on the
/// host, with two steps of iterative refinement on the backend's A), else by PCG with the
/// backend's M to a relative true residual `rtol`.
template <class Ops>
class InverseSolver {
 public:
  /// `chol` (may be null) must outlive this.
  InverseSolver(Ops& ops, const EnvelopeCholesky* chol, double rtol, index_t max_iters)
      : o_(ops), chol_(chol), rtol_(rtol), cap_(max_iters) {}
  /// Y = A⁻¹·F for N columns (ld ld); returns the PCG iterations taken (0 for Cholesky).
  index_t operator()(index_t N, index_t ld, const double* F, double* Y) {
    const std::size_t nn = std::size_t(o_.size()), count = nn * ld;
    if (width_ < ld) {
      work_.clear();
      for (int i = 0; i < 4; ++i) work_.push_back(o_.block(count));
      width_ = ld;
    }
    if (!chol_) return refine_detail::pcg_columns(o_, N, ld, F, Y, rtol_, cap_, work_);
    // The factor works on the host: blocks travel as contiguous n × N copies (T, ld N), so that
    // the columns of F and Y's block beyond N are neither read nor written.
    const std::size_t nN = nn * std::size_t(N);
    std::vector<double> h(nN), d(nN);
    double* R = work_[0].data();
    double* AY = work_[1].data();
    double* T = work_[2].data();
    auto solve_host = [&](const double* src, index_t lds) {  // T = A⁻¹·src, via the host factor
      o_.copy(N, src, lds, T, N);
      o_.download(T, h.data(), nN);
      chol_->solve(N, h.data(), N, d.data(), N);
      o_.upload(d.data(), T, nN);
    };
    solve_host(F, ld);
    o_.copy(N, T, N, Y, ld);
    // Iterative refinement: Y += A⁻¹·(F − A·Y), the residual on the backend.
    std::vector<double> I(std::size_t(N) * N, 0.0);
    for (index_t j = 0; j < N; ++j) I[cm(j, j, N)] = 1.0;
    for (int step = 0; step < 2; ++step) {
      o_.apply_a(N, Y, ld, AY, ld);
      o_.copy(N, F, ld, R, ld);
      o_.combine(AY, ld, N, I.data(), -1.0, 1.0, R, ld, N);
      solve_host(R, ld);
      o_.combine(T, N, N, I.data(), 1.0, 1.0, Y, ld, N);
    }
    return 0;
  }

 private:
  Ops& o_;
  const EnvelopeCholesky* chol_;
  double rtol_;
  index_t cap_;
  std::vector<typename Ops::Block> work_;
  index_t width_ = 0;
};

/// Refines the k smallest pairs of `res` (a run without constraints and without spectral flip)
/// by block inverse iteration on a block of m = res.block_size columns (the k vectors, and random
/// ones for the rest), accelerated by keeping the previous sweep's block: Rayleigh–Ritz runs on
/// [Y_prev | Y], where A·Y_prev = F_prev is known too, so the projected A is still
/// [Y_prev | Y]ᵀ·[F_prev | F] and never needs A (a two-block Krylov space of A⁻¹·B: far faster
/// than plain subspace iteration on clustered spectra), until the worst measure is sqrt(tol). Updates res's eigenvalues, eigenvectors,
/// residuals and status (Converged when every wanted pair meets opt's test from fresh products).
/// At most `max_sweeps` sweeps; stops after two sweeps in a row that did not lower the worst
/// wanted measure by a quarter.
template <class Ops>
RefineOutcome refine_smallest(Ops& ops, const LobpcgOptions& opt, EigResult& res, InverseSolver<Ops>& solve,
                              int max_sweeps = 30) {
  RefineOutcome out;
  const index_t n = res.n, k = res.k, m = std::max(res.block_size, k), ld = 2 * m;
  const bool gen = ops.generalized();
  using Block = typename Ops::Block;
  // S holds [Y_prev | Y] in columns [m − pc, m + cols) (the previous block right-aligned before
  // column m, the new one from m); FS the matching A·S (= B·X of each sweep); BS = B·S.
  Block X = ops.block(std::size_t(n) * m), AX = ops.block(std::size_t(n) * m), R = ops.block(std::size_t(n) * m);
  Block BX = gen ? ops.block(std::size_t(n) * m) : Block{};
  Block S = ops.block(std::size_t(n) * ld), FS = ops.block(std::size_t(n) * ld);
  Block BS = gen ? ops.block(std::size_t(n) * ld) : Block{};
  Block scratch = ops.block(std::size_t(n) * k);
  // X = [returned vectors | random]
  {
    Block V = ops.block(std::size_t(n) * k);
    ops.upload(res.eigenvectors.data(), V.data(), std::size_t(n) * k);
    ops.copy(k, V.data(), k, X.data(), m);
    if (m > k) ops.fill_random(m - k, X.data() + k, m, opt.seed + 0x51ed27u, k);
  }
  std::vector<double> lambda(m), rr(m), xx(m), bxx(m), rel(m);
  std::vector<index_t> dest(m);
  for (index_t j = 0; j < m; ++j) dest[j] = j;
  double best = std::numeric_limits<double>::infinity();
  index_t cols = m, pc = 0, cols_prev = 0;  // columns of X (and of the new block), of the previous block
  int idle = 0;              // sweeps in a row without a quarter's progress
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    // The previous block accelerates while the pairs are far from converged; near convergence
    // [Y_prev | Y] becomes nearly dependent and the solves' rounding dominates the difference, so
    // from a worst measure of sqrt(tol) on the sweeps are plain.
    pc = 0;
    if (sweep > 0 && best > std::sqrt(opt.tol)) {  // the last block becomes the previous one
      pc = cols_prev;
      ops.copy(pc, S.data() + m, ld, S.data() + (m - pc), ld);
      ops.copy(pc, FS.data() + m, ld, FS.data() + (m - pc), ld);
      if (gen) ops.copy(pc, BS.data() + m, ld, BS.data() + (m - pc), ld);
    }
    double* const Y = S.data() + m;
    double* const F = FS.data() + m;
    if (gen) ops.apply_b(cols, X.data(), m, F, ld);
    else ops.copy(cols, X.data(), m, F, ld);
    out.inner_iterations += solve(cols, ld, F, Y);  // A·Y = F
    ++out.sweeps;
    if (gen) ops.apply_b(cols, Y, ld, BS.data() + m, ld);
    const index_t w = pc + cols, o = m - pc;
    std::vector<double> GA(std::size_t(w) * w), GB(std::size_t(w) * w);
    ops.gram2(S.data() + o, ld, w, FS.data() + o, ld, (gen ? BS.data() : S.data()) + o, ld, w, GA.data(), GB.data());
    dense::symmetrize(w, GA);
    dense::symmetrize(w, GB);
    const lobpcg_detail::RitzStep rs = lobpcg_detail::rayleigh_ritz(w, GA, GB, false, k, true);
    if (!rs.ok) break;
    cols_prev = cols;
    const index_t next = std::min(rs.rank, m);
    ops.combine(S.data() + o, ld, w, rs.C.data(), 1.0, 0.0, X.data(), m, next);  // X = S·C
    cols = next;
    std::copy(rs.theta.begin(), rs.theta.begin() + cols, lambda.begin());
    // fresh residuals of the wanted pairs
    ops.apply_a(k, X.data(), m, AX.data(), m);
    const double* bx = X.data();
    if (gen) {
      ops.apply_b(k, X.data(), m, BX.data(), m);
      bx = BX.data();
    }
    ops.residuals(k, AX.data(), m, bx, m, X.data(), m, lambda.data(), dest.data(), R.data(), m, rr.data(), xx.data());
    bxx = xx;
    if (gen) {
      std::vector<double> G(std::size_t(k) * k);
      ops.gram(bx, m, k, bx, m, k, G.data());
      for (index_t j = 0; j < k; ++j) bxx[j] = G[cm(j, j, k)];
    }
    double worst = 0;
    for (index_t j = 0; j < k; ++j) {
      rel[j] = convergence_measure(opt.convergence, rr[j], xx[j], bxx[j], lambda[j], lambda[j], res.a_norm_estimate,
                                   res.b_norm_estimate);
      worst = std::isfinite(rel[j]) ? std::max(worst, rel[j]) : std::numeric_limits<double>::infinity();
    }
    if (!std::isfinite(worst)) break;
    idle = worst < 0.75 * best ? 0 : idle + 1;
    if (worst < best) {  // keep the best sweep's pairs
      best = worst;
      res.eigenvalues.assign(lambda.begin(), lambda.begin() + k);
      res.relative_residuals.assign(rel.begin(), rel.begin() + k);
      res.residual_norms.resize(k);
      for (index_t j = 0; j < k; ++j) res.residual_norms[j] = std::sqrt(rr[j]);
      ops.copy(k, X.data(), m, scratch.data(), k);
      ops.download(scratch.data(), res.eigenvectors.data(), std::size_t(n) * k);
    }
    if (worst <= opt.tol) {
      out.converged = true;
      res.status = EigStatus::Converged;
      break;
    }
    if (idle >= 2 || cols < k) break;
  }
  return out;
}

}  // namespace krysp
