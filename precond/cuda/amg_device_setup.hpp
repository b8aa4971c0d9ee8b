#pragma once
/// \file amg_device_setup.hpp
/// The smoothed-aggregation set-up on the GPU (amg.hpp explains the method) with the MIS-2
/// aggregation: one unknown per node (the constant near-nullspace), b > 1 unknowns per node (the b
/// unit vectors) or rigid-body modes from coordinates; for K > 1 near-nullspace vectors the pieces
/// that differ (strength on b×b blocks, P_tent by a QR per aggregate, S·P_tent by spgemm_numeric,
/// the unit diagonal on empty coarse rows) are amg_block_setup.hpp's, bitwise the host's.
/// Each level's steps run on the device, in double:
///  - D⁻¹, D_l1⁻¹ and the Gershgorin bound (one kernel; a max reduction);
///  - λmax(D⁻¹A) by Lanczos (lanczos_largest, the host's driver and stopping rule, through a
///    device LanczosOperator whose reductions sum fixed partials in a fixed order);
///  - the strength graph (count, scan, fill), the MIS-2 rounds and the aggregate joins
///    (amg_mis2_rules.hpp: the host reference's per-node rules, so the aggregates are the host's
///    amg::aggregate_mis2 ones exactly, given the same strength graph);
///  - P_tent (b_i/‖b_aggregate‖, the sums in node order as on the host), P = (I − ω·D⁻¹A)·P_tent
///    as a column aggregation of A (S is never formed; the values by prolongator_values), A·P
///    and R·(A·P): the structures of all three by spgemm_symbolic_count/_fill (P's from A's
///    pattern and P_tent; each row a merge of B's rows: sorted, the structural product), the
///    values of the two products by spgemm_numeric
///    (amg_galerkin.hpp: a fixed order of the terms, so a re-set-up that keeps the structures
///    fills the same bits), or, with b > 1 and K > 1 on large levels, in dense blocks
///    (amg_block_product.hpp: the same bits); R = Pᵀ by a stable radix sort (CUB); the symmetrisation
///    (Aᶜ + Aᶜᵀ)/2 by a search for each entry's mirror when the pattern is symmetric, else by the
///    radix sort's transpose and a row merge.
/// The coarsest level is densified and factored on the GPU (AmgCoarseSolver::factor: cuSOLVER,
/// deterministic), with amg::cholesky's pivot test; a refused pivot is named by amg::cholesky on
/// the host, in HostAmg's words.
/// No atomics touch floating-point values (integer counters only), so two set-ups of one matrix
/// give bitwise equal hierarchies. Against the host (HostAmg with aggregation mis2) the values
/// differ by rounding only (other summation orders in the SpGEMM, SpMV and Lanczos); a strength
/// comparison that falls within rounding of θ could then differ on a coarse level.
///
/// The level matrices, P_l and R_l end up as device-borrowed CsrMatrix objects over arrays the
/// hierarchy owns (detail::CsrTrustedBorrow, sparse/csr_trusted.hpp: fingerprint hashed on the
/// device, host structure downloaded only if a host-side use asks, not checked row by row: built
/// valid here). The Lanczos SpMV runs several lanes a row (a fixed shuffle tree: still
/// deterministic). With
/// AmgOptions::profile_setup each phase is synchronised and timed into AmgInfo::setup_phases
/// (no synchronisation is added otherwise). CUDA-free header; internal.
#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

class AmgCoarseSolver;  // amg_kernels.hpp

/// CSR arrays in device memory owned by the GPU set-up.
template <class V>
struct DeviceCsrArrays {
  index_t rows = 0, cols = 0, nnz = 0;
  DeviceArray<index_t> row_ptr, col_idx;
  DeviceArray<V> values;
};

/// One level of a hierarchy built on the GPU (level 0 is A).
template <class T>
struct GpuAmgLevel {
  index_t n = 0;
  CsrMatrix<T> A;  ///< A_l (level 0: the caller's A), device-borrowed from `a` below level 0
  CsrMatrix<T> P;  ///< prolongator from level l + 1 (not on the coarsest), device-borrowed from `p`
  CsrMatrix<T> R;  ///< Pᵀ, device-borrowed from `r`
  DeviceArray<T> dinv;         ///< D⁻¹ (Chebyshev) or D_l1⁻¹ (l1-Jacobi)
  ChebyshevCoefficients coef;  ///< the Chebyshev smoother's recurrence
  /// The smoother's node block (AmgLevelInfo::smoother_block), and with block > 1 D_b's inverse
  /// blocks (n × block, amg::node_block_inverses' layout), the recurrence's D_b⁻¹ instead of dinv.
  int block = 1;
  DeviceArray<T> binv;
  DeviceCsrArrays<T> a, p, r;  ///< the storage the matrices above borrow
  /// The aggregate of each node (−1: left out), when the set-up was asked to keep them (tests);
  /// empty on the coarsest level.
  std::vector<index_t> aggregates;
};

/// What a numeric re-set-up keeps of a full GPU set-up: each level's aggregate count, isolated
/// nodes and tentative prolongator (device arrays), where the hierarchy stops, and the structure
/// work's results: the structures of A·P and R·(A·P), the permutation of R = Pᵀ and the gather
/// maps of the symmetrisation (device arrays). Opaque.
struct GpuAmgPlan;

/// Device bytes a plan holds (P_tent, the permutations and maps), for DeviceAmg::device_bytes().
std::size_t plan_device_bytes(const GpuAmgPlan& plan);

/// Level 0's work that depends on A and the level-0 options alone, not on the near-nullspace: the
/// Lanczos runs (point and node-block) and the aggregations, each at the θ it ran at. A full
/// set-up given an empty seed records it; one given a recorded seed for the same A and block size
/// takes it instead of running it again (DeviceAmg's augmented set-up after the first hierarchy's).
/// The same kernels on the same input give the same bits, so a seeded set-up is bitwise the
/// set-up without the seed. Opaque.
struct GpuLevel0Seed;
/// An empty seed (gpu_amg_setup records into it).
std::shared_ptr<GpuLevel0Seed> make_level0_seed();
/// The pieces a seeded set-up took from it so far (tests: 0 when the seed did not match).
int level0_seed_uses(const GpuLevel0Seed& seed);

/// Where set-ups form A·P and R·(A·P) in dense blocks (amg_block_product.hpp), among the levels
/// with b > 1 unknowns a node and K > 1 vectors: Auto (the default) where P's b×K blocks are full
/// (R·(A·P)'s scalar structure then comes from the blocks, without scalar symbolic products) and
/// A·P has millions of terms, or where the scalar products would have tens of millions; Always; or
/// Never. The values and structures are the same bits either way.
enum class BlockProducts { Auto, Always, Never };
/// Auto, on a level whose P has full b×K blocks: A·P's terms (nnz(A)·nnz(P)/n) from which it takes
/// the blocks. Below, their set-up (about 0.5 ms of launches and synchronisations) costs more than
/// the scalar symbolic and numeric products they replace (docs/amg.md, "The products in dense
/// blocks"). A coarser level of a set-up whose finer level took them takes them too: the
/// re-set-up's products then run in blocks all the way down, for a small part of that set-up.
constexpr double kBlockExpansionMinTerms = 2e6;
/// Auto, on a level whose P's blocks have holes (the scalar symbolic products are made all the
/// same there): the terms of its two scalar products (A·P: nnz(A)·nnz(P)/n; R·(A·P):
/// nnz(P)·nnz(A·P)/n) from which it takes the blocks, whose patterns and pairs cost about as much
/// as the scalar numeric products of some 30 M terms.
constexpr double kBlockProductMinTerms = 32e6;
/// Sets it for the set-ups from now on: for the tests, which compare the two paths.
void set_block_products(BlockProducts mode);

/// What the GPU set-up built: the levels, the coarse factor and the AmgInfo HostAmg would report.
template <class T>
struct GpuAmgHierarchy {
  /// For a numeric re-set-up of A's structure (gpu_amg_setup's `reuse`).
  std::shared_ptr<const GpuAmgPlan> plan;
  std::vector<GpuAmgLevel<T>> levels;
  /// The coarsest level's dense Cholesky factor on the device, in HostAmg::coarse_factor()'s layout
  /// (empty: smoothed).
  DeviceArray<double> coarse_factor;
  AmgInfo info;
  /// The set-up stopped at gpu_amg_setup's max_complexity: the levels are incomplete, for discarding.
  bool capped = false;
};

/// True when gpu_amg_setup() takes A with these options: aggregation mis2 (any block size, with or
/// without coordinates; greedy sets up on the host).
template <class T>
bool gpu_amg_setup_applies(const CsrMatrix<T>& A, const AmgOptions& o);

/// Builds the hierarchy on the GPU (see the file comment). InputError as HostAmg's set-up (bad
/// diagonal, NaN/Inf, a coarse matrix that is not positive definite, options that
/// gpu_amg_setup_applies refuses); DeviceError when the GPU fails or runs out of memory. θ and the
/// smoother degree at kAmgAuto are chosen first, as HostAmg chooses them (amg::resolve_auto,
/// counted on the device; info.auto_choice says how); a re-set-up should be given the resolved
/// options of its plan's set-up (DeviceAmg does), since auto would read the new values.
/// keep_aggregates: download each level's aggregates into GpuAmgLevel::aggregates (full set-up
/// only). reuse: the plan of an earlier set-up of A's structure with the same options (new values,
/// time stepping; InputError naming both when A's structure or an option that shapes the
/// aggregates and patterns differs, resolved as above): the aggregates, tentative prolongators and level count are kept and only the
/// numbers are redone (diagonals, Lanczos, the smoothed prolongator, the products, the coarse
/// factor), as HostAmg::update_values does: P's values by prolongator_values and the products' by
/// spgemm_numeric into the kept structures of P, A·P and R·(A·P) (no symbolic phase), R and the
/// symmetrised coarse matrix by gathers through the plan's permutations. A must have the structure
/// the plan was made for. The hierarchy the plan came from must still be alive: the plan reads its
/// P, R and coarse-matrix structures. make_matrices false: the levels' values only (no structure
/// arrays when a level's structure is the kept one), no CsrMatrix objects (a re-set-up that copies
/// the values into existing ones). warm_lanczos (re-set-up only): start each level's Lanczos from
/// the plan's Ritz vector, which settles in fewer steps; its λ estimates then agree with a full
/// set-up's to the settling tolerance, and the rest follows from them. Without it the re-set-up is
/// bitwise what a full set-up of the same values with the same aggregates gives (the tests'
/// check of the numeric path). Either way the same calls give the same bits. coarse: the handles
/// that factor the coarsest level, kept by a caller that sets up again (null: made for this call).
/// choice: how a caller that resolved o itself (DeviceAmg) chose its kAmgAuto fields, which
/// decides amg::retry_aggregation (null: this call's own resolution of o).
/// max_complexity (full set-up only): stop, with `capped` set, once the levels built and the next
/// one's matrix pass that many times A's entries, summed as info.operator_complexity is: the
/// hierarchy could only grow past it (DeviceAmg's cap on the augmented set-up, as HostAmg's).
/// seed (full set-up only): record level 0's near-nullspace-free work into an empty one, or take
/// it from one recorded for the same A and b (GpuLevel0Seed).
/// Sets info.setup_seconds to the wall time of the whole call (synchronised).
template <class T>
GpuAmgHierarchy<T> gpu_amg_setup(const CsrMatrix<T>& A, const AmgOptions& o, bool keep_aggregates = false,
                                 std::shared_ptr<const GpuAmgPlan> reuse = nullptr, bool make_matrices = true,
                                 bool warm_lanczos = true, AmgCoarseSolver* coarse = nullptr,
                                 const AmgAutoChoice* choice = nullptr,
                                 double max_complexity = std::numeric_limits<double>::infinity(),
                                 GpuLevel0Seed* seed = nullptr);

/// For tests: α and β of `steps` Lanczos steps from the fixed start vector on what level 0 of A's
/// set-up estimates λmax of: D^{-1/2}·A·D^{-1/2} (b = 1), or L⁻¹·A·L⁻ᵀ with L the Cholesky factors
/// of the node blocks of b unknowns. Asked for in batches of `batch` steps, as the set-up asks,
/// run as it runs them: in one launch of one block a batch (one_block, where
/// gpu_lanczos_one_block allows it) or in a launch a phase. Both give the same bits.
void gpu_lanczos_trace(const CsrMatrix<double>& A, int b, int steps, int batch, bool one_block,
                       std::vector<double>& alpha, std::vector<double>& beta);
/// Whether the set-up runs the Lanczos batches of a level of n rows and nnz entries in one block
/// (on the current device).
bool gpu_lanczos_one_block(index_t n, index_t nnz);

}  // namespace krysp::detail
