#pragma once
/// \file launch.cuh
/// Overlapped kernel launches (base/overlapped_launch.hpp). A kernel launched with
/// launch_overlapped() must call wait_for_previous_kernel() before its first global memory access:
/// until then the previous kernel on the stream may still be writing what it reads.
#include <cuda_runtime.h>

#include <utility>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/overlapped_launch.hpp"

namespace krysp {

/// Waits for the previous kernel on the stream to complete and its writes to be visible (a no-op
/// when this kernel was not launched overlapped, and before compute capability 9.0).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next kernel on the stream, when launched overlapped, start before this one ends: as
/// soon as every block of this one has called this or exited. Call it only after
/// wait_for_previous_kernel(), so that the next kernel starts after every kernel before this one
/// has finished and its writes are visible: then it may load, before its own wait, data that no
/// kernel still running writes (the SpMM plans' early matrix loads). A no-op before compute
/// capability 9.0.
__device__ __forceinline__ void release_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

namespace detail {
/// The setting, and the current device supports it (compute capability cached per device).
bool overlapped_launch_active();
}  // namespace detail

/// kernel<<<grid, block, 0, stream>>>(args...), overlapped with the previous kernel on the stream
/// when detail::overlapped_launch_active(); a failed launch throws DeviceError naming `name`.
template <class... Params, class... Args>
void launch_overlapped(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                       Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  config.attrs = &attr;
  config.numAttrs = detail::overlapped_launch_active() ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: the next checked launch must not report this one
    KRYSP_THROW(DeviceError, "launch of ", name, " (grid ", grid.x, "x", grid.y, ", block ", block.x,
                ") failed: ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  }
}

}  // namespace krysp
