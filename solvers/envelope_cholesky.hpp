#pragma once
/// \file envelope_cholesky.hpp
/// A sparse direct solver for small SPD matrices on the host: reverse Cuthill–McKee ordering,
/// then Cholesky in envelope (profile) storage, A = Pᵀ·L·Lᵀ·P. Used where an iterative solve
/// cannot reach the accuracy asked of it: the inverse-iteration refinement of the smallest
/// eigenpairs of ill-conditioned matrices (solvers/inverse_refine.hpp), whose solves must be
/// backward stable rather than limited by CG's attainable accuracy.
///
/// Why envelope storage: after RCM the fill stays inside each row's envelope, so the factor
/// needs no symbolic phase, rows are contiguous (the inner products stream), and the cost is
/// known before factoring (Σ row length²/2), so a matrix too large for it is refused up front.
#include <cstdint>
#include <optional>
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The reverse Cuthill–McKee ordering of the symmetric pattern of A (deterministic: each
/// component starts at a pseudo-peripheral node of least degree, neighbours in order of
/// degree, then index). order[new] = old.
std::vector<index_t> reverse_cuthill_mckee(const CsrMatrix<double>& A);

/// L·Lᵀ = P·A·Pᵀ in envelope storage.
class EnvelopeCholesky {
 public:
  /// A's RCM ordering and envelope, with the envelope's entries and the factorization's
  /// multiply-adds: what factor() would cost, known before factoring.
  struct Cost {
    std::int64_t entries = 0;
    double flops = 0;
    std::vector<index_t> order;  ///< order[new] = old
    std::vector<index_t> first;  ///< first column of each row's envelope (new numbering)
  };
  /// Cost of factoring A (pattern only).
  static Cost cost(const CsrMatrix<double>& A);
  /// Factors A (symmetric; only its lower triangle is read), or returns nothing when A is not
  /// numerically positive definite (a pivot ≤ 0 or not finite).
  static std::optional<EnvelopeCholesky> factor(const CsrMatrix<double>& A) { return factor(A, cost(A)); }
  /// The same, with `c` = cost(A) already computed (its ordering is reused).
  static std::optional<EnvelopeCholesky> factor(const CsrMatrix<double>& A, const Cost& c);

  /// Whether factoring A, where that costs at most `max_flops` multiply-adds (and envelope
  /// entries), meets a pivot ≤ 0: proof that A is not positive definite. False where it would cost
  /// more, or A factors.
  static bool shows_indefinite(const CsrMatrix<double>& A, double max_flops) {
    const Cost c = cost(A);
    return c.flops <= max_flops && double(c.entries) <= max_flops && !factor(A, c);
  }

  /// Y = A⁻¹·F for N columns of row-major blocks (leading dimensions ldf, ldy ≥ N) in host memory;
  /// F and Y may be the same block.
  void solve(index_t N, const double* F, index_t ldf, double* Y, index_t ldy) const;
  index_t rows() const { return n_; }  ///< rows of A
  std::int64_t entries() const { return std::int64_t(val_.size()); }  ///< envelope entries stored

 private:
  index_t n_ = 0;
  std::vector<index_t> order_;      ///< order_[new] = old
  std::vector<index_t> first_;      ///< first column of row i's envelope (new numbering)
  std::vector<std::int64_t> start_; ///< row i's entries L(i, first_[i] .. i) at val_[start_[i] ..]
  std::vector<double> val_;
};

}  // namespace krysp
