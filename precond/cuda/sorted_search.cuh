#pragma once
/// \file sorted_search.cuh
/// Binary search in a sorted index array, for the AMG set-up's kernels (the products' position
/// lookups, the symbolic product's long rows, the symmetrisation's mirror search). Internal.
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// First position p in [0, len) with cols[p] >= j (len when none); cols sorted ascending.
__device__ __forceinline__ index_t lower_bound(const index_t* cols, index_t len, index_t j) {
  index_t lo = 0, hi = len;
  while (lo < hi) {
    const index_t mid = lo + (hi - lo) / 2;
    if (cols[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace krysp::detail
