#pragma once
/// \file lobpcg_result.hpp
/// Options and results of the LOBPCG eigensolver. Non-convergence and breakdown are statuses
/// here, never exceptions; bad input (sizes, block size) is an InputError.
#include <cstdint>
#include <functional>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/solvers/lobpcg_small.hpp"

namespace krysp {

/// Which end of the spectrum is wanted.
enum class EigWhich { Smallest, Largest };
/// "smallest" or "largest".
const char* to_string(EigWhich w);
/// Parses "smallest" or "largest"; InputError naming the value otherwise.
EigWhich parse_which(const std::string& name);

/// When a pair counts as converged (x B-normalised, r = A·x − λ·B·x):
///  - Relative (default): ‖r‖ ≤ tol·|λ|·‖B·x‖, a relative error bound on λ that holds however
///    small λ is against ‖A‖ (SLEPc's default; for B = I, |λ − λ_true| ≤ ‖r‖ ≤ tol·|λ| for some
///    eigenvalue λ_true). λ = 0 converges only with r = 0.
///  - Norm: ‖r‖ ≤ tol·(‖A‖ₑ + |λ|·‖B‖ₑ)·‖x‖, the normwise backward error (lobpcg.hpp). It bounds the
///    error of λ by tol·‖A‖, not by tol·|λ|: the smallest pairs of an ill-conditioned A can meet
///    it with no correct digit.
///  - Absolute: ‖r‖ ≤ tol (SciPy's and CuPy's lobpcg test, with x B-normalised): depends on the
///    scale of A.
enum class EigConvergence { Relative, Norm, Absolute };
/// "rel", "norm" or "abs".
const char* to_string(EigConvergence c);
/// Parses "rel", "norm" or "abs"; InputError naming the value otherwise.
EigConvergence parse_convergence(const std::string& name);

/// The convergence measure of a pair under test `c` (≤ tol when converged; lobpcg.hpp defines the
/// tests): rr = ‖A·x − λ·B·x‖², xx = ‖x‖², bxx = ‖B·x‖², `lambda` the value the run computes
/// with, `lambda_user` the user's (they differ under the spectral flip), anorm and bnorm the
/// norm estimates of the Norm test. A zero scale gives 0 for a zero residual, else infinity.
inline double convergence_measure(EigConvergence c, double rr, double xx, double bxx, double lambda,
                                  double lambda_user, double anorm, double bnorm) {
  double scale = 1.0;  // Absolute
  if (c == EigConvergence::Norm) scale = (anorm + std::abs(lambda) * bnorm) * std::sqrt(xx);
  if (c == EigConvergence::Relative) scale = std::abs(lambda_user) * std::sqrt(bxx);
  return scale > 0 ? std::sqrt(rr) / scale : (rr > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

/// How an eigensolve ended. Only Converged is success; none of these is an exception.
enum class EigStatus {
  Converged,       ///< all k wanted pairs meet the tolerance (checked on freshly computed A·X, B·X)
                   ///< and, when verified, no eigenvalue beyond the k-th was found missing
  MaxIterations,   ///< stopped at max_iters; the best pairs are returned
  /// The new directions W vanished (all numerically in the current basis), or no progress in
  /// max(kStagnationWindow, i) iterations after the last, at iteration i (the largest residual of
  /// the wanted pairs halving; far above the rounding floor also more pairs converged or the
  /// Ritz values moving: Lobpcg::stagnated): typically tol is below the rounding floor
  /// ε·‖A‖/|λ| of the Relative test.
  Stagnated,
  NotPositiveDefinite,  ///< B-Gram matrices stayed indefinite/singular: B (or the preconditioner) is not SPD
  NonFinite,       ///< NaN or Inf appeared (in A, B, x0, or during the iteration)
  /// The pairs meet the tolerance, but the check for missed eigenvalues (eigensolve.hpp) found
  /// an eigenvalue beyond the k-th returned one and restarting did not recover it, or the check
  /// broke down: the pairs may not be the k extreme ones.
  Unverified,
  /// The pairs were found for A and B scaled by powers of two (solvers/problem_scale.hpp), but
  /// some eigenvalue or eigenvector entry scaled back leaves the range of double (overflows, or
  /// underflows to a subnormal or zero): no answer can be given in double.
  OutOfRange,
};
/// "converged", "max-iterations", "stagnated", "not-positive-definite", "non-finite",
/// "unverified" or "out-of-range".
const char* to_string(EigStatus s);

/// What the solver reports after each iteration.
struct EigProgress {
  index_t iteration = 0;
  index_t converged = 0;       ///< wanted pairs (of k) meeting the tolerance now
  index_t k = 0;
  double max_residual = 0;     ///< largest relative residual among the k wanted pairs
  double seconds = 0;          ///< since the iteration began (setup excluded)
};

/// What LOBPCG computes and when it stops.
struct LobpcgOptions {
  index_t k = 1;               ///< wanted eigenpairs
  index_t block_size = 0;      ///< b ≥ k; 0: default_block_size(k, n)
  EigWhich which = EigWhich::Smallest;
  /// Pair i is converged when its residual meets `tol` under `convergence` (EigConvergence).
  double tol = 1e-6;
  EigConvergence convergence = EigConvergence::Relative;
  index_t max_iters = 0;       ///< 0: default_max_iters(n)
  std::uint64_t seed = 20240601;  ///< of the random starting block (columns not given by x0)
  std::function<void(const EigProgress&)> progress;  ///< called after every iteration, if set
  /// Thresholds of the basis handling (Cholesky QR vs SVQB, drops, P restarts): the defaults are
  /// the documented ones; tests tighten them to drive every fallback path.
  lobpcg_detail::SmallTolerances basis;
};

/// Default block size for k wanted pairs: b = k + max(2, ⌈k/2⌉) guard vectors, capped so that the
/// basis [X W P] (3b columns) plus the c constraints fits in n, but never below k.
/// Why: the rate for pair k depends on the gap to λ_{b+1}, and the work per iteration grows about
/// linearly in b. Measured on the host, k = 8, tol 1e-6, iterations for b = 8 / 10 / 12 / 16:
///   2-D Laplacian 100²  smallest 324 / 199 / 165 / 140     40×70  smallest 520 / 165 / 112 / 91
///   3-D Laplacian 20³   smallest 116 /  82 /  74 /  62     bcsstk06 (Jacobi) 640 / 363 / 144 / 110
///   1138_bus (Jacobi)   smallest 695 / 516 / 399 / 337     Trefethen_2000 largest 243 / 138 / 95 / 78
/// b = 1.5k has the lowest or nearly lowest iterations × b (the cost when dense block work
/// dominates) in every case, and 2-5x fewer iterations than b = k where clusters straddle λ_k.
index_t default_block_size(index_t k, index_t n, index_t constraints = 0);
/// Default iteration limit: 5000 — LOBPCG without a good preconditioner needs hundreds to a few
/// thousand iterations on large, poorly separated spectra (2-D Laplacians).
index_t default_max_iters(index_t n);
/// Iterations without progress (Lobpcg::stagnated) after which a run has stagnated.
inline constexpr index_t kStagnationWindow = 200;
/// Largest LOBPCG block size accepted (the Rayleigh–Ritz problem is 3b × 3b on the host).
inline constexpr index_t kMaxLobpcgBlock = 256;

/// What one LOBPCG run reports.
struct EigResult {
  EigStatus status = EigStatus::MaxIterations;
  index_t k = 0, n = 0, block_size = 0;
  index_t iterations = 0;                  ///< Rayleigh–Ritz updates performed
  std::vector<double> eigenvalues;         ///< k: ascending for smallest, descending for largest
  std::vector<double> eigenvectors;        ///< n × k ROW-major (x_i is column i), B-orthonormal
  std::vector<double> residual_norms;      ///< k: ‖A·x_i − λ_i·B·x_i‖₂, from fresh products
  std::vector<double> relative_residuals;  ///< k: the convergence measure (`convergence`), ≤ tol when converged
  EigConvergence convergence = EigConvergence::Relative;  ///< the test the measure is of
  std::vector<double> history;             ///< iterations+1 rows × k (row-major): relative residuals per iteration
  index_t history_rows = 0;
  double a_norm_estimate = 0, b_norm_estimate = 0;  ///< ‖A‖ₑ, ‖B‖ₑ at exit
  index_t constraints = 0;                 ///< rank of the constraint block Y used
  // What the robust basis handling had to do (0 on easy problems):
  index_t p_restarts = 0;         ///< P dropped because the basis Gram was ill-conditioned
  index_t svqb_passes = 0;        ///< orthonormalization passes that fell back to SVQB
  index_t dropped_directions = 0; ///< directions of W dropped as numerically dependent
  index_t reduced_rr = 0;         ///< Rayleigh–Ritz steps that had to reduce the basis by SVQB
  index_t refreshes = 0;          ///< A·X, B·X recomputed to verify convergence
  /// Internal: the run stopped because a Ritz value passed LobpcgStart::stop_beyond.
  bool stopped_beyond = false;
  double seconds = 0;             ///< wall time of the iteration (setup excluded)
  /// status == Converged.
  bool converged() const { return status == EigStatus::Converged; }
};

}  // namespace krysp
