#pragma once
/// \file check.cuh
/// Checked CUDA calls and launches: a failure throws krysp::DeviceError naming the call, the
/// source file and line, and CUDA's own message.
#include <cuda_runtime.h>

#include "krysp/base/error.hpp"
#include "krysp/base/stream.hpp"

#define KRYSP_CUDA_CHECK(call)                                                               \
  do {                                                                                       \
    cudaError_t krysp_err_ = (call);                                                         \
    if (krysp_err_ != cudaSuccess)                                                           \
      KRYSP_THROW(::krysp::DeviceError, #call " failed: ", cudaGetErrorName(krysp_err_), " (", \
                  cudaGetErrorString(krysp_err_), ")");                                      \
  } while (0)

/// Call right after a <<<>>> launch: catches bad configurations at once.
#define KRYSP_CUDA_CHECK_LAUNCH(name)                                                       \
  do {                                                                                      \
    cudaError_t krysp_err_ = cudaGetLastError();                                            \
    if (krysp_err_ != cudaSuccess)                                                          \
      KRYSP_THROW(::krysp::DeviceError, "launch of ", name, " failed: ",                    \
                  cudaGetErrorName(krysp_err_), " (", cudaGetErrorString(krysp_err_), ")"); \
  } while (0)

namespace krysp {
/// The cudaStream_t a DeviceStream wraps (nullptr: the default stream).
inline cudaStream_t cuda_stream(DeviceStream s) { return static_cast<cudaStream_t>(s.handle); }
}  // namespace krysp
