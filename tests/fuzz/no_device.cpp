// base/device_memory.hpp without CUDA, for the fuzz targets (tests/fuzz): they parse files on the
// host and never touch a device, so every device call reports "no device".
#include "krysp/base/device_memory.hpp"

#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/amg_galerkin.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/structure_hash.hpp"

namespace krysp {

bool cuda_device_available() { return false; }
std::string cuda_device_name() { return "none"; }
void cuda_memory_info(std::size_t&, std::size_t&) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
void cuda_synchronize() {}
std::uint64_t device_to_host_copies() { return 0; }
int cuda_current_device() { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
const char* to_string(MemoryKind) { return "unknown (fuzz build)"; }
MemoryKind memory_kind(const void*, int*) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
void require_device_memory(const void*, const std::string& what) {
  KRYSP_THROW(DeviceError, "fuzz build: no CUDA device for ", what);
}
[[noreturn]] void throw_device_size_mismatch(std::size_t have, std::size_t want) {
  KRYSP_THROW(InputError, "device array of ", have, " elements cannot take ", want);
}

namespace detail {
void* device_alloc(std::size_t bytes) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device for ", bytes, " bytes"); }
void device_free(void*) noexcept {}
void copy_to_device(void*, const void*, std::size_t) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
void copy_to_host(void*, const void*, std::size_t) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
void copy_device_to_device(void*, const void*, std::size_t) {
  KRYSP_THROW(DeviceError, "fuzz build: no CUDA device");
}
void device_memset_zero(void*, std::size_t) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
// csr.cpp's device paths (trusted borrow, lazy row statistics), unreachable without a device.
DeviceStructureSummary structure_hash_device(index_t, index_t, index_t, const index_t*, const index_t*) {
  KRYSP_THROW(DeviceError, "fuzz build: no CUDA device");
}
RowStats row_stats_device(const index_t*, index_t, index_t) { KRYSP_THROW(DeviceError, "fuzz build: no CUDA device"); }
// The GPU AMG set-up's products (amg_galerkin.hpp), so that a host file that names them links.
void spgemm_numeric(index_t, const index_t*, const index_t*, const double*, index_t, index_t, const index_t*,
                    const index_t*, const double*, const index_t*, const index_t*, index_t, double*, int, int*) {
  KRYSP_THROW(DeviceError, "fuzz build: no CUDA device");
}
void prolongator_values(index_t, const index_t*, const index_t*, const double*, const double*, double, const index_t*,
                        const index_t*, const double*, const index_t*, const index_t*, double*, index_t) {
  KRYSP_THROW(DeviceError, "fuzz build: no CUDA device");
}
}  // namespace detail

}  // namespace krysp
