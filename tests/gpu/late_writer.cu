#include "gpu/late_writer.hpp"

#include <cstdint>

#include "krysp/base/cuda/launch.cuh"

namespace krysp::test {

namespace {

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void copy_grid_stride(const double* src, double* dst, std::size_t n) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void late_copy_kernel(const double* src, double* dst, std::size_t n, int delay_us) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
  wait_for_previous_kernel();
  const std::uint64_t until = now_ns() + std::uint64_t(delay_us) * 1000;
  while (now_ns() < until) {
  }
  copy_grid_stride(src, dst, n);
}

__global__ void copy_kernel(const double* src, double* dst, std::size_t n) { copy_grid_stride(src, dst, n); }

}  // namespace

void late_copy(const double* src, double* dst, std::size_t n, int delay_us) {
  // launched overlapped too: it must not overwrite dst while the kernel before it reads it
  launch_overlapped("late_copy_kernel", late_copy_kernel, 64, 256, nullptr, src, dst, n, delay_us);
}

void copy_without_waiting(const double* src, double* dst, std::size_t n) {
  launch_overlapped("copy_kernel", copy_kernel, 64, 256, nullptr, src, dst, n);
}

bool device_overlaps_launches() {
  int dev = 0, major = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  KRYSP_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

}  // namespace krysp::test
