#pragma once
/// \file missed_eigenvalue_check.hpp
/// The check for missed eigenvalues after a converged LOBPCG run (EigOptions::verify,
/// eigensolve.hpp), written once over LOBPCG's backend operations: eigensolve() and
/// eigensolve_distributed() both run it, through their own ops.
///
/// A second LOBPCG run for one pair on the B-complement of the returned vectors (and of the
/// constraints), from a fresh random start: a Rayleigh quotient beyond λ_k by more than 10 times
/// the error the test allows λ_k is an eigenvalue the main run missed, and the main run restarts
/// from that vector (at most kVerifyRestarts times; then the status is Unverified).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/lobpcg.hpp"

namespace krysp {

namespace verify_detail {
/// Row-major m × (ca + cb): the columns of a (m × ca, may be null when ca = 0) then those of b.
inline std::vector<double> side_by_side(index_t m, const double* a, index_t ca, const double* b, index_t cb) {
  std::vector<double> out(static_cast<std::size_t>(m) * static_cast<std::size_t>(ca + cb));
  for (index_t i = 0; i < m; ++i) {
    double* row = out.data() + std::size_t(i) * (ca + cb);
    if (ca > 0) std::copy(a + std::size_t(i) * ca, a + std::size_t(i + 1) * ca, row);
    std::copy(b + std::size_t(i) * cb, b + std::size_t(i + 1) * cb, row + ca);
  }
  return out;
}
}  // namespace verify_detail

/// Runs the check on `rep` (a converged run of `ops`; `order` is the problem's global order, the
/// ops' size() this process's rows of it) and restarts through `rerun(start)`, which runs the
/// main solve again from a LobpcgStart and returns its EigResult (the driver's LOBPCG, refined
/// where it refines). Sets rep.verification, complement_bound, verify_iterations and
/// verify_restarts, and rep.status to Unverified when the check cannot pass.
template <class Ops, class Rerun>
void check_missed_eigenvalues(Ops& ops, std::int64_t order, const EigOptions& o, const LobpcgStart& st,
                              EigReport& rep, Rerun&& rerun) {
  const index_t m = ops.size(), k = rep.k, c = st.constraint_cols;
  const bool largest = o.lobpcg.which == EigWhich::Largest;
  for (int round = 0; rep.converged(); ++round) {
    const std::int64_t room = (order - c - k) / 3;  // the check's basis: 3·block + constraints ≤ n
    if (room < 1) {
      rep.verification = detail::concat("skipped: n = ", order, " leaves no room beside the ", k + c,
                                        " returned and constraint vectors");
      return;
    }
    // The error λ_k may have under the test it met: a Rayleigh quotient of the complement beyond
    // λ_k by more than 10 times that is an eigenvalue the run missed.
    const double lk = rep.eigenvalues[k - 1], lk_user = st.flipped ? st.flip_sigma - lk : lk, tol = o.lobpcg.tol;
    const double margin = 10 * tol *
                          (o.lobpcg.convergence == EigConvergence::Relative ? std::abs(lk_user)
                           : o.lobpcg.convergence == EigConvergence::Norm
                               ? rep.a_norm_estimate + std::abs(lk) * rep.b_norm_estimate
                               : 1.0);
    const double threshold = largest ? lk + margin : lk - margin;
    const std::vector<double> Y = verify_detail::side_by_side(m, st.constraints, c, rep.eigenvectors.data(), k);
    LobpcgOptions co = o.lobpcg;
    co.k = 1;
    co.block_size = index_t(std::min<std::int64_t>(rep.block_size, room));
    co.tol = kVerifyTol;
    co.convergence = EigConvergence::Relative;
    co.max_iters = std::max(kVerifyMinIters, rep.iterations);
    co.seed = o.lobpcg.seed + 0x9e3779b97f4a7c15ull * std::uint64_t(round + 1);
    co.progress = nullptr;
    LobpcgStart cs = st;
    cs.x0 = nullptr;
    cs.x0_cols = 0;
    cs.constraints = Y.data();
    cs.constraint_cols = c + k;
    cs.stop_beyond = threshold;
    const EigResult cr = lobpcg(ops, co, cs);
    rep.verify_iterations += cr.iterations;
    const double theta = cr.eigenvalues.empty() ? std::numeric_limits<double>::quiet_NaN() : cr.eigenvalues[0];
    rep.complement_bound = st.flipped ? st.flip_sigma - theta : theta;
    const bool beyond = cr.stopped_beyond || (largest ? theta > threshold : theta < threshold);
    if (!beyond) {
      if (cr.status == EigStatus::NonFinite || cr.status == EigStatus::NotPositiveDefinite) {
        rep.status = EigStatus::Unverified;
        rep.verification = detail::concat("inconclusive: the check broke down (", to_string(cr.status), ")");
      } else {
        rep.verification = detail::concat(
            "passed: in ", cr.iterations, " iterations on the complement of the returned vectors the ",
            largest || st.flipped ? "largest" : "smallest", " Rayleigh quotient came to ", rep.complement_bound,
            cr.converged() ? " (settled)" : " (still moving)", ", not beyond lambda_k = ", lk_user);
      }
      return;
    }
    if (round == kVerifyRestarts) {
      rep.status = EigStatus::Unverified;
      rep.verification = detail::concat("failed: an eigenvalue near ", rep.complement_bound, " lies beyond lambda_k = ",
                                        lk_user, " after ", round, " restarts");
      return;
    }
    // Restart from the vector the check found, then as many returned ones as the block holds.
    const index_t cols = std::min(rep.block_size, k + 1);
    std::vector<double> x0(static_cast<std::size_t>(m) * static_cast<std::size_t>(cols));
    for (index_t i = 0; i < m; ++i) {
      x0[std::size_t(i) * cols] = cr.eigenvectors[i];
      const auto row = rep.eigenvectors.begin() + std::size_t(i) * k;
      std::copy(row, row + (cols - 1), x0.begin() + std::size_t(i) * cols + 1);
    }
    LobpcgStart rs = st;
    rs.x0 = x0.data();
    rs.x0_cols = cols;
    const index_t before = rep.iterations;
    const double seconds_before = rep.seconds;
    static_cast<EigResult&>(rep) = rerun(rs);
    rep.iterations += before;
    rep.seconds += seconds_before;
    ++rep.verify_restarts;
  }
}

}  // namespace krysp
