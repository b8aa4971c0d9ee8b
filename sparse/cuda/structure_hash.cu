// The device structure hash (structure_hash.hpp): a sum of per-entry terms, reduced per warp and
// added with one integer atomic per warp.
#include "krysp/sparse/cuda/structure_hash.hpp"

#include <algorithm>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"

namespace krysp::detail {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 2048;

// acc[0] += Σ terms (row_ptr entries first, then col_idx); acc[1] = row_ptr[0] and row_ptr[rows].
__global__ void __launch_bounds__(kThreads) k_structure_hash(std::int64_t rp_len, std::int64_t nnz,
                                                             const index_t* __restrict__ rp,
                                                             const index_t* __restrict__ ci,
                                                             unsigned long long* acc) {
  const std::int64_t total = rp_len + nnz;
  unsigned long long s = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x)
    s += i < rp_len ? structure_term(0, i, rp[i]) : structure_term(1, i - rp_len, ci[i - rp_len]);
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0 && s != 0) atomicAdd(acc, s);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    acc[1] = (static_cast<unsigned long long>(std::uint32_t(rp[0])) << 32) | std::uint32_t(rp[rp_len - 1]);
}

}  // namespace

std::uint64_t structure_hash_host(index_t rows, index_t cols, index_t nnz, const index_t* row_ptr,
                                  const index_t* col_idx) {
  std::uint64_t sum = 0;
  for (std::int64_t i = 0; i <= std::int64_t(rows); ++i) sum += structure_term(0, i, row_ptr[i]);
  for (std::int64_t k = 0; k < std::int64_t(nnz); ++k) sum += structure_term(1, k, col_idx[k]);
  return structure_hash_finish(rows, cols, nnz, sum);
}

DeviceStructureSummary structure_hash_device(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                             const index_t* d_col_idx) {
  DeviceArray<unsigned long long> acc(2);
  acc.zero();
  const std::int64_t rp_len = std::int64_t(rows) + 1, total = rp_len + std::int64_t(nnz);
  const std::int64_t blocks = std::min<std::int64_t>(kMaxBlocks, (total + kThreads - 1) / kThreads);
  k_structure_hash<<<static_cast<unsigned>(blocks), kThreads>>>(rp_len, nnz, d_row_ptr, d_col_idx, acc.data());
  KRYSP_CUDA_CHECK_LAUNCH("k_structure_hash");
  unsigned long long h[2] = {0, 0};
  acc.download(h, 2);
  DeviceStructureSummary out;
  out.hash = structure_hash_finish(rows, cols, nnz, h[0]);
  out.first_offset = index_t(std::uint32_t(h[1] >> 32));
  out.last_offset = index_t(std::uint32_t(h[1]));
  return out;
}

}  // namespace krysp::detail
