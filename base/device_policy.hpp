#pragma once
/// \file device_policy.hpp
/// The properties of the GPU that krysp's kernel-selection rules and launch thresholds take as
/// data (CUDA-free): how many threads are resident at once (one "wave") and the L2 cache size.
/// Library code queries the current device once (device_policy(), cached per device) and hands
/// the result to the rules; host tests of the rules pass an explicit policy instead. The rules'
/// constants are in waves, so the same rule scales with the device it runs on (docs/tuning.md).
#include <cstdint>

namespace krysp {

/// What the rules need to know about a GPU (see the file comment).
struct DevicePolicy {
  int multiprocessors = 0;             ///< streaming multiprocessors (cudaDevAttrMultiProcessorCount)
  int threads_per_multiprocessor = 0;  ///< most resident threads per multiprocessor
  std::int64_t l2_bytes = 0;           ///< L2 cache size in bytes (0: none)
  /// Threads resident on the whole GPU at once: one wave.
  constexpr std::int64_t resident_threads() const { return std::int64_t(multiprocessors) * threads_per_multiprocessor; }
  /// Same properties.
  constexpr bool operator==(const DevicePolicy& o) const {
    return multiprocessors == o.multiprocessors && threads_per_multiprocessor == o.threads_per_multiprocessor &&
           l2_bytes == o.l2_bytes;
  }
};

/// The current CUDA device's policy, queried (cudaDeviceGetAttribute) on the first call for each
/// device and cached. DeviceError without a device.
DevicePolicy device_policy();

}  // namespace krysp
