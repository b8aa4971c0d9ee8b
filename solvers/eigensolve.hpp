#pragma once
/// \file eigensolve.hpp
/// The k extreme eigenpairs of A·x = λ·x or A·x = λ·B·x (A symmetric, B SPD) with LOBPCG on the
/// chosen backend: the entry point of `krysp eigs`, the benchmark and simulation codes.
#include <limits>
#include <string>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/lobpcg_result.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/symmetry.hpp"

namespace krysp {

/// `krysp eigs --precond auto` (and bench_lobpcg) flip the largest pairs of a standard problem
/// only from this many rows on: large 2-D Laplacians need the flip, while on the small SuiteSparse
/// SPD matrices its setup (σI − A, Chebyshev) costs more than it saves (docs/eigensolver.md,
/// "Spectral flip").
inline constexpr index_t kSpectralFlipMinRows = 100000;

/// Default EigOptions::refine_direct_max_flops: factoring takes a few seconds on one core.
inline constexpr double kRefineDirectMaxFlops = 2e10;
/// The most entries the refinement's envelope Cholesky factor may hold (400 MB).
inline constexpr double kRefineDirectMaxEntries = 5e7;
/// The most multiply-adds (and envelope entries) eigensolve spends factoring a generalized
/// problem's B to prove it positive definite (about 0.1 s on one core); a larger B is not checked.
inline constexpr double kBCheckMaxFlops = 2e8;

/// Default EigOptions::inner_rtol.
inline constexpr double kDefaultInnerRtol = 0.1;

/// Everything eigensolve() takes.
struct EigOptions {
  Backend backend = Backend::Auto;
  /// None by default. For the smallest pairs a preconditioner approximating A⁻¹ pays: measured at
  /// k = 8 on the host, Jacobi needs 2-10x fewer iterations than none on the bcsstk family (and
  /// does nothing on constant-diagonal Laplacians); Chebyshev (degree 4 on D⁻¹A) another 3-6x fewer
  /// than Jacobi (494_bus 614 → 93, 1138_bus 841 → 157, bcsstk06 201 → 38, tol 1e-8) and 3.5x
  /// fewer than none on Laplacians (2-D 128²: 224 → 60; 3-D 24³: 86 → 24). For the largest pairs
  /// of A·x = λ·x none; of A·x = λ·B·x Jacobi of B (precond_from_b). `krysp eigs --precond auto`
  /// chooses so.
  PrecondOptions precond{PrecondKind::None};
  /// When setting the preconditioner up fails (Chebyshev's λmax estimate does not settle, A is not
  /// SPD, a zero diagonal), use Jacobi instead, or none; and where LOBPCG does not converge and
  /// its inner CG met pᵀA·p ≤ 0 (A symmetric but not positive definite), run it again with
  /// neither. EigReport::precond_note says why.
  bool precond_fallback = false;
  /// Build the preconditioner from B instead of A (generalized problem only): for the largest
  /// pairs, M⁻¹ ≈ B⁻¹ turns the residual into one of B⁻¹A, which is what converges there.
  bool precond_from_b = false;
  /// Largest pairs of a standard problem only: solve for the smallest pairs of F = σI − A instead,
  /// σ = the Gershgorin bound max_i(a_ii + Σ_j≠i |a_ij|) ≥ λmax(A) (times 1 + 1e-6), so that the
  /// preconditioner (built from F) approximates F⁻¹ and pays as it does for the smallest pairs; the
  /// eigenvalues are mapped back (λ = σ − μ, largest first), the eigenvectors and the residual
  /// norms ‖F·x − μ·x‖ = ‖A·x − λ·x‖ are the same. The flipped run uses tol·a/(2‖F‖∞), a the
  /// largest row 2-norm of A (≤ ‖A‖₂), which makes its test imply A's; relative_residuals are
  /// then A's measure with ‖A‖ₑ = a (an underestimate of ‖A‖₂, so they overstate, never
  /// understate); `history` stays the flipped run's.
  bool spectral_flip = false;
  /// > 0: LOBPCG's preconditioner is `inner_iters` PCG steps on A per application, each
  /// preconditioned by `precond` (solvers/inner_solve.hpp): an approximate A⁻¹ that reaches the
  /// low end of an ill-conditioned spectrum, where a fixed polynomial does not. 0: `precond` itself.
  int inner_iters = 0;
  /// The inner solve stops before `inner_iters` steps once every column's rᵀM⁻¹r has fallen by
  /// inner_rtol² (M-norm of the residual by inner_rtol). Measured on the host (k = 8): 0.1 keeps
  /// the outer iterations of bcsstk28, 1138_bus and bcsstm12 and halves the time on the easy
  /// Trefethen_2000 and gr_30_30; 0 always takes `inner_iters` steps.
  double inner_rtol = kDefaultInnerRtol;
  /// After LOBPCG converges, check that no eigenvalue beyond the k-th returned one was missed:
  /// a second LOBPCG run (one pair, the same block size, random start, the same preconditioner)
  /// on the pencil restricted to the B-orthogonal complement of the returned eigenvectors (and of
  /// the constraints), for max(kVerifyMinIters, the main run's iterations) iterations or until its
  /// pair settles to relative tol kVerifyTol. Its Rayleigh quotient bounds the complement's extreme
  /// eigenvalue; once it is beyond λ_k by more than 10 tolerances, the run missed an eigenvalue: the
  /// main run restarts with that vector added to its start (at most kVerifyRestarts times), then
  /// the status is Unverified. A probabilistic check, not a proof: it passes when an iteration as
  /// long as the main run's, from a fresh random start, finds nothing beyond λ_k; an eigenvector
  /// that both the random start and the preconditioner fail to reach could still be missed.
  bool verify = true;
  /// Smallest pairs without constraints or spectral flip: when LOBPCG ends Stagnated (its
  /// Rayleigh–Ritz projection stops near the rounding floor ε·‖A‖/|λ|), refine the pairs by block
  /// inverse iteration (solvers/inverse_refine.hpp: PCG solves with `precond`, Rayleigh–Ritz on
  /// (Yᵀ·B·X, Yᵀ·B·Y)), which has no ‖A‖-sized rounding term. The status is Converged only if the
  /// refined pairs meet the test from fresh products; the check for missed eigenvalues follows.
  bool refine = true;
  /// The refinement solves with A by its envelope Cholesky factor (solvers/envelope_cholesky.hpp,
  /// on the host) when factoring takes at most this many multiply-adds and kRefineDirectMaxEntries
  /// entries; by PCG with `precond` otherwise, whose attainable accuracy may stop it short on the
  /// hardest matrices.
  double refine_direct_max_flops = kRefineDirectMaxFlops;
  LobpcgOptions lobpcg;
  SpmmPlanOptions spmm;        ///< how the CUDA backend plans its SpMM (per block width)
  bool check_symmetry = true;  ///< refuse a non-symmetric A or B (InputError naming an entry)
  /// Print a phase profile (setup steps, LOBPCG phases and operations: ms, calls, device→host
  /// copies) to stderr after the solve. Also on when the environment variable KRYSP_PROFILE is
  /// set to anything but "" or "0". Profiling synchronises the device around every phase.
  bool profile = false;
};

/// A dense block given by the caller, COLUMN-major rows × cols (what read_dense_matrix_market
/// returns). Not owning.
struct ColumnBlock {
  index_t rows = 0, cols = 0;
  const double* values = nullptr;
};

/// An eigensolve's result plus where and how it ran.
struct EigReport : EigResult {
  std::string solver = "lobpcg";  ///< or "dense-dsyevd" / "dense-dsygvd": too small for LOBPCG (3k > n)
  std::string which;
  std::string preconditioner;    ///< what was used: none, jacobi, chebyshev, ...; "(B)" when built from B
  std::string precond_note;      ///< why the requested preconditioner was replaced (precond_fallback)
  /// What showed B not positive definite (status NotPositiveDefinite): its Cholesky factor, tried
  /// first where cheap (kBCheckMaxFlops), or LOBPCG's B-Gram matrices.
  std::string status_note = "the B-Gram matrices of the basis stayed indefinite or singular";
  std::string backend;          ///< "cuda" or "host"
  std::string device;           ///< GPU name, or "host"
  std::string spmm_kernel;      ///< the SpMM plan's choice for N = b (CUDA), or "host-reference"
  double setup_seconds = 0;     ///< checks, preconditioner, plans, uploads
  double solve_seconds = 0;     ///< LOBPCG including its start (orthonormalizing X0); `seconds` excludes it
  /// The check for missed eigenvalues (EigOptions::verify): "passed: ...", "skipped: ...",
  /// "inconclusive: ..." (the check broke down), "failed: ..." or "off".
  std::string verification = "off";
  /// The check's extreme Rayleigh quotient on the complement of the returned vectors (NaN when
  /// not run): passing means it is not beyond λ_k.
  double complement_bound = std::numeric_limits<double>::quiet_NaN();
  /// ε·‖A‖ₑ/min|λ_j| over the returned pairs: about the least relative residual double precision
  /// allows them (computing A·x alone errs by ε·‖A‖·‖x‖). A Relative tol below it cannot be met;
  /// such runs end Stagnated or MaxIterations, and `krysp eigs` says so.
  double accuracy_floor = 0;
  index_t verify_iterations = 0;  ///< iterations of the checks
  index_t verify_restarts = 0;    ///< main runs restarted because the check found an eigenvalue beyond λ_k
  index_t refine_sweeps = 0;      ///< inverse-iteration sweeps after a stagnated run (EigOptions::refine)
  index_t refine_inner_iterations = 0;  ///< PCG iterations of those sweeps' inner solves
  std::string refine_method;      ///< how the refinement solved with A ("" when it did not run)
};


/// The relative tolerance at which the check for missed eigenvalues stops early (its Ritz value, a
/// bound of the complement's extreme eigenvalue, is then accurate to about its square).
inline constexpr double kVerifyTol = 1e-2;
/// The check's least iteration budget (it also gets as many as the main run took).
inline constexpr index_t kVerifyMinIters = 100;
/// The most restarts of the main run the check may cause before the status is Unverified.
inline constexpr int kVerifyRestarts = 3;

/// Checks the input (InputError: non-square or non-symmetric A, B of another size, B with a
/// non-positive diagonal, x0/constraints of the wrong shape, k or block size out of range — see
/// lobpcg_block_size) and runs LOBPCG. x0 (n × ≤b) are starting vectors (the rest random);
/// constraints Y (n × c): the eigenvectors are computed B-orthogonal to them. Non-convergence,
/// breakdown and B not positive definite are statuses in the report; DeviceError for GPU failures.
EigReport eigensolve(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& options = {},
                     const ColumnBlock& x0 = {}, const ColumnBlock& constraints = {});

/// Inner PCG steps per application of the default LOBPCG preconditioner for the smallest pairs
/// (inner-cg with Chebyshev inside; chosen on the shared SPD set, docs/eigensolver.md).
inline constexpr int kDefaultInnerIters = 8;

/// What `krysp eigs --precond auto` uses, set into `o` for A (and B, or null):
///  - smallest pairs: `kDefaultInnerIters` PCG steps on A preconditioned by Chebyshev (falling
///    back to Jacobi, then none, when Chebyshev cannot be set up); none inside when A has a
///    non-positive diagonal entry;
///  - largest of A·x = λ·B·x: Jacobi of B;
///  - largest of A·x = λ·x: none, or from kSpectralFlipMinRows rows the smallest of σI − A with
///    Chebyshev.
void choose_auto_preconditioner(EigOptions& o, const CsrMatrix<double>& A, const CsrMatrix<double>* B);

/// True when every diagonal entry of A is stored, positive and finite (Jacobi can be built).
bool positive_diagonal(const CsrMatrix<double>& A);

}  // namespace krysp
