#pragma once
/// \file device_memory.hpp
/// RAII device memory without CUDA headers, so that host code (and public headers) can own device
/// buffers. Every call is checked; allocation failure names the bytes needed and free.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace krysp {

/// Is a usable CUDA device present? Never throws; false when the driver or device is missing.
bool cuda_device_available();
/// Name of the current CUDA device, or "none".
std::string cuda_device_name();
/// Free and total device memory in bytes (throws DeviceError when no device).
void cuda_memory_info(std::size_t& free_bytes, std::size_t& total_bytes);
/// Blocks until all device work is done; throws DeviceError on an asynchronous fault.
void cuda_synchronize();
/// The ordinal of the current CUDA device (throws DeviceError when there is none).
int cuda_current_device();

/// What a pointer points into, as the CUDA runtime sees it.
enum class MemoryKind {
  Unregistered,  ///< ordinary host memory (malloc, new, std::vector), or an address CUDA does not know
  Host,          ///< page-locked host memory (cudaMallocHost / cudaHostRegister)
  Device,        ///< device memory (cudaMalloc)
  Managed,       ///< unified memory (cudaMallocManaged)
};
/// Name of a MemoryKind ("host (unregistered)", "host (pinned)", "device", "managed").
const char* to_string(MemoryKind k);
/// The kind of memory `p` points into (cudaPointerGetAttributes); for Device and Managed memory
/// `*device` (when given) receives the device ordinal, else -1. Throws DeviceError without a
/// CUDA device.
MemoryKind memory_kind(const void* p, int* device = nullptr);
/// InputError unless p points into device memory of the current device, or managed memory:
/// "<what> = <p> is host (unregistered) memory, not device memory (...)". DeviceError without a
/// CUDA device.
void require_device_memory(const void* p, const std::string& what);

/// Bytes of device memory krysp itself holds right now (every live DeviceArray and
/// detail::device_alloc block; not cuBLAS/cuSPARSE handles). 0 without a device. For leak checks.
std::size_t device_bytes_allocated();

/// Freed device memory is cached for reuse: DeviceArray frees blocks of up to
/// kDeviceCacheMaxBlock bytes into a per-device cache of at most kDeviceCacheMaxBytes, and later
/// allocations of the same size class (four per power of two) take them back, instead of
/// cudaFree (which waits for the whole device) and cudaMalloc: together ~50 µs a block, more than
/// all the iterations of a small solve, which makes some 30 allocations. Safe because every krysp
/// kernel and copy runs on the legacy default stream: work queued on a block before its free runs
/// before any later use. A full cache gives back its largest blocks to take a new one. When
/// cudaMalloc fails, the cache is given back and the allocation retried. KRYSP_DEVICE_CACHE=0
/// (read once) turns the cache off: compute-sanitizer runs use it, as a use after free of a
/// reused block would go unseen.
inline constexpr const char* kDeviceCacheEnv = "KRYSP_DEVICE_CACHE";
/// Blocks up to 1 GiB are cached: a set-up's level arrays on a 16 M-row problem are 134 MB each, and
/// an AMG numeric re-set-up reallocates them all (cudaFree waits for the device each time).
inline constexpr std::size_t kDeviceCacheMaxBlock = std::size_t(1) << 30;
/// At most 4 GiB cached per device; krysp's own allocations take it back when cudaMalloc fails,
/// and release_device_cache() gives it to other libraries.
inline constexpr std::size_t kDeviceCacheMaxBytes = std::size_t(4) << 30;
/// Bytes held in the cache of freed blocks (all devices; not in device_bytes_allocated()).
std::size_t device_bytes_cached();
/// Gives every cached block back to the driver (cudaFree), e.g. before handing the GPU's memory
/// to another library.
void release_device_cache();

/// Device→host copies krysp has made so far in this process (detail::copy_to_host and every
/// DeviceArray::download): each one waits for the device, so this counts host synchronisations.
/// For profiles (base/phase_profile.hpp).
std::uint64_t device_to_host_copies();

/// Large host<->device copies (DeviceArray upload/download of 1 MiB or more) go through pinned
/// staging buffers, and the host side of each chunk (the memcpy into or out of pinned memory) is
/// split over a few threads: one thread's memcpy is slower than the DMA from pinned memory. The
/// environment variable KRYSP_COPY_THREADS (1 to 64, read once) sets how many threads, the
/// caller included; the default is min(4, the CPUs the process may run on), and 1 copies on the
/// caller alone.
inline constexpr const char* kCopyThreadsEnv = "KRYSP_COPY_THREADS";

/// Test hook: when the environment variable KRYSP_DEVICE_MEMORY_LIMIT is set to a number of bytes,
/// a krysp device allocation that would take krysp's live total (device_bytes_allocated()) above it
/// fails exactly as if the GPU were out of memory (DeviceError naming the bytes needed and free).
/// Read at every allocation, so tests may set and unset it at run time.
inline constexpr const char* kDeviceMemoryLimitEnv = "KRYSP_DEVICE_MEMORY_LIMIT";

namespace detail {
void* device_alloc(std::size_t bytes);  // throws DeviceError with bytes needed/available
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);
void copy_device_to_device(void* dst, const void* src, std::size_t bytes);
void device_memset_zero(void* p, std::size_t bytes);
void* mapped_alloc(std::size_t bytes);  // page-locked, mapped host memory; throws DeviceError
void mapped_free(void* p) noexcept;
/// Waits for the device's work so far, then counts it as a device→host read (device_to_host_copies).
void wait_for_mapped_results();
}  // namespace detail

namespace detail {
/// Owning, move-only storage of n elements of T from a pair of allocation functions: what
/// DeviceArray and MappedArray share.
template <class T, void* (*Alloc)(std::size_t), void (*Free)(void*) noexcept>
class OwnedArray {
 public:
  /// An empty array (no allocation).
  OwnedArray() = default;
  /// Allocates n elements, uninitialized (DeviceError naming the bytes needed and free).
  explicit OwnedArray(std::size_t n) : n_(n) {
    if (n > 0) p_ = static_cast<T*>(Alloc(n * sizeof(T)));
  }
  ~OwnedArray() { Free(p_); }
  OwnedArray(const OwnedArray&) = delete;
  OwnedArray& operator=(const OwnedArray&) = delete;
  /// Takes o's memory; o becomes empty.
  OwnedArray(OwnedArray&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  /// Frees this array's memory and takes o's; o becomes empty.
  OwnedArray& operator=(OwnedArray&& o) noexcept {
    if (this != &o) {
      Free(p_);
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  /// The pointer (null when empty).
  T* data() { return p_; }
  /// The pointer (null when empty).
  const T* data() const { return p_; }
  /// Number of elements.
  std::size_t size() const { return n_; }

 protected:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};
}  // namespace detail

/// An owning, move-only array in device memory.
template <class T>
class DeviceArray : public detail::OwnedArray<T, detail::device_alloc, detail::device_free> {
  using Base = detail::OwnedArray<T, detail::device_alloc, detail::device_free>;
  using Base::n_;
  using Base::p_;

 public:
  /// DeviceArray() empty, DeviceArray(n): n elements, uninitialized (DeviceError naming the bytes).
  using Base::Base;
  /// Copies n host elements to the start of the array (InputError when n > size()).
  void upload(const T* host, std::size_t n) { detail::copy_to_device(p_, host, checked(n) * sizeof(T)); }
  /// Copies the first n elements to host memory (InputError when n > size()); blocks.
  void download(T* host, std::size_t n) const { detail::copy_to_host(host, p_, checked(n) * sizeof(T)); }
  /// Copies all of o into the start of this array on the device (InputError when o is longer).
  void copy_from(const DeviceArray& o) { detail::copy_device_to_device(p_, o.p_, checked(o.n_) * sizeof(T)); }
  /// Sets every byte to zero.
  void zero() { detail::device_memset_zero(p_, n_ * sizeof(T)); }

 private:
  std::size_t checked(std::size_t n) const;
};

/// A small owning array of page-locked host memory mapped into the device's address space:
/// kernels write their results straight into it, and the host reads them after
/// wait_for_mapped_results(), with no copy to launch and wait for (a cudaMemcpy of a few hundred
/// bytes costs about as much as a short kernel). For per-iteration scalars, not for bulk data:
/// every device access crosses the bus. data() is valid on the host and (unified addressing) on
/// the device.
template <class T>
class MappedArray : public detail::OwnedArray<T, detail::mapped_alloc, detail::mapped_free> {
 public:
  /// MappedArray() empty, MappedArray(n): n elements, uninitialized (DeviceError when
  /// page-locked memory cannot be had).
  using detail::OwnedArray<T, detail::mapped_alloc, detail::mapped_free>::OwnedArray;
};

/// Throws the InputError of a DeviceArray copy longer than the array (kept out of line).
[[noreturn]] void throw_device_size_mismatch(std::size_t have, std::size_t want);

template <class T>
std::size_t DeviceArray<T>::checked(std::size_t n) const {
  if (n > n_) throw_device_size_mismatch(n_, n);
  return n;
}

}  // namespace krysp
