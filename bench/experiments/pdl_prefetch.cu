// Experiment (not built by CMake): does prefetching a row's structure before griddepcontrol.wait,
// and letting the next kernel launch early (griddepcontrol.launch_dependents), shorten
// back-to-back small SpMM products replayed from a CUDA graph? A reduced lean-VDL kernel (fp64,
// one double2 a column lane, N = 2Q) on generated matrices; every mode is checked against the
// host product. Build: nvcc -O3 -arch=sm_90 -std=c++17 pdl_prefetch.cu -o pdl_prefetch
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

enum : int { kPrefetch = 1, kTriggerLate = 2, kTriggerEarly = 4, kPrefetchValues = 8, kTriggerPostWait = 16 };

__device__ __forceinline__ void wait_prev() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void trigger() { asm volatile("griddepcontrol.launch_dependents;" :::); }

template <int S, int LOG2Q, int MODE>
__global__ void __launch_bounds__(256) spmm(int rows, const int* __restrict__ rp, const int* __restrict__ ci,
                                            const double* __restrict__ va, const double* __restrict__ X, int ldx,
                                            double* __restrict__ Y, int ldy) {
  constexpr int Q = 1 << LOG2Q, P = S >> LOG2Q;
  if (MODE & kTriggerEarly) trigger();
  const long row = (long(blockIdx.x) * 256 + threadIdx.x) / S;
  const int lane = threadIdx.x % S, q = lane & (Q - 1), p = lane >> LOG2Q;
  const unsigned mask = S == 32 ? 0xffffffffu : ((1u << S) - 1) << ((threadIdx.x % 32) / S * S);
  if (row >= rows) return;
  int b = 0, e = 0, c0 = 0, c1 = 0;
  double a0 = 0, a1 = 0;
  if (MODE & kPrefetch) {
    b = __ldg(rp + row), e = __ldg(rp + row + 1);
    const int n = e - b - p;
    if (n > 0) c0 = __ldcs(ci + b + p);
    if (n > P) c1 = __ldcs(ci + b + p + P);
    if (MODE & kPrefetchValues) {
      if (n > 0) a0 = __ldcs(va + b + p);
      if (n > P) a1 = __ldcs(va + b + p + P);
    }
  }
  wait_prev();
  if (MODE & kTriggerPostWait) trigger();
  if (!(MODE & kPrefetch)) {
    b = __ldg(rp + row), e = __ldg(rp + row + 1);
    const int n = e - b - p;
    if (n > 0) c0 = __ldcs(ci + b + p);
    if (n > P) c1 = __ldcs(ci + b + p + P);
  }
  int n = e - b - p;
  if (!(MODE & kPrefetchValues)) {
    if (n > 0) a0 = __ldcs(va + b + p);
    if (n > P) a1 = __ldcs(va + b + p + P);
  }
  double2 acc = make_double2(0, 0);
  const double* xq = X + 2 * q;
  if (n > 0) {
    const double2 x0 = __ldg(reinterpret_cast<const double2*>(xq + long(c0) * ldx));
    acc.x += a0 * x0.x, acc.y += a0 * x0.y;
  }
  if (n > P) {
    const double2 x1 = __ldg(reinterpret_cast<const double2*>(xq + long(c1) * ldx));
    acc.x += a1 * x1.x, acc.y += a1 * x1.y;
  }
  for (int k = b + p + 2 * P; k < e; k += P) {  // rows longer than 2P
    const double a = __ldcs(va + k);
    const double2 x = __ldg(reinterpret_cast<const double2*>(xq + long(__ldcs(ci + k)) * ldx));
    acc.x += a * x.x, acc.y += a * x.y;
  }
  if (MODE & kTriggerLate) trigger();
#pragma unroll
  for (int s = Q; s < S; s *= 2) {
    acc.x += __shfl_xor_sync(mask, acc.x, s, S);
    acc.y += __shfl_xor_sync(mask, acc.y, s, S);
  }
  if (p == 0) *reinterpret_cast<double2*>(Y + row * ldy + 2 * q) = acc;
}

// A successor that waits first (as krysp's vector kernels do): z = y + z over rows*8 entries.
__global__ void __launch_bounds__(256) axpy(long n, const double* __restrict__ y, double* __restrict__ z) {
  wait_prev();
  const long i = long(blockIdx.x) * 256 + threadIdx.x;
  if (i < n) z[i] += y[i];
}

struct Csr {
  const char* name;
  int rows;
  std::vector<int> rp, ci;
  std::vector<double> va;
};

Csr laplace2d(const char* name, int m) {
  Csr A{name, m * m, {0}, {}, {}};
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      auto add = [&](int ii, int jj, double v) {
        if (ii >= 0 && ii < m && jj >= 0 && jj < m) A.ci.push_back(ii * m + jj), A.va.push_back(v);
      };
      add(i - 1, j, -1), add(i, j - 1, -1), add(i, j, 4), add(i, j + 1, -1), add(i + 1, j, -1);
      A.rp.push_back(int(A.ci.size()));
    }
  return A;
}

Csr random_rows(const char* name, int rows, int per_row, unsigned seed) {
  Csr A{name, rows, {0}, {}, {}};
  std::mt19937 g(seed);
  for (int i = 0; i < rows; ++i) {
    std::vector<int> c;
    while (int(c.size()) < per_row) {
      int k = int(g() % rows);
      if (std::find(c.begin(), c.end(), k) == c.end()) c.push_back(k);
    }
    std::sort(c.begin(), c.end());
    for (int k : c) A.ci.push_back(k), A.va.push_back(double(g() % 1000) / 500.0 - 1.0);
    A.rp.push_back(int(A.ci.size()));
  }
  return A;
}

using Kernel = void (*)(int, const int*, const int*, const double*, const double*, int, double*, int);

template <int S, int LOG2Q>
Kernel pick(int mode) {
  switch (mode) {
    case 0: return spmm<S, LOG2Q, 0>;
    case 1: return spmm<S, LOG2Q, 1>;
    case 2: return spmm<S, LOG2Q, 2>;
    case 3: return spmm<S, LOG2Q, 3>;
    case 4: return spmm<S, LOG2Q, 4>;
    case 5: return spmm<S, LOG2Q, 5>;
    case 9: return spmm<S, LOG2Q, 9>;
    case 11: return spmm<S, LOG2Q, 11>;
    case 13: return spmm<S, LOG2Q, 13>;
    case 16: return spmm<S, LOG2Q, 16>;
    case 17: return spmm<S, LOG2Q, 17>;
    case 25: return spmm<S, LOG2Q, 25>;
  }
  std::abort();
}

int main() {
  std::vector<Csr> mats = {laplace2d("lap2d_56", 56), random_rows("rand8192x5", 8192, 5, 1),
                           laplace2d("lap2d_128", 128), laplace2d("lap2d_400", 400)};
  const int modes[] = {0, 2, 16, 17, 11, 13, 25};
  const char* mode_name[] = {"wait-first", "trig-late", "trig-postwait", "pref+trig-postwait",
                             "pref+vals+trig-late", "pref+vals+trig-early", "pref+vals+trig-postwait"};
  constexpr int kModes = 7;
  struct Cfg {
    int S, log2q;
  } cfgs[] = {{32, 0}, {32, 2}, {8, 2}, {4, 0}};
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s\n", prop.name);
  std::printf("%-12s %-8s %-30s %10s %8s %s\n", "matrix", "cfg", "mode", "us/call", "vs-base", "maxerr");
  for (const Csr& A : mats) {
    int *drp, *dci;
    double *dva, *dX, *dY, *dZ;
    const int nnz = int(A.ci.size()), N = 8;
    CK(cudaMalloc(&drp, A.rp.size() * 4));
    CK(cudaMalloc(&dci, nnz * 4));
    CK(cudaMalloc(&dva, nnz * 8));
    CK(cudaMalloc(&dX, size_t(A.rows) * N * 8));
    CK(cudaMalloc(&dY, size_t(A.rows) * N * 8));
    CK(cudaMalloc(&dZ, size_t(A.rows) * N * 8));
    CK(cudaMemset(dZ, 0, size_t(A.rows) * N * 8));
    std::vector<double> X(size_t(A.rows) * N);
    std::mt19937 g(7);
    for (double& v : X) v = double(g() % 2000) / 1000.0 - 1.0;
    CK(cudaMemcpy(drp, A.rp.data(), A.rp.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dci, A.ci.data(), nnz * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dva, A.va.data(), nnz * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dX, X.data(), X.size() * 8, cudaMemcpyHostToDevice));
    for (const Cfg& c : cfgs) {
      const int Q = 1 << c.log2q, n_cols = 2 * Q;
      double base = 0, base_pair = 0;
      for (int mi = 0; mi < kModes; ++mi) {
        const int mode = modes[mi];
        Kernel k = c.S == 32 ? (c.log2q == 0 ? pick<32, 0>(mode) : pick<32, 2>(mode))
                             : (c.S == 8 ? pick<8, 2>(mode) : pick<4, 0>(mode));
        const unsigned grid = unsigned((long(A.rows) * c.S + 255) / 256);
        for (int pdl = (mode == 0 ? 0 : 1); pdl <= 2; ++pdl) {  // 2: alternate with axpy
          cudaLaunchAttribute attr{};
          attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
          attr.val.programmaticStreamSerializationAllowed = 1;
          cudaLaunchConfig_t cfg{};
          cfg.gridDim = grid;
          cfg.blockDim = 256;
          cfg.stream = st;
          cfg.attrs = &attr;
          cfg.numAttrs = pdl ? 1 : 0;
          cudaLaunchConfig_t acfg = cfg;
          const long nz = long(A.rows) * N;
          acfg.gridDim = unsigned((nz + 255) / 256);
          CK(cudaMemset(dY, 0xff, size_t(A.rows) * N * 8));  // NaN: every entry must be written
          cudaGraph_t gr;
          cudaGraphExec_t ge;
          CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
          for (int i = 0; i < 32; ++i) {
            CK(cudaLaunchKernelEx(&cfg, k, A.rows, drp, dci, dva, dX, N, dY, N));
            if (pdl == 2) CK(cudaLaunchKernelEx(&acfg, axpy, nz, (const double*)dY, dZ));
          }
          CK(cudaStreamEndCapture(st, &gr));
          CK(cudaGraphInstantiate(&ge, gr, 0));
          for (int w = 0; w < 20; ++w) CK(cudaGraphLaunch(ge, st));
          std::vector<float> t;
          for (int r = 0; r < 41; ++r) {
            CK(cudaEventRecord(e0, st));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms);
          }
          std::sort(t.begin(), t.end());
          const double us = t[t.size() / 2] * 1000.0 / 32;
          std::vector<double> Yh(size_t(A.rows) * N);
          CK(cudaMemcpy(Yh.data(), dY, Yh.size() * 8, cudaMemcpyDeviceToHost));
          double err = 0;
          for (int i = 0; i < A.rows; ++i)
            for (int j = 0; j < n_cols; ++j) {
              double s = 0;
              for (int k2 = A.rp[i]; k2 < A.rp[i + 1]; ++k2) s += A.va[k2] * X[size_t(A.ci[k2]) * N + j];
              const double d = std::fabs(Yh[size_t(i) * N + j] - s);
              err = std::max(err, std::isnan(d) ? 1e300 : d);
            }
          if (mode == 0 && pdl == 1) base = us;
          if (mode == 0 && pdl == 2) base_pair = us;
          char cfgname[32];
          std::snprintf(cfgname, sizeof cfgname, "s%d/q%d", c.S, Q);
          std::printf("%-12s %-8s %-30s %10.3f %8.3f %.1e\n", A.name, cfgname,
                      pdl == 0 ? "no-pdl" : pdl == 1 ? mode_name[mi] : (std::string(mode_name[mi]) + "+axpy").c_str(),
                      us, pdl == 2 ? (base_pair > 0 ? us / base_pair : 0.0) : (base > 0 ? us / base : 0.0), err);
          CK(cudaGraphExecDestroy(ge));
          CK(cudaGraphDestroy(gr));
        }
      }
    }
    cudaFree(drp), cudaFree(dci), cudaFree(dva), cudaFree(dX), cudaFree(dY), cudaFree(dZ);
  }
  return 0;
}
