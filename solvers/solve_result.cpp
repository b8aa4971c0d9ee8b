#include "krysp/solvers/solve_result.hpp"

namespace krysp {
const char* to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::Converged: return "converged";
    case SolveStatus::MaxIterations: return "max iterations reached";
    case SolveStatus::Stagnated: return "stagnated: the true residual stopped decreasing above the tolerance";
    case SolveStatus::NotSpd: return "breakdown: matrix is not SPD (p'Ap <= 0)";
    case SolveStatus::PrecondNotSpd: return "breakdown: preconditioner is not SPD (r'z <= 0)";
    case SolveStatus::NonFinite: return "breakdown: NaN or Inf encountered";
    case SolveStatus::OutOfRange:
      return "out of range: x lies beyond what double can hold (A and b scaled too far apart)";
  }
  return "unknown";
}
}  // namespace krysp
