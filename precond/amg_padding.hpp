#pragma once
/// \file amg_padding.hpp
/// Nodes of unequal size, found from A's structure, and A padded to equal ones: shells and other
/// structural matrices whose supported unknowns were removed (SuiteSparse's s3rmt3m3: 5,357 rows
/// of nodes of six) have no block size that divides n, so AMG would run one unknown a node. Codes
/// that assemble full element matrices leave every row of a node with the same column set; a run
/// of such rows shorter than the common node size is a node with unknowns removed, and a unit row
/// (coupled to nothing) completes it. docs/amg.md, "Nodes with removed unknowns".
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::amg {

/// Rows of full nodes (of the chosen b) needed among A's rows; else no padding.
inline constexpr double kPaddedNodeShare = 0.75;

/// Where A's rows go in the padded matrix.
struct NodePadding {
  int b = 1;                      ///< unknowns a node after padding; 1: A is not padded
  index_t padded_rows = 0;        ///< nodes · b
  index_t short_nodes = 0;        ///< nodes completed with unit rows
  std::vector<index_t> position;  ///< row i of A is row position[i] of the padded matrix (increasing)
};

/// A's nodes from runs of consecutive rows with identical column sets: b (2 to kMaxBlockSize) is
/// the largest for which runs of b rows or of whole multiples of b hold kPaddedNodeShare of the
/// rows; any other run of k·b + r rows is k nodes and one short node of r rows, completed by b − r
/// unit rows after them. b = 1 (no padding) when no b qualifies or no node is short. Structure only;
/// the decision is memoised on A, as detected_block_size is.
template <class T>
NodePadding node_padding(const CsrMatrix<T>& A);

/// A with p's unit rows: row position[i] holds row i of A, at columns position[j]; each unit row
/// has a single 1 on the diagonal. Symmetric positive definite when A is.
template <class T>
CsrMatrix<T> padded_matrix(const CsrMatrix<T>& A, const NodePadding& p);

}  // namespace krysp::amg
