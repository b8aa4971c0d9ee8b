#pragma once
/// \file block_jacobi.hpp
/// Block Jacobi: M = blockdiag(A_11, A_22, ...), the b×b diagonal blocks of A (rows kb..kb+b−1),
/// applied as z = M⁻¹·r block by block. Each block is inverted once at setup (Cholesky, then
/// L⁻ᵀL⁻¹; spd_block.hpp) and kept as a dense symmetric b×b inverse, so applying is one small
/// dense mat-vec per block: one kernel on the GPU (cuda/device_block_jacobi.hpp).
///
/// SPD for CG: each diagonal block of an SPD matrix is SPD (a principal submatrix), so M and M⁻¹
/// are SPD. Only the lower triangle of each block is read (A is taken to be symmetric).
///
/// Block size: given (1..8; n must be a multiple), or detected from the sparsity pattern by
/// detect_block_size(). b = 1 is point Jacobi: inverse_diagonal() then returns the inverse
/// diagonal, so CG fuses it like Jacobi.
#include <cstdint>
#include <string>
#include <vector>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/precond/spd_block.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// Fraction of the nodes (row groups kb..kb+b−1) whose b rows have the same node-level pattern:
/// the same set of column nodes ⌊j/b⌋. 0 when b does not divide n (or n = 0).
template <class T>
double node_pattern_fraction(const CsrMatrix<T>& A, int b);

/// Share of nodes that must agree for b to count as the natural block size (see detect_block_size).
inline constexpr double kBlockPatternShare = 0.75;

/// The natural block size of A: the largest b in 8..2 that divides n and for which at least 3/4
/// of the nodes have rows sharing one node-level pattern and couple their own unknowns
/// (node_pattern_fraction ≥ kBlockPatternShare); 1 when no b qualifies. (Without the coupling, a
/// diagonal matrix of 500 rows read as nodes of 5.)
///
/// Why this rule: in a finite-element matrix with b unknowns per node, every row of a node couples
/// to all unknowns of the same neighbouring nodes, so the node's rows share the node-level pattern
/// even where single entries happen to be zero (bcsstk01's 6×6 diagonal blocks are only 40% full,
/// yet all 8 nodes agree at b = 6). Rows of scalar grid operators are shifted copies of each other
/// and never agree (Laplacians, gr_30_30: 1). The 3/4 share tolerates constrained or special
/// nodes. On the shared SPD set: bcsstk01 6, bcsstk02 6, bcsstk03 4, bcsstk04 6, bcsstk09 3,
/// bcsstk28 3 (80% of nodes), bcsstm12 3 (80%), ex15 3, Trefethen_2000 8; bcsstk06/07/10,
/// bcsstm07, aft01, bodyy6, gr_30_30, the bus matrices: 1. Reads the pattern only, and stops a
/// candidate as soon as its verdict is certain.
template <class T>
int detect_block_size(const CsrMatrix<T>& A);

/// The detection rule for one candidate: does b (2..8) divide n, with at least kBlockPatternShare
/// of the n/b nodes agreeing? (Shared by the host scan and the GPU count: device_block_jacobi.hpp.)
bool block_size_qualifies(index_t n, int b, std::int64_t agreeing_nodes);

/// Resolves a requested block size for A: 0 → detect_block_size(A); otherwise checks 1 ≤ b ≤ 8 and
/// that b divides n (InputError naming b and n).
template <class T>
int resolve_block_size(const CsrMatrix<T>& A, int requested);
/// The same with another detector for requested = 0 (the GPU's: device_detect_block_size).
template <class T>
int resolve_block_size(const CsrMatrix<T>& A, int requested, int (*detect)(const CsrMatrix<T>&));

/// The dense diagonal block k of A (b×b row-major, zeros where A stores nothing).
template <class T>
void extract_diagonal_block(const CsrMatrix<T>& A, int b, index_t k, T* block);

/// Throws the InputError for diagonal block k (b×b) whose Cholesky pivot `pivot_index` (1-based
/// within the block) is `pivot`: it names the block, its rows (1-based) and the pivot.
[[noreturn]] void throw_block_not_spd(index_t k, int b, int pivot_index, double pivot);

/// Block Jacobi on the host: M⁻¹ applies the inverted b×b diagonal blocks.
template <class T>
class HostBlockJacobi final : public Preconditioner<T> {
 public:
  /// block_size 0 detects it. Throws InputError for a diagonal block that is not SPD (singular or
  /// indefinite), naming the block, its rows and the failing pivot.
  HostBlockJacobi(const CsrMatrix<T>& A, int block_size = 0);
  PrecondKind kind() const override { return PrecondKind::BlockJacobi; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  const T* inverse_diagonal() const override { return b_ == 1 ? inv_.data() : nullptr; }
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }

  /// The block size in use (detected or given).
  int block_size() const { return b_; }
  /// The inverted blocks: n/b dense b×b row-major inverses, one after the other (n·b values).
  const std::vector<T>& inverses() const { return inv_; }

 private:
  StructureFingerprint fingerprint_;
  index_t n_ = 0;
  int b_ = 1;
  std::vector<T> inv_;
};

extern template class HostBlockJacobi<double>;
extern template class HostBlockJacobi<float>;

}  // namespace krysp
