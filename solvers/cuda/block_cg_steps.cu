// Block CG's two row-wise steps (see block_cg_kernels.hpp): a thread per row, the row's values in
// registers (compile-time width S ≥ s), the coefficients passed by value as a __grid_constant__
// kernel parameter (no upload, no wait; each is an FMA's constant-bank operand in the unrolled
// loops). Rows are independent, so both steps run in place.
#include <algorithm>

#include "base/cuda/check.cuh"
#include "solvers/cuda/block_cg_kernels.hpp"

namespace krysp::detail {

namespace {
constexpr int kThreads = 256;

/// Two small column-major matrices, a[i·S + j] = A(i, j), zero outside the parts used.
template <int S>
struct TwoCoefs {
  double a[S * S];
  double b[S * S];
};
template <int S>
TwoCoefs<S> two_coefs(const double* A, index_t ar, index_t ac, const double* B, index_t br, index_t bc) {
  TwoCoefs<S> k{};
  for (index_t j = 0; j < ac; ++j)
    for (index_t i = 0; i < ar; ++i) k.a[i * S + j] = A[i + j * ar];
  for (index_t j = 0; j < bc; ++j)
    for (index_t i = 0; i < br; ++i) k.b[i * S + j] = B[i + j * br];
  return k;
}

/// v[0..count) = p[0..count), the rest 0.
template <int S>
__device__ __forceinline__ void load_row(const double* p, int count, double (&v)[S]) {
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = i < count ? p[i] : 0.0;
}

unsigned grid_for(index_t n) {
  return unsigned(std::clamp<std::int64_t>((std::int64_t(n) + kThreads - 1) / kThreads, 1, 65535));
}

// k.a = Cx (w × s), k.b = ξ (w × w)
template <int S>
__global__ void __launch_bounds__(kThreads)
    step_kernel(index_t n, int s, int w, const double* __restrict__ P, const double* __restrict__ AP,
                double* __restrict__ X, double* __restrict__ Q, double* __restrict__ Z,
                const double* __restrict__ inv_diag, const __grid_constant__ TwoCoefs<S> k) {
  for (std::int64_t row = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; row < n;
       row += std::int64_t(gridDim.x) * kThreads) {
    double p[S], ap[S];
    load_row<S>(P + row * s, w, p);
    load_row<S>(AP + row * s, w, ap);
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (j >= s) break;
      double dx = 0.0;  // Σ first, then one add: the host reference's rounding
#pragma unroll
      for (int i = 0; i < S; ++i) dx += p[i] * k.a[i * S + j];
      X[row * s + j] += dx;  // columns that do not move have zero coefficients: x + 0
    }
    const double d = inv_diag ? inv_diag[row] : 1.0;
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (j >= w) break;
      double dq = 0.0;
#pragma unroll
      for (int i = 0; i < S; ++i) dq += ap[i] * k.b[i * S + j];
      const double q = Q[row * s + j] - dq;
      Q[row * s + j] = q;
      if (Z) Z[row * s + j] = inv_diag ? d * q : q;
    }
  }
}

// k.a = Cw (w × w2), k.b = Tᵀ (w × w2)
template <int S>
__global__ void __launch_bounds__(kThreads)
    rotate_kernel(index_t n, int s, int w, int w2, double* __restrict__ Q, const double* __restrict__ Z,
                  double* __restrict__ P, const __grid_constant__ TwoCoefs<S> k) {
  for (std::int64_t row = std::int64_t(blockIdx.x) * kThreads + threadIdx.x; row < n;
       row += std::int64_t(gridDim.x) * kThreads) {
    double q[S], z[S], p[S], qn[S], pn[S];
    load_row<S>(Q + row * s, w, q);
    load_row<S>(Z + row * s, w, z);
    load_row<S>(P + row * s, w, p);
#pragma unroll
    for (int j = 0; j < S; ++j) {
      double a = 0.0, b = 0.0;
#pragma unroll
      for (int i = 0; i < S; ++i) {
        a += q[i] * k.a[i * S + j];
        b += z[i] * k.a[i * S + j] + p[i] * k.b[i * S + j];
      }
      qn[j] = a;
      pn[j] = b;
    }
#pragma unroll
    for (int j = 0; j < S; ++j) {
      if (j >= w2) break;
      Q[row * s + j] = qn[j];
      P[row * s + j] = pn[j];
    }
  }
}

/// The register width for s columns, or 0 beyond the fused steps' reach.
int step_width(index_t s) { return s <= 1 ? 1 : s <= 2 ? 2 : s <= 4 ? 4 : s <= 8 ? 8 : s <= kMaxStepCols ? 16 : 0; }
}  // namespace

bool tall_steps_fit(index_t s) { return step_width(s) > 0; }

void tall_step(index_t n, index_t s, index_t w, const double* P, const double* AP, const double* Cx, const double* xi,
               double* X, double* Q, double* Z, const double* inv_diag) {
  if (n == 0 || w == 0) return;
  const unsigned grid = grid_for(n);
#define KRYSP_STEP(W)                                                                                         \
  step_kernel<W><<<grid, kThreads>>>(n, int(s), int(w), P, AP, X, Q, Z, inv_diag,                              \
                                     two_coefs<W>(Cx, w, s, xi, w, w))
  switch (step_width(s)) {
    case 1: KRYSP_STEP(1); break;
    case 2: KRYSP_STEP(2); break;
    case 4: KRYSP_STEP(4); break;
    case 8: KRYSP_STEP(8); break;
    case 16: KRYSP_STEP(16); break;
    default: KRYSP_REQUIRE(false, "tall_step: ", s, " columns (at most ", kMaxStepCols, ")");
  }
#undef KRYSP_STEP
  KRYSP_CUDA_CHECK_LAUNCH("step_kernel");
}

void tall_rotate(index_t n, index_t s, index_t w, index_t w2, double* Q, const double* Z, double* P, const double* Cw,
                 const double* Tt) {
  if (n == 0 || w2 == 0) return;
  const unsigned grid = grid_for(n);
#define KRYSP_ROTATE(W)                                                                                       \
  rotate_kernel<W><<<grid, kThreads>>>(n, int(s), int(w), int(w2), Q, Z, P, two_coefs<W>(Cw, w, w2, Tt, w, w2))
  switch (step_width(s)) {
    case 1: KRYSP_ROTATE(1); break;
    case 2: KRYSP_ROTATE(2); break;
    case 4: KRYSP_ROTATE(4); break;
    case 8: KRYSP_ROTATE(8); break;
    case 16: KRYSP_ROTATE(16); break;
    default: KRYSP_REQUIRE(false, "tall_rotate: ", s, " columns (at most ", kMaxStepCols, ")");
  }
#undef KRYSP_ROTATE
  KRYSP_CUDA_CHECK_LAUNCH("rotate_kernel");
}

}  // namespace krysp::detail
