// The GPU AMG set-up's Lanczos (amg_device_lanczos.hpp): a launch a phase of a step, or a batch
// of steps in one block on small levels; the same arithmetic either way.
#include "krysp/precond/cuda/amg_device_lanczos.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "krysp/base/cuda/per_device.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_device_common.cuh"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/chebyshev_kernels.hpp"

namespace krysp::detail {

namespace {

// Lanczos (the host's LevelLanczos, step for step).
__global__ void k_lz_start(index_t n, double* v, double* partials) {
  double ss = 0;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double e = lanczos_start_entry(std::int64_t(i));
    v[i] = e;
    ss = __dadd_rn(ss, __dmul_rn(e, e));
  }
  const double r = block_reduce<false>(ss);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
}
__global__ void k_scale_inv(index_t n, const double* norm, double* v) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] / *norm;
}
// (j > 0: v = w/β_{j−1}, into the buffer v_prev had; the caller swapped v and v_prev first, so
// v_prev now holds the old v); u = s∘v
// rec (optional): v in float, the basis a Ritz vector is formed from.
__global__ void k_lz_advance(index_t n, bool shift, const double* beta, const double* w, double* v, const double* s,
                             double* u, float* rec) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (shift) v[i] = w[i] / *beta;
  if (s) u[i] = s[i] * v[i];  // null s: the node blocks' L⁻ᵀ follows (k_node_tri)
  if (rec) rec[i] = float(v[i]);
}
// A warm start: v = the start vector given, and the block partials of ‖v‖².
__global__ void k_lz_warm(index_t n, const float* start, double* v, double* partials) {
  double ss = 0;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double e = double(start[i]);
    v[i] = e;
    ss = __dadd_rn(ss, __dmul_rn(e, e));
  }
  const double r = block_reduce<false>(ss);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
}
// out = Σ_j c_j·basis_j (m vectors of n, one after another): the Ritz vector of the coefficients c.
__global__ void k_lz_combine(index_t n, int m, const float* basis, const double* c, float* out) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double sum = 0;
  for (int j = 0; j < m; ++j)
    sum = __dadd_rn(sum, __dmul_rn(c[j], double(basis[std::size_t(j) * std::size_t(n) + std::size_t(i)])));
  out[i] = float(sum);
}
// y = A·x, W lanes a row (W a power of two ≤ 32): lane t sums entries t, t + W, ... in order,
// then a fixed shuffle tree. Deterministic for a given W; one thread a row (W = 1) read the long
// rows of the coarse levels uncoalesced (level 1 cost as much as level 0, with 1/20 of its rows).
template <int W>
__global__ void k_spmv(index_t n, const index_t* rp, const index_t* ci, const double* va, const double* x, double* y) {
  const std::int64_t g = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t i = index_t(g / W);
  const int lane = int(g % W);
  double t = 0;
  if (i < n)
    for (index_t k = rp[i] + lane; k < rp[i + 1]; k += W) t = __dadd_rn(t, __dmul_rn(va[k], x[ci[k]]));
  for (int off = W / 2; off > 0; off >>= 1) t = __dadd_rn(t, __shfl_down_sync(0xffffffffu, t, off, W));
  if (i < n && lane == 0) y[i] = t;
}


void launch_spmv(int w, index_t n, const index_t* rp, const index_t* ci, const double* va, const double* x,
                 double* y) {
  with_lanes(w, [&](auto W) {
    k_spmv<decltype(W)::value><<<blocks_for(std::int64_t(n) * W), kThreads>>>(n, rp, ci, va, x, y);
  });
  KRYSP_CUDA_CHECK_LAUNCH("k_spmv");
}
// w = s∘y − β·v_prev (null s: y as it is, already L⁻¹·A·u); *alpha = wᵀv
__global__ void k_lz_alpha(index_t n, const double* s, const double* y, const double* beta, const double* vp,
                           bool has_prev, double* w, const double* v, double* partials, double* alpha,
                           unsigned* counter) {
  double acc = 0;
  const double b = has_prev ? *beta : 0.0;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double wi = __dsub_rn(s ? __dmul_rn(s[i], y[i]) : y[i], __dmul_rn(b, has_prev ? vp[i] : 0.0));
    w[i] = wi;
    acc = __dadd_rn(acc, __dmul_rn(wi, v[i]));
  }
  const double r = block_reduce<false>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
  finish_if_last(partials, alpha, false, counter);
}
// w −= α·v; *beta = ‖w‖
__global__ void k_lz_beta(index_t n, const double* alpha, const double* v, double* w, double* partials, double* beta,
                          unsigned* counter) {
  double acc = 0;
  const double a = *alpha;
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const double wi = __dsub_rn(w[i], __dmul_rn(a, v[i]));
    w[i] = wi;
    acc = __dadd_rn(acc, __dmul_rn(wi, wi));
  }
  const double r = block_reduce<false>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
  finish_if_last(partials, beta, true, counter);
}


/// out = L⁻¹·x node by node, or L⁻ᵀ·x when Transposed (L⁻¹ in linv, lower triangular): the
/// host's LevelLanczos::node_blocks, sum for sum.
template <bool Transposed>
__device__ __forceinline__ double node_tri_entry(index_t i, int b, const double* linv, const double* x) {
  const index_t I = i / b;
  const int r = int(i % b);
  const double* m = linv + std::size_t(I) * std::size_t(b) * std::size_t(b);
  const double* xi = x + std::size_t(I) * std::size_t(b);
  double s = 0;
  if (Transposed)
    for (int c = r; c < b; ++c) s = __dadd_rn(s, __dmul_rn(m[c * b + r], xi[c]));
  else
    for (int c = 0; c <= r; ++c) s = __dadd_rn(s, __dmul_rn(m[r * b + c], xi[c]));
  return s;
}
template <bool Transposed>
__global__ void k_node_tri(index_t n, int b, const double* linv, const double* x, double* out) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = node_tri_entry<Transposed>(i, b, linv, x);
}

// ---------------------------------------------------------------------------------------------
// A batch of Lanczos steps in one thread block, for small levels (lanczos_one_block), where the
// 5-7 launches a step of GpuLevelLanczos::steps cost more than their work: the same phases
// between barriers, with the same arithmetic, so the same bits. The SpMV keeps its W lanes a row
// and shuffle tree; the sums take the partials of the partial_blocks(n) blocks of kThreads the
// launches reduce over (a quarter of this block takes launch block 4·r + quarter in round r,
// with block_reduce's tree), then finish_partials' fold. One block waits on every load it
// makes, so each thread keeps several rows' loads in flight (kLzBlockRounds rows, kLzSpmvGroups
// row groups of the SpMV).
constexpr int kLzBlockThreads = 4 * kThreads;
constexpr int kLzBlockRounds = 4;  // rows a thread: n ≤ kLzBlockRounds·kLzBlockThreads
constexpr int kLzSpmvGroups = 4;
// One block reads the whole matrix each step (from L2): past about this many entries the
// launches' spread over the GPU is faster than the launches cost.
constexpr index_t kLzBlockMaxNnz = 65536;

bool lanczos_one_block(index_t n, index_t nnz) {
  return n <= index_t(kLzBlockRounds) * kLzBlockThreads && nnz <= kLzBlockMaxNnz;
}

// block_reduce<false>'s tree on each quarter (kThreads threads) of the block, for each round r
// < rounds at once: part[4·r + quarter] = the quarter's sum of val[r]. Every thread calls it.
__device__ void quarter_sums(const double (&val)[kLzBlockRounds], int rounds, double* red, double* part) {
  const int p = int(threadIdx.x), t = p % kThreads;
#pragma unroll
  for (int r = 0; r < kLzBlockRounds; ++r)
    if (r < rounds) red[r * kLzBlockThreads + p] = val[r];
  __syncthreads();
  for (int s = kThreads / 2; s >= 32; s >>= 1) {
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r)
      if (r < rounds && t < s) {
        double* x = red + r * kLzBlockThreads + p;
        *x = __dadd_rn(x[0], x[s]);
      }
    __syncthreads();
  }
  if (t < 32) {  // the tree's last five levels, within warp 0 of the quarter
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r)
      if (r < rounds) {
        double v = red[r * kLzBlockThreads + p];
        for (int s = 16; s > 0; s >>= 1) v = __dadd_rn(v, __shfl_down_sync(0xffffffffu, v, s));
        if (t == 0) part[4 * r + p / kThreads] = v;
      }
  }
  __syncthreads();
}

// The sum the launches form over val[r] (row r·kLzBlockThreads + threadIdx.x; 0 past n): their
// block partials, then finish_partials' fold of `grid` of them (sqrt when root). To every thread.
__device__ double lz_block_total(const double (&val)[kLzBlockRounds], int rounds, int grid, bool root, double* red,
                                 double* part, double* total) {
  const int p = int(threadIdx.x);
  quarter_sums(val, rounds, red, part);
  double fold[kLzBlockRounds] = {};
  fold[0] = p < grid ? __dadd_rn(0.0, part[p]) : 0.0;
  quarter_sums(fold, 1, red, part + 4 * kLzBlockRounds);
  if (p == 0) {
    const double t = part[4 * kLzBlockRounds];
    *total = root ? sqrt(t) : t;
  }
  __syncthreads();
  return *total;
}

// y = A·x as k_spmv<W> computes it (each lane's terms in order, the shuffle tree), kLzSpmvGroups
// row groups a thread at a time; rows of up to 2·W entries are read without a dependent loop.
// rp, x and y are in shared memory: the entries are the only loads from the GPU's memory.
template <int W>
__device__ void lz_block_spmv(index_t n, const index_t* rp, const index_t* __restrict__ ci,
                              const double* __restrict__ va, const double* x, double* y) {
  constexpr int Q = kLzSpmvGroups;
  const int lane = int(threadIdx.x) % W;
  const std::int64_t lanes = std::int64_t(n) * W;
  for (std::int64_t g0 = 0; g0 < lanes; g0 += std::int64_t(Q) * kLzBlockThreads) {
    index_t i[Q], k0[Q], e[Q];
    double t[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      i[q] = index_t((g0 + std::int64_t(q) * kLzBlockThreads + threadIdx.x) / W);
      k0[q] = i[q] < n ? rp[i[q]] + lane : 0;
      e[q] = i[q] < n ? rp[i[q] + 1] : 0;
      t[q] = 0;
    }
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const index_t k = k0[q] + m * W;
        if (k < e[q]) t[q] = __dadd_rn(t[q], __dmul_rn(va[k], x[ci[k]]));
      }
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      for (index_t k = k0[q] + 2 * W; k < e[q]; k += W) t[q] = __dadd_rn(t[q], __dmul_rn(va[k], x[ci[k]]));
      for (int off = W / 2; off > 0; off >>= 1) t[q] = __dadd_rn(t[q], __shfl_down_sync(0xffffffffu, t[q], off, W));
      if (i[q] < n && lane == 0) y[i[q]] = t[q];
    }
  }
}

struct LzBlockArgs {
  index_t n;
  int grid;  // partial_blocks(n): the blocks the launches reduce over
  const index_t *rp, *ci;
  const double* va;
  const double* s;     // D^{-1/2}, or null with linv
  const double* linv;  // the node blocks' L⁻¹ (b × b a node), or null
  int b;
  double *v, *vp, *w;  // v and v_prev before the batch's first rotation
  double* ab;          // GpuLevelLanczos's β_{−1}, α_0, β_0, ...
  double* norm;
  int first, count;    // steps first .. first + count − 1
  int start;           // before them: 0 nothing, 1 the fixed start vector, 2 `warm`
  const float* warm;
  float* basis;        // the recorded Lanczos vectors, or null
};

// Row r·kLzBlockThreads + threadIdx.x.
__device__ __forceinline__ index_t lz_row(int r) { return index_t(r) * kLzBlockThreads + index_t(threadIdx.x); }

// k_lz_block_steps' shared memory for n rows: the sums' tree, then u, y (n doubles each; the
// launches keep them in GpuLevelLanczos's u_ and y_) and A's row pointers.
std::size_t lz_block_shared_bytes(index_t n) {
  return sizeof(double) * (std::size_t(kLzBlockRounds) * kLzBlockThreads + 2 * std::size_t(n)) +
         sizeof(index_t) * (std::size_t(n) + 1);
}

// GpuLevelLanczos::start (when a.start) and steps, phase by phase: k_lz_start or k_lz_warm,
// k_finish, k_scale_inv; then each step's k_lz_advance, k_node_tri (L⁻ᵀ), k_spmv, k_node_tri
// (L⁻¹), k_lz_alpha, k_lz_beta.
template <int W>
__global__ void __launch_bounds__(kLzBlockThreads) k_lz_block_steps(LzBlockArgs a) {
  extern __shared__ double shared[];  // lz_block_shared_bytes(n)
  __shared__ double part[4 * kLzBlockRounds + 4];  // + the fold's partials
  __shared__ double total;
  const int p = int(threadIdx.x);
  const index_t n = a.n;
  double* red = shared;
  double* u = red + kLzBlockRounds * kLzBlockThreads;
  double* y = u + n;
  index_t* rp = reinterpret_cast<index_t*>(y + n);
  for (index_t i = p; i <= n; i += kLzBlockThreads) rp[i] = a.rp[i];
  __syncthreads();
  const int rounds = int((n + kLzBlockThreads - 1) / kLzBlockThreads);
  double val[kLzBlockRounds];
  if (a.start) {
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r) {
      const index_t i = lz_row(r);
      val[r] = 0;
      if (i < n) {
        const double e = a.start == 2 ? double(a.warm[i]) : lanczos_start_entry(std::int64_t(i));
        a.v[i] = e;
        val[r] = __dadd_rn(0.0, __dmul_rn(e, e));
      }
    }
    const double norm = lz_block_total(val, rounds, a.grid, true, red, part, &total);
    if (p == 0) {
      *a.norm = norm;
      a.ab[0] = 0;  // β_{−1}: no v_{−1} term at step 0
    }
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r) {
      const index_t i = lz_row(r);
      if (i < n) a.v[i] = a.v[i] / norm;
    }
  }
  double *v = a.v, *vp = a.vp;
  for (int step = a.first; step < a.first + a.count; ++step) {
    const double beta_prev = a.ab[2 * step];  // β_{j−1} (0 before step 0; written above or before)
    if (step > 0) {  // v_prev = v (by buffer); v = w/β_{j−1} below
      double* t = v;
      v = vp;
      vp = t;
    }
    float* rec = a.basis && step < kAmgLanczosRecordSteps ? a.basis + std::size_t(step) * std::size_t(n) : nullptr;
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r) {
      const index_t i = lz_row(r);
      if (i >= n) continue;
      if (step > 0) v[i] = a.w[i] / beta_prev;
      if (a.s) u[i] = a.s[i] * v[i];
      if (rec) rec[i] = float(v[i]);
    }
    __syncthreads();
    if (a.linv) {  // u = L⁻ᵀ·v
#pragma unroll
      for (int r = 0; r < kLzBlockRounds; ++r) {
        const index_t i = lz_row(r);
        if (i < n) u[i] = node_tri_entry<true>(i, a.b, a.linv, v);
      }
      __syncthreads();
    }
    lz_block_spmv<W>(n, rp, a.ci, a.va, u, y);
    __syncthreads();
    const double* sy = y;
    if (a.linv) {  // L⁻¹·y into u, free after the product
#pragma unroll
      for (int r = 0; r < kLzBlockRounds; ++r) {
        const index_t i = lz_row(r);
        if (i < n) u[i] = node_tri_entry<false>(i, a.b, a.linv, y);
      }
      __syncthreads();
      sy = u;
    }
    const bool has_prev = step > 0;
    const double bp = has_prev ? beta_prev : 0.0;
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r) {  // w = s∘y − β·v_prev; α = wᵀv
      const index_t i = lz_row(r);
      val[r] = 0;
      if (i >= n) continue;
      const double wi = __dsub_rn(a.s ? __dmul_rn(a.s[i], sy[i]) : sy[i], __dmul_rn(bp, has_prev ? vp[i] : 0.0));
      a.w[i] = wi;
      val[r] = __dadd_rn(0.0, __dmul_rn(wi, v[i]));
    }
    const double alpha = lz_block_total(val, rounds, a.grid, false, red, part, &total);
#pragma unroll
    for (int r = 0; r < kLzBlockRounds; ++r) {  // w −= α·v; β = ‖w‖
      const index_t i = lz_row(r);
      val[r] = 0;
      if (i >= n) continue;
      const double wi = __dsub_rn(a.w[i], __dmul_rn(alpha, v[i]));
      a.w[i] = wi;
      val[r] = __dadd_rn(0.0, __dmul_rn(wi, wi));
    }
    const double beta = lz_block_total(val, rounds, a.grid, true, red, part, &total);
    if (p == 0) {
      a.ab[2 * step + 1] = alpha;
      a.ab[2 * step + 2] = beta;
    }
    __syncthreads();  // ab[2·step + 2] is the next step's β_{j−1}
  }
}

// Whether this device gives k_lz_block_steps the shared memory of the largest n (set once a
// device; else the levels keep a launch a phase).
bool lz_block_available() {
  static PerDevice<bool> available;
  return available.get([](int device) {
    const std::size_t bytes = lz_block_shared_bytes(index_t(kLzBlockRounds) * kLzBlockThreads);
    if (bytes + sizeof(double) * (4 * kLzBlockRounds + 5) > std::size_t(optin_shared_bytes(device))) return false;
    for (int w = 1; w <= 32; w *= 2)
      with_lanes(w, [&](auto W) {
        KRYSP_CUDA_CHECK(cudaFuncSetAttribute(k_lz_block_steps<decltype(W)::value>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
      });
    return true;
  });
}

}  // namespace

GpuLevelLanczos::GpuLevelLanczos(const DCsr& A, const double* s, const float* warm, double old_lambda, bool record,
                                 bool one_block)
    : A_(A), s_(s), warm_(warm), old_lambda_(old_lambda), n_(A.rows), grid_(partial_blocks(A.rows)),
      lanes_(row_lanes(A.rows, A.nnz)),
      one_block_(one_block && lanczos_one_block(A.rows, A.nnz) && lz_block_available()) {
  init();
  if (record && n_ > 0) {
    const std::size_t bytes = std::size_t(kAmgLanczosRecordSteps) * std::size_t(n_) * sizeof(float);
    std::size_t free_bytes = 0, total = 0;
    cuda_memory_info(free_bytes, total);
    if (bytes <= free_bytes / 4) basis_ = DeviceArray<float>(std::size_t(kAmgLanczosRecordSteps) * std::size_t(n_));
  }
}

GpuLevelLanczos::GpuLevelLanczos(const DCsr& A, const double* linv, int b, const float* warm, double old_lambda,
                                 bool record, bool one_block)
    : GpuLevelLanczos(A, nullptr, warm, old_lambda, record, one_block) {
  linv_ = linv;
  b_ = b;
}

void GpuLevelLanczos::start() {
  step_ = 0;
  alpha_.clear();
  beta_.clear();
  if (one_block_) {  // the first batch's launch starts
    pending_start_ = warm_ ? 2 : 1;
    return;
  }
  if (warm_) {
    k_lz_warm<<<grid_, kThreads>>>(n_, warm_, v_.data(), partials_.data());
    check_launch("k_lz_warm");
  } else {
    k_lz_start<<<grid_, kThreads>>>(n_, v_.data(), partials_.data());
    check_launch("k_lz_start");
  }
  k_finish<false><<<1, kThreads>>>(grid_, partials_.data(), norm(), true);
  check_launch("k_finish");
  k_scale_inv<<<blocks_for(n_), kThreads>>>(n_, norm(), v_.data());
  check_launch("k_scale_inv");
}

void GpuLevelLanczos::steps(int count, double* alpha, double* beta) {
  KRYSP_REQUIRE(count >= 1 && step_ + count <= kAmgLanczosMaxSteps, "AMG: Lanczos steps ", step_ + 1, "..",
                step_ + count, " asked for, at most ", kAmgLanczosMaxSteps);
  const int first = step_;
  if (one_block_)
    launch_block_steps(count);
  else
    launch_steps(count);
  std::vector<double> h(2 * std::size_t(count));
  copy_to_host(h.data(), ab_.data() + 2 * first + 1, h.size() * sizeof(double));
  for (int t = 0; t < count; ++t) {
    alpha[t] = h[2 * std::size_t(t)];
    beta[t] = h[2 * std::size_t(t) + 1];
    alpha_.push_back(alpha[t]);
    beta_.push_back(beta[t]);
  }
}

int GpuLevelLanczos::first_batch() const { return warm_ ? kAmgWarmLanczosMinSteps : 8; }

int GpuLevelLanczos::min_steps(double theta) const {
  return amg::lanczos_min_steps(warm_ != nullptr, theta, old_lambda_);
}

DeviceArray<float> GpuLevelLanczos::ritz_vector(int m) const {
  const std::vector<double> c = amg::largest_ritz_coefficients(alpha_, beta_, m);
  if (basis_.size() == 0 || c.empty()) return {};
  DeviceArray<double> dc(c.size());
  dc.upload(c.data(), c.size());
  DeviceArray<float> out(static_cast<std::size_t>(n_));
  k_lz_combine<<<blocks_for(n_), kThreads>>>(n_, m, basis_.data(), dc.data(), out.data());
  check_launch("k_lz_combine");
  return out;
}

void GpuLevelLanczos::launch_steps(int count) {
  for (int t = 0; t < count; ++t, ++step_) {
    double* prev_beta = ab_.data() + 2 * step_;  // β_{j−1} (0 before step 0)
    double* a = prev_beta + 1;
    double* b = prev_beta + 2;
    if (step_ > 0) std::swap(v_, vp_);  // v_prev = v (by buffer); v is written below
    float* rec = basis_.size() > 0 && step_ < kAmgLanczosRecordSteps
                     ? basis_.data() + std::size_t(step_) * std::size_t(n_)
                     : nullptr;
    k_lz_advance<<<blocks_for(n_), kThreads>>>(n_, step_ > 0, prev_beta, w_.data(), v_.data(), s_, u_.data(), rec);
    check_launch("k_lz_advance");
    if (linv_) {  // u = L⁻ᵀ·v
      k_node_tri<true><<<blocks_for(n_), kThreads>>>(n_, b_, linv_, v_.data(), u_.data());
      check_launch("k_node_tri");
    }
    launch_spmv(lanes_, n_, A_.rp, A_.ci, A_.va, u_.data(), y_.data());
    const double* sy = y_.data();
    if (linv_) {  // L⁻¹·y into u, free after the product
      k_node_tri<false><<<blocks_for(n_), kThreads>>>(n_, b_, linv_, y_.data(), u_.data());
      check_launch("k_node_tri");
      sy = u_.data();
    }
    k_lz_alpha<<<grid_, kThreads>>>(n_, s_, sy, prev_beta, vp_.data(), step_ > 0, w_.data(), v_.data(),
                                    partials_.data(), a, counter_.data());
    check_launch("k_lz_alpha");
    k_lz_beta<<<grid_, kThreads>>>(n_, a, v_.data(), w_.data(), partials_.data(), b, counter_.data());
    check_launch("k_lz_beta");
  }
}

void GpuLevelLanczos::launch_block_steps(int count) {
  LzBlockArgs a{};
  a.n = n_;
  a.grid = grid_;
  a.rp = A_.rp;
  a.ci = A_.ci;
  a.va = A_.va;
  a.s = s_;
  a.linv = linv_;
  a.b = b_;
  a.v = v_.data();
  a.vp = vp_.data();
  a.w = w_.data();
  a.ab = ab_.data();
  a.norm = norm();
  a.first = step_;
  a.count = count;
  a.start = pending_start_;
  a.warm = warm_;
  a.basis = basis_.size() > 0 ? basis_.data() : nullptr;
  with_lanes(lanes_, [&](auto W) {
    k_lz_block_steps<decltype(W)::value><<<1, kLzBlockThreads, lz_block_shared_bytes(n_)>>>(a);
  });
  check_launch("k_lz_block_steps");
  pending_start_ = 0;
  for (int t = 0; t < count; ++t, ++step_)  // the kernel's rotation of v and v_prev
    if (step_ > 0) std::swap(v_, vp_);
}

void GpuLevelLanczos::init() {
  for (auto* a : {&v_, &vp_, &w_}) *a = DeviceArray<double>(std::size_t(std::max<index_t>(n_, 1)));
  ab_ = DeviceArray<double>(2 * std::size_t(kAmgLanczosMaxSteps) + 3);
  if (one_block_) return;  // u and y in its shared memory, no partials; it sets β_{−1} = 0
  for (auto* a : {&u_, &y_}) *a = DeviceArray<double>(std::size_t(std::max<index_t>(n_, 1)));
  partials_ = DeviceArray<double>(std::size_t(grid_));
  counter_ = DeviceArray<unsigned>(1);
  counter_.zero();
  ab_.zero();
}

double* GpuLevelLanczos::norm() { return ab_.data() + 2 * kAmgLanczosMaxSteps + 2; }

bool gpu_lanczos_one_block(index_t n, index_t nnz) { return lanczos_one_block(n, nnz) && lz_block_available(); }

}  // namespace krysp::detail
