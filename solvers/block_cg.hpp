#pragma once
/// \file block_cg.hpp
/// Breakdown-free block preconditioned CG (Ji and Li, 2017), written once over backend ops:
///   size(), cols(), block(), spmm(P, w, Q), residual(B, X, R), precondition(R, Z) -> bool,
///   gram(X, bx, Y, by) -> bx×by, combine(X, bx, C, alpha, beta, Y, by), copy(X, Y, b).
/// Blocks are n × s row-major (ld = s); a block of width w uses its first w columns.
///
/// The search block P is kept orthonormal by SVQB applied twice, which drops near-dependent
/// directions: when the residual block loses rank (identical right-hand sides, converged or zero
/// columns) P simply gets narrower instead of a singular s × s matrix being inverted. Converged
/// columns leave the active set: their x and r no longer change. With s = 1 this is CG.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "solvers/block_ops.hpp"
#include "solvers/small_dense.hpp"
#include "solvers/solve_result.hpp"

namespace krysp {

namespace block_cg_detail {
/// s × a matrix picking the listed columns: Y = X·S gathers them.
inline std::vector<double> selection(index_t s, const std::vector<index_t>& cols) {
  std::vector<double> S(std::size_t(s) * cols.size(), 0.0);
  for (std::size_t j = 0; j < cols.size(); ++j) S[cm(cols[j], index_t(j), s)] = 1.0;
  return S;
}
/// SVQB (Stathopoulos and Wu): C with Pn·C orthonormal, from H = PnᵀPn (a × a); directions whose
/// scaled Gram eigenvalue is below `drop` × the largest are dropped. Returns the kept width.
inline index_t svqb(index_t a, std::vector<double> H, double drop, std::vector<double>& C) {
  std::vector<double> d(a);
  for (index_t i = 0; i < a; ++i) d[i] = H[cm(i, i, a)] > 0 ? 1.0 / std::sqrt(H[cm(i, i, a)]) : 0.0;
  for (index_t j = 0; j < a; ++j)
    for (index_t i = 0; i < a; ++i) H[cm(i, j, a)] *= d[i] * d[j];
  std::vector<double> w, V;
  if (!dense::sym_eig(a, H, w, V) || a == 0 || !(w[a - 1] > 0)) return 0;
  C.clear();
  index_t kept = 0;
  for (index_t k = 0; k < a; ++k) {
    if (!(w[k] > drop * w[a - 1])) continue;
    for (index_t i = 0; i < a; ++i) C.push_back(d[i] * V[cm(i, k, a)] / std::sqrt(w[k]));
    ++kept;
  }
  return kept;
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
  constexpr double kDrop = 1e-14;  // relative Gram eigenvalue below which a direction is dependent (larger values, 1e-8..1e-6, lose directions and triple the iterations on bcsstk04 with s = 16)
  auto R = ops.block(), Z = ops.block(), P = ops.block(), Pn = ops.block(), Q = ops.block();
  BlockSolveResult res;
  res.columns.resize(s);
  auto diag = [&](const std::vector<double>& G, index_t k) { return G[cm(k, k, s)]; };

  const auto BB = ops.gram(B, s, B, s);
  std::vector<double> tol2(s);
  for (index_t j = 0; j < s; ++j) {
    res.columns[j].b_norm = std::sqrt(diag(BB, j));
    const double tol = std::max(opt.rtol * res.columns[j].b_norm, opt.atol);
    tol2[j] = tol * tol;
  }
  {  // a zero right-hand side has the exact solution x = 0
    std::vector<double> keep(std::size_t(s) * s, 0.0);
    for (index_t j = 0; j < s; ++j) keep[cm(j, j, s)] = res.columns[j].b_norm > 0 ? 1.0 : 0.0;
    ops.combine(X, s, keep, 1.0, 0.0, Pn, s);  // X = X·diag(keep)
    ops.copy(Pn, X, s);
  }
  ops.residual(B, X, R);  // R = B − A·X

  std::vector<index_t> active;
  auto check = [&](index_t it) {  // per-column convergence on the recursive residual
    const auto RR = ops.gram(R, s, R, s);
    std::vector<index_t> still;
    double worst = 0;
    for (index_t j : active) {
      auto& c = res.columns[j];
      const double rr = diag(RR, j), rnorm = std::sqrt(rr);
      c.residual_history.push_back(rnorm);
      c.relative_residual = c.b_norm > 0 ? rnorm / c.b_norm : rnorm;
      c.iterations = it;
      if (!std::isfinite(rr)) c.status = SolveStatus::NonFinite;
      else if (rr <= tol2[j]) c.status = SolveStatus::Converged;
      else still.push_back(j);
      worst = std::max(worst, c.relative_residual);
    }
    active = still;
    if (opt.progress) opt.progress({it, worst, seconds()});
  };
  for (index_t j = 0; j < s; ++j) active.push_back(j);
  check(0);

  index_t w = 0;  // width of P
  std::vector<double> C;
  auto orthonormalize = [&](index_t a) {  // P = orth(Pn[:, :a]) by SVQB twice; returns the width
    w = svqb(a, ops.gram(Pn, a, Pn, a), kDrop, C);
    if (w == 0) return;
    ops.combine(Pn, a, C, 1.0, 0.0, P, w);
    const index_t w2 = svqb(w, ops.gram(P, w, P, w), kDrop, C);
    ops.copy(P, Pn, w);
    ops.combine(Pn, w, C, 1.0, 0.0, P, w2);
    w = w2;
  };
  // Z = M·R; P = orth(Z[:, active])
  const bool pre = ops.precondition(R, Z);
  if (!active.empty()) {
    ops.combine(pre ? Z : R, s, selection(s, active), 1.0, 0.0, Pn, index_t(active.size()));
    orthonormalize(index_t(active.size()));
  }

  index_t it = 0;
  while (!active.empty() && w > 0 && it < max_iters) {
    ++it;
    ops.spmm(P, w, Q);                   // Q = A·P
    auto G = ops.gram(P, w, Q, w);       // G = PᵀAP
    dense::symmetrize(w, G);
    auto L = G;
    if (!dense::cholesky_upper(w, L)) {  // PᵀAP not SPD: A is not SPD (or NaN)
      bool finite = true;
      for (double g : G) finite = finite && std::isfinite(g);
      for (index_t j : active) res.columns[j].status = finite ? SolveStatus::NotSpd : SolveStatus::NonFinite;
      active.clear();
      break;
    }
    auto solve_g = [&](std::vector<double> F, index_t m) {  // G⁻¹·F for F (w × m), by the Cholesky factor
      auto Rinv = L;
      dense::invert_upper(w, Rinv);
      const auto T1 = dense::at_b(w, w, m, Rinv, F);  // R⁻ᵀF
      return dense::a_b(w, w, m, Rinv, T1);           // R⁻¹R⁻ᵀF
    };
    auto alpha = solve_g(ops.gram(P, w, R, s), s);  // α = G⁻¹·PᵀR, only active columns move
    std::vector<char> is_active(s, 0);
    for (index_t j : active) is_active[j] = 1;
    for (index_t j = 0; j < s; ++j)
      if (!is_active[j])
        for (index_t i = 0; i < w; ++i) alpha[cm(i, j, w)] = 0.0;
    ops.combine(P, w, alpha, 1.0, 1.0, X, s);   // X += P·α
    ops.combine(Q, w, alpha, -1.0, 1.0, R, s);  // R −= Q·α
    check(it);
    if (active.empty()) break;
    const bool pre2 = ops.precondition(R, Z);                                  // Z = M·R
    const index_t a = index_t(active.size());
    ops.combine(pre2 ? Z : R, s, selection(s, active), 1.0, 0.0, Pn, a);      // Pn = Z[:, active]
    const auto beta = solve_g(ops.gram(Q, w, Pn, a), a);                       // β = G⁻¹·QᵀZ
    ops.combine(P, w, beta, -1.0, 1.0, Pn, a);                                 // Pn = Z − P·β (A-conjugate to P)
    orthonormalize(a);                                                         // P = orth(Pn)
  }
  for (index_t j : active) res.columns[j].status = SolveStatus::MaxIterations;
  res.iterations = it;

  ops.residual(B, X, R);  // true residuals
  const auto RR = ops.gram(R, s, R, s);
  for (index_t j = 0; j < s; ++j) {
    auto& c = res.columns[j];
    c.true_residual_norm = std::sqrt(diag(RR, j));
    c.true_relative_residual = c.b_norm > 0 ? c.true_residual_norm / c.b_norm : c.true_residual_norm;
    if (c.converged() && !std::isfinite(c.true_residual_norm)) c.status = SolveStatus::NonFinite;
  }
  res.seconds = seconds();
  return res;
}

}  // namespace krysp
