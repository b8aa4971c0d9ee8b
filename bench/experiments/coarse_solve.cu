// Experiment (not built by CMake): what does the AMG coarse solve cost on the GPU, two cuBLAS
// triangular solves with the Cholesky factor against one product with the explicit inverse
// (cuBLAS gemv and symv, and a warp-a-row kernel like amg_dense_apply)? 100 calls replayed from
// a CUDA graph, median of 11 replays, µs a call; an empty kernel gives the floor. Each product is
// checked against the triangular solves (relative max difference).
// Build: nvcc -O3 -arch=sm_90 -std=c++17 coarse_solve.cu -lcublas -o coarse_solve
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

__global__ void empty_kernel(double* x) {
  if (threadIdx.x == 0 && x[0] == 12345.0) x[0] = 1;
}

// y = X·b, a warp a row, lanes over k, a fixed butterfly (as amg_dense_apply for N = 1).
__global__ void warp_row_kernel(int n, const double* X, const double* b, double* y) {
  const long i = (long(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= n) return;
  double s = 0;
  for (int k = lane; k < n; k += 32) s = fma(X[i * n + k], b[k], s);
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) y[i] = s;
}

int main() {
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t st;
  cudaStreamCreate(&st);
  cublasSetStream(h, st);
  const double one = 1.0, zero = 0.0;
  for (int n : {30, 60, 120, 200, 500, 1000, 2000}) {
    // L lower (row-major), well conditioned; read column-major it is U = Lᵀ, A = Uᵀ·U.
    std::vector<double> L(size_t(n) * n, 0.0), Id(size_t(n) * n, 0.0), b(n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < i; ++j) L[size_t(i) * n + j] = 0.01 * ((i * 7 + j) % 5) - 0.02;
      L[size_t(i) * n + i] = 2.0 + i % 3;
      Id[size_t(i) * n + i] = 1.0;
      b[i] = std::sin(0.37 * i) + 1.5;
    }
    double *dL, *dX, *db, *dx, *dy;
    cudaMalloc(&dL, sizeof(double) * n * n);
    cudaMalloc(&dX, sizeof(double) * n * n);
    cudaMalloc(&db, sizeof(double) * n);
    cudaMalloc(&dx, sizeof(double) * n);
    cudaMalloc(&dy, sizeof(double) * n);
    cudaMemcpy(dL, L.data(), sizeof(double) * n * n, cudaMemcpyHostToDevice);
    cudaMemcpy(dX, Id.data(), sizeof(double) * n * n, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), sizeof(double) * n, cudaMemcpyHostToDevice);
    // X = A⁻¹: Uᵀ·Y = I, U·X = Y (symmetric to rounding; gemv reads it as it is).
    cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, n, &one, dL, n, dX, n);
    cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, n, &one, dL, n, dX, n);
    auto trsv_pair = [&] {
      cudaMemcpyAsync(dx, db, sizeof(double) * n, cudaMemcpyDeviceToDevice, st);
      cublasDtrsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, dL, n, dx, 1);
      cublasDtrsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, dL, n, dx, 1);
    };
    auto gemv = [&] { cublasDgemv(h, CUBLAS_OP_N, n, n, &one, dX, n, db, 1, &zero, dy, 1); };
    auto symv = [&] { cublasDsymv(h, CUBLAS_FILL_MODE_UPPER, n, &one, dX, n, db, 1, &zero, dy, 1); };
    auto warp = [&] { warp_row_kernel<<<(n * 32 + 255) / 256, 256, 0, st>>>(n, dX, db, dy); };
    auto empty = [&] { empty_kernel<<<1, 32, 0, st>>>(dy); };
    auto time_graph = [&](const std::function<void()>& body) {
      cudaGraph_t g;
      cudaGraphExec_t e;
      cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
      for (int k = 0; k < 100; ++k) body();
      cudaStreamEndCapture(st, &g);
      cudaGraphInstantiate(&e, g, 0);
      cudaEvent_t a, z;
      cudaEventCreate(&a);
      cudaEventCreate(&z);
      std::vector<float> ts;
      for (int r = 0; r < 11; ++r) {
        cudaEventRecord(a, st);
        cudaGraphLaunch(e, st);
        cudaEventRecord(z, st);
        cudaEventSynchronize(z);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, z);
        ts.push_back(ms);
      }
      std::sort(ts.begin(), ts.end());
      cudaGraphExecDestroy(e);
      cudaGraphDestroy(g);
      return ts[5] * 1000.0 / 100.0;
    };
    auto diff = [&](const std::function<void()>& body) {  // relative max difference from the solves
      trsv_pair();
      body();
      std::vector<double> x(n), y(n);
      cudaMemcpyAsync(x.data(), dx, sizeof(double) * n, cudaMemcpyDeviceToHost, st);
      cudaMemcpyAsync(y.data(), dy, sizeof(double) * n, cudaMemcpyDeviceToHost, st);
      cudaStreamSynchronize(st);
      double d = 0, m = 0;
      for (int i = 0; i < n; ++i) d = std::max(d, std::abs(x[i] - y[i])), m = std::max(m, std::abs(x[i]));
      return d / m;
    };
    std::printf("n=%5d  trsv pair %7.2f us | gemv %6.2f us (diff %.1e) | symv %6.2f us (diff %.1e) | warp a row %6.2f us (diff %.1e) | empty kernel %5.2f us\n",
                n, time_graph(trsv_pair), time_graph(gemv), diff(gemv), time_graph(symv), diff(symv), time_graph(warp),
                diff(warp), time_graph(empty));
    cudaFree(dL);
    cudaFree(dX);
    cudaFree(db);
    cudaFree(dx);
    cudaFree(dy);
  }
  cublasDestroy(h);
  return 0;
}
