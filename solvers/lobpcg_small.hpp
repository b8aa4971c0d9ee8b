#pragma once
/// \file lobpcg_small.hpp
/// The small (b × b to 3b × 3b) dense decisions of LOBPCG, on the host: how to B-orthonormalize
/// a block from its Gram matrix (Cholesky QR, or SVQB dropping near-dependent directions), the
/// Rayleigh–Ritz step, and an orthonormal basis of a few columns (for the implicit P). Matrices
/// are column-major std::vector<double> (solvers/block_ops.hpp: cm(i, j, rows)). Failures are
/// values, never exceptions.
#include <vector>

#include "krysp/base/types.hpp"

namespace krysp::lobpcg_detail {

/// Thresholds, named once (see lobpcg.hpp for how they are used).
struct SmallTolerances {
  /// Cholesky QR is used when the diagonally scaled Gram matrix has condition ≤ this (so the
  /// block's own condition ≤ 1e5 and one pass leaves an orthogonality error ≤ ε·1e10 ≈ 1e-6,
  /// which the next pass removes); SVQB otherwise.
  double chol_cond_max = 1e10;
  /// SVQB keeps eigenvalues θ of the scaled Gram matrix with θ > drop · θ_max · (columns):
  /// below that they are rounding noise of a Gram matrix whose diagonal is 1.
  double drop = 100 * 2.220446049250313e-16;
  /// Rayleigh–Ritz: a scaled B-Gram of the basis with condition above this is "ill-conditioned"
  /// (P is dropped and the step redone; without P the basis is reduced by SVQB instead).
  double rr_cond_max = 1e8;
  /// orth_columns keeps singular values σ > this · σ_max.
  double orth_drop = 1e-12;
  /// A Gram eigenvalue (or diagonal entry) below −indefinite·max is not rounding: B is not SPD.
  double indefinite = 1e-8;
};

/// Coefficients K (a × rank, column-major) such that V·K is B-orthonormal, given the Gram
/// matrix G = Vᵀ·B·V (a × a).
struct OrthoCoefficients {
  bool finite = true;      ///< false when G has NaN or Inf (nothing else is valid then)
  index_t rank = 0;        ///< columns kept (0: V is numerically zero)
  std::vector<double> K;   ///< a × rank
  double cond = 0;         ///< condition of the diagonally scaled Gram matrix (inf if singular); an upper bound
                           ///< (Gershgorin) when that already lies below chol_cond_max and rr_cond_max
  double deviation = 0;    ///< max |Ĝ − I| of the scaled Gram matrix: how far V already was from orthonormal
  double scale_spread = 0; ///< max over min of the column B-norms (inf when one is zero)
  bool used_svqb = false;  ///< the Cholesky path was refused (ill-conditioned, zero column) or failed
  bool indefinite = false; ///< G had a clearly negative eigenvalue or diagonal entry: the B-inner product is not definite
};
/// Cholesky QR when the scaled Gram matrix is well conditioned (K = D·R⁻¹, D = diag(G)^{-1/2}),
/// SVQB otherwise (K = D·V_kept·Θ_kept^{-1/2}, Ĝ = D·G·D = V·Θ·Vᵀ), dropping directions whose
/// eigenvalue θ ≤ drop·a·θ_max. G is symmetrised first. `scale` (0: none) is the largest B-norm²
/// the columns had before a projection: a diagonal entry below −indefinite·scale is flagged too.
OrthoCoefficients ortho_coefficients(index_t a, std::vector<double> G, const SmallTolerances& tol = {},
                                     double scale = 0);

/// Result of the Rayleigh–Ritz step on a basis S of m columns.
struct RitzStep {
  bool ok = false;             ///< false: non-finite input, or fewer than `want` independent directions
  bool ill_conditioned = false;///< the scaled B-Gram had condition > rr_cond_max
  bool reduced = false;        ///< the SVQB-reduced path was used (rank < m possible)
  index_t rank = 0;            ///< columns of C
  double gram_cond = 0;        ///< condition of the scaled B-Gram D·GB·D (Gershgorin bound when ≤ rr_cond_max)
  bool indefinite = false;     ///< the scaled B-Gram had a clearly negative eigenvalue (< −1e-8·θ_max)
  std::vector<double> theta;   ///< rank Ritz values, wanted-first: ascending (smallest) or descending (largest)
  std::vector<double> C;       ///< m × rank Ritz coefficients, GB-orthonormal (Cᵀ·GB·C = I), same order
};
/// Ritz pairs of the pencil (GA, GB) = (SᵀAS, SᵀBS). When the scaled GB is well conditioned:
/// LAPACK dsygvd on (D·GA·D, D·GB·D), C = D·V. Otherwise, when `allow_reduce`, the basis is
/// first reduced by SVQB (dsyevd of D·GB·D, dropping tiny eigenvalues) and dsyevd solves the
/// projected standard problem; without `allow_reduce` the step reports ill_conditioned and
/// returns (the caller drops P and tries again). `want` is the number of Ritz pairs needed.
RitzStep rayleigh_ritz(index_t m, std::vector<double> GA, std::vector<double> GB, bool largest, index_t want,
                       bool allow_reduce, const SmallTolerances& tol = {});

/// An orthonormal basis Q (rows × rank, column-major) of the range of F (rows × cols) from its
/// SVD, keeping singular values σ > orth_drop·σ_max. rank 0 when F is (numerically) zero or not
/// finite.
std::vector<double> orth_columns(index_t rows, index_t cols, const std::vector<double>& F, index_t& rank,
                                 const SmallTolerances& tol = {});

/// Eigenvalues only (ascending) of the dense symmetric A, or of the pencil (A, B) with B SPD
/// (column-major n × n; dsyevd / dsygvd with jobz = 'N'): the reference the tests compare with.
bool dense_eigenvalues(index_t n, std::vector<double> A, const std::vector<double>* B, std::vector<double>& w);

}  // namespace krysp::lobpcg_detail
