#pragma once
/// \file preconditioner.hpp
/// Preconditioners: set up once per matrix, then applied to a vector or to a row-major block,
/// on the host or on the GPU. Every solver takes them through one interface, Preconditioner (a
/// LinearOperator, base/linear_operator.hpp), whose space() says where its vectors live.
///
/// Kinds (PrecondOptions::kind, --precond on the command line):
///  - none: M = I.
///  - jacobi: M = diag(A) (jacobi.hpp). Diagonal, so CG fuses it into its vector kernels.
///  - chebyshev: M⁻¹ = p(D⁻¹A)·D⁻¹, p the Chebyshev polynomial approximating 1/λ on
///    [λmax/ratio, λmax] of D⁻¹A (chebyshev.hpp). Costs degree−1 SpMVs per application and pays
///    by cutting CG iterations (each with its dots and vector updates).
///  - block-jacobi: M = the b×b diagonal blocks of A, b from the matrix's node structure or given
///    (block_jacobi.hpp). Blocks factored once, applied in one kernel.
///  - amg: one V-cycle of smoothed-aggregation algebraic multigrid (amg.hpp). Set up on the host
///    on both backends; on the GPU the hierarchy is uploaded and the V-cycle runs there
///    (precond/cuda/device_amg.hpp).
/// Every kind is symmetric positive definite for an SPD A (see each header for why), as CG needs.
/// A preconditioner holds what it derived from A's values at setup: after A.set_values(), set it
/// up again (matches() compares the structure only, like the plans).
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The preconditioners (see the file comment).
enum class PrecondKind { None, Jacobi, Chebyshev, BlockJacobi, Amg };
/// "none", "jacobi", "chebyshev", "block-jacobi" or "amg".
const char* to_string(PrecondKind k);
/// Parses a --precond value ("none", "jacobi", "chebyshev", "block-jacobi", "amg"); InputError
/// naming the value and the choices otherwise.
PrecondKind parse_precond(const std::string& name);

/// Default Chebyshev degree (SpMVs per application = degree − 1). Chosen from iteration counts on
/// the shared SPD set and 3-D problems (host study, ratio 30: degree d cuts CG iterations by
/// 0.7–0.95·d while each CG iteration saved also saves its dot products and vector kernels; by
/// bytes moved per row, degrees 3–4 come out best, ~0.9× Jacobi-CG's time on a 3-D Laplacian in
/// fp64). Confirm or change with bench/bench_precond, which times degrees 2, 3, 4, 6 and 8 and
/// prints the degree with the best geometric-mean speed-up over Jacobi.
inline constexpr int kDefaultChebyshevDegree = 4;
/// Default λmax/λmin of the Chebyshev interval: the polynomial targets the top 1/30 of D⁻¹A's
/// spectrum and leaves the rest to CG (Ifpack2's "chebyshev: ratio eigenvalue" default). Host
/// study at degree 4: ratio 60–100 saves 2–6% of the CG iterations on the PDE and structural
/// matrices (3-D Laplacian and anisotropic diffusion, bcsstk19/28, aft01, bodyy6, 1138_bus) and
/// more at degree 8, but costs 10–30% on small graph-like ones (gr_30_30, Trefethen_2000) and
/// bcsstk06; 15 is worse everywhere. bench_precond times ratio 100 at degrees 4 and 8 as well.
inline constexpr double kDefaultChebyshevRatio = 30.0;
/// Safety factor on the Lanczos estimate of λmax (Ifpack2's "chebyshev: boost factor"): Lanczos
/// Ritz values approach λmax from below, and the polynomial must cover the top of the spectrum to
/// stay positive (chebyshev.hpp). The result is capped by the Gershgorin bound, which is exact.
inline constexpr double kDefaultChebyshevBoost = 1.1;
/// Most Lanczos steps spent on λmax (it converges to 0.1% in 10–20 on every matrix tried).
inline constexpr int kDefaultChebyshevEigSteps = 40;

/// The smoother of an AMG level (AmgOptions::smoother).
enum class AmgSmoother {
  Chebyshev,  ///< Chebyshev polynomial in D⁻¹A on [λmax/smoother_ratio, λmax] (chebyshev.hpp)
  L1Jacobi    ///< x += D_l1⁻¹(b − A·x), d_l1_i = Σ_j |a_ij| (convergent for any SPD A, no estimate)
};
/// "chebyshev" or "l1-jacobi".
const char* to_string(AmgSmoother s);

/// How an AMG level's nodes are grouped into aggregates (AmgOptions::aggregation; amg.hpp).
/// MIS-2 is the default on both backends: its rounds run in parallel, so the GPU sets the
/// hierarchy up itself, and the host runs the same rounds, so both build the same aggregates;
/// on the host it needs the iterations greedy needs (docs/amg.md) at a lower complexity.
enum class AmgAggregation {
  Mis2,   ///< roots a distance-2 maximal independent set by hashed priority (host or GPU set-up)
  Greedy  ///< the standard SA passes in node order, one node after another: host set-up only
};
/// "mis2" or "greedy".
const char* to_string(AmgAggregation a);

/// The matrix the AMG prolongator smoothing P = (I − ω·D_F⁻¹A_F)·P_tent uses (AmgOptions::filter;
/// amg.hpp, docs/amg.md "The filtered matrix").
enum class AmgFilter {
  Auto,  ///< On for an M-matrix-like A with one unknown per node (amg::resolve_auto), else Off
  On,    ///< A_F: A's weak entries dropped and lumped into the diagonal (one unknown per node)
  Off    ///< A itself
};
/// "auto", "on" or "off".
const char* to_string(AmgFilter f);

/// Default λmax/λmin of the AMG Chebyshev smoother's interval [λmax/ratio, λmax] of D⁻¹A: the
/// smoother damps the top 1/10 of the spectrum, the coarse grids the rest. Host study (degree 2,
/// PCG iterations to 1e-8, docs/amg.md): ratio 10 takes 9-11 on 3-D Laplacians 16³-48³ and
/// jump/anisotropy diffusion against 14-16 at ratio 30 (the Chebyshev preconditioner's), 8-10 at
/// 5-7; bcsstk06 (b 3) 136 against 134 at 30 and 149 at 5.
inline constexpr double kDefaultAmgChebyshevRatio = 10.0;
/// The auto ratio on structural matrices (the degree-3 rule's; docs/amg.md, "Node-block
/// smoothing"): a wider interval, at no cost a V-cycle, took 10-24% fewer PCG iterations on most of
/// the shared structural matrices (bcsstk28 689 → 613, bcsstk10 182 → 162, bodyy6 17 → 13), where
/// the Laplacian took more (12 → 16): M-matrix-like A keeps kDefaultAmgChebyshevRatio.
inline constexpr double kAmgRatioStructural = 30.0;
/// A node block's coupling below which its off-diagonal entries do not count (AmgOptions::
/// block_smoother): |a_ij| ≤ this·sqrt(a_ii·a_jj) for every i ≠ j of every block smooths by points.
inline constexpr double kAmgNodeCoupling = 1e-2;
/// The strength threshold is halved from one level to the next: θ_l = θ·(1/2)^l (Vaněk, Mandel,
/// Brezina 1996). Galerkin operators spread their weight over wider stencils (27 points and more
/// on a 3-D Laplacian's first coarse level, each entry ~1/26 of the diagonal), so a fixed 0.08
/// leaves almost every coarse node without strong neighbours (4052 of 4192 on 32³) and stalls
/// the coarsening there.
inline constexpr double kAmgThetaDecay = 0.5;
/// Largest coarsest level factored densely (rows): 2000 rows are 32 MB and ~1 s of Cholesky. A
/// coarsest level above it (coarsening stalled, or max_levels reached) is smoothed, not solved.
inline constexpr index_t kAmgMaxDenseRows = 2000;
/// AmgOptions::dense_coarse_rows at kAmgAuto where the V-cycle runs on the GPU (DeviceAmg): a
/// level below level 0 with at most this many rows, that two levels more would follow, is the
/// coarsest (amg::coarsest_by_size). There its solve is one product with the factored inverse (n²
/// doubles, a few µs), where the levels below it would cost tens of µs of dependent launches a
/// V-cycle and milliseconds of set-up; the factor and inverse grow as n³ (docs/amg.md, "A larger
/// coarsest level on the GPU").
inline constexpr index_t kAmgDeviceDenseCoarseRows = 1200;
/// Most near-nullspace vectors a set-up takes (AmgOptions::near_nullspace): each is a coarse
/// unknown per aggregate, and the GPU set-up's per-aggregate QR holds K×K values in registers.
inline constexpr int kAmgMaxNearNullspace = 8;

/// V-cycles that adapt the near-nullspace where AmgOptions::adaptive_cycles is kAmgAuto and the
/// constant is a poor near-nullspace (amg::adaptive_plan): it is replaced.
inline constexpr int kAmgAdaptiveCycles = 30;
/// V-cycles that augment the near-nullspace where AmgOptions::adaptive_cycles is kAmgAuto and A
/// is structural (amg::adaptive_plan): the b unit vectors of a node (the constant for b = 1) and
/// as many pseudo-random vectors, min(2b, kAmgMaxNearNullspace) in all, smoothed together.
inline constexpr int kAmgAugmentCycles = 10;
/// The augmented near-nullspace is kept when the last of its V-cycles left at least this much of
/// some vector's energy (‖E·x‖_A / ‖x‖_A, E = I − M⁻¹A): the first hierarchy reduces that mode
/// slowly. The shared structural matrices it helps leave 0.90-0.99 after 10 cycles, thin plates
/// 0.93; 3-D elasticity, where it saves a quarter of few iterations for a second set-up, 0.81-0.86;
/// bcsstm12 and bcsstm07 0.34 (docs/amg.md, "The augmented near-nullspace").
inline constexpr double kAmgAugmentFactor = 0.88;
/// ... and the augmenting cycles stop after this many where the factor is still below
/// kAmgAugmentEarlyFactor, to waste less set-up.
inline constexpr int kAmgAugmentEarlyCycles = 3;
/// The factor below which they stop there: 0.33-0.34 on the matrices the first hierarchy already
/// serves, 0.43-0.75 on those it helps.
inline constexpr double kAmgAugmentEarlyFactor = 0.4;
/// A second check: after this many cycles they stop where the factor is below
/// kAmgAugmentMidFactor, as it is on 3-D elasticity (0.71-0.76, ending under kAmgAugmentFactor
/// after 10), against 0.82-0.89 on the matrices the vectors help.
inline constexpr int kAmgAugmentMidCycles = 6;
/// The factor below which the cycles stop after kAmgAugmentMidCycles.
inline constexpr double kAmgAugmentMidFactor = 0.79;
/// An augmented hierarchy whose operator complexity exceeds this multiple of the first one's is
/// not kept (bcsstk08: 22 against ~2, its dense rows aggregated with twice the coarse unknowns);
/// the first hierarchy, set aside meanwhile, comes back.
inline constexpr double kAmgAugmentMaxComplexityGrowth = 2.5;
/// Where the auto rule keeps the augmented near-nullspace of a matrix of one unknown a node whose
/// first hierarchy left at least this much a cycle (bcsstk10 and bcsstk19 0.95, bcsstk20 0.98,
/// bcsstk08 0.96; aft01 and bcsstk06 0.92, bcsstk28 0.94 at b = 3), the smoothers go to degree
/// kAmgSlowDegree: the first hierarchy's run kAmgSlowCycles more cycles on the kept vectors, and
/// the second hierarchy is set up at that degree: the iterations of the slow ones fall by 40-55%
/// (docs/amg.md, "Degree 6 where the first hierarchy stays slow").
inline constexpr double kAmgSlowFactor = 0.94;
/// The Chebyshev degree taken there (the auto rule's structural degree is 3).
inline constexpr int kAmgSlowDegree = 6;
/// The cycles the first hierarchy runs at that degree before the second set-up.
inline constexpr int kAmgSlowCycles = 5;
/// The constant is a poor near-nullspace when its Rayleigh quotient of D⁻¹A, 1ᵀA1/1ᵀD1, is at
/// least this fraction of the level-0 estimate of λmax(D⁻¹A): near the top of the spectrum, where
/// an M-matrix has it near 0 (bodyy6: 2.00 against 1.98; bcsstk06, the next: 0.67 of it).
inline constexpr double kAmgAdaptiveQuotient = 0.9;

/// AmgOptions::theta and smoother_degree at this value are chosen by the set-up from A's sign
/// pattern (amg::resolve_auto in amg.hpp): the M-matrix defaults, or stronger ones where many of
/// A's off-diagonal entries are positive. Any other value is used as given.
inline constexpr int kAmgAuto = -1;

/// Smoothed-aggregation AMG (PrecondKind::Amg; amg.hpp explains each step).
struct AmgOptions {
  /// Strength threshold θ: i and j (nodes, for b > 1) are strongly connected when
  /// |a_ij| ≥ θ·sqrt(|a_ii·a_jj|) (for b > 1 on the Frobenius norms of the b×b blocks). [0, 1],
  /// or kAmgAuto: 0.08, or 0.25 where over 10% of A's off-diagonal entries are positive and 0.25
  /// still coarsens (amg::resolve_auto).
  double theta = kAmgAuto;
  int max_levels = 10;      ///< levels at most, A included (1..50)
  index_t coarse_size = 200;  ///< stop coarsening at this many rows or fewer (1..kAmgMaxDenseRows)
  /// Below level 0, a level of at most this many rows is the coarsest too (factored densely) where
  /// coarsening it would take two levels more (amg::coarsest_by_size); A itself is never factored
  /// where it has more than coarse_size rows. 0..kAmgMaxDenseRows (0: off), or kAmgAuto:
  /// kAmgDeviceDenseCoarseRows where the V-cycle runs on the GPU, off on the host (there the dense
  /// solve costs n² flops an apply against a sparse V-cycle's few).
  index_t dense_coarse_rows = kAmgAuto;
  AmgSmoother smoother = AmgSmoother::Chebyshev;
  /// The aggregation (AmgAggregation). DeviceAmg sets up on the GPU for mis2 (any block size,
  /// coordinates or vectors given); greedy sets up on the host.
  AmgAggregation aggregation = AmgAggregation::Mis2;
  /// Chebyshev smoother degree d: a sweep costs d SpMVs (d − 1 from a zero guess). 1..16, or
  /// kAmgAuto: 2, or 3 where over 10% of A's off-diagonal entries are positive.
  int smoother_degree = kAmgAuto;
  /// λmax/λmin of the Chebyshev smoother's interval, > 1. Auto (kAmgAuto): kAmgRatioStructural
  /// where A is not M-matrix-like, else kDefaultAmgChebyshevRatio (amg::resolve_auto).
  double smoother_ratio = kAmgAuto;
  /// Smoothing sweeps before and after the coarse correction (the same number both ways, so that
  /// M⁻¹ is symmetric). 1..10.
  int sweeps = 1;
  /// Unknowns per node b (1..kMaxBlockSize; 0: detect as block Jacobi does). The near-nullspace is
  /// the constant vector for b = 1 and the b unit vectors of each node's unknowns for b > 1. With
  /// 0, where no b divides the rows into equal nodes but runs of rows with equal patterns show
  /// nodes with removed unknowns, the factories set AMG up on those nodes padded with unit rows
  /// (amg_padding.hpp; the summary says "on nodes padded to b unknowns").
  int block_size = 0;
  /// ω·ρ(D⁻¹A) of the prolongator smoothing P = (I − ω·D⁻¹A)·P_tent; 0 gives unsmoothed (plain)
  /// aggregation. [0, 2). 1.5 rather than the classical 4/3: ρ is a Lanczos estimate from below,
  /// and 1.5 keeps the Laplacians' iteration growth under 1.3× from 64³ to 256³ (docs/amg.md).
  double prolongation_weight = 1.5;
  /// Smooth the prolongator with the filtered matrix A_F instead of A (AmgFilter): keeps anisotropic
  /// and heterogeneous problems' coarse stencils narrow. Auto: on where A is M-matrix-like and has
  /// one unknown per node. On needs one unknown per node and no coordinates.
  AmgFilter filter = AmgFilter::Auto;
  /// Where a level has b > 1 unknowns a node (2 ≤ b ≤ kMaxBlockSize) and its node blocks couple
  /// them (kAmgNodeCoupling), its Chebyshev smoother runs in D_b⁻¹A, D_b the node blocks of A_l's
  /// diagonal, on [λmax/smoother_ratio, λmax] of D_b⁻¹A (its own Lanczos run), instead of in D⁻¹A:
  /// mass matrices and shells whose unknowns of a node are strongly coupled (docs/amg.md,
  /// "Node-block smoothing"). Off: point smoothing everywhere.
  bool block_smoother = true;
  /// Node coordinates for elasticity (nodes × coordinate_dim, row-major; unknowns node-major,
  /// coordinate_dim per node, or with rotation unknowns after them, 6 a node in 3-D shells and 3
  /// in 2-D frames): the near-nullspace becomes the rigid-body modes (2 translations and a
  /// rotation in 2-D, 3 and 3 in 3-D) instead of the unit vectors. Empty: not used.
  std::vector<double> coordinates;
  /// Entries per node in `coordinates`: 2 or 3 (the displacements a node); 0 when empty.
  int coordinate_dim = 0;
  /// The near-nullspace, given: what A maps to almost nothing, that the coarse levels must keep
  /// (rigid-body modes computed elsewhere, the slowest modes of a previous solve). rows ×
  /// near_nullspace_vectors values, row-major (row i: the vectors' entries at unknown i);
  /// replaces the constant, the unit vectors or the coordinates' modes. Empty: not used.
  std::vector<double> near_nullspace;
  /// Vectors in `near_nullspace` (1..kAmgMaxNearNullspace); 0 when empty.
  int near_nullspace_vectors = 0;
  /// Adapting the default near-nullspace: after the set-up, X ← X − M⁻¹A·X this many times,
  /// which leaves the errors the hierarchy reduces slowest, then the set-up again with X as the
  /// near-nullspace (amg::adaptive_plan). Where the constant is a poor near-nullspace (one unknown
  /// a node, kAmgAdaptiveQuotient) X is one fixed pseudo-random vector and replaces it; elsewhere X
  /// is the b unit vectors of a node and as many pseudo-random vectors (min(2b,
  /// kAmgMaxNearNullspace)), which augment them. 0: never; 1..1000; kAmgAuto: kAmgAdaptiveCycles
  /// where the constant is poor, kAmgAugmentCycles on structural matrices (kept where the first
  /// hierarchy reduced X slowly, kAmgAugmentFactor), else 0. A numeric re-set-up keeps X.
  int adaptive_cycles = kAmgAuto;
  /// The GPU set-up (DeviceAmg, amg_device_setup.hpp) times each of its phases into
  /// AmgInfo::setup_phases, synchronising the device around every phase: for profiling only (the
  /// synchronisations slow the set-up a little). No effect on the hierarchy or on a host set-up.
  bool profile_setup = false;
};

/// Everything needed to set a preconditioner up. Fields of other kinds are ignored.
struct PrecondOptions {
  PrecondKind kind = PrecondKind::Jacobi;

  // Chebyshev
  int cheb_degree = kDefaultChebyshevDegree;  ///< 1..32; degree 1 is Jacobi scaled by 1/θ
  double cheb_ratio = kDefaultChebyshevRatio;  ///< λmax/λmin of the interval, > 1
  double cheb_boost = kDefaultChebyshevBoost;  ///< λmax = min(boost·estimate, Gershgorin bound), ≥ 1
  /// Lanczos steps at most (Error if λmax has not settled by then; settling is tested from step 8 on).
  int cheb_eig_steps = kDefaultChebyshevEigSteps;
  double cheb_lambda_max = 0;  ///< > 0: use this λmax of D⁻¹A as given (no estimate, no boost)
  /// Run the polynomial in fp32 inside an fp64 solve (matrix values, vectors and SpMV in single
  /// precision; CG stays fp64). Moves ~0.6× the bytes of the fp64 polynomial per step; on badly
  /// conditioned matrices (bcsstk19/20/28) it costs up to 1.7× more CG iterations, on
  /// well-conditioned ones none. On the GPU, setup converts the values there (nnz fp32 values
  /// more; the copy shares A's device index arrays) and makes its own SpMV plan by the rule; on
  /// the host it converts a host copy. Ignored for fp32 matrices.
  bool cheb_single = false;
  /// GPU, vector apply: compute A·x_k inside the Chebyshev step's kernel (never stored) when the
  /// rows suit a row-balanced kernel (choose_chebyshev_step); false keeps the separate SpMV and
  /// vector kernel (for comparison in benchmarks and tests). Ignored on the host.
  bool cheb_fused = true;

  // Block Jacobi
  /// 0: detect the natural block size (block_jacobi.hpp, detect_block_size); 1..8: use it (n must
  /// be a multiple). 1 is point Jacobi (and is fused like Jacobi).
  int block_size = 0;

  // AMG
  AmgOptions amg{};
};
/// Checks the fields that `o.kind` uses; InputError naming the field and its value otherwise.
void validate(const PrecondOptions& o);
/// A one-line description, e.g. "chebyshev(degree 4, ratio 30)", "block-jacobi(auto)" or
/// "amg(theta auto, chebyshev auto, sweeps 1, coarse 200, b auto)" (fields left at their defaults
/// beyond these are not named).
std::string describe(const PrecondOptions& o);

/// M⁻¹ as a linear operator, on the host or on the GPU (space(): all pointers in that memory).
/// One interface for both backends: the solvers' ops check the space they were given.
template <class T>
class Preconditioner : public LinearOperator<T> {
 public:
  /// Which preconditioner this is.
  virtual PrecondKind kind() const = 0;
  /// When M⁻¹ is diagonal: its n entries in space()'s memory (backends fuse it into their vector
  /// kernels); else null.
  virtual const T* inverse_diagonal() const { return nullptr; }
  /// True when this preconditioner was set up for A's structure.
  virtual bool matches(const CsrMatrix<T>& A) const = 0;
  /// What was set up, in one line (AMG: its levels and complexities); by default the kind's name.
  virtual std::string summary() const { return to_string(kind()); }
  /// New values of the matrix it was set up for, same structure: update in place and return true,
  /// or return false when this preconditioner cannot (the caller sets a new one up).
  virtual bool update_values(const CsrMatrix<T>& A) {
    (void)A;
    return false;
  }
  /// n, the order of the matrix it was set up for.
  index_t rows() const final { return n_; }
  /// n, as rows().
  index_t cols() const final { return n_; }
  /// Where apply()'s vectors live.
  MemorySpace space() const final { return space_; }

 protected:
  Preconditioner(index_t n, MemorySpace space) : n_(n), space_(space) {}

 private:
  index_t n_;
  MemorySpace space_;
};

/// Sets up M for A on the host; null for PrecondKind::None. Throws InputError when A does not
/// allow it (e.g. a zero diagonal entry for Jacobi, naming the row and value).
template <class T>
std::unique_ptr<Preconditioner<T>> make_host_preconditioner(const CsrMatrix<T>& A, const PrecondOptions& o);

template <class T>
class SpmvPlan;
/// Sets up M for A on the GPU, reusing A's SpMV plan; null for PrecondKind::None.
template <class T>
std::unique_ptr<Preconditioner<T>> make_device_preconditioner(const CsrMatrix<T>& A, const SpmvPlan<T>& plan,
                                                                    const PrecondOptions& o);

}  // namespace krysp
