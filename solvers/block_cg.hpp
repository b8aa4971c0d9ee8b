#pragma once
/// \file block_cg.hpp
/// Breakdown-free block preconditioned CG (Ji and Li, 2017), written once over backend ops:
///   size(), cols(), block(), zero_columns(X, zero), residual(B, X, R), precondition(R),
///   gram(X, bx, Y, by) -> bx×by,
///   update(Qn, a, Ca, R) -> {diag RᵀR, QnᵀZ}                R −= Qn·Ca, Z = M⁻¹·R
///   direction_spmm_gram(Pn, a, Ca, X, Cb, active, R, Pnext, Qnext, ap, Cp)
///                  -> {PnextᵀPnext, PnextᵀR, PnextᵀQnext}
///                  X += Pnext·Cp + Pn·Ca (none for empty Ca; Pnext as it was on entry),
///                  Pnext = Z[:, active] − Pn·Cb, Qnext = A·Pnext
///   update_x(Pn, a, Ca, X)                                  X += Pn·Ca
///   pairs_x_steps() -> whether direction passes should take X's steps two at a time
/// Blocks are n × s row-major (ld = s); a block of width a uses its first a columns. The backend
/// fuses each step into few passes over the tall blocks and returns the small products the next
/// step needs; the s × s algebra runs on the host (LAPACK), where it takes microseconds. An
/// iteration makes three or four passes over 10 or 12 tall blocks: update (Qn, R → R), direction
/// (Pn, R, X → Pnext, X) and the product with the new direction and its Gram matrix (Pnext →
/// Qnext, one pass where the backend fuses them). The product follows the direction without the
/// host in between (it needs no coefficients), so an iteration waits for the device twice. X's
/// steps X += Pn·α wait for the direction passes, which read Pn anyway (α is known by then, and
/// Pnext goes to another buffer), and go two at a time (below); only when the loop stops does X
/// get its last steps from update_x, a pass of its own.
///
/// The search block is kept as P = Pn·C: C comes from SVQB of PnᵀPn, which makes P orthonormal
/// and drops near-dependent directions. When the residual block loses rank (identical right-hand
/// sides, converged or zero columns) P simply gets narrower instead of a singular s × s matrix
/// being inverted. P is never formed: every product with it is a product with Pn and C. Converged
/// columns leave the active set: their x and r no longer change. With s = 1 this is CG.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "solvers/block_ops.hpp"
#include "solvers/small_dense.hpp"
#include "solvers/solve_result.hpp"

namespace krysp {

namespace block_cg_detail {
/// SVQB (Stathopoulos and Wu): C with Pn·C orthonormal, from H = PnᵀPn (a × a); directions whose
/// scaled Gram eigenvalue is below `drop` × the largest are dropped. Returns the kept width.
/// Where nothing would be dropped, Cholesky QR gives another C with the same property.
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
  // Well-conditioned H: Cholesky QR, C = D·R⁻¹, instead of an eigendecomposition (the LAPACK
  // call was most of the ~25 µs the host spends an iteration while the GPU waits). Its loss of
  // orthogonality grows as u·κ(H), so only for κ(H) < 1e6 (λmin ≥ 1/‖R⁻¹‖²_F and λmax ≤ trace =
  // a): with the bound at SVQB's drop tolerance instead, bcsstk28 took 1115 iterations at s = 16,
  // not 948. SVQB would drop nothing there.
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
/// The columns `cols` of a column-major rows × s matrix.
inline std::vector<double> columns(const std::vector<double>& M, index_t rows, const std::vector<index_t>& cols) {
  std::vector<double> out;
  for (index_t j : cols) out.insert(out.end(), M.begin() + std::size_t(j) * rows, M.begin() + std::size_t(j + 1) * rows);
  return out;
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
  auto R = ops.block(), Pn = ops.block(), Pnext = ops.block(), Qn = ops.block();
  BlockSolveResult res;
  res.columns.resize(s);
  auto diag = [&](const std::vector<double>& G, index_t k) { return G[cm(k, k, s)]; };

  const auto BB = ops.gram(B, s, B, s);
  std::vector<double> tol2(s);
  std::vector<char> zero_b(s);
  for (index_t j = 0; j < s; ++j) {
    res.columns[j].b_norm = std::sqrt(diag(BB, j));
    const double tol = std::max(opt.rtol * res.columns[j].b_norm, opt.atol);
    tol2[j] = tol * tol;
    zero_b[j] = res.columns[j].b_norm == 0;
  }
  ops.zero_columns(X, zero_b);  // a zero right-hand side has the exact solution x = 0

  std::vector<index_t> active;
  auto check = [&](index_t it, const std::vector<double>& rr) {  // per-column test on the recursive residual
    std::vector<index_t> still;
    double worst = 0;
    for (index_t j : active) {
      auto& c = res.columns[j];
      const double rnorm = std::sqrt(rr[j]);
      c.residual_history.push_back(rnorm);
      c.relative_residual = c.b_norm > 0 ? rnorm / c.b_norm : rnorm;
      c.iterations = it;
      if (!std::isfinite(rr[j])) c.status = SolveStatus::NonFinite;
      else if (rr[j] <= tol2[j]) c.status = SolveStatus::Converged;
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
    for (index_t j = 0; j < s; ++j) rr[j] = diag(RR, j);
    check(0, rr);
  }

  // As in cg(): a column is converged when its TRUE residual meets the tolerance. Columns whose
  // recursive residual did but whose true one does not restart from b − A·x (with a fresh search
  // block: the others keep their x), until a restart no longer halves their true residual.
  index_t it = 0;
  std::vector<double> last_true(s, std::numeric_limits<double>::infinity());
  for (;;) {
    index_t a = index_t(active.size());
    ops.precondition(R);                                                  // Z = M⁻¹·R
    auto dir = ops.direction_spmm_gram(Pn, 0, {}, X, {}, active, R, Pnext, Qn);  // Pn = Z[:, active]; Qn = A·Pn
    std::swap(Pn, Pnext);
    std::vector<double> C;
    // Where the backend says so (pairs_x_steps), X's steps are taken two at a time, by every other
    // direction pass: the one left over, Pprev·Cp, uses the previous direction block, which stays
    // in Pnext's buffer until that pass overwrites it (row by row, after reading it). X is then read
    // and written every other iteration.
    std::vector<double> Cp;
    index_t ap = 0;
    while (!active.empty() && it < max_iters) {
      const index_t w = svqb(a, dir.h, kDrop, C);                         // P = Pn·C orthonormal, a × w
      if (w == 0) break;
      ++it;
      auto G = dense::at_b(a, w, w, C, dense::a_b(a, a, w, dir.aqa, C)); // G = PᵀAP = Cᵀ·PnᵀA·Pn·C (Q = A·P = Qn·C)
      dense::symmetrize(w, G);
      auto L = G;
      if (!dense::cholesky_upper(w, L)) {  // PᵀAP not SPD: A is not SPD (or NaN)
        bool finite = true;
        for (double g : G) finite = finite && std::isfinite(g);
        for (index_t j : active) res.columns[j].status = finite ? SolveStatus::NotSpd : SolveStatus::NonFinite;
        active.clear();
        break;
      }
      auto Rinv = L;
      dense::invert_upper(w, Rinv);
      auto solve_g = [&](const std::vector<double>& F, index_t m) {      // G⁻¹·F = R⁻¹R⁻ᵀF
        return dense::a_b(w, w, m, Rinv, dense::at_b(w, w, m, Rinv, F));
      };
      auto alpha = solve_g(dense::at_b(a, w, s, C, dir.pr), s);          // α = G⁻¹·PᵀR, PᵀR = Cᵀ·PnᵀR
      std::vector<char> is_active(s, 0);
      for (index_t j : active) is_active[j] = 1;
      for (index_t j = 0; j < s; ++j)
        if (!is_active[j])
          for (index_t i = 0; i < w; ++i) alpha[cm(i, j, w)] = 0.0;     // only active columns move
      const auto Ca = dense::a_b(a, w, s, C, alpha);                     // P·α = Pn·Ca
      const auto up = ops.update(Qn, a, Ca, R);  // R −= Q·α; Z = M⁻¹·R; returns diag(RᵀR) and QnᵀZ
      check(it, up.rr);
      if (active.empty()) {  // X's steps are still due (a direction pass would have made them)
        if (!Cp.empty()) ops.update_x(Pnext, ap, Cp, X);
        ops.update_x(Pn, a, Ca, X);
        Cp.clear();
        break;
      }
      const index_t a2 = index_t(active.size());
      const auto beta = solve_g(dense::at_b(a, w, a2, C, columns(up.qz, a, active)), a2);  // β = G⁻¹·QᵀZ
      const auto Cb = dense::a_b(a, w, a2, C, beta);
      if (Cp.empty() && ops.pairs_x_steps()) {  // X += P·α left to the next direction pass
        dir = ops.direction_spmm_gram(Pn, a, {}, X, Cb, active, R, Pnext, Qn);
        Cp = Ca;
        ap = a;
      } else {  // X += Pprev·αprev + P·α (or X += P·α alone)
        dir = ops.direction_spmm_gram(Pn, a, Ca, X, Cb, active, R, Pnext, Qn, ap, Cp);
        Cp.clear();
        ap = 0;
      }
      std::swap(Pn, Pnext);                                               // Pn = Z[:, active] − P·β; Qn = A·Pn
      a = a2;
    }
    if (!Cp.empty()) ops.update_x(Pnext, ap, Cp, X);  // the step left over
    for (index_t j : active) res.columns[j].status = SolveStatus::MaxIterations;
    active.clear();

    ops.residual(B, X, R);  // true residuals
    const auto RR = ops.gram(R, s, R, s);
    std::vector<double> rr(s);
    for (index_t j = 0; j < s; ++j) {
      auto& c = res.columns[j];
      rr[j] = diag(RR, j);
      c.true_residual_norm = std::sqrt(rr[j]);
      c.true_relative_residual = c.b_norm > 0 ? c.true_residual_norm / c.b_norm : c.true_residual_norm;
      if (!c.converged()) continue;
      if (!std::isfinite(c.true_residual_norm)) {
        c.status = SolveStatus::NonFinite;
      } else if (rr[j] > tol2[j]) {  // the recursive residual drifted: restart, or stagnated
        if (!(c.true_residual_norm < kRestartMinGain * last_true[j])) {
          c.status = SolveStatus::Stagnated;
        } else if (it >= max_iters) {
          c.status = SolveStatus::MaxIterations;
        } else {
          last_true[j] = c.true_residual_norm;
          ++c.residual_replacements;
          c.residual_history.back() = c.true_residual_norm;
          c.relative_residual = c.true_relative_residual;
          c.status = SolveStatus::MaxIterations;
          active.push_back(j);
        }
      }
    }
    if (active.empty()) break;
  }
  res.iterations = it;
  res.seconds = seconds();
  return res;
}

}  // namespace krysp
