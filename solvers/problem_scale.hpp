#pragma once
/// \file problem_scale.hpp
/// Power-of-two scaling of problems whose numbers lie far from 1. CG and LOBPCG square them in
/// their inner products: entries near 1e-160 square to below the smallest double, so ‖b‖² = 0
/// reads as b = 0 ("converged", x = 0) and ‖r‖² stops meaning anything; near 1e160 they overflow.
/// Multiplying by 2^e is exact in binary floating point (short of the subnormal range), so the
/// solvers run on A·2^−e_A and b·2^−e_b and their results are scaled back: the iterates are those
/// of the original problem, bit for bit, wherever both are representable.
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve_result.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The |log2| of a largest magnitude beyond which a problem is rescaled (2^100 ≈ 1.3e30):
/// within it, squares of residuals 1e16 times smaller than the entries stay normal doubles.
inline constexpr int kScaleExponentLimit = 100;

/// max_i |v_i| (0 for n = 0; NaN entries are skipped).
double max_abs(const double* v, std::size_t n);
/// The e with max_i |v_i| = m·2^e, m in [0.5, 1), when that maximum is finite and nonzero and
/// |e| > limit; otherwise 0 (leave the numbers as they are).
int scale_exponent(const double* v, std::size_t n, int limit = kScaleExponentLimit);
/// scale_exponent of A's values; 0 for a device-borrowed matrix, whose values stay on the device.
int matrix_scale_exponent(const CsrMatrix<double>& A);
/// A new host matrix with A's structure and its values times 2^−e.
CsrMatrix<double> scaled_matrix(const CsrMatrix<double>& A, int e);
/// Whether v·2^e, computed from v, kept every entry: none overflowed, and none that was nonzero
/// became subnormal or zero. A solution or eigenpair scaled back from a rescaled problem is no
/// answer where it did not (x = A⁻¹b with A near 1e-300 and b near 1e300 is near 1e600).
bool survives_scaling(const double* v, std::size_t n, int e);
/// The same for a whole vector.
inline bool survives_scaling(const std::vector<double>& v, int e) { return survives_scaling(v.data(), v.size(), e); }
/// Column j of a column-major block of n-row columns times 2^e.
void scale_columns(std::vector<double>& V, std::size_t n, std::size_t j, int e);
/// v ← v·2^e.
void scale_by_power_of_two(std::vector<double>& v, int e);

/// A CG result (SolveResult or a block's ColumnResult) of a solve for b·2^−e_b, back on the
/// caller's scale: b's norm, the true residual and the history times 2^e_b. Where x did not
/// survive scaling back (`fits` false) the status is OutOfRange, unless the solve had broken down
/// already, and the original problem's residual is unknown (infinite).
template <class Result>
void unscale_result(Result& r, int e_b, bool fits) {
  r.b_norm = std::ldexp(r.b_norm, e_b);
  r.true_residual_norm = std::ldexp(r.true_residual_norm, e_b);
  scale_by_power_of_two(r.residual_history, e_b);
  if (fits || (r.status != SolveStatus::Converged && r.status != SolveStatus::MaxIterations &&
               r.status != SolveStatus::Stagnated))
    return;
  r.status = SolveStatus::OutOfRange;
  r.true_residual_norm = r.true_relative_residual = std::numeric_limits<double>::infinity();
}
/// ε·‖A‖/min|λ|: about the smallest relative residual rounding allows a report's pairs.
double eig_accuracy_floor(const EigReport& rep);
/// An eigensolve report of the pencil (A·2^−ea, B·2^−eb), eb even, back on the caller's scale:
/// eigenvalues times 2^(ea−eb), vectors 2^(−eb/2), residuals 2^(ea−eb/2), the norm estimates and
/// the accuracy floor. Where the pairs did not survive that (`fits` false) the status is
/// OutOfRange, unless B was not positive definite or a NaN or Inf appeared.
void unscale_eig_report(EigReport& rep, int ea, int eb, bool fits);

}  // namespace krysp
