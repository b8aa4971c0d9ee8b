#pragma once
/// \file cg.hpp
/// Preconditioned conjugate gradients, written once over a backend's operations (`Ops`):
///   vector(), size(), dot(a, b, slot), residual(b, x, r), spmv_dot(p, q, pᵀq), precondition(r, z, ρ, ‖r‖²),
///   direction(z, p, ρ_k, ρ_{k-1}, first), update(ρ_k, pᵀAp, p, q, x, r, z, ρ_{k+1}, ‖r‖², k),
///   read_scalars(), reset_scalars(count), set_scalar(slot, v), set_zero(x), has_preconditioner().
/// Scalars live in backend "slots" (device memory for CUDA): the loop runs up to `check_every`
/// iterations without a host synchronisation (cg_next_chunk), then reads the residual norms back
/// in one copy.
/// A breakdown (pᵀAp ≤ 0, ρ ≤ 0, NaN), or convergence inside a chunk, is flagged by the backend,
/// which then freezes x and r: the iterate reported is the one that converged, on every backend.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "krysp/base/host_device.hpp"
#include "krysp/solvers/solve_result.hpp"

namespace krysp {

/// Codes a backend writes into the flag slot when a step cannot be taken.
enum CgFlag : int {
  kCgOk = 0,
  kCgNotSpd = 1,
  kCgNonFinite = 2,
  kCgPrecondNotSpd = 3,
  kCgExact = 4,      ///< r = 0 exactly
  kCgConverged = 5,  ///< ‖r‖² ≤ tol²: later steps of the chunk are skipped, so x is the converged iterate
};

/// Whether the step α = ρ/pᵀAp may be taken (kCgOk), or why not. Shared by both backends.
KRYSP_HD inline int cg_step_verdict(double rz, double pq) {
  if (!(rz - rz == 0.0) || !(pq - pq == 0.0)) return kCgNonFinite;  // NaN or ±Inf
  if (rz == 0.0 && pq == 0.0) return kCgExact;                       // r = 0 exactly: nothing left to do
  if (rz < 0.0) return kCgPrecondNotSpd;
  if (pq <= 0.0) return kCgNotSpd;
  return kCgOk;
}

/// Where CG keeps its scalars: fixed slots, then two rings of length check_every + 1.
struct CgSlots {
  /// Slots for a loop that reads residuals back every check_every iterations.
  explicit CgSlots(int check_every) : ring(check_every + 1) {}
  static constexpr int flag = 0, flag_iter = 1, pq = 2, bb = 3, rr_true = 4, tol2 = 5, first_ring = 6;
  int ring;
  /// Slots needed in all.
  int count() const { return first_ring + 2 * ring; }
  /// Slot of ρ_k = r_kᵀ z_k.
  int rz(index_t k) const { return first_ring + int(k % ring); }
  /// Slot of ‖r_k‖².
  int rr(index_t k) const { return first_ring + ring + int(k % ring); }
};

/// Iterations to run before the next look at the residuals. Twice the last interval (1 at first),
/// at most K; once an interval of `last` iterations took ‖r‖ from r_before to r_now, half of what
/// that rate needs to reach `tol` (rounded up), so the checks close in on convergence. A step past
/// convergence is frozen but still costs a product and a preconditioner application on the GPU
/// ((K − 1)/2 such steps a solve on average with fixed intervals); this trims them to a step or
/// two at the price of a few more reads a solve (docs/performance.md, "Check intervals").
inline index_t cg_next_chunk(index_t last, int K, double r_before, double r_now, double tol) {
  const index_t grow = std::min<index_t>(std::max(1, K), last > 0 ? 2 * last : 1);
  if (!(last > 0 && r_now < r_before && r_now > tol && r_now > 0)) return grow;
  const double per_step = std::log(r_now / r_before) / double(last);  // < 0: the log of the rate
  const double need = std::ceil(std::log(tol / r_now) / per_step);    // > 0
  if (!(need < double(2 * grow))) return grow;                         // also NaN
  return std::max<index_t>(1, index_t(std::ceil(need / 2)));          // ≤ grow
}

/// Solves A·x = b by PCG over `ops` from the initial guess x, which receives the solution.
/// Non-convergence and breakdown are statuses in the result (see solve_result.hpp); Converged
/// means the true residual ‖b − A·x‖ meets the tolerance.
template <class Ops>
SolveResult cg(Ops& ops, const typename Ops::Vector& b, typename Ops::Vector& x, const CgOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const index_t n = ops.size();
  const index_t max_iters = opt.max_iters > 0 ? opt.max_iters
                                              : index_t(std::min<std::int64_t>(kMaxIndex, std::max<std::int64_t>(1000, 10 * std::int64_t(n))));
  const int K = std::max(1, opt.check_every);
  const CgSlots s(K);
  std::vector<double> sc(s.count());
  ops.reset_scalars(s.count());

  auto r = ops.vector(), z = ops.vector(), p = ops.vector(), q = ops.vector();
  const auto& zr = ops.has_preconditioner() ? z : r;  // z = r without a preconditioner: no copy

  SolveResult res;
  ops.dot(b, b, s.bb);                       // ‖b‖²
  ops.residual(b, x, r);                     // r₀ = b − A·x₀
  ops.precondition(r, z, s.rz(0), s.rr(0));  // z₀ = M⁻¹·r₀, ρ₀ = r₀ᵀz₀, ‖r₀‖²
  ops.read_scalars(sc.data());
  res.b_norm = std::sqrt(sc[s.bb]);
  if (res.b_norm == 0) {  // A·x = 0 has the exact solution x = 0
    ops.set_zero(x);
    res.status = SolveStatus::Converged;
    res.residual_history = {0.0};
    res.seconds = seconds();
    return res;
  }
  const double tol = std::max(opt.rtol * res.b_norm, opt.atol);
  const double tol2 = tol * tol;  // backends test ‖r‖² ≤ tol² too: one rule everywhere
  ops.set_scalar(s.tol2, tol2);

  // Looks at ‖r_k‖ for the iterations done since the last check; true when the solve is over.
  bool seen_converged = false;
  auto examine = [&](index_t from, index_t to) {
    const int flag = int(sc[s.flag]);
    const index_t flag_iter = index_t(sc[s.flag_iter]);
    for (index_t k = from; k <= to; ++k) {
      if (flag != kCgOk && flag_iter < k) {  // the step to x_k was refused: x stays x_{k−1}
        res.iterations = flag_iter;
        if (!seen_converged && flag != kCgExact && flag != kCgConverged)
          res.status = flag == kCgNotSpd ? SolveStatus::NotSpd
                     : flag == kCgPrecondNotSpd ? SolveStatus::PrecondNotSpd : SolveStatus::NonFinite;
        else
          res.status = SolveStatus::Converged;
        return true;
      }
      const double rnorm = std::sqrt(sc[s.rr(k)]);
      res.residual_history.push_back(rnorm);
      res.relative_residual = rnorm / res.b_norm;
      res.iterations = k;
      if (!std::isfinite(rnorm)) {  // no true residual to recompute: report the non-finite one, not 0
        res.status = SolveStatus::NonFinite;
        res.true_residual_norm = rnorm;
        res.true_relative_residual = res.relative_residual;
        return true;
      }
      if (sc[s.rr(k)] <= tol2) seen_converged = true;
    }
    if (seen_converged) { res.status = SolveStatus::Converged; return true; }
    return false;
  };

  // The recursive residual drifts from b − A·x in floating point (by about ε·κ(A)·‖b‖ on an
  // ill-conditioned A). So convergence is decided on the true residual: when the recursive one
  // meets the tolerance and the true one does not, r is replaced by b − A·x and CG restarts from
  // x (p = z); once a restart no longer halves the true residual, the solve has stagnated.
  bool done = examine(0, 0);
  index_t k = 0, restart = 0;  // restart: the iteration whose direction is p = z
  index_t last_chunk = 0;      // 0: no rate known (at the start, and after a restart)
  double last_true = std::numeric_limits<double>::infinity();
  for (;;) {
    while (!done && k < max_iters) {
      const auto& h = res.residual_history;  // ‖r_0‖ .. ‖r_k‖
      const double r_before = last_chunk > 0 ? h[h.size() - 1 - std::size_t(last_chunk)] : 0.0;
      const index_t first = k + 1;
      const index_t chunk = std::min<index_t>(cg_next_chunk(last_chunk, K, r_before, h.back(), tol), max_iters - k);
      last_chunk = chunk;
      res.steps += chunk;
      ++res.checks;
      for (index_t j = 0; j < chunk; ++j, ++k) {
        ops.direction(zr, p, s.rz(k), s.rz(k - 1 + s.ring), k == restart);  // p = z + (ρ_k/ρ_{k−1})·p
        ops.spmv_dot(p, q, s.pq);                                            // q = A·p, pᵀAp
        ops.update(s.rz(k), s.pq, p, q, x, r, z, s.rz(k + 1), s.rr(k + 1), k);
        // α = ρ_k/pᵀAp; x += α·p; r −= α·q; z = M⁻¹·r; ρ_{k+1} = rᵀz; ‖r‖²
      }
      ops.read_scalars(sc.data());
      done = examine(first, k);
      if (opt.progress) opt.progress({res.iterations, res.relative_residual, seconds()});
    }
    if (!done) res.status = SolveStatus::MaxIterations;

    ops.residual(b, x, r);  // the true residual b − A·x, not the recursive one
    ops.dot(r, r, s.rr_true);
    ops.read_scalars(sc.data());
    res.true_residual_norm = std::sqrt(sc[s.rr_true]);
    res.true_relative_residual = res.true_residual_norm / res.b_norm;
    if (res.status != SolveStatus::Converged) break;
    if (!std::isfinite(res.true_residual_norm)) {
      res.status = SolveStatus::NonFinite;
      break;
    }
    if (res.true_residual_norm <= tol) break;
    if (!(res.true_residual_norm < kRestartMinGain * last_true)) {
      res.status = SolveStatus::Stagnated;
      break;
    }
    last_true = res.true_residual_norm;
    k = res.iterations;
    if (k >= max_iters) {
      res.status = SolveStatus::MaxIterations;
      break;
    }
    ++res.residual_replacements;
    last_chunk = 0;  // the recursive residual jumped to the true one: no rate across it
    ops.set_scalar(s.flag, kCgOk);  // unfreeze x and r
    ops.set_scalar(s.flag_iter, 0);
    ops.precondition(r, z, s.rz(k), s.rr(k));  // r_k = b − A·x_k, z_k = M⁻¹·r_k, ρ_k
    res.residual_history.back() = res.true_residual_norm;
    res.relative_residual = res.true_relative_residual;
    res.status = SolveStatus::MaxIterations;
    restart = k;
    seen_converged = false;
    done = false;
  }
  res.seconds = seconds();
  return res;
}

}  // namespace krysp
