#pragma once
/// \file amg_device_primitives.cuh
/// The scan and sort steps of the GPU AMG set-up that its one-vector path (amg_device_setup.cu)
/// and its K > 1 pieces (amg_block_setup.cu, amg_block_product.cu) share: an exclusive scan with
/// its total (or its 64-bit total), CUB's stable radix sort of (key, value) pairs and the key bits
/// it needs, and the grouping of nodes by aggregate for P_tent (sort keys, each aggregate's first
/// position in the sorted order).
/// Internal: included by those .cu files only.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// out[0..n] = exclusive scan of in[0..n-1], out[n] = the total (returned; one synchronisation,
/// for the total). n = 0: out[0] = 0.
inline index_t exclusive_scan(const index_t* in, index_t* out, index_t n) {
  if (n == 0) {
    KRYSP_CUDA_CHECK(cudaMemset(out, 0, sizeof(index_t)));
    return 0;
  }
  std::size_t bytes = 0;
  KRYSP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out + 1, n));
  DeviceArray<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
  KRYSP_CUDA_CHECK(cudaMemset(out, 0, sizeof(index_t)));
  KRYSP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp.data(), bytes, in, out + 1, n));
  index_t total = 0;
  copy_to_host(&total, out + n, sizeof(index_t));
  return total;
}

/// out[0..n] = exclusive scan of in[0..n-1], as exclusive_scan, with the total summed in 64 bits
/// and returned (one synchronisation): a total past index_t's range means the offsets wrapped and
/// are not to be used.
inline std::int64_t exclusive_scan64(const index_t* in, index_t* out, index_t n) {
  if (n == 0) {
    KRYSP_CUDA_CHECK(cudaMemset(out, 0, sizeof(index_t)));
    return 0;
  }
  DeviceArray<std::int64_t> total(1);
  std::size_t sum_bytes = 0, scan_bytes = 0;
  KRYSP_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, sum_bytes, in, total.data(), n));
  KRYSP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, in, out + 1, n));
  DeviceArray<unsigned char> tmp(std::max<std::size_t>({sum_bytes, scan_bytes, 1}));
  KRYSP_CUDA_CHECK(cub::DeviceReduce::Sum(tmp.data(), sum_bytes, in, total.data(), n));
  KRYSP_CUDA_CHECK(cudaMemset(out, 0, sizeof(index_t)));
  KRYSP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp.data(), scan_bytes, in, out + 1, n));
  std::int64_t t = 0;
  copy_to_host(&t, total.data(), sizeof t);
  return t;
}

/// Stable sort of (key, value) pairs by key, on bits [0, end_bit) of the keys (CUB's radix sort:
/// stable, so equal keys keep their input order — node order, entry order).
inline void sort_pairs(index_t n, const index_t* keys_in, index_t* keys_out, const index_t* vals_in,
                       index_t* vals_out, int end_bit) {
  if (n == 0) return;
  std::size_t bytes = 0;
  KRYSP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, vals_in, vals_out, n, 0, end_bit));
  DeviceArray<unsigned char> tmp(std::max<std::size_t>(bytes, 1));
  KRYSP_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(tmp.data(), bytes, keys_in, keys_out, vals_in, vals_out, n, 0, end_bit));
}

/// The key bits sort_pairs needs for keys in [0, max_key]: at least 1, at most 31.
inline int bits_for(index_t max_key) {
  int b = 1;
  while (b < 31 && (index_t(1) << b) <= max_key) ++b;
  return b;
}

// The kernels have internal linkage: each .cu that includes this header compiles its own copy
// (as each had its own before), and the copies do not clash when the library links.
namespace {

/// P_tent's grouping of the nodes by aggregate: sort keys agg + 1 (left-out nodes, −1, sort
/// first, then the aggregates in order) with the node numbers as values.
__global__ void k_sort_keys(index_t n, const index_t* agg, index_t* keys, index_t* nodes) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  keys[i] = agg[i] + 1;
  nodes[i] = i;
}

/// start[g] = the first position of aggregate g in the sorted order (k_sort_keys' keys, sorted);
/// start[count] = n.
__global__ void k_starts(index_t n, const index_t* sorted_keys, index_t count, index_t* start) {
  const index_t p = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= n) return;
  const index_t k = sorted_keys[p];
  if (k > 0 && (p == 0 || sorted_keys[p - 1] != k)) start[k - 1] = p;
  if (p == n - 1) start[count] = n;
}

}  // namespace

}  // namespace krysp::detail
