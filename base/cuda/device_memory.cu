#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "base/cuda/check.cuh"
#include "base/device_memory.hpp"

namespace krysp {

namespace {
/// Live krysp allocations (pointer -> bytes), for device_bytes_allocated() and the test limit.
struct AllocationTable {
  std::mutex mutex;
  std::unordered_map<void*, std::size_t> sizes;
  std::size_t total = 0;
};
AllocationTable& allocations() {
  static AllocationTable* t = new AllocationTable;  // never destroyed: frees may run at exit
  return *t;
}

/// The KRYSP_DEVICE_MEMORY_LIMIT test hook: the limit in bytes, or 0 when unset or unparsable.
std::size_t test_memory_limit() {
  const char* v = std::getenv(kDeviceMemoryLimitEnv);
  if (!v || !*v) return 0;
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  return x == 0 ? 1 : std::size_t(x);  // "0" means no device memory at all
}
std::atomic<std::uint64_t> g_d2h_copies{0};
}  // namespace

std::uint64_t device_to_host_copies() { return g_d2h_copies.load(std::memory_order_relaxed); }

std::size_t device_bytes_allocated() {
  AllocationTable& t = allocations();
  std::lock_guard<std::mutex> lock(t.mutex);
  return t.total;
}

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error so later checks are not confused
    return false;
  }
  return count > 0;
}

std::string cuda_device_name() {
  if (!cuda_device_available()) return "none";
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  KRYSP_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return prop.name;
}

void cuda_memory_info(std::size_t& free_bytes, std::size_t& total_bytes) {
  KRYSP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
}

void cuda_synchronize() { KRYSP_CUDA_CHECK(cudaDeviceSynchronize()); }

void throw_device_size_mismatch(std::size_t have, std::size_t want) {
  KRYSP_THROW(InputError, "device array holds ", have, " elements but ", want, " were asked for");
}

namespace detail {
void* device_alloc(std::size_t bytes) {
  AllocationTable& t = allocations();
  if (const std::size_t limit = test_memory_limit(); limit > 0) {
    std::size_t in_use = 0;
    {
      std::lock_guard<std::mutex> lock(t.mutex);
      in_use = t.total;
    }
    if (bytes > limit || in_use > limit - bytes) {
      const std::size_t free_b = limit > in_use ? limit - in_use : 0;
      KRYSP_THROW(DeviceError, "cannot allocate ", bytes, " bytes of device memory (", free_b, " bytes free of ",
                  limit, ", limited by ", kDeviceMemoryLimitEnv, "): out of memory");
    }
  }
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    KRYSP_THROW(DeviceError, "cannot allocate ", bytes, " bytes of device memory (", free_b,
                " bytes free of ", total_b, "): ", cudaGetErrorString(err));
  }
  std::lock_guard<std::mutex> lock(t.mutex);
  t.sizes[p] = bytes;
  t.total += bytes;
  return p;
}
void device_free(void* p) noexcept {
  if (!p) return;
  cudaFree(p);
  AllocationTable& t = allocations();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (auto it = t.sizes.find(p); it != t.sizes.end()) {
    t.total -= it->second;
    t.sizes.erase(it);
  }
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) g_d2h_copies.fetch_add(1, std::memory_order_relaxed);
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void copy_device_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
void device_memset_zero(void* p, std::size_t bytes) {
  if (bytes) KRYSP_CUDA_CHECK(cudaMemset(p, 0, bytes));
}
}  // namespace detail
}  // namespace krysp
