#include <cublas_v2.h>

#include <cstring>
#include <vector>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/recycle_pool.hpp"
#include "krysp/solvers/cuda/cuda_block_ops.hpp"

#define KRYSP_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                             \
    cublasStatus_t krysp_st_ = (call);                                                             \
    if (krysp_st_ != CUBLAS_STATUS_SUCCESS)                                                        \
      KRYSP_THROW(::krysp::DeviceError, #call " failed: ", cublasGetStatusName(krysp_st_), " (",    \
                  cublasGetStatusString(krysp_st_), ")");                                          \
  } while (0)

namespace krysp {

/// Slots of max_cols² coefficients in the combine ring. A LOBPCG iteration makes at most ~8
/// combines between two grams, so the ring never fills there.
constexpr std::size_t kRingSlots = 16;

template <class T>
struct CudaBlockOps<T>::Handle {
  cublasHandle_t h = nullptr;
  T* pinned = nullptr;  ///< host side of the ring (cudaMallocHost), at least ring_.size() entries
  std::size_t pinned_bytes = 0;
  int device = 0;
};

namespace {
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const double* alpha, const double* A, int lda, const double* B, int ldb, const double* beta,
                    double* C, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                    int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// C (bx × by, column-major, ld bx) = X_cm·Y_cmᵀ for row-major X (n × bx) and Y (n × by): a gemm,
/// or zeros without rows (a rank without rows adds them to the others' Gram matrices; cuBLAS's
/// k = 0 is not relied on to write C).
template <class T>
void gram_gemm(cublasHandle_t h, index_t n, const T* X, index_t ldx, index_t bx, const T* Y, index_t ldy, index_t by,
               T* C) {
  if (n == 0) {
    KRYSP_CUDA_CHECK(cudaMemsetAsync(C, 0, std::size_t(bx) * by * sizeof(T), nullptr));  // cuBLAS's stream
    return;
  }
  const T one = 1, zero = 0;
  KRYSP_CUBLAS_CHECK(gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, bx, by, n, &one, X, ldx, Y, ldy, &zero, C, bx));
}

template <class T>
__global__ void copy_block_kernel(index_t n, index_t b, const T* X, index_t ldx, T* Y, index_t ldy) {
  const std::int64_t total = std::int64_t(n) * b;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x)
    Y[(t / b) * ldy + t % b] = X[(t / b) * ldx + t % b];
}
}  // namespace

namespace {
/// cuBLAS handles and pinned rings of finished CudaBlockOps, kept for the next one: creating them
/// cost ~1 ms per LOBPCG solve (cublasCreate, cudaMallocHost), a third of a small solve's time.
struct Recycled {
  int device;
  cublasHandle_t handle;
  void* pinned;
  std::size_t bytes;
};
using Pool = detail::RecyclePool<Recycled, 4>;
}  // namespace

template <class T>
CudaBlockOps<T>::CudaBlockOps(index_t max_cols) : h_(std::make_unique<Handle>()), max_cols_(max_cols) {
  KRYSP_REQUIRE(max_cols > 0, "CudaBlockOps: max_cols = ", max_cols);
  const std::size_t sq = std::size_t(max_cols) * max_cols;
  small_ = DeviceArray<T>(2 * sq);
  ring_ = DeviceArray<T>(kRingSlots * sq);
  const std::size_t bytes = ring_.size() * sizeof(T);
  KRYSP_CUDA_CHECK(cudaGetDevice(&h_->device));
  Recycled kept{};
  if (Pool::take([&](const Recycled& r) { return r.device == h_->device && r.bytes >= bytes; }, kept)) {
    h_->h = kept.handle;
    h_->pinned = static_cast<T*>(kept.pinned);
    h_->pinned_bytes = kept.bytes;
    return;
  }
  KRYSP_CUBLAS_CHECK(cublasCreate(&h_->h));
  KRYSP_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&h_->pinned), bytes));
  h_->pinned_bytes = bytes;
}

template <class T>
CudaBlockOps<T>::~CudaBlockOps() {
  if (!h_ || !h_->h) return;
  if (cudaStreamSynchronize(nullptr) == cudaSuccess) {  // no copy out of the ring still queued
    if (Pool::give(Recycled{h_->device, h_->h, h_->pinned, h_->pinned_bytes})) return;
  } else {
    cudaGetLastError();
  }
  cublasDestroy(h_->h);
  if (h_->pinned) cudaFreeHost(h_->pinned);
}

template <class T>
const T* CudaBlockOps<T>::stage(const double* host, std::size_t count) {
  // The same coefficients as the last combine's (X·C, A·X·C, B·X·C one after another): its
  // device slot still holds them (a later copy into that slot is queued after every gemm that
  // reads it), so no copy.
  if (last_ && count == last_host_.size() && std::memcmp(host, last_host_.data(), count * sizeof(double)) == 0)
    return last_;
  if (ring_used_ + count > ring_.size()) {  // full: wait until every queued copy has read its slot
    KRYSP_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    ring_used_ = 0;
    last_ = nullptr;
  }
  T* h = h_->pinned + ring_used_;
  T* d = ring_.data() + ring_used_;
  for (std::size_t i = 0; i < count; ++i) h[i] = T(host[i]);
  KRYSP_CUDA_CHECK(cudaMemcpyAsync(d, h, count * sizeof(T), cudaMemcpyHostToDevice, nullptr));
  ring_used_ += count;
  last_host_.assign(host, host + count);
  last_ = d;
  return d;
}

template <class T>
void CudaBlockOps<T>::gram(index_t n, const T* X, index_t ldx, index_t bx, const T* Y, index_t ldy, index_t by,
                           double* C) {
  KRYSP_REQUIRE(bx <= max_cols_ && by <= max_cols_, "gram: ", bx, "x", by, " exceeds the workspace ", max_cols_);
  gram_gemm(h_->h, n, X, ldx, bx, Y, ldy, by, small_.data());  // row-major X (n × bx) is column-major bx × n
  std::vector<T> c(std::size_t(bx) * by);
  small_.download(c.data(), c.size());  // waits for all earlier work on the default stream
  ring_used_ = 0;                       // so every queued ring copy is done
  last_ = nullptr;
  for (std::size_t i = 0; i < c.size(); ++i) C[i] = double(c[i]);
}

template <class T>
void CudaBlockOps<T>::gram2(index_t n, const T* X, index_t ldx, index_t bx, const T* Y1, index_t ldy1, const T* Y2,
                            index_t ldy2, index_t by, double* C1, double* C2) {
  KRYSP_REQUIRE(bx <= max_cols_ && by <= max_cols_, "gram2: ", bx, "x", by, " exceeds the workspace ", max_cols_);
  const std::size_t sz = std::size_t(bx) * by;
  gram_gemm(h_->h, n, X, ldx, bx, Y1, ldy1, by, small_.data());
  gram_gemm(h_->h, n, X, ldx, bx, Y2, ldy2, by, small_.data() + sz);
  std::vector<T> c(2 * sz);
  small_.download(c.data(), c.size());  // one wait for both
  ring_used_ = 0;
  last_ = nullptr;
  for (std::size_t i = 0; i < sz; ++i) {
    C1[i] = double(c[i]);
    C2[i] = double(c[sz + i]);
  }
}

template <class T>
void CudaBlockOps<T>::gram_pair(index_t n, const T* X1, index_t ldx1, index_t bx1, const T* Y1, index_t ldy1,
                                index_t by1, double* C1, const T* X2, index_t ldx2, index_t bx2, const T* Y2,
                                index_t ldy2, index_t by2, double* C2) {
  KRYSP_REQUIRE(bx1 <= max_cols_ && by1 <= max_cols_ && bx2 <= max_cols_ && by2 <= max_cols_, "gram_pair: ", bx1,
                "x", by1, " and ", bx2, "x", by2, " exceed the workspace ", max_cols_);
  const std::size_t sz1 = std::size_t(bx1) * by1, sz2 = std::size_t(bx2) * by2;
  gram_gemm(h_->h, n, X1, ldx1, bx1, Y1, ldy1, by1, small_.data());
  gram_gemm(h_->h, n, X2, ldx2, bx2, Y2, ldy2, by2, small_.data() + sz1);
  std::vector<T> c(sz1 + sz2);
  small_.download(c.data(), c.size());  // one wait for both
  ring_used_ = 0;
  last_ = nullptr;
  for (std::size_t i = 0; i < sz1; ++i) C1[i] = double(c[i]);
  for (std::size_t i = 0; i < sz2; ++i) C2[i] = double(c[sz1 + i]);
}

template <class T>
void CudaBlockOps<T>::combine(index_t n, const T* X, index_t ldx, index_t bx, const double* C, double alpha,
                              double beta, T* Y, index_t ldy, index_t by) {
  KRYSP_REQUIRE(bx <= max_cols_ && by <= max_cols_, "combine: ", bx, "x", by, " exceeds the workspace ", max_cols_);
  if (n == 0) return;  // no rows to write
  const T* c = stage(C, std::size_t(bx) * by);  // asynchronous: no wait for the device
  const T a = T(alpha), b = T(beta);
  // Y_cm (by × n) = alpha·Cᵀ·X_cm + beta·Y_cm.
  KRYSP_CUBLAS_CHECK(gemm(h_->h, CUBLAS_OP_T, CUBLAS_OP_N, by, n, bx, &a, c, bx, X, ldx, &b, Y, ldy));
}

template <class T>
void CudaBlockOps<T>::copy(index_t n, index_t b, const T* X, index_t ldx, T* Y, index_t ldy) {
  const std::int64_t total = std::int64_t(n) * b;
  if (total == 0) return;
  const unsigned grid = unsigned(std::min<std::int64_t>((total + 255) / 256, 1 << 16));
  copy_block_kernel<T><<<grid, 256>>>(n, b, X, ldx, Y, ldy);
  KRYSP_CUDA_CHECK_LAUNCH("copy_block_kernel");
}

template class CudaBlockOps<double>;
template class CudaBlockOps<float>;

}  // namespace krysp
