#pragma once
/// \file chebyshev.hpp
/// Chebyshev polynomial preconditioning on the Jacobi-scaled operator B = D⁻¹A (D = diag(A)):
///   M⁻¹·r = x_d, the d-th iterate of the Chebyshev iteration for B·x = D⁻¹r from x_0 = 0
/// on the interval [λmin, λmax], λmin = λmax/ratio (Saad, "Iterative Methods for Sparse Linear
/// Systems", 2nd ed., Alg. 12.1; the three-term form hypre and Ifpack2 use as smoother):
///   θ = (λmax+λmin)/2, δ = (λmax−λmin)/2, σ = θ/δ, ρ_0 = 1/σ
///   x_1 = D⁻¹r/θ
///   x_{k+1} = x_k + ρ_kρ_{k−1}·(x_k − x_{k−1}) + (2ρ_k/δ)·D⁻¹(r − A·x_k),  ρ_k = 1/(2σ − ρ_{k−1})
/// So M⁻¹ = p(B)·D⁻¹ with p of degree d−1; applying it costs d−1 SpMVs (through the matrix's SpMV
/// plan, or an SpMM plan per block width for apply_block) and one fused vector kernel per step.
///
/// Why it is SPD (what CG needs). B = D^{-1/2}·S·D^{1/2} with S = D^{-1/2}AD^{-1/2} symmetric, so
/// M⁻¹ = p(B)D⁻¹ = D^{-1/2}·p(S)·D^{-1/2}: symmetric for any polynomial, and positive definite iff
/// p(λ) > 0 at every eigenvalue λ of B. With the residual polynomial
/// q(λ) = 1 − λp(λ) = T_d((θ−λ)/δ) / T_d(σ) (T_d Chebyshev of the first kind):
///  - λ in [λmin, λmax]: |q| ≤ 1/T_d(σ) < 1, so λp(λ) > 0;
///  - 0 < λ < λmin: (θ−λ)/δ lies in (1, σ) where T_d is positive and increasing, so 0 < q < 1;
///  - λ > λmax: (θ−λ)/δ < −1, where |T_d| grows past T_d(σ): for even d, q > 1 and p(λ) < 0.
/// Hence the interval must cover the top of the spectrum. Lanczos Ritz values approach λmax from
/// below, so the estimate is multiplied by a safety factor (kDefaultChebyshevBoost = 1.1) and then
/// capped by the Gershgorin bound max_i Σ_j |a_ij|/a_ii, which is ≥ λmax always. In floating point
/// M⁻¹ is symmetric to rounding (tests check xᵀM⁻¹y = yᵀM⁻¹x and positivity of M⁻¹).
///
/// λmax of B: Lanczos on S from a fixed pseudo-random start vector (so host and GPU agree), until
/// the largest Ritz value changes by ≤ 0.1% over two steps (at least 8 steps, at most
/// PrecondOptions::cheb_eig_steps), or until boost·θ reaches the Gershgorin bound, which then is
/// λmax (on a 3-D Laplacian: 8 steps instead of 23); an invariant subspace (β ≈ 0) ends it
/// exactly. An estimate that is not finite or not positive is an InputError naming it (A has
/// NaN/Inf entries, or is not SPD); one that does not converge in the allowed steps is an Error
/// naming the last values.
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/row_stats.hpp"
#include "krysp/sparse/spmv_config.hpp"

namespace krysp {

/// How the Chebyshev interval was found.
struct ChebyshevInfo {
  int degree = 0;
  double ratio = 0;
  double lambda_estimate = 0;  ///< largest Lanczos Ritz value of D⁻¹A (0 when λmax was given)
  int lanczos_steps = 0;       ///< Lanczos steps taken (0 when λmax was given)
  double gershgorin = 0;       ///< max_i Σ_j |a_ij|/a_ii: an upper bound of λmax(D⁻¹A)
  double lambda_max = 0;       ///< top of the interval: min(boost·estimate, gershgorin), or as given
  double lambda_min = 0;       ///< lambda_max / ratio
};

/// The recurrence's scalars: x_1 = c0·D⁻¹r, and for k = 1..d−1
/// x_{k+1} = x_k + c1[k−1]·(x_k − x_{k−1}) + c2[k−1]·D⁻¹(r − A·x_k).
struct ChebyshevCoefficients {
  double c0 = 0;
  std::vector<double> c1, c2;
  double lambda_min = 0, lambda_max = 0;  ///< the interval they were made for
};
/// The coefficients of the degree-d polynomial for the interval [lambda_min, lambda_max].
ChebyshevCoefficients chebyshev_coefficients(double lambda_min, double lambda_max, int degree);

/// Lanczos steps before lanczos_largest's settling test may end a run from the fixed start vector
/// (earlier, two nearly equal Ritz values can be an early plateau, not λmax).
inline constexpr int kLanczosMinSteps = 8;

/// One Lanczos run on a symmetric operator S, through the backend that owns the vectors.
class LanczosOperator {
 public:
  virtual ~LanczosOperator() = default;
  /// v = the fixed start vector (detail::lanczos_start_entry) normalised; v_prev = 0; step 0 next.
  virtual void start() = 0;
  /// Runs the next `count` steps j and writes each one's α_j and β_j to alpha[t], beta[t]:
  ///   (j > 0: v_prev = v, v = w/β_{j−1})  w = S·v − β_{j−1}·v_prev,  α_j = wᵀv,
  ///   w −= α_j·v,  β_j = ‖w‖.
  /// A step never needs the host: a GPU backend queues `count` steps and synchronises once.
  virtual void steps(int count, double* alpha, double* beta) = 0;
  /// How many steps the caller should ask for at once (1: the host, where asking costs nothing).
  /// Steps past a stop are wasted work, never a different result: the stop is decided on the
  /// host, step by step, from the α and β of the steps before it.
  virtual int batch() const { return 1; }
  /// The first request's size when batch() is above 1: by default the steps before the settling
  /// test may stop a run from the fixed start vector, kLanczosMinSteps, and at least batch().
  virtual int first_batch() const { return batch() > kLanczosMinSteps ? batch() : kLanczosMinSteps; }
  /// Steps before the settling test may end the run, given the largest Ritz value so far:
  /// kLanczosMinSteps from the fixed start vector; fewer from a warm start whose Ritz value is
  /// already near the old matrix's λmax (AMG's numeric re-set-up).
  virtual int min_steps(double /*theta*/) const { return kLanczosMinSteps; }
};

/// What lanczos_largest found.
struct LanczosResult {
  double theta = 0;       ///< largest Ritz value
  double change = 0;      ///< |θ_j − θ_{j−2}| / θ_j at the last step
  int steps = 0;
  bool converged = false;
};
/// The settling tolerance of lanczos_largest unless the caller passes another: |θ_j − θ_{j−2}|
/// ≤ this·θ_j ends the run (after 8 steps at least).
inline constexpr double kLanczosSettleTol = 1e-3;
/// Runs Lanczos until the largest Ritz value settles (see the file comment), or reaches `enough`
/// (Ritz values only grow, so the caller's use of it is then decided: Chebyshev passes
/// Gershgorin/boost, above which λmax is the Gershgorin bound); never throws. settle_tol: the
/// relative change over two steps that counts as settled (AMG passes a looser one and a safety
/// factor: it needs λmax for a weight and an interval only).
LanczosResult lanczos_largest(LanczosOperator& op, index_t n, int max_steps,
                              double enough = std::numeric_limits<double>::infinity(),
                              double settle_tol = kLanczosSettleTol);
/// Largest eigenvalue of the symmetric tridiagonal matrix with diagonal a and off-diagonal b
/// (b[i] couples i and i+1; b.size() ≥ a.size() − 1), by Sturm-sequence bisection.
double tridiagonal_max_eigenvalue(const std::vector<double>& a, const std::vector<double>& b);

/// Why Chebyshev refuses a diagonal entry that is not positive (see throw_bad_diagonal).
inline constexpr const char* kChebyshevNeeds = "Chebyshev works on D^-1 A and needs a positive diagonal";
/// D⁻¹ of A with the Gershgorin bound of D⁻¹A in *gershgorin, in one pass. InputError naming the
/// row and value for a diagonal entry that is missing, zero, negative or not finite.
template <class T>
std::vector<T> chebyshev_scaling(const CsrMatrix<T>& A, double* gershgorin);

/// The interval from the options, running Lanczos through `op` unless o.cheb_lambda_max > 0.
/// Throws as described in the file comment.
ChebyshevInfo chebyshev_interval(const PrecondOptions& o, double gershgorin, LanczosOperator& op, index_t n);

/// Rows up to this long take the fused CSR-stream step when the SpMV plan is nonzero-balanced (large
/// matrices: the plan balances nonzeros even for even rows, but a row-balanced fused step then
/// saves the A·x round trip): a lane adds at most this many staged products, so the longest row
/// costs its warp little. Longer rows keep the SpMV plan's kernel and a separate vector kernel.
inline constexpr index_t kChebyshevStreamMaxRow = 32;
/// The GPU's fused Chebyshev step for a matrix whose SpMV plan has `config` and statistics `s`:
/// -1: not fused (the plan's SpMV, then the vector kernel); 0: the CSR-stream kernel (a warp per
/// 32 rows, one lane per row); 2..32: that many lanes per row. RowSubwarp keeps the plan's width;
/// RowSequential takes the stream kernel; a nonzero-balanced plan takes it when no row is longer
/// than kChebyshevStreamMaxRow, and is not fused otherwise (skewed rows need nonzero balancing).
int choose_chebyshev_step(const SpmvConfig& config, const RowStats& s);

/// A with its values converted to S: A itself when S = T (copies share storage); otherwise a new
/// matrix sharing A's index arrays on the host (its device mirror, made on first use, is its own).
template <class S, class T>
CsrMatrix<S> with_value_type(const CsrMatrix<T>& A) {
  if constexpr (std::is_same_v<S, T>) {
    return A;
  } else {
    typename CsrMatrix<S>::ValueView v("krysp_values_converted", std::size_t(A.nnz()));
    const auto& a = A.values();  // once: a device-pointer matrix checks its host snapshot per call
    for (index_t k = 0; k < A.nnz(); ++k) v(k) = S(a(k));
    return CsrMatrix<S>(A.rows(), A.cols(), A.row_ptr(), A.col_idx(), v);
  }
}

/// Chebyshev on the host. T: the solver's precision; S: the precision of the polynomial (S = T,
/// or float inside a double solve: PrecondOptions::cheb_single). Not thread-safe: apply() uses
/// work vectors kept in the object.
template <class T, class S = T>
class HostChebyshev final : public Preconditioner<T> {
 public:
  /// Sets up from A (D⁻¹, the interval by Lanczos unless given, the coefficients). Throws
  /// InputError for a bad diagonal, Error when λmax does not settle (see the file comment).
  HostChebyshev(const CsrMatrix<T>& A, const PrecondOptions& o);
  PrecondKind kind() const override { return PrecondKind::Chebyshev; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  /// The interval and degree in use.
  const ChebyshevInfo& info() const { return info_; }

 private:
  StructureFingerprint fingerprint_;
  CsrMatrix<S> As_;  ///< A itself (shared storage), or its fp32 copy
  ChebyshevInfo info_;
  ChebyshevCoefficients coef_;
  std::vector<S> dinv_;
  mutable std::vector<S> u_, v_, w_;
};

/// Chebyshev on a distributed matrix on the host (docs/distributed.md): the one-rank polynomial
/// and coefficients (HostChebyshev's code), with the distributed product (halo exchange
/// included) as its SpMVs, each rank's rows of D as its diagonal, the Gershgorin bound as the max
/// over ranks, and λmax from Lanczos whose dot products are summed over the communicator in rank
/// order (deterministic: every rank takes the same steps) from the start vector indexed by global
/// row. So 1, 2 or 4 ranks give the one-rank interval up to rounding. Making it and every apply
/// are collective (a rank without rows takes part); a bad diagonal on any rank is the same
/// InputError on every rank. A must outlive it. Not thread-safe.
class DistChebyshev final : public Preconditioner<double> {
 public:
  /// Sets up from A (collective; throws as HostChebyshev, agreed over the ranks).
  DistChebyshev(const DistCsrMatrix& A, const PrecondOptions& o);
  PrecondKind kind() const override { return PrecondKind::Chebyshev; }
  void apply(const double* r, double* z) const override;
  void apply_block(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const override;
  /// Never: it is made from a DistCsrMatrix, not a CsrMatrix (nothing re-uses it by fingerprint).
  bool matches(const CsrMatrix<double>&) const override { return false; }
  /// The interval and degree in use (the same on every rank).
  const ChebyshevInfo& info() const { return info_; }

 private:
  const DistCsrMatrix& A_;
  ChebyshevInfo info_;
  ChebyshevCoefficients coef_;
  std::vector<double> dinv_;
  mutable std::vector<double> u_, v_, w_;
};

extern template class HostChebyshev<double, double>;
extern template class HostChebyshev<double, float>;
extern template class HostChebyshev<float, float>;

}  // namespace krysp
