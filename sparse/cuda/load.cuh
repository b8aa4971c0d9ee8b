#pragma once
/// \file load.cuh
/// Loads for streamed matrix data: ld.global.cs (evict-first), so that the values and indices,
/// read once per SpMV, do not push the reused vector x out of L2. Vector forms load 16 bytes
/// (8 for two indices) per lane; callers guarantee the alignment.
#include <cuda_runtime.h>

#include "krysp/base/types.hpp"

namespace krysp::detail {
template <class T>
__device__ __forceinline__ T load_stream(const T* p) {
  return __ldcs(p);
}
/// x is gathered many times: keep it in the read-only/L1 path.
template <class T>
__device__ __forceinline__ T load_cached(const T* p) {
  return __ldg(p);
}
/// Two adjacent entries of x, p aligned to two entries (one 16- or 8-byte load).
__device__ __forceinline__ double2 load_cached_pair(const double* p) {
  return __ldg(reinterpret_cast<const double2*>(p));
}
__device__ __forceinline__ float2 load_cached_pair(const float* p) {
  return __ldg(reinterpret_cast<const float2*>(p));
}
/// y = alpha·sum + beta·y, where beta = 0 never reads y (so NaN in y does not propagate).
/// Returns the value stored.
template <class T>
__device__ __forceinline__ T store_axpby(T* y, T alpha, T sum, T beta) {
  const T v = beta == T(0) ? alpha * sum : alpha * sum + beta * *y;
  *y = v;
  return v;
}

/// N consecutive streamed entries p[0..N) into out[0..N) with the widest aligned vector loads:
/// p must be aligned to min(N, 16 / sizeof(T)) entries (N a power of two).
template <int N>
__device__ __forceinline__ void load_stream_n(const double* p, double (&out)[N]) {
  if constexpr (N == 1) {
    out[0] = __ldcs(p);
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const double2 v = __ldcs(reinterpret_cast<const double2*>(p + i));
      out[i] = v.x;
      out[i + 1] = v.y;
    }
  }
}
template <int N>
__device__ __forceinline__ void load_stream_n(const float* p, float (&out)[N]) {
  if constexpr (N == 1) {
    out[0] = __ldcs(p);
  } else if constexpr (N == 2) {
    const float2 v = __ldcs(reinterpret_cast<const float2*>(p));
    out[0] = v.x;
    out[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = __ldcs(reinterpret_cast<const float4*>(p + i));
      out[i] = v.x;
      out[i + 1] = v.y;
      out[i + 2] = v.z;
      out[i + 3] = v.w;
    }
  }
}
template <int N>
__device__ __forceinline__ void load_stream_n(const index_t* p, index_t (&out)[N]) {
  if constexpr (N == 1) {
    out[0] = __ldcs(p);
  } else if constexpr (N == 2) {
    const int2 v = __ldcs(reinterpret_cast<const int2*>(p));
    out[0] = v.x;
    out[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const int4 v = __ldcs(reinterpret_cast<const int4*>(p + i));
      out[i] = v.x;
      out[i + 1] = v.y;
      out[i + 2] = v.z;
      out[i + 3] = v.w;
    }
  }
}
}  // namespace krysp::detail
