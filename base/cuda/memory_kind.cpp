// Pointer classification for matrices built on memory the caller owns (CsrMatrix::from_device_pointers).
#include <cuda_runtime.h>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"

namespace krysp {

int cuda_current_device() {
  if (!cuda_device_available()) KRYSP_THROW(DeviceError, "no CUDA device is available");
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

const char* to_string(MemoryKind k) {
  switch (k) {
    case MemoryKind::Unregistered: return "host (unregistered)";
    case MemoryKind::Host: return "host (pinned)";
    case MemoryKind::Device: return "device";
    case MemoryKind::Managed: return "managed";
  }
  return "unknown";
}

MemoryKind memory_kind(const void* p, int* device) {
  if (device) *device = -1;
  if (!cuda_device_available())
    KRYSP_THROW(DeviceError, "cannot tell where pointer ", p, " points: no CUDA device is available");
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err == cudaErrorInvalidValue) {  // older runtimes: an address CUDA never saw
    cudaGetLastError();
    return MemoryKind::Unregistered;
  }
  KRYSP_CUDA_CHECK(err);
  switch (attr.type) {
    case cudaMemoryTypeDevice:
      if (device) *device = attr.device;
      return MemoryKind::Device;
    case cudaMemoryTypeManaged:
      if (device) *device = attr.device;
      return MemoryKind::Managed;
    case cudaMemoryTypeHost: return MemoryKind::Host;
    default: return MemoryKind::Unregistered;
  }
}

void require_device_memory(const void* p, const std::string& what) {
  int dev = -1;
  const MemoryKind kind = memory_kind(p, &dev);
  KRYSP_REQUIRE(kind == MemoryKind::Device || kind == MemoryKind::Managed, what, " = ", p, " is ", to_string(kind),
                " memory, not device memory (allocate it with cudaMalloc or cudaMallocManaged)");
  const int current = cuda_current_device();
  KRYSP_REQUIRE(kind == MemoryKind::Managed || dev == current, what, " = ", p, " is memory of device ", dev,
                " but the current device is ", current);
}

}  // namespace krysp
