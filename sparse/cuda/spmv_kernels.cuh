#pragma once
/// \file spmv_kernels.cuh
/// Launchers of the individual SpMV kernels; spmv_dispatch.cu picks one from the plan's config.
/// Each launches on the stream it is given (args.stream) and checks the launch.
#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"

namespace krysp::detail {
/// One thread per row, sequential sum (spmv_row_sequential.cu).
template <class T>
void spmv_row_sequential(const SpmvArgs<T>& args);
/// A sub-warp of `subwarp` lanes per row, shuffle reduction (spmv_row_subwarp.cu).
template <class T>
void spmv_row_subwarp(const SpmvArgs<T>& args, int subwarp);
/// Nonzero-balanced, k nonzeros per lane, block_warps tiles per block; segmented (VSR) or sequential per-lane runs
/// (spmv_nnz.cu), with args.ws. Launches the carry fix-up kernel too in fix-up mode (which then finishes the fused
/// dot).
template <class T>
void spmv_nnz(const SpmvArgs<T>& args, bool segmented, int k, int block_warps);
/// y = beta·y over n entries (0 when beta = 0, never reading y).
template <class T>
void spmv_scale(index_t n, T beta, T* y, DeviceStream stream);
/// *dot.out = xᵀy over n entries, one block (the fused dot where no SpMV kernel runs: nnz = 0).
template <class T>
void spmv_dot_only(index_t n, const T* x, const T* y, const SpmvDot& dot, DeviceStream stream);
/// Blocks (= fused-dot partials) of each kernel's launch.
std::size_t spmv_row_sequential_blocks(index_t rows);
std::size_t spmv_row_subwarp_blocks(index_t rows, int subwarp);
std::size_t spmv_nnz_dot_partials(const NnzGeometry& g, bool fixup);
/// Force the lazy loading of one kernel (cudaFuncGetAttributes), see spmv_preload().
template <class T>
void spmv_row_sequential_preload();
template <class T>
void spmv_row_subwarp_preload(int subwarp);
template <class T>
void spmv_nnz_preload(bool segmented, int k, int block_warps);
}  // namespace krysp::detail
