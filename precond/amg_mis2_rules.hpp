#pragma once
/// \file amg_mis2_rules.hpp
/// The per-node rules of the MIS-2 aggregation (amg::aggregate_mis2), shared by the host
/// reference (amg_setup.cpp) and the GPU kernels (cuda/amg_device_setup.cu): one definition, so
/// both run the same rounds on the same keys and make the same aggregates. Internal header.
///
/// A node's key packs (state, priority, index) into 64 bits so that one unsigned comparison
/// orders them lexicographically: state in bits 62-63 (out 0 < undecided 1 < root 2), a fixed
/// integer hash of the index in bits 31-61, the index (< 2^31) in bits 0-30. The hash spreads
/// the roots over the graph (node order would put them in lines); ties between equal hashes go
/// to the larger index.
#include <cstdint>

#include "krysp/base/host_device.hpp"
#include "krysp/base/types.hpp"

namespace krysp::amg::mis2 {

/// Node states, the top two bits of a key.
inline constexpr std::uint64_t kOut = 0, kUndecided = 1, kRoot = 2;

/// The priority of node i: a fixed 31-bit integer hash (a 32-bit avalanche mix).
KRYSP_HD inline std::uint32_t priority(index_t i) {
  std::uint32_t x = std::uint32_t(i);
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x & 0x7fffffffU;
}

/// The key of node i in `state`.
KRYSP_HD inline std::uint64_t key(std::uint64_t state, index_t i) {
  return (state << 62) | (std::uint64_t(priority(i)) << 31) | std::uint64_t(std::uint32_t(i));
}

/// The state a key carries.
KRYSP_HD inline std::uint64_t state_of(std::uint64_t k) { return k >> 62; }

/// The largest of in[i] and in[j] over node i's strong neighbours j: one distance-1 step of the
/// max propagation (two steps reach distance 2).
KRYSP_HD inline std::uint64_t max_over_row(const index_t* row_ptr, const index_t* col_idx, index_t i,
                                           const std::uint64_t* in) {
  std::uint64_t m = in[i];
  for (index_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p) {
    const std::uint64_t k = in[col_idx[p]];
    m = k > m ? k : m;
  }
  return m;
}

/// Node i's key after a round, from its key and the largest key within distance 2: an
/// undecided node with the largest key there becomes a root; one that sees a root there is out.
KRYSP_HD inline std::uint64_t decide(std::uint64_t own, std::uint64_t max2, index_t i) {
  if (state_of(own) != kUndecided) return own;
  if (max2 == own) return key(kRoot, i);
  if (state_of(max2) == kRoot) return key(kOut, i);
  return own;
}

/// Aggregate of a non-root node next to a root: that of its first root neighbour in column
/// order (agg holds the roots' aggregates), or −1.
KRYSP_HD inline index_t join_root(const index_t* row_ptr, const index_t* col_idx, index_t i,
                                  const std::uint64_t* keys, const index_t* agg) {
  for (index_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
    if (state_of(keys[col_idx[p]]) == kRoot) return agg[col_idx[p]];
  return -1;
}

/// Aggregate of a node two steps from a root: that of its first neighbour, in column order, that
/// joined an aggregate before (agg1: the aggregates after join_root), or −1.
KRYSP_HD inline index_t join_neighbour(const index_t* row_ptr, const index_t* col_idx, index_t i,
                                       const index_t* agg1) {
  for (index_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
    if (agg1[col_idx[p]] >= 0) return agg1[col_idx[p]];
  return -1;
}

}  // namespace krysp::amg::mis2
