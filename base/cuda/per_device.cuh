#pragma once
/// \file per_device.cuh
/// A value worked out once for each device a process uses (thread-safe): e.g. a kernel's shared
/// memory set up with cudaFuncSetAttribute, which holds per device, and what it allows. Internal.
#include <cuda_runtime.h>

#include <mutex>
#include <utility>
#include <vector>

#include "krysp/base/cuda/check.cuh"

namespace krysp::detail {

/// get(make): make(device) the first time for the current device, the value kept after.
template <class T>
class PerDevice {
 public:
  template <class Make>
  T get(Make make) {
    int device = 0;
    KRYSP_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& k : known_)
      if (k.first == device) return k.second;
    const T value = make(device);
    known_.emplace_back(device, value);
    return value;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, T>> known_;
};

/// The shared memory a block of `device` may have when a kernel opts in (bytes).
inline int optin_shared_bytes(int device) {
  int optin = 0;
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return optin;
}

}  // namespace krysp::detail
