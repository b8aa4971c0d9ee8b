// SpMM dispatch from a plan's configuration, the fix-up of rows split between merge-path units,
// and the random fill of the plan-time tuning input.
#include <algorithm>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_kernels.cuh"

namespace krysp::detail {

namespace {

/// Split row w (one warp): Y[row] = alpha·(tail[u_s] + ... + tail[u_e − 1] + head[u_e]) + beta·Y[row],
/// summed in that fixed order (spmm_common.hpp).
template <class T>
__global__ void __launch_bounds__(kSpmmBlock)
    spmm_fixup_kernel(index_t num_splits, const index_t* __restrict__ splits, index_t units, index_t N,
                      const T* __restrict__ carries, T alpha, T beta, T* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t w = (std::int64_t(blockIdx.x) * kSpmmBlock + threadIdx.x) / 32;
  if (w >= num_splits) return;
  const int lane = int(threadIdx.x % 32);
  const index_t row = splits[3 * w], us = splits[3 * w + 1], ue = splits[3 * w + 2];
  T* y = Y + std::int64_t(row) * ldy;
  for (std::int64_t j = lane; j < N; j += 32) {
    T s = T(0);
    index_t u = us;
    for (; u + 4 <= ue; u += 4) {  // a row split over many units: 4 loads in flight, added in order
      T t[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) t[q] = carries[spmm_carry_offset(SpmmDest::Tail, u + q, units, N) + j];
#pragma unroll
      for (int q = 0; q < 4; ++q) s += t[q];
    }
    for (; u < ue; ++u) s += carries[spmm_carry_offset(SpmmDest::Tail, u, units, N) + j];
    s += carries[spmm_carry_offset(SpmmDest::Head, ue, units, N) + j];
    store_axpby(y + j, alpha, s, beta);
  }
}

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void spmm_fill_kernel(T* p, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double u = double(splitmix64(seed ^ (0x632be59bd9b4e019ull * (i + 1))) >> 11) * 0x1.0p-53;
    p[i] = T(0.5 + u);
  }
}

template <class T>
__global__ void spmm_gather_kernel(const T* __restrict__ src, const index_t* __restrict__ source, index_t n,
                                   T* __restrict__ dst) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += stride)
    dst[k] = src[source[k]];
}

}  // namespace

template <class T>
void spmm_gather_values(const T* src, const index_t* source, index_t n, T* dst, DeviceStream stream) {
  if (n <= 0) return;
  const std::int64_t blocks = std::min<std::int64_t>((std::int64_t(n) + kSpmmBlock - 1) / kSpmmBlock, 8192);
  launch_overlapped("spmm_gather_kernel", spmm_gather_kernel<T>, static_cast<unsigned>(blocks), kSpmmBlock,
                    cuda_stream(stream), src, source, n, dst);
}

template <class T>
void spmm_device(const SpmmConfig& c, const SpmmArgs<T>& a, DeviceStream stream) {
  if (a.A.rows == 0 || a.N <= 0) return;
  const cudaStream_t st = cuda_stream(stream);
  switch (c.algorithm) {
    case SpmmAlgorithm::VdlRow:
    case SpmmAlgorithm::VdlNnz: spmm_vdl_launch<T>(c, a, st); break;
    case SpmmAlgorithm::CscRow:
    case SpmmAlgorithm::CscNnz: spmm_csc_launch<T>(c, a, st); break;
    case SpmmAlgorithm::SeqNnz: spmm_seq_launch<T>(c, a, st); break;
    default: KRYSP_THROW(InputError, "SpMM algorithm ", int(c.algorithm), " does not exist");
  }
  if (is_nnz_balanced(c.algorithm) && a.ws.num_splits > 0) {
    const SpmmWorkspaceView& ws = a.ws;
    const std::int64_t grid = (std::int64_t(ws.num_splits) + kSpmmWarpsPerBlock - 1) / kSpmmWarpsPerBlock;
    launch_overlapped("spmm_fixup_kernel", spmm_fixup_kernel<T>, static_cast<unsigned>(grid), kSpmmBlock, st,
                      ws.num_splits, ws.splits, ws.units, a.N, static_cast<const T*>(ws.carries), a.alpha, a.beta, a.Y,
                      a.ldy);
  }
}

template <class T>
void spmm_fill_device(T* p, std::size_t n, std::uint64_t seed) {
  if (n == 0) return;
  const std::size_t blocks = std::min<std::size_t>((n + kSpmmBlock - 1) / kSpmmBlock, 4096);
  spmm_fill_kernel<T><<<static_cast<unsigned>(blocks), kSpmmBlock>>>(p, n, seed);
  KRYSP_CUDA_CHECK_LAUNCH("spmm_fill_kernel");
}

template void spmm_device(const SpmmConfig&, const SpmmArgs<double>&, DeviceStream);
template void spmm_device(const SpmmConfig&, const SpmmArgs<float>&, DeviceStream);
template void spmm_gather_values(const double*, const index_t*, index_t, double*, DeviceStream);
template void spmm_gather_values(const float*, const index_t*, index_t, float*, DeviceStream);
template void spmm_fill_device(double*, std::size_t, std::uint64_t);
template void spmm_fill_device(float*, std::size_t, std::uint64_t);

}  // namespace krysp::detail
