// Row-balanced SpMV with sequential reduction: one thread per row.
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/sparse/cuda/load.cuh"
#include "krysp/sparse/cuda/spmv_kernels.cuh"

namespace krysp::detail {

constexpr int kRowSeqBlock = 256;

template <class T, bool DOT>
__global__ void __launch_bounds__(kRowSeqBlock) spmv_row_sequential_kernel(CsrView<T> A, T alpha, const T* __restrict__ x,
                                                                           T beta, T* __restrict__ y, SpmvDot dot) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  double d[1] = {0.0};  // this row's x·y (fused dot)
  if (row < A.rows) {
    const index_t b = __ldg(A.row_ptr + row), e = __ldg(A.row_ptr + row + 1);
    T sum = T(0);
    index_t k = b;
    // Four independent loads in flight per trip; the sum stays in row order.
    for (; k <= e - 4; k += 4) {  // (written so that nothing overflows near nnz = 2^31)
      index_t c[4];
      T v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        c[i] = load_stream(A.col_idx + k + i);
        v[i] = load_stream(A.values + k + i);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) sum += v[i] * load_cached(x + c[i]);
    }
    for (; k < e; ++k) sum += load_stream(A.values + k) * load_cached(x + load_stream(A.col_idx + k));
    const T yv = store_axpby(y + row, alpha, sum, beta);
    if constexpr (DOT) d[0] = double(load_cached(x + row)) * double(yv);
  }
  if constexpr (DOT) grid_sum<1, kRowSeqBlock>(d, {dot.partials, dot.ticket}, blockIdx.x, gridDim.x, dot.out, {{0}});
}

template <class T>
void spmv_row_sequential(const SpmvArgs<T>& args) {
  const CsrView<T>& A = args.A;
  const T alpha = args.alpha, beta = args.beta;
  const T* const x = args.x;
  T* const y = args.y;
  const SpmvDot& dot = args.dot;
  if (A.rows == 0) return;
  const std::int64_t grid = (std::int64_t(A.rows) + kRowSeqBlock - 1) / kRowSeqBlock;
  if (dot.out)
    launch_overlapped("spmv_row_sequential_kernel", spmv_row_sequential_kernel<T, true>, static_cast<unsigned>(grid),
                      kRowSeqBlock, cuda_stream(args.stream), A, alpha, x, beta, y, dot);
  else
    launch_overlapped("spmv_row_sequential_kernel", spmv_row_sequential_kernel<T, false>, static_cast<unsigned>(grid),
                      kRowSeqBlock, cuda_stream(args.stream), A, alpha, x, beta, y, dot);
}

std::size_t spmv_row_sequential_blocks(index_t rows) { return (std::size_t(rows) + kRowSeqBlock - 1) / kRowSeqBlock; }

/// Only the plain kernels, which tuning times; the dot variants load at their first use.
template <class T>
void spmv_row_sequential_preload() {
  cudaFuncAttributes attr;
  KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_row_sequential_kernel<T, false>));
}

template void spmv_row_sequential_preload<double>();
template void spmv_row_sequential_preload<float>();
template void spmv_row_sequential(const SpmvArgs<double>&);
template void spmv_row_sequential(const SpmvArgs<float>&);

}  // namespace krysp::detail
