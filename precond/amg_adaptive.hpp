#pragma once
/// \file amg_adaptive.hpp
/// The V-cycles that adapt the near-nullspace (AmgOptions::adaptive_cycles, amg::adaptive_plan),
/// written once for the host and GPU set-ups over four operations on the K columns of X (n × K):
///   residual()      R = −A·X
///   gram()          XᵀA·X = −XᵀR (K × K, column-major, on the host)
///   transform(C)    X ← X·C and R ← R·C (C: K × K, column-major)
///   correct()       X ← X + M⁻¹·R, that is X ← (I − M⁻¹A)·X with M⁻¹ the first hierarchy
/// Before each cycle the columns are made A-orthonormal (Cholesky of XᵀA·X): the slow modes stay
/// apart instead of all turning into the slowest, nothing under- or overflows, and the energy a
/// column has after a cycle is how much of it that cycle left.
#include <algorithm>
#include <cmath>
#include <vector>

#include "krysp/precond/amg.hpp"

namespace krysp::amg {

/// What the adapting cycles did.
struct AdaptOutcome {
  int cycles = 0;       ///< cycles run
  double factor = -1;   ///< largest ‖E·x‖_A / ‖x‖_A of the last cycle over the columns (−1: none ran)
  bool keep = false;    ///< X is to be the near-nullspace
};

/// C = L⁻ᵀ for G = L·Lᵀ (K × K, column-major), so that X·C is A-orthonormal when G = XᵀA·X. False
/// where a pivot is not above `rel`·max G_jj (A is not positive definite on X, or a column lies
/// in A's null space to rounding, or the columns became dependent).
inline bool inverse_cholesky_factor(int K, std::vector<double> G, std::vector<double>& C) {
  const auto at = [K](int i, int j) { return std::size_t(j) * std::size_t(K) + std::size_t(i); };
  double top = 0;
  for (int j = 0; j < K; ++j) top = std::max(top, G[at(j, j)]);
  constexpr double rel = 1e-12;
  if (!(top > 0) || !std::isfinite(top)) return false;
  for (int j = 0; j < K; ++j) {  // G = L·Lᵀ in place (lower triangle)
    double d = G[at(j, j)];
    for (int k = 0; k < j; ++k) d -= G[at(j, k)] * G[at(j, k)];
    if (!(d > rel * top)) return false;
    G[at(j, j)] = std::sqrt(d);
    for (int i = j + 1; i < K; ++i) {
      double v = G[at(i, j)];
      for (int k = 0; k < j; ++k) v -= G[at(i, k)] * G[at(j, k)];
      G[at(i, j)] = v / G[at(j, j)];
    }
  }
  C.assign(std::size_t(K) * std::size_t(K), 0.0);  // C = L⁻ᵀ: upper triangular, Lᵀ·C = I
  for (int c = 0; c < K; ++c)
    for (int i = c; i >= 0; --i) {
      double v = i == c ? 1.0 : 0.0;
      for (int k = i + 1; k <= c; ++k) v -= G[at(k, i)] * C[at(k, c)];
      C[at(i, c)] = v / G[at(i, i)];
    }
  return true;
}

/// Runs plan.cycles cycles on the start block `ops` holds; see the file comment. A conditional
/// plan stops after kAmgAugmentEarlyCycles while the factor is below kAmgAugmentEarlyFactor, and
/// after kAmgAugmentMidCycles while it is below kAmgAugmentMidFactor, and keeps X only where it
/// ends at kAmgAugmentFactor or above; an explicit one always keeps it.
/// Nothing is kept where the Cholesky fails.
template <class Ops>
AdaptOutcome run_adaptive_cycles(Ops& ops, const AdaptivePlan& plan) {
  const int K = plan.vectors;
  AdaptOutcome out;
  std::vector<double> C;
  for (int done = 0;; ++done) {
    ops.residual();
    const std::vector<double> G = ops.gram();
    if (done > 0) {  // the columns had unit energy before this cycle
      double f = 0;
      for (int j = 0; j < K; ++j) f = std::max(f, G[std::size_t(j) * std::size_t(K) + std::size_t(j)]);
      out.factor = std::sqrt(std::max(f, 0.0));
    }
    out.cycles = done;
    if (done == plan.cycles) break;
    if (plan.conditional && ((done == kAmgAugmentEarlyCycles && out.factor < kAmgAugmentEarlyFactor) ||
                             (done == kAmgAugmentMidCycles && out.factor < kAmgAugmentMidFactor)))
      return out;  // the first hierarchy reduces these vectors fast enough: not worth finishing
    if (!inverse_cholesky_factor(K, G, C)) return out;
    ops.transform(C);
    ops.correct();
  }
  out.keep = !plan.conditional || out.factor >= kAmgAugmentFactor;
  return out;
}

/// Whether a conditional plan's augmented hierarchy is set aside for the first one: its operator
/// complexity is over kAmgAugmentMaxComplexityGrowth times the first's, or its coarsening stalled
/// where the first's did not (twice the coarse unknowns an aggregate can stall a thin plate's
/// level 0, leaving the smoother alone).
inline bool augmented_worse(double first_complexity, bool first_stalled, const AmgInfo& augmented) {
  return augmented.operator_complexity > kAmgAugmentMaxComplexityGrowth * first_complexity ||
         (augmented.stalled && !first_stalled);
}

}  // namespace krysp::amg
