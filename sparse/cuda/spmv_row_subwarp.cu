// Row-balanced SpMV with parallel reduction: a sub-warp of W lanes per row.
#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/sparse/cuda/load.cuh"
#include "krysp/sparse/cuda/row_sum.cuh"
#include "krysp/sparse/cuda/spmv_kernels.cuh"

namespace krysp::detail {

constexpr int kSubwarpBlock = 256;

template <class T, int W, bool DOT>
__global__ void __launch_bounds__(kSubwarpBlock) spmv_row_subwarp_kernel(CsrView<T> A, T alpha, const T* __restrict__ x,
                                                                         T beta, T* __restrict__ y, SpmvDot dot) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t tid = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t row = tid / W;
  double d[1] = {0.0};  // this row's x·y (fused dot), on the sub-warp's first lane
  if (row < A.rows) {  // whole sub-warps agree: W divides the warp
    const T sum = subwarp_row_sum<W>(A, x, row);
    if (threadIdx.x % W == 0) {
      const T yv = store_axpby(y + row, alpha, sum, beta);
      if constexpr (DOT) d[0] = double(load_cached(x + row)) * double(yv);
    }
  }
  if constexpr (DOT) grid_sum<1, kSubwarpBlock>(d, {dot.partials, dot.ticket}, blockIdx.x, gridDim.x, dot.out, {{0}});
}

std::size_t spmv_row_subwarp_blocks(index_t rows, int subwarp) {
  return (std::size_t(rows) * std::size_t(subwarp) + kSubwarpBlock - 1) / kSubwarpBlock;
}

template <class T, int W>
static void launch(const CsrView<T>& A, T alpha, const T* x, T beta, T* y, const SpmvDot& dot, cudaStream_t st) {
  const auto grid = static_cast<unsigned>(spmv_row_subwarp_blocks(A.rows, W));
  if (dot.out)
    launch_overlapped("spmv_row_subwarp_kernel", spmv_row_subwarp_kernel<T, W, true>, grid, kSubwarpBlock, st, A,
                      alpha, x, beta, y, dot);
  else
    launch_overlapped("spmv_row_subwarp_kernel", spmv_row_subwarp_kernel<T, W, false>, grid, kSubwarpBlock, st, A,
                      alpha, x, beta, y, dot);
}

template <class T>
void spmv_row_subwarp(const SpmvArgs<T>& args, int subwarp) {
  const CsrView<T>& A = args.A;
  const T alpha = args.alpha, beta = args.beta;
  const T* const x = args.x;
  T* const y = args.y;
  const SpmvDot& dot = args.dot;
  if (A.rows == 0) return;
  switch (subwarp) {
    case 2: return launch<T, 2>(A, alpha, x, beta, y, dot, cuda_stream(args.stream));
    case 4: return launch<T, 4>(A, alpha, x, beta, y, dot, cuda_stream(args.stream));
    case 8: return launch<T, 8>(A, alpha, x, beta, y, dot, cuda_stream(args.stream));
    case 16: return launch<T, 16>(A, alpha, x, beta, y, dot, cuda_stream(args.stream));
    case 32: return launch<T, 32>(A, alpha, x, beta, y, dot, cuda_stream(args.stream));
    default: KRYSP_THROW(InputError, "spmv_row_subwarp: sub-warp width ", subwarp, " is not 2, 4, 8, 16 or 32");
  }
}

/// Only the plain kernels, which tuning times; the dot variants load at their first use.
template <class T, int W>
static void preload() {
  cudaFuncAttributes attr;
  KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_row_subwarp_kernel<T, W, false>));
}

template <class T>
void spmv_row_subwarp_preload(int subwarp) {
  switch (subwarp) {
    case 2: return preload<T, 2>();
    case 4: return preload<T, 4>();
    case 8: return preload<T, 8>();
    case 16: return preload<T, 16>();
    case 32: return preload<T, 32>();
  }
}

template void spmv_row_subwarp_preload<double>(int);
template void spmv_row_subwarp_preload<float>(int);
template void spmv_row_subwarp(const SpmvArgs<double>&, int);
template void spmv_row_subwarp(const SpmvArgs<float>&, int);

}  // namespace krysp::detail
