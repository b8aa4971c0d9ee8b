#pragma once
/// \file overlap.hpp
/// Do an operation's input and output blocks share memory? Y = α·A·X + β·Y reads X while it
/// writes Y, so X and Y sharing entries gives wrong results, not an error, unless it is checked.
/// Blocks are dense row-major: `rows` rows of `ld` entries, the first `n` of each used. Two blocks
/// with the same leading dimension may interleave (columns [0, n) and [n, 2n) of one wider array):
/// they overlap only where entries coincide, not where their address ranges do.
#include <cstdint>

#include "krysp/base/types.hpp"

namespace krysp {

/// True when the vectors [a, a + na) and [b, b + nb) share an entry. Empty ones never do.
template <class T>
bool ranges_overlap(const T* a, std::int64_t na, const T* b, std::int64_t nb) {
  if (na <= 0 || nb <= 0 || a == nullptr || b == nullptr) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + std::uintptr_t(nb) * sizeof(T) && pb < pa + std::uintptr_t(na) * sizeof(T);
}

/// True when block a (ra rows, leading dimension lda, n entries a row from a) and block b (rb rows,
/// ldb, n entries a row from b) share an entry; n <= lda, ldb. Empty blocks never do.
template <class T>
bool blocks_overlap(const T* a, index_t ra, index_t lda, const T* b, index_t rb, index_t ldb, index_t n) {
  if (ra <= 0 || rb <= 0 || n <= 0) return false;
  if (!ranges_overlap(a, std::int64_t(ra - 1) * lda + n, b, std::int64_t(rb - 1) * ldb + n)) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  if (lda != ldb || (pb > pa ? pb - pa : pa - pb) % sizeof(T) != 0) return true;  // no common grid
  // Same grid: b starts d = q·ld + r entries after a (or a after b: swap). Row i of the first and
  // row i' of the second share an entry iff i = i' + q with r < n, or i = i' + q + 1 with r > ld − n.
  const bool b_after = pb >= pa;
  const std::int64_t d = std::int64_t((b_after ? pb - pa : pa - pb) / sizeof(T));
  const std::int64_t ld = lda, q = d / ld, r = d % ld;
  const std::int64_t first_rows = b_after ? ra : rb;  // rows of the block that starts first
  return (r < n && q < first_rows) || (r > ld - n && q + 1 < first_rows);
}

}  // namespace krysp
