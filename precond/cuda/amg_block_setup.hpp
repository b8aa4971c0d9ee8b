#pragma once
/// \file amg_block_setup.hpp
/// The GPU set-up's pieces for a near-nullspace of K > 1 vectors (amg_device_setup.hpp): b > 1
/// unknowns per node with the b unit vectors of each node, or the rigid-body modes of the node
/// coordinates (K = 6 in 3-D, 3 in 2-D), and on the coarse levels K unknowns per node. Each one
/// repeats the host's operations (amg_setup.cpp, amg.cpp) in the host's order with separate
/// rounded multiplies and adds (no contraction), so that the results are the host's bitwise on the
/// same input:
///  - the strength graph on nodes (amg::strength_graph: node magnitudes, the b×b blocks'
///    Frobenius norms), a group of lanes a node merging the node's b rows (sorted columns);
///  - the tentative prolongator and the coarse near-nullspace (amg::tentative_prolongator: per
///    aggregate, its nodes in node order, a QR by Gram-Schmidt twice, the completion by unit
///    vectors of a dependent column, zero columns where an aggregate has fewer unknowns than K),
///    a warp an aggregate (the sums in row order through shuffles);
///  - S = I − ω·D⁻¹A's values as amg.cpp forms them, for P = S·P_tent by spgemm_numeric
///    (amg_galerkin.hpp: the host's order of the sums);
///  - the coarse matrix's unit diagonal on rows whose values are all zero
///    (amg::unit_diagonal_on_empty_rows: the coarse unknowns of the zero columns above), with a
///    map that repeats it on a numeric re-set-up.
/// Deterministic (integer atomics only). CUDA-free header; internal (device pointers, the default
/// stream; the functions that return sizes synchronise for them).
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

/// Largest K (near-nullspace vectors, so unknowns per coarse node) the block set-up takes: the
/// unit vectors of block sizes up to 8, or the six rigid-body modes.
constexpr int kBlockSetupMaxK = 8;

/// The level-0 near-nullspace of unit vectors, n × b row-major: row i has a 1 in column i mod b.
DeviceArray<double> block_unit_nullspace(index_t n, int b);

/// The strength graph of A (rows × rows, sorted unique columns in each row) on nodes of b unknowns
/// (2 ≤ b ≤ kBlockSetupMaxK, b divides rows), amg::strength_graph(A, b, θ)'s graph exactly: node
/// J is a strong neighbour of node I ≠ J when ‖A_IJ‖_F ≥ θ·sqrt(‖A_II‖_F·‖A_JJ‖_F) and A_IJ's squares
/// sum above 0, each sum of squares in the host's order (the node's rows in order, each row's
/// entries in order). grp (nodes + 1 offsets) and gci (at least one entry) are allocated here;
/// returns the number of edges. InputError when b does not divide rows (the host's message).
index_t block_strength_graph(index_t rows, int b, const index_t* rp, const index_t* ci, const double* va, double theta,
                             DeviceArray<index_t>& grp, DeviceArray<index_t>& gci);

/// What block_tentative_prolongator builds: P_tent (rows × count·K, each row's columns sorted, the
/// exact zeros left out as on the host) and the coarse near-nullspace (count·K × K row-major: R of
/// each aggregate's QR).
struct BlockTentative {
  index_t rows = 0, cols = 0, nnz = 0;
  DeviceArray<index_t> rp, ci;  ///< P_tent's structure (ci holds at least one entry)
  DeviceArray<double> va;       ///< P_tent's values
  DeviceArray<double> coarse_b;  ///< the next level's near-nullspace
};

/// amg::tentative_prolongator(agg, b, K, B) on the device: agg (nodes entries, −1 left out,
/// aggregates 0..count−1, each one non-empty), B the level's near-nullspace (nodes·b × K
/// row-major). 1 ≤ K ≤ kBlockSetupMaxK; InputError otherwise.
BlockTentative block_tentative_prolongator(index_t nodes, int b, int K, index_t count, const index_t* agg,
                                          const double* B);

/// P = (I − ω·D⁻¹A)·P_tent's values into P's structure (p_rp, p_ci: the structural product of
/// A's pattern and P_tent, p_nnz entries): S's entries formed as amg.cpp forms them, δ_ij −
/// (ω·dinv_i)·a_ij, then spgemm_numeric (the host's amg::multiply order). A: n × n, a_nnz
/// entries; P_tent: n rows, t_nnz entries.
void block_prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va, index_t a_nnz,
                              const double* dinv, double omega, index_t t_nnz, const index_t* t_rp,
                              const index_t* t_ci, const double* t_va, const index_t* p_rp, const index_t* p_ci,
                              index_t p_nnz, double* p_va);

/// The structure amg::unit_diagonal_on_empty_rows makes of a coarse matrix, and the map that
/// fills its values from the matrix's.
struct UnitDiagonal {
  index_t nnz = 0;
  DeviceArray<index_t> rp, ci;  ///< the new structure
  DeviceArray<double> va;       ///< its values
  /// For each entry of the new structure, its position in the old one, or −1 for a unit
  /// diagonal (value 1).
  DeviceArray<index_t> map;
};

/// amg::unit_diagonal_on_empty_rows on the device (n × n, nnz entries, sorted rows): false when
/// no row has all its values zero (nothing is built: the matrix stays as it is); else true and
/// `out` holds the matrix with each such row replaced by a single 1 on the diagonal.
bool unit_diagonal_on_empty_rows(index_t n, index_t nnz, const index_t* rp, const index_t* ci, const double* va,
                                 UnitDiagonal& out);

/// A numeric re-set-up's unit_diagonal_on_empty_rows: out[o] = va[map[o]], or 1 where map[o] < 0.
void unit_diagonal_gather(index_t nnz, const index_t* map, const double* va, double* out);

}  // namespace krysp::detail
