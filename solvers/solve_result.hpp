#pragma once
/// \file solve_result.hpp
/// Options and results of the linear solvers. Non-convergence and breakdown are statuses here,
/// never exceptions.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "krysp/base/types.hpp"

namespace krysp {

/// How a linear solve ended. Only Converged is success; none of these is an exception.
enum class SolveStatus {
  Converged,        ///< the TRUE residual ‖b − A·x‖ ≤ max(rtol·‖b‖, atol), recomputed at exit
  MaxIterations,    ///< stopped at max_iters without converging
  /// The recursive residual met the tolerance but the true one did not, and replacing the
  /// residual by the true one and going on no longer reduced it (by at least 2× per restart):
  /// the tolerance is below what this matrix allows in floating point.
  Stagnated,
  NotSpd,           ///< pᵀAp ≤ 0: the matrix is not symmetric positive definite
  PrecondNotSpd,    ///< rᵀM⁻¹r ≤ 0 with r ≠ 0: the preconditioner is not SPD
  NonFinite,        ///< NaN or Inf appeared (in A, b, x0 or during the iteration)
  /// Solved for A and b scaled by powers of two (solvers/problem_scale.hpp), but x scaled back
  /// leaves the range of double (A and b lie so far apart that x overflows, or underflows to a
  /// subnormal or zero): no answer can be given in double.
  OutOfRange,
};
/// "converged", "max-iterations", or the breakdown with its reason (what the CLI prints).
const char* to_string(SolveStatus s);

/// When the recursive residual meets the tolerance but the true one t does not, CG and block CG
/// restart from b − A·x only while t is below this fraction of the previous restart's t; otherwise
/// the solve (or column) has stagnated (SolveStatus::Stagnated).
inline constexpr double kRestartMinGain = 0.5;

/// What a solver reports while it runs (at each stopping check).
struct SolveProgress {
  index_t iteration = 0;
  double relative_residual = 0;  ///< recursive ‖r‖/‖b‖
  double seconds = 0;            ///< since the solve began
};

/// Stopping rule and reporting of CG and block CG.
struct CgOptions {
  double rtol = 1e-8;       ///< stop when ‖r‖ ≤ rtol·‖b‖ ...
  double atol = 0;          ///< ... or ‖r‖ ≤ atol
  index_t max_iters = 0;    ///< 0: max(1000, 10·n)
  /// Iterations between stopping checks, at most. The GPU backend keeps scalars on the device and
  /// reads them back only at checks; bench/bench_cg measures what larger values save. CG starts
  /// with one iteration, doubles the interval up to this, and shortens it to what the last
  /// interval's rate of decrease needs to reach the tolerance (cg_next_chunk), so that few steps
  /// run past convergence; 1: a check after every iteration.
  int check_every = 16;
  std::function<void(const SolveProgress&)> progress;  ///< called at each check, if set
};

/// What one CG solve reports.
struct SolveResult {
  SolveStatus status = SolveStatus::MaxIterations;
  index_t iterations = 0;                 ///< iterations performed
  double b_norm = 0;                      ///< ‖b‖
  double relative_residual = 0;           ///< recursive ‖r‖/‖b‖ at exit
  double true_residual_norm = 0;          ///< ‖b − A·x‖ recomputed at exit
  double true_relative_residual = 0;      ///< ‖b − A·x‖ / ‖b‖ (‖b − A·x‖ when b = 0)
  /// Times the recursive residual met the tolerance while the true one did not, so that r was
  /// replaced by b − A·x and CG restarted from x (0 on well-conditioned problems).
  index_t residual_replacements = 0;
  /// When Stagnated and the matrix is at hand (solve(), solve_block()): ε·‖|A|·|x|‖/‖b‖, about the
  /// smallest relative residual rounding allows for this x (residual_rounding_floor); else 0.
  double residual_floor = 0;
  std::vector<double> residual_history;   ///< ‖r_k‖ for k = 0..iterations (true ‖b − A·x_k‖ where replaced)
  /// CG steps launched, ≥ iterations: those after convergence inside a check interval change
  /// nothing (x and r are frozen) but cost their product and preconditioner on the GPU.
  index_t steps = 0;
  index_t checks = 0;                     ///< stopping checks: reads of the residuals between steps (CG)
  double seconds = 0;                     ///< wall time of the solve (setup excluded)
  /// status == Converged.
  bool converged() const { return status == SolveStatus::Converged; }
};

/// One column of a block solve: every right-hand side has its own status and residuals.
struct ColumnResult {
  SolveStatus status = SolveStatus::MaxIterations;
  index_t iterations = 0;                ///< iterations until this column converged (or stopped)
  double b_norm = 0;
  double relative_residual = 0;          ///< recursive ‖r‖/‖b‖ at exit
  double true_residual_norm = 0;         ///< ‖b − A·x‖ recomputed at exit
  double true_relative_residual = 0;
  index_t residual_replacements = 0;     ///< restarts from the true residual (see SolveResult)
  double residual_floor = 0;             ///< as SolveResult::residual_floor, for this column
  std::vector<double> residual_history;  ///< ‖r_k‖ while the column was active
  /// status == Converged.
  bool converged() const { return status == SolveStatus::Converged; }
};

/// What one block CG solve reports: a result per right-hand side.
struct BlockSolveResult {
  std::vector<ColumnResult> columns;
  index_t iterations = 0;  ///< block iterations performed
  double seconds = 0;
  /// Every column converged.
  bool converged() const {
    for (const auto& c : columns)
      if (!c.converged()) return false;
    return true;
  }
};

}  // namespace krysp
