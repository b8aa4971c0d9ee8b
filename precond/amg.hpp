#pragma once
/// \file amg.hpp
/// Smoothed-aggregation algebraic multigrid (Vaněk, Mandel, Brezina 1996) as a preconditioner:
/// M⁻¹·r is one symmetric V-cycle from a zero initial guess. HostAmg's set-up runs on the host:
/// plain loops, deterministic (fixed orders, no threads), so two set-ups of one matrix give
/// bitwise equal hierarchies and results. HostAmg runs the V-cycle on the host too; DeviceAmg
/// (precond/cuda/device_amg.hpp) runs the same V-cycle on the GPU, on a hierarchy built there
/// (cuda/amg_device_setup.hpp: MIS-2, any block size) or uploaded from a HostAmg (level_data(),
/// coarse_factor()).
///
/// Set-up, level by level (level 0 is A; amg_setup.cpp holds the sparse pieces):
///  1. Strength graph on nodes (b unknowns each): i, j strongly connected when
///     |a_ij| ≥ θ_l·sqrt(|a_ii·a_jj|), for b > 1 on the Frobenius norms of the b×b blocks;
///     θ_l = θ·(1/2)^l on level l (kAmgThetaDecay, as in Vaněk, Mandel and Brezina).
///  2. Aggregation: MIS-2 by default (amg::aggregate_mis2, what the GPU set-up runs), or greedy
///     in node order (AmgAggregation::Greedy; the standard SA passes): (1) an unaggregated node
///     whose strong neighbours are all unaggregated becomes a root, its aggregate the root and
///     those neighbours; (2) a node left over joins the aggregate of its first strong neighbour that
///     pass 1 aggregated; (3) what is still left makes new aggregates (a node and its unaggregated
///     strong neighbours). Nodes without strong neighbours stay out (their rows of P_tent are zero:
///     the smoother handles them, as in PyAMG).
///  3. Tentative prolongator from the near-nullspace B (n×b: the constant vector for b = 1, the
///     unit vectors of each node's b unknowns for b > 1): per aggregate, B's rows there are
///     factored Q·R (Gram-Schmidt, twice; a dependent column gets an orthonormal completion), Q
///     goes into P_tent (orthonormal columns per aggregate) and R becomes the coarse level's B.
///  4. Smoothed prolongator P = (I − ω·D⁻¹A)·P_tent, ω = prolongation_weight / ρ(D⁻¹A), ρ by
///     Lanczos (lanczos_largest, chebyshev.hpp) capped by the Gershgorin bound. The run stops
///     when the estimate settles to kAmgLanczosSettleTol (looser than the Chebyshev
///     preconditioner's: ω and the smoother's interval need λmax to a few per cent, and the
///     smoother's 1.1 boost covers the estimate's shortfall from below). With AmgOptions::filter
///     (on by default for M-matrix-like A, b = 1): P = (I − ω·D_F⁻¹A_F)·P_tent with the filtered
///     matrix A_F (amg::filter_entries, amg::filtered_matrix: weak entries dropped, lumped into
///     the diagonal so that A_F·B = A·B), the same ω; P then spreads along strong connections
///     only, and the coarse stencils of anisotropic problems stay narrow.
///  5. Galerkin coarse operator Aᶜ = Pᵀ·(A·P) by sorted-CSR SpGEMM, symmetrised ((Aᶜ + Aᶜᵀ)/2,
///     which only removes rounding).
/// until the level has ≤ coarse_size rows (below level 0 also a level of ≤ dense_coarse_rows that
/// two levels more would follow, on the GPU by default: coarsest_by_size), max_levels is reached,
/// or coarsening stalls (the next level would have more than 1/1.2 of the rows: it is not built,
/// and info() says so). The coarsest level is factored by dense Cholesky (InputError naming the
/// level and pivot when it is not positive semidefinite; a pivot zero to rounding is pinned,
/// kAmgPinNoise); one above kAmgMaxDenseRows rows (stalled or out of levels) is smoothed instead
/// (two sweeps), which info() reports.
///
/// Smoothers: Chebyshev of degree d in D⁻¹A on [λmax/smoother_ratio, λmax], λmax =
/// min(1.1·estimate, Gershgorin bound) as for the Chebyshev preconditioner; on a level of b > 1
/// unknowns a node whose blocks couple them, in D_b⁻¹A (D_b the b × b node blocks) with λmax =
/// 1.1·its own estimate (AmgOptions::block_smoother); or l1-Jacobi, x += D_l1⁻¹(b − A·x) with
/// d_l1_i = Σ_j |a_ij|.
///
/// Why M⁻¹ is symmetric positive definite for an SPD A: a sweep's error propagation E = I − S·A
/// (S = p(D⁻¹A)·D⁻¹, p(D_b⁻¹A)·D_b⁻¹ or D_l1⁻¹, symmetric) is self-adjoint in the A inner
/// product, and convergent (|1 − λ·p(λ)| < 1 on the spectrum of D⁻¹A or D_b⁻¹A, whose top the
/// interval covers; l1-Jacobi: 0 < λ(D_l1⁻¹A) ≤ 1). The V-cycle applies the same sweeps before
/// and after the coarse correction, so its error propagation E^ν·(I − P·V_c·Pᵀ·A)·E^ν is
/// A-self-adjoint with norm < 1 (V_c the coarse V-cycle or exact inverse, SPD by induction),
/// hence M⁻¹ = (I − E_V)·A⁻¹ is SPD.
/// The tests check xᵀM⁻¹y = yᵀM⁻¹x to 1e-12 and xᵀM⁻¹x > 0.
///
/// HostAmg holds all of it; apply() uses work vectors kept in the object: not thread-safe (as
/// HostChebyshev). A values change of the same structure: update_values() (CgSolver calls it).
#include <cfloat>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/host_device.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The smoother's λmax: this factor times the Lanczos estimate (at most the Gershgorin bound
/// where that is smaller), so that the estimate's shortfall does not leave modes unsmoothed.
inline constexpr double kAmgLambdaBoost = 1.1;
/// Lanczos settling tolerance of both AMG set-ups (host and GPU must stop alike to build the same
/// hierarchy): |θ_j − θ_{j−2}| ≤ this·θ_j, after 8 steps at least (measured: 8-13 steps a level
/// instead of 17-25 at 1e-3, PCG iterations unchanged; docs/amg.md).
inline constexpr double kAmgLanczosSettleTol = 1e-2;
/// Lanczos steps at most per level, both AMG set-ups (an unsettled run falls back to Gershgorin).
inline constexpr int kAmgLanczosMaxSteps = 40;
/// Lanczos vectors a full set-up records per level (in float) to form the largest Ritz vector, the
/// numeric re-set-up's start vector. A longer run forms it from the first ones (the Ritz vector
/// of that Krylov space): a start that near the top eigenvector still settles in a few steps,
/// where a cold start took the full run again (level 1 of the 128³ Laplacian: 19 steps, now 4).
inline constexpr int kAmgLanczosRecordSteps = 16;
/// Steps before the settling test may end a numeric re-set-up's Lanczos run from that Ritz
/// vector, while its Ritz value stays within kAmgWarmLanczosTrust of the old λ estimate (a small
/// change of values: the old top eigenvector is still a good start). Past that the change moved
/// the spectrum's top, the old vector may lie far from the new top eigenvector, and an early
/// plateau could pass the settling test: the run takes kLanczosMinSteps (random media under a
/// 30% rescaling settled 6% low after 5 steps without this).
inline constexpr int kAmgWarmLanczosMinSteps = 4;
/// See kAmgWarmLanczosMinSteps: the relative distance from the old λ estimate that still trusts
/// the warm start.
inline constexpr double kAmgWarmLanczosTrust = 0.02;

/// AmgOptions::theta and smoother_degree at kAmgAuto (amg::resolve_auto): the defaults for
/// M-matrix-like matrices (scalar diffusion: off-diagonal entries ≤ 0) ...
inline constexpr double kAmgThetaMMatrix = 0.08;
/// The Chebyshev degree for M-matrix-like matrices.
inline constexpr int kAmgDegreeMMatrix = 2;
/// ... and for the others (shells, solids: a third to a half of the off-diagonal entries
/// positive): at 0.08 their aggregates grow large (7-22 nodes on bcsstk06 and bcsstk28), a
/// stronger threshold keeps them smaller and a stronger smoother pays off (docs/amg.md,
/// "Structural matrices").
inline constexpr double kAmgThetaStructural = 0.25;
/// The Chebyshev degree for the others.
inline constexpr int kAmgDegreeStructural = 3;
/// A matrix is M-matrix-like when at most this fraction of its nonzero off-diagonal entries is
/// positive. Measured: 0 on every M-matrix of the shared set and the generated diffusion problems,
/// 0.31-1 on every other SPD matrix there; 0.1 leaves room on both sides (a few positive entries
/// from rounding or an obtuse mesh angle stay M-matrix-like).
inline constexpr double kAmgStructuralPositiveFraction = 0.1;
/// ... but θ stays kAmgThetaMMatrix where kAmgThetaStructural would leave more than this fraction
/// of A's nodes without a strong neighbour (the coarsening would stall at level 0): hexahedral
/// elasticity (elasticity_3d: 27-node stencils of 3×3 blocks, no neighbour strong) loses every
/// node at 0.25, the shared structural matrices at most 41%.
inline constexpr double kAmgStructuralMaxIsolated = 0.5;

/// A level aggregated at the structural auto θ (kAmgThetaStructural·(1/2)^l) whose rows would
/// shrink by less than this is aggregated again, once, at kAmgThetaRetry times that θ: thin plates
/// and beams (elasticity one element thick) make aggregates of about two nodes at 0.25, so that
/// with rigid-body modes (6 coarse unknowns an aggregate) the coarsening stalls or crawls, and
/// with b = 3 unit vectors it shrinks by 2.1-2.5× at operator complexity 2.1-2.5 (docs/amg.md,
/// "Thin plates"). The shared structural matrices' levels shrink by 3.06× or more.
inline constexpr double kAmgSlowCoarsening = 3.0;
/// The retry's θ factor: the structural θ becomes the M-matrix one (0.25 → 0.08 on level 0).
inline constexpr double kAmgThetaRetry = kAmgThetaMMatrix / kAmgThetaStructural;

/// What the kAmgAuto rule decided (AmgInfo::auto_choice).
struct AmgAutoChoice {
  bool theta = false;              ///< AmgOptions::theta was kAmgAuto
  bool degree = false;             ///< AmgOptions::smoother_degree was kAmgAuto (Chebyshev smoother)
  bool ratio = false;              ///< AmgOptions::smoother_ratio was kAmgAuto (Chebyshev smoother)
  /// Not M-matrix-like: more than kAmgStructuralPositiveFraction of the off-diagonals positive
  bool structural = false;
  bool strong_theta = false;       ///< θ = kAmgThetaStructural taken (an auto θ, structural, coarsens)
  bool filter = false;             ///< AmgOptions::filter was Auto
  /// Unknowns per node that turned an auto filter off (> 1; 0: the filter was not turned off by b)
  int filter_block_size = 0;
  double positive_fraction = -1;   ///< of A's nonzero off-diagonal entries; −1: nothing was auto
  /// Of A's nodes without a strong neighbour at kAmgThetaStructural; −1: not counted (θ explicit,
  /// or M-matrix-like)
  double isolated_fraction = -1;
  bool adaptive = false;  ///< AmgOptions::adaptive_cycles was kAmgAuto
  /// The constant's Rayleigh quotient 1ᵀA1/1ᵀD1 over the level-0 estimate of λmax(D⁻¹A) that the
  /// auto rule read; −1: not read
  double constant_quotient = -1;
  int adapted_cycles = 0;  ///< V-cycles that adapted the near-nullspace (0: not adapted)
  /// Vectors the adapting cycles worked on: 1 (the constant replaced) or min(2b,
  /// kAmgMaxNearNullspace) (augmented); 0: none ran
  int adapt_vectors = 0;
  /// The largest share of a vector's energy the last adapting cycle left (‖E·x‖_A/‖x‖_A with x
  /// A-normalised); −1: no cycle ran
  double adapt_factor = -1;
  /// Augmenting cycles that ran without being kept (the factor stayed below kAmgAugmentFactor, or
  /// the augmented hierarchy cost too much or stalled: amg::augmented_worse)
  int adapt_discarded_cycles = 0;
  int theta_retries = 0;   ///< levels aggregated again at θ·kAmgThetaRetry (kAmgSlowCoarsening)
  /// Cycles run at kAmgSlowDegree after the augmenting ones (amg::slow_augmenting); 0: none
  int slow_cycles = 0;
};

/// The host sparse pieces of the AMG set-up, exposed for tests.
struct AmgInfo;
struct AmgLevelInfo;

namespace amg {

/// The signs of A's nonzero off-diagonal entries.
struct SignCount {
  std::int64_t off_diagonal = 0;  ///< nonzero entries off the diagonal
  std::int64_t positive = 0;      ///< of which positive
  /// positive / off_diagonal (0 for a diagonal matrix).
  double positive_fraction() const { return off_diagonal > 0 ? double(positive) / double(off_diagonal) : 0.0; }
};
/// A's off-diagonal signs, counted once per values version of A (CsrMatrix::memo: shared by
/// copies and by both set-ups): on the host from A's host arrays, or with `on_device` on the GPU
/// from its device arrays (integer counts: the same answer; a device matrix's values are not
/// downloaded). One read of A.
template <class T>
SignCount off_diagonal_signs(const CsrMatrix<T>& A, bool on_device = false);
/// A's nodes (b unknowns each) without a strong neighbour at θ: those strength_graph(A, b, θ)
/// leaves empty, memoised like off_diagonal_signs. `on_device` with b = 1 counts on the GPU by
/// the same test (the GPU set-up's), else on the host (strength_graph itself).
template <class T>
std::int64_t isolated_nodes(const CsrMatrix<T>& A, int b, double theta, bool on_device = false);
/// A's block size as block_size 0 detects it (detect_block_size), memoised per values version of A.
template <class T>
int detected_block_size(const CsrMatrix<T>& A);
/// Unknowns per node as both set-ups take them from `o`: coordinate_unknowns with coordinates
/// (InputError when block_size says otherwise), else block_size (checked by resolve_block_size),
/// else detected_block_size(A).
template <class T>
int node_block_size(const CsrMatrix<T>& A, const AmgOptions& o);
/// `o` with its kAmgAuto fields (and AmgFilter::Auto) chosen for A, explicit values kept. Where
/// more than kAmgStructuralPositiveFraction of A's off-diagonal entries are positive: degree
/// kAmgDegreeStructural, θ = kAmgThetaStructural if that leaves at most kAmgStructuralMaxIsolated
/// of A's nodes isolated (else kAmgThetaMMatrix), no filter; otherwise the M-matrix defaults and
/// the filter, if A has one unknown per node (b as the set-up resolves it) and no coordinates.
/// Counts the signs only when a field is auto, the isolated nodes only for an auto θ on a
/// structural matrix. Both set-ups call it first (DeviceAmg with `on_device`), so the GPU
/// set-up receives concrete numbers. `choice` (optional) receives what was decided. With the
/// l1-Jacobi smoother an auto degree is unused.
template <class T>
AmgOptions resolve_auto(const CsrMatrix<T>& A, const AmgOptions& o, AmgAutoChoice* choice = nullptr,
                        bool on_device = false);
/// Whether a level of n rows that its aggregation at θ would turn into nc coarse unknowns is
/// aggregated again at θ·kAmgThetaRetry: θ is the structural auto one (c.strong_theta) and
/// n < kAmgSlowCoarsening·nc. Both set-ups apply it, so their hierarchies stay the same.
inline bool retry_aggregation(const AmgAutoChoice& c, index_t n, index_t nc) {
  return c.theta && c.strong_theta && nc > 0 && double(n) < kAmgSlowCoarsening * double(nc);
}
/// Whether level l of n rows ends the hierarchy by its size, the level above it having `above`
/// rows (0 on level 0): n ≤ coarse_size; or, below level 0, n ≤ dense_coarse_rows where coarsening
/// it would take two levels more: the next one, predicted at n·n/above rows (the last coarsening's
/// ratio again), over coarse_size. Where one level more would end it (the common case), that small
/// coarsest level's factor costs less than this one's; a dense solve pays where it replaces two
/// levels or more (docs/amg.md, "A larger coarsest level on the GPU"). kAmgAuto, not resolved,
/// counts as off: the host's default.
inline bool coarsest_by_size(const AmgOptions& o, std::size_t l, index_t n, index_t above) {
  if (n <= o.coarse_size) return true;
  return l > 0 && above > 0 && n <= o.dense_coarse_rows &&
         double(n) * double(n) > double(o.coarse_size) * double(above);
}
/// `o` as a set-up for a V-cycle on the GPU takes it (DeviceAmg, with either set-up): its
/// kAmgAuto fields that depend on where the V-cycle runs resolved for the GPU, dense_coarse_rows
/// to kAmgDeviceDenseCoarseRows. A host hierarchy that is to match a DeviceAmg takes it too.
inline AmgOptions vcycle_on_device(AmgOptions o) {
  if (o.dense_coarse_rows == kAmgAuto) o.dense_coarse_rows = kAmgDeviceDenseCoarseRows;
  return o;
}
/// AmgInfo::stop_reason for a level that coarsest_by_size ends.
std::string coarsest_by_size_reason(const AmgOptions& o, std::size_t l, index_t n, index_t above);
/// The summary's words for θ, the smoother and the filter, e.g. "theta 0.08 (auto: 0% positive
/// off-diagonals), chebyshev 2 (auto), filter on (auto)" (the filter is left out where the sign
/// rule turned it off); `o` resolved.
std::string describe_choice(const AmgOptions& o, const AmgAutoChoice& c);
/// The summary's words for the node-block smoother: ", smoother on 3x3 node blocks on 2 of 3
/// levels", or "" where no level has one.
std::string describe_block_smoother(const AmgInfo& info);
/// The summary's words for the coarsest level's solve: "cholesky", "cholesky with 1 pivot zero
/// to rounding pinned" (AmgInfo::coarse_pinned), or "smoothing".
std::string describe_coarse_solve(const AmgInfo& info);

/// A host CSR matrix in plain vectors, the set-up's working form: columns strictly increasing
/// within each row.
template <class S>
struct Csr {
  index_t rows = 0, cols = 0;
  /// rows + 1 offsets
  std::vector<index_t> row_ptr = std::vector<index_t>(1, 0);
  std::vector<index_t> col_idx;
  std::vector<S> values;
  /// Stored entries.
  index_t nnz() const { return index_t(col_idx.size()); }
};

/// A's arrays in a Csr<double>.
template <class T>
Csr<double> to_csr(const CsrMatrix<T>& A);
/// Aᵀ (counting sort by column: rows of the result come out sorted).
Csr<double> transpose(const Csr<double>& A);
/// A·B by Gustavson's row-by-row product with a dense accumulator; columns sorted per row. Every
/// product a_ik·b_kj is added in the order of k along A's row, then j along B's row: the result
/// is the same bit for bit from run to run. InputError when nnz(A·B) does not fit index_t.
Csr<double> multiply(const Csr<double>& A, const Csr<double>& B);
/// C = A·B into C's existing pattern (that of multiply(A', B') for A', B' with the patterns of A
/// and B): the numeric phase alone, bit for bit the values multiply() gives. False, with C's
/// values unspecified, when a product falls outside C's pattern or the shapes differ.
bool multiply_numeric(const Csr<double>& A, const Csr<double>& B, Csr<double>& C);
/// α·A + β·B (same shape); the pattern is the union.
Csr<double> add(double alpha, const Csr<double>& A, double beta, const Csr<double>& B);

/// The strength graph on nodes: row I lists the nodes J ≠ I strongly connected to I (sorted).
struct Graph {
  index_t nodes = 0;
  /// nodes + 1 offsets
  std::vector<index_t> row_ptr = std::vector<index_t>(1, 0);
  std::vector<index_t> col_idx;
};
/// Strength of connection of A (rows a multiple of b) on its n/b nodes (see the file comment).
Graph strength_graph(const Csr<double>& A, int b, double theta);

/// Which of A's entries (one unknown per node) the filtered matrix at threshold θ keeps (1): the
/// diagonal; the strong connections, |a_ij| ≥ θ·sqrt(|a_ii·a_jj|) (strength_graph's test); and
/// the entries strong from row i's side, |a_ij| ≥ θ·|a_ii| (a stiff cell next to a soft one is a
/// weak connection by the first test, yet most of the soft row: without it P stops interpolating
/// from stiff inclusions). The others (0) are weak. The GPU set-up computes the same test.
std::vector<std::uint8_t> filter_entries(const Csr<double>& A, double theta);
/// The filtered matrix A_F of the prolongator smoothing: A's entries that `keep` keeps, the others
/// lumped into the diagonal weighted by the near-nullspace b (n values, all positive), so that
/// A_F·b = A·b: a_ii + Σ_dropped (a_ij·b_j)/b_i, summed in row order. On a coarse level b is not
/// the constant vector (the aggregates' norms): lumping a_ij alone would keep A·1, not A·b. A row
/// whose lumped diagonal would not be positive keeps a_ii. `dropped` (optional) gets A's entries
/// left out.
Csr<double> filtered_matrix(const Csr<double>& A, const std::vector<std::uint8_t>& keep, const std::vector<double>& b,
                            index_t* dropped = nullptr);

/// The aggregates of a graph's nodes.
struct Aggregation {
  index_t count = 0;                 ///< aggregates
  std::vector<index_t> of_node;      ///< aggregate of each node, −1 for a node left out
  index_t roots = 0;                 ///< aggregates made by pass 1
  index_t attached = 0;              ///< nodes pass 2 attached to a pass-1 aggregate
  index_t isolated = 0;              ///< nodes without strong neighbours (left out)
};
/// Greedy SA aggregation in node order (the file comment's three passes).
Aggregation aggregate(const Graph& G);
/// MIS-2 aggregation (Bell, Dalton, Olson 2012), the one the GPU set-up runs
/// (amg_mis2_rules.hpp): rounds of a maximal independent set at distance 2 by hashed priority;
/// its nodes are the roots (aggregates numbered in node order), a node next to roots joins the
/// first in column order, a node two steps away the first neighbour that joined. Nodes without
/// strong neighbours stay out. `roots` counts the roots, `attached` the nodes two steps away.
Aggregation aggregate_mis2(const Graph& G);

/// P_tent and the coarse near-nullspace.
struct Tentative {
  Csr<double> P;                  ///< n × (count·K), orthonormal columns per aggregate
  std::vector<double> coarse_B;   ///< (count·K) × K row-major: R of each aggregate's QR
};
/// The tentative prolongator of `agg` for near-nullspace B (n × K row-major, n = nodes·b; K = b
/// for unit vectors, K > b for rigid-body modes): aggregate a's coarse unknowns are
/// a·K .. a·K + K − 1. Where an aggregate has fewer unknowns than K, its extra columns are zero.
Tentative tentative_prolongator(const Aggregation& agg, int b, int K, const std::vector<double>& B);

/// 1ᵀA1/1ᵀD1, the constant's Rayleigh quotient of D⁻¹A, memoised per values version of A: from
/// A's host arrays, or with `on_device` from its device arrays (a deterministic reduction).
template <class T>
double constant_quotient(const CsrMatrix<T>& A, bool on_device = false);
/// How the near-nullspace is adapted after the first set-up (amg_adaptive.hpp runs it).
struct AdaptivePlan {
  int cycles = 0;   ///< V-cycles; 0: not adapted
  int vectors = 1;  ///< K, the columns adapted
  /// Augment: start from the b unit vectors of a node (the constant for b = 1), then K − b
  /// pseudo-random vectors; else one pseudo-random vector that replaces the constant.
  bool augment = false;
  /// Keep the result only where the first hierarchy reduced it slowly (kAmgAugmentFactor), and
  /// stop early where it reduces it fast (kAmgAugmentEarlyCycles): the auto rule's augmenting.
  bool conditional = false;
};
/// Whether `o` lets the near-nullspace be adapted at all: cycles not 0, no coordinates or vectors
/// given, the filter not on. adaptive_plan's option checks, shared with the GPU set-up, which decides
/// before its first set-up whether to record level 0 for a second one.
inline bool may_adapt(const AmgOptions& o) {
  return o.adaptive_cycles != 0 && o.coordinates.empty() && o.near_nullspace.empty() && o.filter != AmgFilter::On;
}
/// Whether the auto rule's kept augmentation goes on at kAmgSlowDegree (kAmgSlowFactor): the
/// degree was auto (AmgAutoChoice::degree), b = 1, and the first hierarchy left `factor` a cycle.
inline bool slow_augmenting(const AdaptivePlan& plan, bool keep, const AmgAutoChoice& c, int b, double factor,
                            const AmgOptions& o) {
  return plan.conditional && plan.augment && keep && c.degree && b == 1 && o.smoother == AmgSmoother::Chebyshev &&
         o.smoother_degree < kAmgSlowDegree && factor >= kAmgSlowFactor;
}
/// The same interval at degree d (a Chebyshev smoother's coefficients; c0 = 0: none).
inline ChebyshevCoefficients at_degree(const ChebyshevCoefficients& c, int d) {
  return c.c0 > 0 ? chebyshev_coefficients(c.lambda_min, c.lambda_max, d) : c;
}
/// The adapting V-cycles after a first set-up of `levels` levels whose level 0 has b unknowns a
/// node and the λmax(D⁻¹A) estimate lambda0. No cycles with one level, coordinates or vectors
/// given, or the filter on. Given cycles replace the constant where the auto rule would, else
/// augment. kAmgAuto: where b = 1 and constant_quotient(A) ≥ kAmgAdaptiveQuotient·lambda0,
/// kAmgAdaptiveCycles replacing it; else, where over kAmgStructuralPositiveFraction of A's
/// off-diagonal entries are positive, kAmgAugmentCycles augmenting, conditional; else none. `c`
/// records the rule.
template <class T>
AdaptivePlan adaptive_plan(const CsrMatrix<T>& A, const AmgOptions& o, int b, double lambda0, std::size_t levels,
                           AmgAutoChoice& c, bool on_device = false);
/// The adaptive V-cycles' start: n values in [−1, 1) from a hash of each index and `column` (the
/// same on every backend and run).
std::vector<double> adaptive_start(index_t n, int column = 0);
/// The plan's start block, n × plan.vectors row-major: adaptive_start, or (augment) the b unit
/// vectors of a node and adaptive_start columns 1, 2, ... after them.
std::vector<double> adaptive_start_block(index_t n, int b, const AdaptivePlan& plan);
/// `o` for the set-up after the adaptive V-cycles left X (n × K row-major): each column over its
/// largest magnitude as the near-nullspace, no more cycles, the filter off. False (o untouched)
/// when a column is zero or an entry is not finite.
template <class T>
bool adopt_adapted_vectors(const std::vector<T>& X, int K, AmgOptions& o);

/// Unknowns a node for n unknowns at nodes with `coordinates` (nodes × dim, row-major; dim 2 or
/// 3): dim (displacements), or dim·(dim + 1)/2 (the displacements, then a rotation about each axis,
/// one in 2-D: shells, beams and frames). InputError when n is neither.
int coordinate_unknowns(const std::vector<double>& coordinates, int dim, index_t n);
/// The rigid-body modes of nodes at `coordinates` (nodes × dim, row-major; dim 2 or 3) as an
/// n × K row-major block (node-major unknowns as coordinate_unknowns reads them; K = 3 in 2-D, 6
/// in 3-D): the translations, then the rotations about the coordinates' centroid, which also turn
/// each node's rotation unknowns where it has them. InputError when n does not match.
std::vector<double> rigid_body_modes(const std::vector<double>& coordinates, int dim, index_t n);
/// K, the near-nullspace's vectors, for b unknowns per node as both set-ups take them from `o`:
/// near_nullspace_vectors when given, the rigid-body modes' 6 (3-D) or 3 (2-D) with coordinates,
/// else b (the constant, or the unit vectors of each node's unknowns).
int near_nullspace_size(const AmgOptions& o, int b);
/// The near-nullspace both set-ups start from when it is not the default (n × K row-major): the
/// given vectors (InputError unless they have n rows) or the coordinates' rigid-body modes;
/// empty for the constant or the unit vectors, which each set-up makes itself.
std::vector<double> explicit_near_nullspace(const AmgOptions& o, index_t n);
/// A with 1 on the diagonal of every row that has no nonzero entry: the coarse unknowns of an
/// aggregate with fewer unknowns than near-nullspace vectors get a zero column of P_tent, and so
/// an empty row and column of Pᵀ·A·P; the unit diagonal keeps the coarse matrix SPD without
/// coupling them to anything (the coarse correction never reaches them).
Csr<double> unit_diagonal_on_empty_rows(const Csr<double>& A);

/// Steps before a Lanczos run may settle (both set-ups): kAmgWarmLanczosMinSteps for a warm start
/// whose Ritz value theta is within kAmgWarmLanczosTrust of old_lambda, else kLanczosMinSteps.
int lanczos_min_steps(bool warm, double theta, double old_lambda);
/// The coefficients, in the Lanczos basis, of the largest Ritz vector of the first m steps (the
/// eigenvector of the m×m tridiagonal matrix of alpha and beta for its largest eigenvalue); empty
/// when m is 0, past kAmgLanczosRecordSteps or past the steps given, or the eigensolver fails.
std::vector<double> largest_ritz_coefficients(const std::vector<double>& alpha, const std::vector<double>& beta, int m);

/// A Cholesky pivot d_j of the coarsest matrix is zero to rounding when |d_j| ≤ z_j =
/// min(kAmgPinCancel·a_jj, kAmgPinNoise·n·ε·max_i a_ii) (pivot_zero_level): below the matrix's
/// rounding level (LAPACK dpstrf's default rank tolerance n·ε·max a_ii, times kAmgPinNoise) and
/// left with at most kAmgPinCancel of its own diagonal. The matrix-wide level catches coefficient
/// jumps, where the rounding of the large entries reaches the small ones (a zero pivot of
/// 1e-10·a_jj at contrast 1e6); the cancellation guard keeps the pivots of a badly scaled D·A·D,
/// whose rounding stays relative to each row. A_c is then singular (a consistent Neumann
/// problem's constant, a floating body's rigid-body modes) or as good as singular. The unknown is
/// held at zero, "pinned": the coarse solve becomes the inverse of A_c without that row and
/// column, a generalized inverse X with X·A_c·X = X, so the coarse correction P·X·Pᵀ·A stays an
/// A-orthogonal projection and M⁻¹ SPD. Kept, 1/d_j (the inverse of rounding noise) multiplied
/// the rounding in the restricted residual along the null direction until CG broke down, or the
/// set-up refused A_c as indefinite.
/// Measured zero pivots (docs/amg.md): 5e-15 to 2e-13·a_jj on singular Galerkin matrices of 13 to
/// 134 rows (0.2-7 n·ε), above 1e-12·a_jj on a 300-row singular Gram matrix; legitimate ones:
/// 1.1e-11·a_jj for an island of contrast 1e12 in a 56-row coarse matrix (z_j = 1.2e-12·a_jj
/// there), 4e-3·a_jj and up on the shared SPD matrices.
inline constexpr double kAmgPinNoise = 100;
/// The share of its diagonal a pivot keeps at most to be pinned (see kAmgPinNoise).
inline constexpr double kAmgPinCancel = 1e-8;
/// z_j for a pivot of diagonal entry a_jj in an n × n matrix whose largest |a_ii| is amax
/// (amg::cholesky's and the GPU factor's test; see kAmgPinNoise).
KRYSP_HD inline double pivot_zero_level(double ajj, index_t n, double amax) {
  const double cancel = kAmgPinCancel * (ajj < 0 ? -ajj : ajj), wide = kAmgPinNoise * (double(n) * DBL_EPSILON * amax);
  return cancel < wide ? cancel : wide;
}

/// Dense Cholesky of the symmetric n×n matrix in `a` (row-major; only the lower triangle is
/// read), in place: L in the lower triangle. A pivot within ±z_j (kAmgPinNoise) is pinned: row
/// and column j of L become zero and l_jj = +∞, so that the substitutions give 0 for unknown j
/// (the inverse of A without row and column j, as kAmgPinNoise says); *pinned, when given,
/// counts them. Returns −1, or the 0-based index of the first pivot that is negative beyond that
/// (A is indefinite) or not finite, with its value in *pivot.
index_t cholesky(index_t n, std::vector<double>& a, double* pivot, index_t* pinned = nullptr);
/// The coarsest matrix A of a hierarchy (level `level`, 0 = the user's A) densified and factored
/// by cholesky: the factor in cholesky's layout, its pinned pivots counted in *pinned when given.
/// InputError naming the level and the pivot when cholesky refuses one (A is not positive
/// semidefinite).
std::vector<double> coarse_cholesky(std::size_t level, const Csr<double>& A, index_t* pinned = nullptr);
/// Whether a smoothed level of n rows and b unknowns a node smooths with its node blocks
/// (AmgOptions::block_smoother): the Chebyshev smoother, 2 ≤ b ≤ kMaxBlockSize, b divides n.
bool node_block_smoothing(const AmgOptions& o, int b, index_t n);
/// The node blocks of A's diagonal (b × b, node I = unknowns I·b .. I·b + b − 1; b divides
/// A.rows, 2 ≤ b ≤ kMaxBlockSize) inverted for the block smoother, each by
/// detail::invert_spd_block: inv (rows × b, node I's inverse D_I⁻¹ in rows I·b.., row-major,
/// symmetric) and linv (the same layout: L_I⁻¹, lower triangular, of D_I = L_I·L_Iᵀ, so that
/// D_I⁻¹ = L_I⁻ᵀ·L_I⁻¹). InputError naming the level, the node and the pivot when a block is not
/// positive definite. Returns whether the blocks couple their unknowns: some entry a_ij, i ≠ j,
/// of a block with |a_ij| > kAmgNodeCoupling·sqrt(a_ii·a_jj). Where none does, D_b⁻¹ is D⁻¹ to
/// that tolerance and the level smooths by points (bcsstk09's blocks are diagonal).
bool node_block_inverses(std::size_t level, const Csr<double>& A, int b, std::vector<double>& inv,
                         std::vector<double>& linv);
/// The node-block smoother's interval from its Lanczos run r on a level of b unknowns a node (both
/// set-ups): records the estimate in li; where the run settled on a positive λ, sets coef to
/// Chebyshev on [λ'/ratio, λ'], λ' = 1.1·λ (the point smoother's boost), li.smoother_block to b
/// and returns true; else returns false, and the level smooths by points.
bool node_block_interval(const LanczosResult& r, const AmgOptions& o, int b, AmgLevelInfo& li,
                         ChebyshevCoefficients& coef);

}  // namespace amg

/// One level of the hierarchy (level 0 is A).
struct AmgLevelInfo {
  index_t rows = 0;
  std::int64_t nnz = 0;
  int block_size = 1;          ///< unknowns per node on this level (b on every level)
  double theta = 0;            ///< strength threshold used on this level (0 on the coarsest)
  index_t aggregates = 0;      ///< aggregates made from this level (0 on the coarsest)
  index_t isolated = 0;        ///< nodes without strong neighbours, left out of the aggregates
  double lambda_estimate = 0;  ///< Lanczos estimate of λmax(D⁻¹A)
  int lanczos_steps = 0;       ///< Lanczos steps the estimate took
  double gershgorin = 0;       ///< max_i Σ_j |a_ij| / a_ii ≥ λmax(D⁻¹A)
  double omega = 0;            ///< prolongator smoothing weight (0 on the coarsest)
  index_t filtered = 0;        ///< A_l's entries the filtered matrix left out (0: none, or no filter)
  /// The smoother's node block: b when it runs in D_b⁻¹A (AmgOptions::block_smoother), else 1.
  int smoother_block = 1;
  double block_lambda_estimate = 0;  ///< Lanczos estimate of λmax(D_b⁻¹A) (smoother_block > 1)
  int block_lanczos_steps = 0;       ///< Lanczos steps that estimate took
};

namespace amg {
/// Operator complexity of `levels` followed by a level of `next_nnz` entries (0: of `levels`
/// alone): Σ nnz / nnz of level 0, summed level by level, so that both set-ups' caps and their
/// final figures agree to the bit. 1 when level 0 has no entries.
inline double complexity_with_next(const std::vector<AmgLevelInfo>& levels, std::int64_t next_nnz) {
  if (levels.empty() || levels[0].nnz <= 0) return 1.0;
  double nnz = 0;
  for (const auto& l : levels) nnz += double(l.nnz);
  nnz += double(next_nnz);
  return nnz / double(levels[0].nnz);
}
}  // namespace amg

/// One timed phase of the GPU set-up (AmgOptions::profile_setup): wall time between device
/// synchronisations, summed over the times the phase ran on its level.
struct AmgSetupPhase {
  int level = -1;     ///< the level (0 = A); −1 for work outside the level loop
  std::string name;   ///< what ran ("strength graph", "SpGEMM A*P: symbolic count", ...)
  double seconds = 0; ///< wall time, synchronised at both ends
  int count = 0;      ///< how many times it ran (MIS-2: the rounds)
};

/// What the set-up built.
struct AmgInfo {
  std::vector<AmgLevelInfo> levels;
  double operator_complexity = 0;  ///< Σ nnz(A_l) / nnz(A)
  double grid_complexity = 0;      ///< Σ rows(A_l) / rows(A)
  bool coarse_direct = true;       ///< coarsest level solved by dense Cholesky (false: smoothed)
  /// Coarsest unknowns held at zero: Cholesky pivots zero to rounding (kAmgPinNoise), A_c singular.
  index_t coarse_pinned = 0;
  bool stalled = false;            ///< coarsening stopped because a level shrank by < 1.2×
  std::string stop_reason;         ///< why the hierarchy ends where it does
  AmgAutoChoice auto_choice;       ///< how θ and the smoother degree were chosen (kAmgAuto)
  double setup_seconds = 0;        ///< the full set-up (strength, aggregation, products)
  /// Of setup_seconds: the first hierarchy and the V-cycles that adapted the near-nullspace (0
  /// when it was not adapted).
  double adaptive_seconds = 0;
  /// The last numeric re-set-up (update_values: the aggregates and product patterns kept); 0 before
  /// one.
  double resetup_seconds = 0;
  int resetups = 0;                ///< numeric re-set-ups since the full one
  /// The GPU set-up's phases in the order they first ran, when AmgOptions::profile_setup is on
  /// (empty otherwise, and for a host set-up). Includes DeviceAmg's own adoption of the
  /// hierarchy (SpMV plans, the coarse factor's upload), which setup_seconds does not. After
  /// DeviceAmg::update_values: the numeric re-set-up's phases instead.
  std::vector<AmgSetupPhase> setup_phases;
};

/// One level of a HostAmg hierarchy as its V-cycle reads it: what DeviceAmg uploads. Pointers
/// into the HostAmg (level 0's matrix arrays are A's own), valid until its next set-up.
template <class T>
struct AmgLevelData {
  index_t n = 0;                     ///< rows of the level matrix A_l
  const index_t* row_ptr = nullptr;  ///< A_l's n + 1 row offsets
  const index_t* col_idx = nullptr;  ///< A_l's column indices (nnz entries)
  const T* values = nullptr;         ///< A_l's values
  index_t nnz = 0;                   ///< A_l's stored entries
  const amg::Csr<T>* P = nullptr;    ///< prolongator from level l + 1 (n × n_{l+1}); null on the coarsest
  const amg::Csr<T>* R = nullptr;    ///< Pᵀ, stored; null on the coarsest
  const std::vector<T>* dinv = nullptr;  ///< D⁻¹ (Chebyshev) or D_l1⁻¹ (l1-Jacobi), n entries
  const ChebyshevCoefficients* coef = nullptr;  ///< the Chebyshev smoother's recurrence
  /// The smoother's node block b_s: 1 for D⁻¹ (dinv), else the recurrence runs in D_b⁻¹A with
  /// the node blocks' inverses in binv (n × b_s, amg::node_block_inverses' layout).
  int smoother_block = 1;
  const std::vector<T>* binv = nullptr;  ///< null when smoother_block is 1
};

/// Smoothed-aggregation AMG on the host (see the file comment). T = double or float: the set-up
/// computes in double, the V-cycle in T.
template <class T>
class HostAmg final : public Preconditioner<T> {
 public:
  /// Builds the hierarchy; θ and the smoother degree at kAmgAuto are chosen from A first
  /// (amg::resolve_auto; update_values keeps the choice). InputError for invalid options (naming
  /// the field), a bad diagonal, a block size that does not divide n, NaN/Inf entries, or a coarse
  /// matrix that is not positive definite (naming the level and pivot).
  HostAmg(const CsrMatrix<T>& A, const AmgOptions& o);
  PrecondKind kind() const override { return PrecondKind::Amg; }
  /// z = one V-cycle applied to r (zero initial guess). Not thread-safe (work vectors).
  void apply(const T* r, T* z) const override;
  /// The V-cycle column by column.
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  /// New values of the same structure (time stepping): keeps the aggregates, the tentative
  /// prolongators and every product's pattern, and redoes only the numbers (smoother bounds, the
  /// prolongator smoothing, the Galerkin products by multiply_numeric, the coarse factor). Each
  /// level's Lanczos starts from the full set-up's Ritz vector (kAmgWarmLanczosMinSteps), so the
  /// λ estimates, and what follows from them, agree with a full set-up with the old aggregates to
  /// the settling tolerance; the same calls give the same bits. A coarse level whose
  /// pattern changes (a row that became exactly zero) falls back to a full set-up. InputError for
  /// another structure. Returns true (the preconditioner was updated in place).
  bool update_values(const CsrMatrix<T>& A) override;
  /// e.g. "amg(3 levels, rows 32768/2197/84, operator complexity 1.31, grid complexity 1.07,
  /// chebyshev 2, coarsest 84 rows by cholesky)".
  std::string summary() const override;
  /// The hierarchy's levels, complexities and why it stops.
  const AmgInfo& info() const { return info_; }
  /// The levels, finest (A) first.
  const std::vector<AmgLevelInfo>& levels() const { return info_.levels; }
  /// The options it was set up with, kAmgAuto fields resolved (info().auto_choice says how).
  const AmgOptions& options() const { return opt_; }
  /// The hierarchy as the V-cycle reads it, finest first (for a copy on another backend).
  std::vector<AmgLevelData<T>> level_data() const;
  /// The coarsest level's dense Cholesky factor L (n × n row-major, L in the lower triangle, the
  /// strict upper triangle holds A_c's entries, not zeros); empty when that level is smoothed
  /// (info().coarse_direct false).
  const std::vector<double>& coarse_factor() const { return chol_; }

 private:
  struct Level {
    index_t n = 0;
    // the level's matrix: level 0 reads A's own arrays (views kept alive below), others own_
    const index_t* rp = nullptr;
    const index_t* ci = nullptr;
    const T* va = nullptr;
    amg::Csr<T> own;
    amg::Csr<T> P, R;             ///< prolongator to this level from the next, and Pᵀ
    std::vector<T> dinv;          ///< D⁻¹ (Chebyshev) or D_l1⁻¹
    ChebyshevCoefficients coef;   ///< Chebyshev smoother
    int block = 1;                ///< the smoother's node block (AmgLevelInfo::smoother_block)
    std::vector<T> binv;          ///< D_b⁻¹'s blocks when block > 1 (amg::node_block_inverses)
    /// V-cycle work: this level's solution and right-hand side (levels ≥ 1; level 0 uses apply's
    /// z and r), residual, smoother correction, and the Chebyshev recurrence's vectors (g: with
    /// node blocks); n × N entries for blocks of up to N columns (reserve_columns), row-major.
    mutable std::vector<T> x, b, r, e, u, v, w;
    mutable std::vector<T> g;  ///< D_b⁻¹·(r − A·x_k) when block > 1
  };
  /// What a numeric re-set-up keeps of a level (its structure); `next` is false on the coarsest.
  struct Plan {
    bool next = false;
    amg::Tentative tent;
    amg::Csr<double> S;          ///< I − ω·D⁻¹A (A's pattern)
    amg::Csr<double> P, AP, Ac;  ///< patterns (and last values) of S·P_tent, A·P, Pᵀ·(A·P)
    amg::Csr<double> coarse;     ///< the next level's matrix as built (pattern checked on reuse)
    index_t isolated = 0;        ///< the aggregation's isolated nodes (AmgLevelInfo)
    double theta = 0;            ///< the θ it aggregated at (a re-set-up reports it)
    /// A's entries the filtered matrix keeps (filter_entries; a re-set-up keeps them); empty when
    /// the level is not filtered or the filter keeps every entry (A_F = A).
    std::vector<std::uint8_t> keep;
    /// The full set-up's largest Ritz vector of D^{-1/2}·A·D^{-1/2} (float; empty when not
    /// recorded): the numeric re-set-up's Lanczos starts from it (kAmgWarmLanczosMinSteps).
    std::vector<float> ritz;
    double ritz_lambda = 0;  ///< the λ estimate it came with
    /// The same for the node-block smoother's L⁻¹·A·L⁻ᵀ (empty: point smoothing, or not recorded).
    std::vector<float> block_ritz;
    double block_ritz_lambda = 0;
  };
  /// The set-up: full (plans_ made) or numeric (plans_ reused; false when a pattern changed). A
  /// full one stops, returning false, once the levels built and the next one's matrix pass
  /// `max_complexity` times A's entries: the hierarchy would only grow past it (adapt's cap).
  bool set_up(const CsrMatrix<T>& A, bool reuse,
              double max_complexity = std::numeric_limits<double>::infinity());
  /// The adapting V-cycles on this hierarchy (amg_adaptive.hpp), then the set-up again with what
  /// they left where the plan keeps it; t0: the constructor's start (for adaptive_seconds).
  void adapt(const CsrMatrix<T>& A, const amg::AdaptivePlan& plan, std::chrono::steady_clock::time_point t0);
  // The V-cycle's steps on N columns, row-major with leading dimension N (the levels' work
  // arrays hold reserve_columns' width).
  void multiply(const Level& L, index_t N, const T* x, T* y) const;
  void residual(const Level& L, index_t N, const T* b, const T* x, T* r) const;
  void smooth_correction(const Level& L, index_t N, const T* r, T* e) const;  // e = S·r
  void node_solve(const Level& L, index_t N, const T* r, T* z) const;         // z = D_b⁻¹·r (L.block > 1)
  void sweep(const Level& L, index_t N, const T* b, T* x) const;              // x += S·(b − A·x)
  void vcycle(std::size_t l, index_t N, const T* b, T* x) const;
  void coarse_solve(const Level& L, index_t N, const T* b, T* x) const;
  void reserve_columns(index_t N) const;  // the work arrays for N columns

  StructureFingerprint fingerprint_;
  AmgOptions opt_;                ///< kAmgAuto resolved
  AmgAutoChoice auto_choice_;     ///< how (kept by update_values)
  AmgInfo info_;
  typename CsrMatrix<T>::IndexView rp0_, ci0_;
  typename CsrMatrix<T>::ValueView va0_;
  std::vector<Level> levels_;
  std::vector<Plan> plans_;
  std::string before_stop_reason_;  ///< the full set-up's stop_reason and stalled, for reuses
  bool before_stalled_ = false;
  std::vector<double> chol_;           ///< coarsest level's Cholesky factor (row-major lower)
  mutable std::vector<double> chol_work_;
  mutable std::vector<T> block_r_, block_z_;  ///< apply_block's packed copies (ldr, ldz > N)
};

extern template class HostAmg<double>;
extern template class HostAmg<float>;

}  // namespace krysp
