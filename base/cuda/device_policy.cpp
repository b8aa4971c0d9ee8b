// The current device's DevicePolicy (base/device_policy.hpp), queried once per device.
#include "krysp/base/device_policy.hpp"

#include <cuda_runtime.h>

#include <mutex>

#include "krysp/base/cuda/check.cuh"

namespace krysp {

namespace {

DevicePolicy query(int dev) {
  DevicePolicy p;
  int l2 = 0;
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&p.multiprocessors, cudaDevAttrMultiProcessorCount, dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&p.threads_per_multiprocessor, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  p.l2_bytes = l2;
  return p;
}

constexpr int kMaxDevices = 64;
struct Slot {
  std::once_flag once;
  DevicePolicy policy;
};
Slot g_slots[kMaxDevices];

}  // namespace

DevicePolicy device_policy() {
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= kMaxDevices) return query(dev);
  Slot& s = g_slots[dev];
  std::call_once(s.once, [&] { s.policy = query(dev); });  // a throw leaves it to the next call
  return s.policy;
}

}  // namespace krysp
