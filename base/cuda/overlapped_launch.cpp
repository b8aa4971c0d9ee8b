// The process-wide overlapped-launch setting (base/overlapped_launch.hpp) and the per-device check.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"

namespace krysp {

namespace {

bool from_environment() {
  const char* v = std::getenv("KRYSP_OVERLAPPED_LAUNCH");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::atomic<bool>& setting() {
  static std::atomic<bool> on{from_environment()};
  return on;
}

constexpr int kMaxDevices = 64;
// Per device: 0 = not asked yet, 1 = compute capability below 9.0, 2 = 9.0 or newer.
std::atomic<int> g_support[kMaxDevices] = {};

}  // namespace

void set_overlapped_launch(bool on) { setting().store(on); }

bool overlapped_launch() { return setting().load(); }

namespace detail {

bool overlapped_launch_active() {
  if (!setting().load(std::memory_order_relaxed)) return false;
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= kMaxDevices) return false;
  int s = g_support[dev].load(std::memory_order_relaxed);
  if (s == 0) {
    int major = 0;
    KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    s = major >= 9 ? 2 : 1;
    g_support[dev].store(s, std::memory_order_relaxed);
  }
  return s == 2;
}

}  // namespace detail

}  // namespace krysp
