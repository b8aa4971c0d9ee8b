#pragma once
/// \file block_cg.hpp
/// Block preconditioned CG in Dubrulle's retooled form (DR-BCG: "Retooling the method of block
/// conjugate gradients", ETNA 12, 2001), with a rank-revealing orthonormalisation where the block
/// loses rank (as in Ji and Li's breakdown-free block CG), written once over backend ops:
///   size(), cols(), block(), zero_columns(X, zero)
///   residual(B, X, R)                             R = B − A·X
///   spmm_gram(P, w, Q) -> PᵀQ (w × w)             Q = A·P (first w columns)
///   precondition(R, w, Z)                         Z = M⁻¹·R (first w columns; a copy without M)
///   gram(X, bx, Y, by) -> XᵀY (bx × by)
///   gram2(X, b, Y1, Y2) -> {XᵀY1, XᵀY2}           (b × b each, one wait for the device)
///   combine(X, bx, C, alpha, beta, Y, by)         Y = alpha·X·C + beta·Y (C bx × by, Y ≠ X)
///   step(AP, w, ξ, Q, wq, Cq, Z) -> {WᵀZ, WᵀW}    W = Q·Cq − AP·ξ into Q (Cq: wq × w), Z = M⁻¹·W
///   rotate(Q, Z, P, X, w, w2, Cw, Tt, Cx)         X += P·Cx; P = Z·Cw + P·Tt (w to w2 columns)
/// (step and rotate are row-wise: one pass each where the backend fuses them; Z is whatever step
/// left for rotate, so a backend may apply a diagonal M on the fly and never store it.)
/// Blocks are n × s row-major (ld = s); a block of width w uses its first w columns. Small
/// matrices are column-major on the host, where the w × w algebra takes microseconds.
///
/// Why this form. The residual block is kept factored, R = Q·ρ, with Q (n × w) M⁻¹-orthonormal
/// and ρ (w × s) small. Block CG on R itself fails on ill-conditioned problems: once the easy
/// components are gone, the residual columns are all dominated by the same slow eigenvectors and
/// become nearly parallel, so orthonormalising them either drops directions or amplifies
/// rounding, and conjugacy is lost (bcsstk20 with s = 4 took 80,000 block iterations against
/// 3,400 for CG alone). Q stays orthonormal whatever R's columns do; their magnitudes and
/// near-dependence live in ρ, which is only multiplied.
///
/// One iteration, with S the search block (n × w) and AS = A·S:
///   ξ = (SᵀAS)⁻¹                              spmm_gram, Cholesky (first wait)
///   W = Q − AS·ξ                              = R_next·ρ⁻¹
///   Z = M⁻¹·W, WᵀZ = τᵀτ                      step, with WᵀW for the norms (second wait)
///   X += S·ξ·ρ                                columns still active only
///   S = Z·τ⁻¹ + S·τᵀ;  ρ = τ·ρ                 rotate, with X's step
///   Q = W·τ⁻¹                                 never formed: the next step reads W and applies τ⁻¹
///   ‖r_j‖² = ρ_jᵀ·(QᵀQ)·ρ_j,  QᵀQ = τ⁻ᵀ·WᵀW·τ⁻¹
/// τ⁻¹ is the C of svqb(): Cholesky QR when WᵀZ is well conditioned, else an eigendecomposition
/// that drops dependent directions (the Krylov space is exhausted, or right-hand sides were
/// equal); then τ = Cᵀ·WᵀZ and the block gets narrower. A converged column stops moving (the X
/// update skips it) but keeps its place in ρ, so the directions it brings keep serving the
/// others: no column needs more iterations than CG alone would, as in exact arithmetic.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/small_dense.hpp"
#include "krysp/solvers/solve_result.hpp"

namespace krysp {

namespace block_cg_detail {
/// SVQB (Stathopoulos and Wu): C with W·C orthonormal in the inner product whose Gram matrix is
/// H (a × a); directions whose diagonally scaled Gram eigenvalue is below `drop` × the largest are
/// dropped. Returns the kept width. Where nothing would be dropped, Cholesky QR gives another C
/// with the same property, upper triangular, for a fraction of the host time.
inline index_t svqb(index_t a, std::vector<double> H, double drop, std::vector<double>& C) {
  std::vector<double> d(a);
  bool positive = true;
  for (index_t i = 0; i < a; ++i) {
    d[i] = H[cm(i, i, a)] > 0 ? 1.0 / std::sqrt(H[cm(i, i, a)]) : 0.0;
    positive = positive && d[i] > 0;
  }
  for (index_t j = 0; j < a; ++j)
    for (index_t i = 0; i < a; ++i) H[cm(i, j, a)] *= d[i] * d[j];
  C.clear();
  // Cholesky QR loses orthogonality as u·κ(H): only for κ(H) < 1e6 (λmin ≥ 1/‖R⁻¹‖²_F, λmax ≤ a).
  constexpr double kCholQrMaxCond = 1e6;
  if (std::vector<double> R = H; positive && a > 0 && dense::cholesky_upper(a, R) && dense::invert_upper(a, R)) {
    double f = 0;
    for (double r : R) f += r * r;
    if (1.0 / f > double(a) / kCholQrMaxCond && 1.0 / f > drop * double(a)) {
      C.resize(std::size_t(a) * a);
      for (index_t j = 0; j < a; ++j)
        for (index_t i = 0; i < a; ++i) C[cm(i, j, a)] = d[i] * R[cm(i, j, a)];  // R⁻¹ is upper: zeros below
      return a;
    }
  }
  std::vector<double> w, V;
  if (a == 0 || !dense::sym_eig(a, H, w, V) || !(w[a - 1] > 0)) return 0;
  index_t kept = 0;
  for (index_t k = 0; k < a; ++k) {
    if (!(w[k] > drop * w[a - 1])) continue;
    for (index_t i = 0; i < a; ++i) C.push_back(d[i] * V[cm(i, k, a)] / std::sqrt(w[k]));
    ++kept;
  }
  return kept;
}
/// Mᵀ for a column-major rows × cols M.
inline std::vector<double> transpose(const std::vector<double>& M, index_t rows, index_t cols) {
  std::vector<double> T(M.size());
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) T[cm(j, i, cols)] = M[cm(i, j, rows)];
  return T;
}
}  // namespace block_cg_detail

/// Solves A·X = B (n × s row-major blocks of ops) by block PCG from the initial guess X, which
/// receives the solution; per-column statuses and residuals in the result.
template <class Ops>
BlockSolveResult block_cg(Ops& ops, const typename Ops::Block& B, typename Ops::Block& X, const CgOptions& opt) {
  using namespace block_cg_detail;
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const index_t n = ops.size(), s = ops.cols();
  const index_t max_iters = opt.max_iters > 0 ? opt.max_iters
                                              : index_t(std::min<std::int64_t>(kMaxIndex, std::max<std::int64_t>(1000, 10 * std::int64_t(n))));
  // Relative (scaled) Gram eigenvalue below which a direction of W counts as dependent. Q's
  // orthonormality keeps real directions far above it; only an exhausted Krylov space or equal
  // right-hand sides come near.
  constexpr double kDrop = 1e-14;
  auto R = ops.block(), Q = ops.block(), S = ops.block(), AS = ops.block(), Z = ops.block();
  BlockSolveResult res;
  res.columns.resize(s);

  const auto BB = ops.gram(B, s, B, s);
  std::vector<double> tol2(s);
  std::vector<char> zero_b(s);
  for (index_t j = 0; j < s; ++j) {
    res.columns[j].b_norm = std::sqrt(BB[cm(j, j, s)]);
    const double tol = std::max(opt.rtol * res.columns[j].b_norm, opt.atol);
    tol2[j] = tol * tol;
    zero_b[j] = res.columns[j].b_norm == 0;
  }
  ops.zero_columns(X, zero_b);  // a zero right-hand side has the exact solution x = 0

  std::vector<index_t> active;
  auto check = [&](index_t it, const std::vector<double>& rr) {  // per-column test on ‖r_j‖²
    std::vector<index_t> still;
    double worst = 0;
    for (index_t j : active) {
      auto& c = res.columns[j];
      const double rnorm = std::sqrt(rr[j]);
      c.residual_history.push_back(rnorm);
      c.relative_residual = c.b_norm > 0 ? rnorm / c.b_norm : rnorm;
      c.iterations = it;
      if (!std::isfinite(rr[j])) {  // no true residual to recompute: report the non-finite one, not 0
        c.status = SolveStatus::NonFinite;
        c.true_residual_norm = rnorm;
        c.true_relative_residual = c.relative_residual;
      } else if (rr[j] <= tol2[j]) c.status = SolveStatus::Converged;
      else still.push_back(j);
      worst = std::max(worst, c.relative_residual);
    }
    active = still;
    if (opt.progress) opt.progress({it, worst, seconds()});
  };
  for (index_t j = 0; j < s; ++j) active.push_back(j);
  ops.residual(B, X, R);  // R = B − A·X
  {
    const auto RR = ops.gram(R, s, R, s);
    std::vector<double> rr(s);
    for (index_t j = 0; j < s; ++j) rr[j] = RR[cm(j, j, s)];
    check(0, rr);
  }

  // As in cg(): a column is converged when its TRUE residual meets the tolerance. Columns whose
  // recursive residual did but whose true one does not start again from b − A·x (the others keep
  // their x), until a start no longer halves their true residual.
  index_t it = 0;
  std::vector<double> last_true(s, std::numeric_limits<double>::infinity());
  while (!active.empty()) {
    // Start: R = B − A·X restricted to the active columns, factored as Q·ρ; S = M⁻¹·Q.
    const index_t a0 = index_t(active.size());
    ops.precondition(R, s, Z);
    const auto H = ops.gram(R, s, Z, s);
    std::vector<double> Ha(std::size_t(a0) * a0);
    for (index_t q = 0; q < a0; ++q)
      for (index_t p = 0; p < a0; ++p) Ha[cm(p, q, a0)] = H[cm(active[p], active[q], s)];
    dense::symmetrize(a0, Ha);
    std::vector<double> Ca;
    index_t w = svqb(a0, Ha, kDrop, Ca);
    const auto Ta = dense::at_b(a0, w, a0, Ca, Ha);  // ρ's active columns: R_a = (R_a·Ca)·(Caᵀ·Ha)
    std::vector<double> C(std::size_t(s) * w, 0.0), rho(std::size_t(w) * s, 0.0);
    for (index_t k = 0; k < w; ++k)
      for (index_t p = 0; p < a0; ++p) {
        C[cm(active[p], k, s)] = Ca[cm(p, k, a0)];
        rho[cm(k, active[p], w)] = Ta[cm(k, p, w)];
      }
    if (w > 0) {
      ops.combine(R, s, C, 1.0, 0.0, Q, w);
      ops.combine(Z, s, C, 1.0, 0.0, S, w);
    }
    index_t wq = w;  // Q = (first wq columns of the Q block)·Cq: τ⁻¹ is applied by the next step
    std::vector<double> Cq(std::size_t(w) * w, 0.0);
    for (index_t i = 0; i < w; ++i) Cq[cm(i, i, w)] = 1.0;

    while (!active.empty() && it < max_iters && w > 0) {
      auto L = ops.spmm_gram(S, w, AS);  // SᵀAS
      dense::symmetrize(w, L);
      const auto G = L;
      if (!dense::cholesky_upper(w, L)) {  // SᵀAS not SPD: A is not SPD (or NaN)
        bool finite = true;
        for (double g : G) finite = finite && std::isfinite(g);
        for (index_t j : active) res.columns[j].status = finite ? SolveStatus::NotSpd : SolveStatus::NonFinite;
        active.clear();
        break;
      }
      ++it;
      dense::invert_upper(w, L);
      const auto xi = dense::a_b(w, w, w, L, transpose(L, w, w));  // ξ = G⁻¹ = R⁻¹·R⁻ᵀ
      auto step = dense::a_b(w, w, s, xi, rho);                     // X += S·ξ·ρ, active columns
      std::vector<char> moving(s, 0);
      for (index_t j : active) moving[j] = 1;
      for (index_t j = 0; j < s; ++j)
        if (!moving[j])
          for (index_t i = 0; i < w; ++i) step[cm(i, j, w)] = 0.0;
      auto [WZ, WW] = ops.step(AS, w, xi, Q, wq, Cq, Z);  // Q becomes W = Q·Cq − AS·ξ; Z = M⁻¹·W
      dense::symmetrize(w, WZ);
      dense::symmetrize(w, WW);
      std::vector<double> Cw;
      const index_t w2 = svqb(w, WZ, kDrop, Cw);              // τ⁻¹ (w × w2)
      const auto tau = dense::at_b(w, w2, w, Cw, WZ);          // τ = Cwᵀ·WᵀZ (w2 × w)
      ops.rotate(Q, Z, S, X, w, w2, Cw, transpose(tau, w2, w), step);  // X += S·ξ·ρ; S = Z·τ⁻¹ + S·τᵀ
      if (w2 == 0) break;                                      // W = 0: b − A·x decides below
      wq = w;
      Cq = Cw;                                                 // Q = W·τ⁻¹, for the next step
      rho = dense::a_b(w2, w, s, tau, rho);
      const auto QQ = dense::at_b(w, w2, w2, Cw, dense::a_b(w, w, w2, WW, Cw));
      std::vector<double> rr(s, 0.0);
      for (index_t j : active) {
        const auto v = dense::a_b(w2, w2, 1, QQ, std::vector<double>(rho.begin() + std::size_t(j) * w2,
                                                                     rho.begin() + std::size_t(j + 1) * w2));
        for (index_t i = 0; i < w2; ++i) rr[j] += rho[cm(i, j, w2)] * v[i];
      }
      w = w2;
      check(it, rr);
    }
    // Columns still active stopped at the iteration cap, or the block lost every direction (the
    // Krylov space is exhausted: in exact arithmetic they are solved, and b − A·x decides).
    for (index_t j : active) res.columns[j].status = it >= max_iters ? SolveStatus::MaxIterations : SolveStatus::Converged;
    active.clear();

    ops.residual(B, X, R);  // true residuals
    const auto RR = ops.gram(R, s, R, s);
    for (index_t j = 0; j < s; ++j) {
      auto& c = res.columns[j];
      const double rr = RR[cm(j, j, s)];
      c.true_residual_norm = std::sqrt(rr);
      c.true_relative_residual = c.b_norm > 0 ? c.true_residual_norm / c.b_norm : c.true_residual_norm;
      if (!c.converged()) continue;
      if (!std::isfinite(c.true_residual_norm)) {
        c.status = SolveStatus::NonFinite;
      } else if (rr > tol2[j]) {  // the recursive residual drifted: start again, or stagnated
        if (!(c.true_residual_norm < kRestartMinGain * last_true[j])) {
          c.status = SolveStatus::Stagnated;
        } else if (it >= max_iters) {
          c.status = SolveStatus::MaxIterations;
        } else {
          last_true[j] = c.true_residual_norm;
          ++c.residual_replacements;
          if (!c.residual_history.empty()) c.residual_history.back() = c.true_residual_norm;
          c.relative_residual = c.true_relative_residual;
          c.status = SolveStatus::MaxIterations;
          active.push_back(j);
        }
      }
    }
  }
  res.iterations = it;
  res.seconds = seconds();
  return res;
}

}  // namespace krysp
