#include "krysp/bench/launch_floor.hpp"

#include <chrono>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/timing.hpp"

namespace krysp::bench {

namespace {

__global__ void empty_kernel() {}

constexpr int kMaxRowNnz = 3;  // of the tridiagonal matrix below

// Thread i computes y[i] = row i of A times x: the chain of dependent loads every CSR product
// has (row_ptr, then col_idx and values, then x at that column) before its store. Unrolled over a
// fixed row length, with unconditional loads at a clamped index (rows are not empty), so that a
// row's loads are in flight together, as in any real kernel: the chain is three loads deep, not
// two per nonzero.
__global__ void csr_rows_kernel(int rows, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                                const double* __restrict__ values, const double* __restrict__ x,
                                double* __restrict__ y) {
  const int i = int(threadIdx.x);
  if (i >= rows) return;
  const int begin = row_ptr[i], end = row_ptr[i + 1];
  double s = 0;
#pragma unroll
  for (int j = 0; j < kMaxRowNnz; ++j) {
    const int k = min(begin + j, end - 1);
    const double p = values[k] * x[col_idx[k]];
    s += begin + j < end ? p : 0.0;
  }
  y[i] = s;
}

}  // namespace

LaunchFloor measure_launch_floor() {
  // 1-D Laplacian tridiag(-1, 2, -1) of 4 rows: every load the kernel makes is a real CSR access.
  constexpr int n = 4;
  const std::vector<int> row_ptr = {0, 2, 5, 8, 10}, col_idx = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
  const std::vector<double> values = {2, -1, -1, 2, -1, -1, 2, -1, -1, 2}, ones(n, 1.0);
  DeviceArray<int> rp(row_ptr.size()), ci(col_idx.size());
  DeviceArray<double> va(values.size()), x(n), y(n);
  rp.upload(row_ptr.data(), row_ptr.size());
  ci.upload(col_idx.data(), col_idx.size());
  va.upload(values.data(), values.size());
  x.upload(ones.data(), n);

  LaunchFloor f;
  f.empty_launch_ms = time_device_auto_ms([] {
    empty_kernel<<<1, 32>>>();
    KRYSP_CUDA_CHECK_LAUNCH("empty_kernel");
  });
  f.dependent_load_ms = time_device_auto_ms([&] {
    csr_rows_kernel<<<1, 32>>>(n, rp.data(), ci.data(), va.data(), x.data(), y.data());
    KRYSP_CUDA_CHECK_LAUNCH("csr_rows_kernel");
  });
  {  // host submission: wall time of a stream of empty launches (the GPU is idle when they run)
    constexpr int kLaunches = 2000;
    KRYSP_CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 32>>>();
    KRYSP_CUDA_CHECK_LAUNCH("empty_kernel");
    const auto t1 = std::chrono::steady_clock::now();
    KRYSP_CUDA_CHECK(cudaDeviceSynchronize());
    f.host_submit_ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / kLaunches;
  }
  {  // the same kernels replayed from a graph: the GPU's own cost per kernel
    constexpr int kNodes = 200;
    cudaStream_t s = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    KRYSP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    KRYSP_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kNodes; ++i) empty_kernel<<<1, 32, 0, s>>>();
    KRYSP_CUDA_CHECK_LAUNCH("empty_kernel (captured)");
    KRYSP_CUDA_CHECK(cudaStreamEndCapture(s, &g));
    KRYSP_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    // replayed on the default stream, where the timer's events are (captured on a stream of its own)
    f.graph_kernel_ms = time_device_auto_ms([&] { KRYSP_CUDA_CHECK(cudaGraphLaunch(ge, cudaStreamLegacy)); }) / kNodes;
    KRYSP_CUDA_CHECK(cudaGraphExecDestroy(ge));
    KRYSP_CUDA_CHECK(cudaGraphDestroy(g));
    KRYSP_CUDA_CHECK(cudaStreamDestroy(s));
  }
  // A times ones is (1, 0, 0, 1): the timed kernel did the work it stands for.
  std::vector<double> got(n);
  y.download(got.data(), n);
  if (got != std::vector<double>{1, 0, 0, 1})
    KRYSP_THROW(DeviceError, "measure_launch_floor: wrong SpMV result y = (", got[0], ", ", got[1], ", ", got[2], ", ",
                got[3], "), expected (1, 0, 0, 1)");
  return f;
}

}  // namespace krysp::bench
