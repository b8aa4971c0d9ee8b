#pragma once
/// \file row_groups.cuh
/// A group of W lanes a row for the AMG set-up's row kernels (amg_device_setup.cu, amg_filter.cu,
/// amg_galerkin.cu), the host's dispatch of a run-time lane count to the kernel templates, and
/// the rule that picks W from a mean row length (those and amg_node_smoother.cu). Internal:
/// included by those .cu files only.
#include <cstdint>
#include <type_traits>

#include "krysp/base/types.hpp"

namespace krysp::detail {

/// The smallest power of two W with from ≤ W ≤ 32 and W ≥ target (a row kernel's lanes a row,
/// target a fraction of the mean row length).
inline int pow2_lanes(double target, int from = 1) {
  int w = from;
  while (w < 32 && double(w) < target) w *= 2;
  return w;
}

// W a power of two ≤ 32; the groups are W-aligned in the warp, so a group whose row is past n
// leaves whole and the others keep every lane for the shuffles and ballots below.

/// This thread's row (global thread / W) and its lane in the row's group.
struct RowLane {
  index_t row;
  int lane;
};

/// The group's lanes in the warp, for the shuffles and ballots.

template <int W>
__device__ __forceinline__ unsigned group_mask() {
  if constexpr (W == 32)
    return 0xffffffffu;
  else
    return ((1u << W) - 1u) << (threadIdx.x % 32u / W * W);
}

template <int W>
__device__ __forceinline__ RowLane row_lane() {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  return RowLane{index_t(g / W), int(threadIdx.x % W)};
}

/// The group's lanes whose p is set, lane 0 the lowest bit.
template <int W>
__device__ __forceinline__ unsigned group_ballot(unsigned mask, bool p) {
  if constexpr (W == 32)
    return __ballot_sync(mask, p);
  else
    return (__ballot_sync(mask, p) & mask) >> (threadIdx.x % 32u / W * W);
}

/// The first c lanes of a group (0 < c ≤ W).
__device__ __forceinline__ unsigned first_lanes(index_t c) { return c >= 32 ? 0xffffffffu : (1u << c) - 1u; }

/// How many lanes below `lane` have their bit set in `bits` (a group_ballot): where this lane's
/// entry goes in a compaction that keeps the row's order.
__device__ __forceinline__ int lanes_below(unsigned bits, int lane) { return __popc(bits & ((1u << lane) - 1u)); }

/// sum + the terms t of the lanes in `bits`, added one at a time in lane (= the row's) order, as
/// the sequential loop adds them; never a tree, so the bits are the one-thread-a-row loop's for
/// any W. Every lane of the group gets the sum.
template <int W>
__device__ __forceinline__ double fold_in_order(unsigned mask, unsigned bits, double t, double sum) {
  for (; bits != 0u; bits &= bits - 1u) sum = __dadd_rn(sum, __shfl_sync(mask, t, __ffs(int(bits)) - 1, W));
  return sum;
}

/// f(std::integral_constant<int, W>{}) for w = 1, 2, 4, 8, 16; W = 32 for any other w (the
/// callers check w where a caller may pass it).
template <class F>
void with_lanes(int w, F&& f) {
  switch (w) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    default: f(std::integral_constant<int, 32>{}); break;
  }
}

}  // namespace krysp::detail
