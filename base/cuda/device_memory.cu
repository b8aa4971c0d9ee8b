#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/parallel_copy.hpp"
#include "krysp/base/device_memory.hpp"

namespace krysp {

namespace {
/// A live krysp allocation: the bytes asked for (device_bytes_allocated(), the test limit), the
/// bytes cudaMalloc'd (a size class when cacheable), and its device.
struct Allocation {
  std::size_t bytes = 0, capacity = 0;
  int device = 0;
  bool cacheable = false;  ///< returned to the cache when freed (if the cache has room)
};
/// Live krysp allocations and the cache of freed blocks (see device_alloc below).
struct AllocationTable {
  std::mutex mutex;
  std::unordered_map<void*, Allocation> live;
  std::size_t total = 0;
  /// (device, size class) -> freed blocks of that class (never empty: a class goes when its last
  /// block is taken, so a device's largest class is the entry before {device + 1, 0}), and the
  /// bytes cached per device
  std::map<std::pair<int, std::size_t>, std::vector<void*>> cached;
  std::unordered_map<int, std::size_t> cached_bytes;
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

std::size_t device_bytes_cached() {
  AllocationTable& t = allocations();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::size_t sum = 0;
  for (const auto& [dev, bytes] : t.cached_bytes) sum += bytes;
  return sum;
}

namespace {
/// cudaFree of every cached block (caller holds t.mutex).
void flush_cache(AllocationTable& t) {
  for (auto& [key, blocks] : t.cached)
    for (void* p : blocks) cudaFree(p);
  t.cached.clear();
  t.cached_bytes.clear();
}

bool cache_enabled() {
  static const bool on = [] {
    const char* v = std::getenv(kDeviceCacheEnv);
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

bool cacheable(std::size_t bytes) { return cache_enabled() && bytes <= kDeviceCacheMaxBlock; }

/// The bytes cudaMalloc'd for a request: four size classes per power of two (at most 25% more)
/// for cacheable blocks, so that blocks of nearby sizes are reused; the request itself otherwise.
std::size_t capacity_for(std::size_t bytes) {
  if (!cacheable(bytes)) return bytes;
  if (bytes <= 512) return 512;
  const int k = 63 - __builtin_clzll(bytes - 1);  // 2^k < bytes <= 2^(k+1)
  const std::size_t step = std::size_t(1) << (k - 2);
  return (bytes + step - 1) / step * step;
}
}  // namespace

void release_device_cache() {
  AllocationTable& t = allocations();
  std::lock_guard<std::mutex> lock(t.mutex);
  flush_cache(t);
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
namespace {
// Large host<->device copies go through pinned buffers: the host copies chunk k into one while the
// DMA engine moves the chunks before it from the others. A plain cudaMemcpy from pageable memory
// was several times slower than that, which made uploading right-hand sides cost more than
// solving (docs/tuning.md, "Staged host-device copies"). With two buffers and a single-threaded
// memcpy the host side was the limit, so each chunk's memcpy is split over a few threads
// (parallel_copy.hpp), and four buffers let the DMA run ahead of (d2h) or behind (h2d) the
// host by three chunks, absorbing the jitter of either side. 64 MiB pinned per device, made once
// per device and kept until exit.
constexpr std::size_t kStageChunk = std::size_t(16) << 20;  // bytes per pinned buffer
constexpr int kStageBuffers = 4;
constexpr std::size_t kStagedCopyMin = std::size_t(1) << 20;  // smaller copies: cudaMemcpy
struct Staging {
  void* buf[kStageBuffers] = {};
  cudaEvent_t done[kStageBuffers] = {};  // the last DMA through each buffer
};
std::mutex& staging_mutex() {
  static std::mutex* m = new std::mutex;  // never destroyed: copies may run at exit
  return *m;
}
/// The current device's staging buffers (caller holds staging_mutex()), or nullptr when pinned
/// memory cannot be had (then copies go through cudaMemcpy as before).
Staging* staging() {
  static auto* by_device = new std::unordered_map<int, Staging*>;
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  auto it = by_device->find(dev);
  if (it != by_device->end()) return it->second;
  auto* st = new Staging;
  for (int k = 0; k < kStageBuffers; ++k) {
    if (cudaHostAlloc(&st->buf[k], kStageChunk, cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&st->done[k], cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      for (int j = 0; j <= k; ++j) {
        if (st->buf[j]) cudaFreeHost(st->buf[j]);
        if (st->done[j]) cudaEventDestroy(st->done[j]);
      }
      delete st;
      st = nullptr;
      break;
    }
  }
  return (*by_device)[dev] = st;
}
void staged_to_device(char* dst, const char* src, std::size_t bytes, Staging& st) {
  const int threads = copy_threads();
  for (std::size_t off = 0, c = 0; off < bytes; off += kStageChunk, ++c) {
    const int k = int(c % kStageBuffers);
    const std::size_t len = std::min(kStageChunk, bytes - off);
    KRYSP_CUDA_CHECK(cudaEventSynchronize(st.done[k]));  // the DMA that last read this buffer is done
    parallel_memcpy(st.buf[k], src + off, len, threads);
    KRYSP_CUDA_CHECK(cudaMemcpyAsync(dst + off, st.buf[k], len, cudaMemcpyHostToDevice, 0));
    KRYSP_CUDA_CHECK(cudaEventRecord(st.done[k], 0));
  }
  KRYSP_CUDA_CHECK(cudaStreamSynchronize(0));  // as cudaMemcpy: on the device, for every stream, on return
}
void staged_to_host(char* dst, const char* src, std::size_t bytes, Staging& st) {
  const int threads = copy_threads();
  const std::size_t chunks = (bytes + kStageChunk - 1) / kStageChunk;
  auto start = [&](std::size_t c) {  // DMA chunk c into its buffer, after all work queued before
    const std::size_t off = c * kStageChunk;
    const int k = int(c % kStageBuffers);
    KRYSP_CUDA_CHECK(cudaMemcpyAsync(st.buf[k], src + off, std::min(kStageChunk, bytes - off),
                                     cudaMemcpyDeviceToHost, 0));
    KRYSP_CUDA_CHECK(cudaEventRecord(st.done[k], 0));
  };
  for (std::size_t c = 0; c < chunks && c < std::size_t(kStageBuffers); ++c) start(c);
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t off = c * kStageChunk;
    KRYSP_CUDA_CHECK(cudaEventSynchronize(st.done[c % kStageBuffers]));
    parallel_memcpy(dst + off, st.buf[c % kStageBuffers], std::min(kStageChunk, bytes - off), threads);
    if (c + kStageBuffers < chunks) start(c + kStageBuffers);  // into the buffer just emptied
  }
}
}  // namespace

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
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  const std::size_t capacity = capacity_for(bytes);
  std::lock_guard<std::mutex> lock(t.mutex);
  void* p = nullptr;
  if (auto it = t.cached.find({dev, capacity}); it != t.cached.end()) {
    p = it->second.back();  // reuse: work queued on it before its free runs first (one stream)
    it->second.pop_back();
    if (it->second.empty()) t.cached.erase(it);
    t.cached_bytes[dev] -= capacity;
  } else {
    cudaError_t err = cudaMalloc(&p, capacity);
    if (err == cudaErrorMemoryAllocation && !t.cached.empty()) {  // give the cache back, try again
      cudaGetLastError();
      flush_cache(t);
      err = cudaMalloc(&p, capacity);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      std::size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      KRYSP_THROW(DeviceError, "cannot allocate ", bytes, " bytes of device memory (", free_b,
                  " bytes free of ", total_b, "): ", cudaGetErrorString(err));
    }
  }
  t.live[p] = {bytes, capacity, dev, cacheable(bytes)};
  t.total += bytes;
  return p;
}
void device_free(void* p) noexcept {
  if (!p) return;
  AllocationTable& t = allocations();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto it = t.live.find(p);
  if (it == t.live.end()) {  // not ours (cannot happen through DeviceArray): free it as before
    cudaFree(p);
    return;
  }
  const Allocation a = it->second;
  t.live.erase(it);
  t.total -= a.bytes;
  if (!a.cacheable) {
    cudaFree(p);
    return;
  }
  // A full cache makes room by giving back its largest blocks on this device: blocks left from
  // an earlier, larger problem must not keep every later block from being cached (a run of small
  // solves after a large one would pay cudaFree and cudaMalloc for each block again).
  std::size_t& cached = t.cached_bytes[a.device];
  while (cached + a.capacity > kDeviceCacheMaxBytes) {
    auto largest = t.cached.lower_bound({a.device + 1, 0});  // just past this device's classes
    if (largest == t.cached.begin() || (--largest)->first.first != a.device) break;  // none cached here
    cudaFree(largest->second.back());
    largest->second.pop_back();
    cached -= largest->first.second;
    if (largest->second.empty()) t.cached.erase(largest);
  }
  if (cached + a.capacity <= kDeviceCacheMaxBytes) {
    t.cached[{a.device, a.capacity}].push_back(p);
    cached += a.capacity;
    return;
  }
  cudaFree(p);
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes >= kStagedCopyMin) {
    std::lock_guard<std::mutex> lock(staging_mutex());
    if (Staging* st = staging()) return staged_to_device(static_cast<char*>(dst), static_cast<const char*>(src), bytes, *st);
  }
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) g_d2h_copies.fetch_add(1, std::memory_order_relaxed);
  if (bytes >= kStagedCopyMin) {
    std::lock_guard<std::mutex> lock(staging_mutex());
    if (Staging* st = staging()) return staged_to_host(static_cast<char*>(dst), static_cast<const char*>(src), bytes, *st);
  }
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void copy_device_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes) KRYSP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}
void* mapped_alloc(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();
    KRYSP_THROW(DeviceError, "cannot allocate ", bytes, " bytes of mapped page-locked host memory: ",
                cudaGetErrorString(err));
  }
  return p;
}
void mapped_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}
void wait_for_mapped_results() {
  g_d2h_copies.fetch_add(1, std::memory_order_relaxed);
  KRYSP_CUDA_CHECK(cudaStreamSynchronize(0));
}
void device_memset_zero(void* p, std::size_t bytes) {
  if (bytes) KRYSP_CUDA_CHECK(cudaMemset(p, 0, bytes));
}
}  // namespace detail
}  // namespace krysp
