#pragma once
/// \file lobpcg_start.hpp
/// What a LOBPCG run starts from besides its options (LobpcgStart: starting vectors, constraints,
/// norm floors, the spectral flip), and the check of the options and shapes against n that gives
/// the block size (lobpcg_block_size). The solver itself is in lobpcg.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "krysp/base/error.hpp"
#include "krysp/base/phase_profile.hpp"
#include "krysp/solvers/lobpcg_result.hpp"

namespace krysp {

template <class T>
class CsrMatrix;
namespace detail {
/// max_i |a_ii| of A's stored diagonal (a lower bound on ‖A‖: LobpcgStart::a_norm_floor), one
/// O(nnz) host pass per values version (memoised on A). For a distributed matrix, its local block.
double max_abs_diagonal(const CsrMatrix<double>& A);
}  // namespace detail

/// Starting vectors and constraints (host, ROW-major n × cols), and lower bounds of ‖A‖₂, ‖B‖₂
/// (the eigensolve driver passes max |a_ii| and max b_ii).
struct LobpcgStart {
  const double* x0 = nullptr;
  index_t x0_cols = 0;
  const double* constraints = nullptr;
  index_t constraint_cols = 0;
  double a_norm_floor = 0;
  double b_norm_floor = 1;
  PhaseProfile* profile = nullptr;  ///< non-null: time phases and operations (base/phase_profile.hpp)
  /// The run solves for θ of σI − A while the user asked for λ = σ − θ of A (the spectral flip):
  /// the Relative test is then taken relative to |σ − θ|.
  bool flipped = false;
  double flip_sigma = 0;
  /// Not NaN: stop (EigResult::stopped_beyond) as soon as the first Ritz value is below it (smallest)
  /// or above it (largest): the check for missed eigenvalues needs no more.
  double stop_beyond = std::numeric_limits<double>::quiet_NaN();
};

/// Checks k, the block size, tol and the shapes against n (the problem's global order: all ranks'
/// rows when distributed); InputError naming the numbers. Returns the block size to use.
inline index_t lobpcg_block_size(const LobpcgOptions& o, std::int64_t n, index_t x0_cols, index_t constraint_cols) {
  KRYSP_REQUIRE(o.k >= 1, "LOBPCG: k = ", o.k, " eigenpairs requested; k must be at least 1");
  KRYSP_REQUIRE(std::isfinite(o.tol) && o.tol > 0, "LOBPCG: tol = ", o.tol, " must be a positive number");
  KRYSP_REQUIRE(constraint_cols >= 0 && x0_cols >= 0, "LOBPCG: negative column counts");
  const index_t b = o.block_size > 0 ? o.block_size : default_block_size(o.k, index_t(std::min<std::int64_t>(n, kMaxIndex)), constraint_cols);
  KRYSP_REQUIRE(b >= o.k, "LOBPCG: block size ", b, " is smaller than k = ", o.k);
  KRYSP_REQUIRE(b <= kMaxLobpcgBlock, "LOBPCG: block size ", b, " exceeds the maximum ", kMaxLobpcgBlock);
  KRYSP_REQUIRE(3 * std::int64_t(b) + constraint_cols <= n, "LOBPCG: block size ", b, " is too large for n = ", n,
                ": the basis [X W P] needs 3*b", constraint_cols > 0 ? " + constraints" : "", " = ",
                3 * std::int64_t(b) + constraint_cols, " <= n columns (k = ", o.k, ", constraints = ", constraint_cols,
                "); use a smaller k or block size, or a dense eigensolver for so small a matrix");
  KRYSP_REQUIRE(x0_cols <= b, "LOBPCG: x0 has ", x0_cols, " columns, more than the block size ", b);
  return b;
}

}  // namespace krysp
