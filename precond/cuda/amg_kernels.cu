// The device V-cycle's copies and updates, and its coarse solve: a product with the coarse
// inverse, formed once from the Cholesky factor. A coarsest level that fits one block's shared
// memory is factored and inverted there (small_cholesky.cu); a larger one by cuSOLVER and cuBLAS.
#include <cublas_v2.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/cuda/recycle_pool.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"
#include "krysp/precond/cuda/small_cholesky.hpp"

#define KRYSP_AMG_CUBLAS(call)                                                                          \
  do {                                                                                                   \
    const cublasStatus_t krysp_st_ = (call);                                                             \
    if (krysp_st_ != CUBLAS_STATUS_SUCCESS)                                                              \
      KRYSP_THROW(::krysp::DeviceError, "AMG coarse solve: " #call " failed: ", cublasGetStatusName(krysp_st_), \
                  " (", cublasGetStatusString(krysp_st_), ")");                                        \
  } while (0)

#define KRYSP_AMG_CUSOLVER(call)                                                                    \
  do {                                                                                               \
    const cusolverStatus_t krysp_st_ = (call);                                                       \
    if (krysp_st_ != CUSOLVER_STATUS_SUCCESS)                                                        \
      KRYSP_THROW(::krysp::DeviceError, "AMG coarse factor: " #call " failed: cusolverStatus_t ",   \
                  int(krysp_st_));                                                                   \
  } while (0)

namespace krysp::detail {

namespace {
constexpr int kBlock = 256;

unsigned grid_for(std::int64_t total) {
  return unsigned(std::min<std::int64_t>(std::max<std::int64_t>(1, (total + kBlock - 1) / kBlock), 1 << 16));
}

template <class I, class O>
__global__ void __launch_bounds__(kBlock)
    amg_copy_kernel(index_t n, index_t N, const I* __restrict__ X, index_t ldx, O* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, c = t - i * N;
    Y[i * ldy + c] = O(X[i * ldx + c]);
  }
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    amg_add_kernel(index_t n, index_t N, const T* __restrict__ X, index_t ldx, T* __restrict__ Y, index_t ldy) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, c = t - i * N;
    Y[i * ldy + c] += X[i * ldx + c];
  }
}

// Entry (a, b) of XᵀY by block a·K + b: each thread sums a fixed set of rows, then block_sum's tree.
template <class T>
__global__ void __launch_bounds__(kBlock) amg_block_gram_kernel(index_t n, int K, const T* __restrict__ X,
                                                                const T* __restrict__ Y, double* __restrict__ G) {
  __shared__ double shared[1][kBlock / 32];
  const int a = int(blockIdx.x) / K, b = int(blockIdx.x) % K;
  double v[1] = {0.0};
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) v[0] += double(X[i * K + a]) * double(Y[i * K + b]);
  block_sum<1, kBlock>(v, shared);
  if (threadIdx.x == 0) G[std::size_t(b) * K + std::size_t(a)] = v[0];
}

struct SmallMatrix {
  double c[kAmgMaxNearNullspace * kAmgMaxNearNullspace];
};

template <class T>
__global__ void __launch_bounds__(kBlock) amg_block_transform_kernel(index_t n, int K, SmallMatrix C, T* X) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    double row[kAmgMaxNearNullspace];
    for (int a = 0; a < K; ++a) row[a] = double(X[i * K + a]);
    for (int b = 0; b < K; ++b) {
      double s = 0;
      for (int a = 0; a < K; ++a) s += row[a] * C.c[b * K + a];
      X[i * K + b] = T(s);
    }
  }
}

// A warp a row i of Y = X·B: lane t sums X[i][k]·B[k][c] over k ≡ t (mod 32) in k's order, then
// a fixed butterfly across the lanes; column after column.
template <class T>
__global__ void __launch_bounds__(kBlock) amg_dense_apply_kernel(index_t n, const double* __restrict__ X, index_t N,
                                                                 const T* __restrict__ B, index_t ldb, T* Y,
                                                                 index_t ldy, bool add) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t i = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = int(threadIdx.x % 32);
  if (i >= n) return;  // whole warps leave together
  const double* xi = X + i * n;
  for (index_t c = 0; c < N; ++c) {
    double s = 0;
    for (index_t k = lane; k < n; k += 32) s = fma(xi[k], double(B[std::int64_t(k) * ldb + c]), s);
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) Y[i * ldy + c] = add ? T(double(Y[i * ldy + c]) + s) : T(s);
  }
}

__global__ void __launch_bounds__(kBlock) identity_kernel(index_t n, double* E) {
  const std::int64_t total = std::int64_t(n) * n;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x)
    E[t] = t / n == t % n ? 1.0 : 0.0;
}

// Out = (X + Xᵀ)/2: entries (i, j) and (j, i) get the same sum (a + b = b + a), so Out is exactly
// symmetric.
__global__ void __launch_bounds__(kBlock) symmetrize_kernel(index_t n, const double* __restrict__ X,
                                                            double* __restrict__ out) {
  const std::int64_t total = std::int64_t(n) * n;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / n, j = t % n;
    out[t] = 0.5 * (X[t] + X[j * n + i]);
  }
}

// D = P as a dense n × nc matrix, COLUMN-MAJOR (cuBLAS's layout), zeros elsewhere: a thread a
// row.
template <class T>
__global__ void __launch_bounds__(kBlock) densify_kernel(index_t n, const index_t* __restrict__ rp,
                                                         const index_t* __restrict__ ci, const T* __restrict__ va,
                                                         double* __restrict__ D) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    for (index_t k = rp[i]; k < rp[i + 1]; ++k) D[std::int64_t(ci[k]) * n + i] = double(va[k]);
}

__global__ void init_flags_kernel(int* flags, int count, int a, int b) {
  flags[0] = a;
  flags[1] = b;
  for (int i = 2; i < count; ++i) flags[i] = 0;
}

// The symmetric matrix in CSR as a dense n × n matrix (row-major; zeros set before), and its
// diagonal apart: a warp a row (a coarse row has ~n entries).
__global__ void __launch_bounds__(kBlock) densify_rows_kernel(index_t n, const index_t* __restrict__ rp,
                                                              const index_t* __restrict__ ci,
                                                              const double* __restrict__ va, double* __restrict__ D,
                                                              double* __restrict__ diag) {
  const int lane = int(threadIdx.x % 32);
  for (std::int64_t i = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x / 32) {  // whole warps loop and leave together
    double d = 0;  // the diagonal in one lane at most: the sum below is that entry exactly
    for (index_t k = rp[i] + lane; k < rp[i + 1]; k += 32) {
      D[i * n + ci[k]] = va[k];
      if (ci[k] == i) d = va[k];
    }
    for (int off = 16; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
    if (lane == 0) diag[i] = d;
  }
}

// The first pivot amg::cholesky would refuse or pin: d_j = L_jj² not above
// amg::pivot_zero_level, or not finite. potrf stops at a pivot that is not
// positive (*info = its row + 1) and leaves the rows after it unfactored, so rows past it are
// not read. One block: the maximum diagonal first.
__global__ void __launch_bounds__(kBlock) pivot_check_kernel(index_t n, const double* __restrict__ LX,
                                                             const double* __restrict__ diag, int* flags) {
  double amax = 0;
  for (index_t j = index_t(threadIdx.x); j < n; j += kBlock) amax = fmax(amax, fabs(diag[j]));
  amax = block_max<kBlock>(amax);
  const int info = flags[0];
  for (index_t j = index_t(threadIdx.x); j < n; j += kBlock) {
    if (info > 0 && j >= info - 1) {
      if (j == info - 1) atomicMin(flags + 1, int(j));
      continue;
    }
    const double l = LX[std::int64_t(j) * n + j], d = l * l;
    if (!(d > amg::pivot_zero_level(diag[j], n, amax)) || !isfinite(d)) atomicMin(flags + 1, int(j));
  }
}

}  // namespace

template <class T>
void amg_dense_apply(index_t n, const double* X, index_t N, const T* B, index_t ldb, T* Y, index_t ldy, bool add,
                     DeviceStream stream) {
  if (n == 0 || N == 0) return;
  launch_overlapped("amg_dense_apply_kernel", amg_dense_apply_kernel<T>, grid_for(std::int64_t(n) * 32), kBlock,
                    cuda_stream(stream), n, X, N, B, ldb, Y, ldy, add);
}

template <class I, class O>
void amg_copy(index_t n, index_t N, const I* X, index_t ldx, O* Y, index_t ldy, DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  launch_overlapped("amg_copy_kernel", amg_copy_kernel<I, O>, grid_for(total), kBlock, cuda_stream(stream), n, N, X,
                    ldx, Y, ldy);
}

template <class T>
void amg_add(index_t n, index_t N, const T* X, index_t ldx, T* Y, index_t ldy, DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  launch_overlapped("amg_add_kernel", amg_add_kernel<T>, grid_for(total), kBlock, cuda_stream(stream), n, N, X, ldx,
                    Y, ldy);
}

template <class T>
void amg_block_gram(index_t n, int K, const T* X, const T* Y, double* G) {
  KRYSP_REQUIRE(K >= 1 && K <= kAmgMaxNearNullspace, "AMG: a Gram matrix of ", K, " columns");
  DeviceArray<double> g(std::size_t(K) * std::size_t(K));
  amg_block_gram_kernel<T><<<unsigned(K * K), kBlock>>>(n, K, X, Y, g.data());
  KRYSP_CUDA_CHECK_LAUNCH("amg_block_gram_kernel");
  g.download(G, g.size());
}

template <class T>
void amg_block_transform(index_t n, int K, const double* C, T* X) {
  KRYSP_REQUIRE(K >= 1 && K <= kAmgMaxNearNullspace, "AMG: a transform of ", K, " columns");
  if (n == 0) return;
  SmallMatrix c{};
  for (int k = 0; k < K * K; ++k) c.c[k] = C[k];
  amg_block_transform_kernel<T><<<grid_for(n), kBlock>>>(n, K, c, X);
  KRYSP_CUDA_CHECK_LAUNCH("amg_block_transform_kernel");
}

namespace {
/// The handles of destroyed AmgCoarseSolvers, kept for the next one on the same device: creating
/// them (cublasCreate, cusolverDnCreate) took 0.2-0.3 ms of every DeviceAmg set-up, as much as
/// a small matrix's coarse level costs.
struct RecycledHandles {
  int device;
  void* blas;
  void* solver;
};
using HandlePool = RecyclePool<RecycledHandles, 4>;
}  // namespace

void amg_init_flags(int* flags, int count, int a, int b) {
  init_flags_kernel<<<1, 1>>>(flags, count, a, b);
  KRYSP_CUDA_CHECK_LAUNCH("init_flags_kernel");
}

AmgCoarseSolver::AmgCoarseSolver() {
  KRYSP_CUDA_CHECK(cudaGetDevice(&device_));
  RecycledHandles kept{};
  if (HandlePool::take([&](const RecycledHandles& r) { return r.device == device_; }, kept)) {
    handle_ = kept.blas;
    solver_ = kept.solver;
    return;
  }
  cublasHandle_t h = nullptr;
  KRYSP_AMG_CUBLAS(cublasCreate(&h));
  handle_ = h;
  KRYSP_AMG_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  // Atomics off (cuBLAS's default, set all the same): results bitwise reproducible.
  KRYSP_AMG_CUBLAS(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
}

AmgCoarseSolver::~AmgCoarseSolver() {
  if (HandlePool::give(RecycledHandles{device_, handle_, solver_})) return;
  if (solver_) cusolverDnDestroy(static_cast<cusolverDnHandle_t>(solver_));
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

index_t AmgCoarseSolver::factor(index_t n, const index_t* rp, const index_t* ci, const double* va, double* LX) {
  if (n == 0) return -1;
  const std::int64_t total = std::int64_t(n) * n;
  device_memset_zero(LX, std::size_t(total) * sizeof(double));
  DeviceArray<double> diag(static_cast<std::size_t>(n));
  densify_rows_kernel<<<grid_for(std::int64_t(n) * 32), kBlock>>>(n, rp, ci, va, LX, diag.data());
  KRYSP_CUDA_CHECK_LAUNCH("densify_rows_kernel");
  DeviceArray<int> flags(2);  // potrf's info, then the first refused pivot
  amg_init_flags(flags.data(), 2, 0, 0x7fffffff);
  if (n <= small_dense_max_rows()) {
    small_cholesky(n, LX, flags.data() + 1);
  } else {
    potrf(n, LX, diag.data(), flags.data());
  }
  int out[2] = {0, 0};
  copy_to_host(out, flags.data(), sizeof out);
  if (out[0] < 0)
    KRYSP_THROW(DeviceError, "AMG coarse factor: cusolverDnDpotrf reports argument ", -out[0], " invalid");
  return out[1] == 0x7fffffff ? -1 : index_t(out[1]);
}

void AmgCoarseSolver::potrf(index_t n, double* LX, const double* diag, int* flags) {
  if (!solver_) {
    cusolverDnHandle_t h = nullptr;
    KRYSP_AMG_CUSOLVER(cusolverDnCreate(&h));
    solver_ = h;
    KRYSP_AMG_CUSOLVER(cusolverDnSetDeterministicMode(h, CUSOLVER_DETERMINISTIC_RESULTS));
  }
  auto h = static_cast<cusolverDnHandle_t>(solver_);
  KRYSP_AMG_CUSOLVER(cusolverDnSetStream(h, nullptr));
  // Read column-major, LX is A_c itself (symmetric); potrf's upper factor U (A_c = Uᵀ·U), read
  // row-major, is L in the lower triangle, and the other triangle keeps A_c's entries.
  int lwork = 0;
  KRYSP_AMG_CUSOLVER(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, n, LX, n, &lwork));
  DeviceArray<double> work(std::size_t(std::max(lwork, 1)));
  KRYSP_AMG_CUSOLVER(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_UPPER, n, LX, n, work.data(), lwork, flags));
  pivot_check_kernel<<<1, kBlock>>>(n, LX, diag, flags);
  KRYSP_CUDA_CHECK_LAUNCH("pivot_check_kernel");
}

void AmgCoarseSolver::invert(index_t n, double* LX) const {
  if (n == 0) return;
  const std::int64_t total = std::int64_t(n) * n;
  DeviceArray<double> W(static_cast<std::size_t>(total));
  if (n <= small_dense_max_rows()) {
    small_spd_inverse(n, LX, W.data());
    symmetrize_kernel<<<grid_for(total), kBlock>>>(n, W.data(), LX);
    KRYSP_CUDA_CHECK_LAUNCH("symmetrize_kernel");
    return;
  }
  auto h = static_cast<cublasHandle_t>(handle_);
  KRYSP_AMG_CUBLAS(cublasSetStream(h, nullptr));
  identity_kernel<<<grid_for(total), kBlock>>>(n, W.data());
  KRYSP_CUDA_CHECK_LAUNCH("identity_kernel");
  // Read column-major, LX is U = Lᵀ (upper) and A_c = Uᵀ·U: Uᵀ·Y = I gives Y = U⁻ᵀ, and
  // A_c⁻¹ = U⁻¹·U⁻ᵀ = Yᵀ·Y. One trsm and a product: a second trsm cost 6-8 times the product at
  // 1,000 rows (trsm is latency-bound there, the product is not).
  const double one = 1.0, zero = 0.0;
  KRYSP_AMG_CUBLAS(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, n,
                               &one, LX, n, W.data(), n));
  DeviceArray<double> X(static_cast<std::size_t>(total));
  KRYSP_AMG_CUBLAS(
      cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, W.data(), n, W.data(), n, &zero, X.data(), n));
  symmetrize_kernel<<<grid_for(total), kBlock>>>(n, X.data(), LX);
  KRYSP_CUDA_CHECK_LAUNCH("symmetrize_kernel");
  // No wait for W and X: freed, they go back to the device cache, whose next user queues after these
  // launches on the same default stream (cudaFree itself waits when the cache is off).
}

template <class T>
void AmgCoarseSolver::correction(index_t n, index_t nc, const index_t* p_rp, const index_t* p_ci, const T* p_va,
                                 const double* X, double* M) const {
  if (n == 0) return;
  auto h = static_cast<cublasHandle_t>(handle_);
  KRYSP_AMG_CUBLAS(cublasSetStream(h, nullptr));
  const std::int64_t dense = std::int64_t(n) * std::max<index_t>(nc, 1);
  DeviceArray<double> D(static_cast<std::size_t>(dense)), Z(static_cast<std::size_t>(dense)),
      W(static_cast<std::size_t>(std::int64_t(n) * n));
  KRYSP_CUDA_CHECK(cudaMemset(D.data(), 0, std::size_t(dense) * sizeof(double)));
  densify_kernel<T><<<grid_for(n), kBlock>>>(n, p_rp, p_ci, p_va, D.data());
  KRYSP_CUDA_CHECK_LAUNCH("densify_kernel");
  const double one = 1.0, zero = 0.0;
  // Z = P·X (n × nc), then W = Z·Pᵀ (n × n); column-major throughout.
  KRYSP_AMG_CUBLAS(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, nc, nc, &one, D.data(), n, X, nc, &zero, Z.data(), n));
  KRYSP_AMG_CUBLAS(
      cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, nc, &one, Z.data(), n, D.data(), n, &zero, W.data(), n));
  const std::int64_t total = std::int64_t(n) * n;
  symmetrize_kernel<<<grid_for(total), kBlock>>>(n, W.data(), M);  // symmetric: row- and column-major alike
  KRYSP_CUDA_CHECK_LAUNCH("symmetrize_kernel");
}

template void AmgCoarseSolver::correction<double>(index_t, index_t, const index_t*, const index_t*, const double*,
                                                  const double*, double*) const;
template void AmgCoarseSolver::correction<float>(index_t, index_t, const index_t*, const index_t*, const float*,
                                                 const double*, double*) const;
template void amg_copy<double, double>(index_t, index_t, const double*, index_t, double*, index_t, DeviceStream);
template void amg_copy<float, float>(index_t, index_t, const float*, index_t, float*, index_t, DeviceStream);
template void amg_copy<float, double>(index_t, index_t, const float*, index_t, double*, index_t, DeviceStream);
template void amg_copy<double, float>(index_t, index_t, const double*, index_t, float*, index_t, DeviceStream);
template void amg_add<double>(index_t, index_t, const double*, index_t, double*, index_t, DeviceStream);
template void amg_block_gram<double>(index_t, int, const double*, const double*, double*);
template void amg_block_gram<float>(index_t, int, const float*, const float*, double*);
template void amg_block_transform<double>(index_t, int, const double*, double*);
template void amg_block_transform<float>(index_t, int, const double*, float*);
template void amg_add<float>(index_t, index_t, const float*, index_t, float*, index_t, DeviceStream);
template void amg_dense_apply<double>(index_t, const double*, index_t, const double*, index_t, double*, index_t,
                                      bool, DeviceStream);
template void amg_dense_apply<float>(index_t, const double*, index_t, const float*, index_t, float*, index_t,
                                     bool, DeviceStream);

}  // namespace krysp::detail
