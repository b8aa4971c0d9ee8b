#pragma once
/// \file node_pattern.hpp
/// The node-pattern test behind block Jacobi's block-size detection (block_jacobi.hpp), one
/// definition for the host and the GPU (the device detection runs it with one thread per node).
/// CUDA-free and Kokkos-free: .cu files include it.
#include "krysp/base/host_device.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Do rows r0 and r1 touch the same set of column nodes ⌊j/b⌋? Columns are sorted within a row,
/// so each row's node sequence is non-decreasing: compare the two sequences without duplicates.
KRYSP_HD inline bool same_node_pattern(const index_t* rp, const index_t* ci, index_t r0, index_t r1, int b) {
  index_t p = rp[r0], q = rp[r1];
  const index_t pe = rp[r0 + 1], qe = rp[r1 + 1];
  while (p < pe && q < qe) {
    const index_t a = ci[p] / b, c = ci[q] / b;
    if (a != c) return false;
    while (p < pe && ci[p] / b == a) ++p;  // skip the rest of this node in both rows
    while (q < qe && ci[q] / b == a) ++q;
  }
  return p == pe && q == qe;
}

/// Does a row of node k couple two of its own unknowns (an entry in the node's diagonal block,
/// off the diagonal)? Without one, the "node" is b unrelated unknowns.
KRYSP_HD inline bool node_couples_itself(const index_t* rp, const index_t* ci, index_t k, int b) {
  for (index_t r = k * b; r < (k + 1) * b; ++r)
    for (index_t p = rp[r]; p < rp[r + 1]; ++p)
      if (ci[p] / b == k && ci[p] != r) return true;
  return false;
}

/// Do the b rows of node k (rows k·b .. k·b+b−1) share one node-level pattern, with the node's
/// unknowns coupled to each other (node_couples_itself)? A diagonal matrix, whose rows all share
/// the pattern of their own node, is not made of nodes.
KRYSP_HD inline bool node_agrees(const index_t* rp, const index_t* ci, index_t k, int b) {
  const index_t r0 = k * b;
  for (int i = 1; i < b; ++i)
    if (!same_node_pattern(rp, ci, r0, r0 + i, b)) return false;
  return node_couples_itself(rp, ci, k, b);
}

}  // namespace krysp::detail
