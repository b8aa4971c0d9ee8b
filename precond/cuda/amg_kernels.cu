// The device V-cycle's copies and updates, and the coarse Cholesky solve through cuBLAS.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/error.hpp"
#include "krysp/precond/cuda/amg_kernels.hpp"

#define KRYSP_AMG_CUBLAS(call)                                                                          \
  do {                                                                                                   \
    const cublasStatus_t krysp_st_ = (call);                                                             \
    if (krysp_st_ != CUBLAS_STATUS_SUCCESS)                                                              \
      KRYSP_THROW(::krysp::DeviceError, "AMG coarse solve: " #call " failed: ", cublasGetStatusName(krysp_st_), \
                  " (", cublasGetStatusString(krysp_st_), ")");                                        \
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
  const std::int64_t total = std::int64_t(n) * N;
  for (std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = t / N, c = t - i * N;
    Y[i * ldy + c] += X[i * ldx + c];
  }
}
}  // namespace

template <class I, class O>
void amg_copy(index_t n, index_t N, const I* X, index_t ldx, O* Y, index_t ldy, DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  amg_copy_kernel<I, O><<<grid_for(total), kBlock, 0, cuda_stream(stream)>>>(n, N, X, ldx, Y, ldy);
  KRYSP_CUDA_CHECK_LAUNCH("amg_copy_kernel");
}

template <class T>
void amg_add(index_t n, index_t N, const T* X, index_t ldx, T* Y, index_t ldy, DeviceStream stream) {
  const std::int64_t total = std::int64_t(n) * N;
  if (total == 0) return;
  amg_add_kernel<T><<<grid_for(total), kBlock, 0, cuda_stream(stream)>>>(n, N, X, ldx, Y, ldy);
  KRYSP_CUDA_CHECK_LAUNCH("amg_add_kernel");
}

AmgCoarseSolver::AmgCoarseSolver() {
  cublasHandle_t h = nullptr;
  KRYSP_AMG_CUBLAS(cublasCreate(&h));
  handle_ = h;
  KRYSP_AMG_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
  // Atomics off (cuBLAS's default, set all the same): results bitwise reproducible.
  KRYSP_AMG_CUBLAS(cublasSetAtomicsMode(h, CUBLAS_ATOMICS_NOT_ALLOWED));
}

AmgCoarseSolver::~AmgCoarseSolver() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void AmgCoarseSolver::solve(index_t n, const double* L, index_t N, double* W, index_t ldw, DeviceStream stream) const {
  if (n == 0 || N == 0) return;
  auto h = static_cast<cublasHandle_t>(handle_);
  KRYSP_AMG_CUBLAS(cublasSetStream(h, cuda_stream(stream)));
  // Row-major L read column-major is U = Lᵀ (upper triangle).
  if (N == 1 && ldw == 1) {
    KRYSP_AMG_CUBLAS(cublasDtrsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, L, n, W, 1));  // L·y = w
    KRYSP_AMG_CUBLAS(cublasDtrsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, L, n, W, 1));  // Lᵀ·x = y
    return;
  }
  // The row-major n × N block W read column-major is Wᵀ (N × n, leading dimension ldw): the
  // solves L·Y = W, Lᵀ·X = Y become Yᵀ·Lᵀ = Wᵀ and Xᵀ·L = Yᵀ, from the right.
  const double one = 1.0;
  KRYSP_AMG_CUBLAS(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, N, n,
                               &one, L, n, W, ldw));
  KRYSP_AMG_CUBLAS(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, N, n,
                               &one, L, n, W, ldw));
}

template void amg_copy<double, double>(index_t, index_t, const double*, index_t, double*, index_t, DeviceStream);
template void amg_copy<float, float>(index_t, index_t, const float*, index_t, float*, index_t, DeviceStream);
template void amg_copy<float, double>(index_t, index_t, const float*, index_t, double*, index_t, DeviceStream);
template void amg_copy<double, float>(index_t, index_t, const double*, index_t, float*, index_t, DeviceStream);
template void amg_add<double>(index_t, index_t, const double*, index_t, double*, index_t, DeviceStream);
template void amg_add<float>(index_t, index_t, const float*, index_t, float*, index_t, DeviceStream);

}  // namespace krysp::detail
