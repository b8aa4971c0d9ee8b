// Dispatch from a plan's configuration to a kernel launcher.
#include <algorithm>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmv_kernels.cuh"
#include "krysp/sparse/cuda/spmv_launch.hpp"

namespace krysp::detail {

std::size_t spmv_dot_partials(const SpmvConfig& c, index_t rows, index_t nnz) {
  std::size_t n = 1;
  switch (c.algorithm) {
    case SpmvAlgorithm::RowSequential: n = spmv_row_sequential_blocks(rows); break;
    case SpmvAlgorithm::RowSubwarp: n = spmv_row_subwarp_blocks(rows, c.subwarp); break;
    case SpmvAlgorithm::NnzSequential:
    case SpmvAlgorithm::NnzSegmented:
      n = spmv_nnz_dot_partials(nnz_geometry(nnz, c.nnz_per_thread, c.block_warps), true);  // fix-up: the most
      break;
  }
  return std::max<std::size_t>(n, 1);
}

template <class T>
void spmv_device(const SpmvConfig& c, const SpmvArgs<T>& a) {
  if (a.dot.out && (a.A.rows == 0 || a.A.nnz == 0)) {  // no kernel to fuse into
    spmv_scale(a.A.rows, a.beta, a.y, a.stream);
    return spmv_dot_only(a.A.rows, a.x, a.y, a.dot, a.stream);
  }
  switch (c.algorithm) {
    case SpmvAlgorithm::RowSequential: return spmv_row_sequential(a);
    case SpmvAlgorithm::RowSubwarp: return spmv_row_subwarp(a, c.subwarp);
    case SpmvAlgorithm::NnzSequential: return spmv_nnz(a, false, c.nnz_per_thread, c.block_warps);
    case SpmvAlgorithm::NnzSegmented: return spmv_nnz(a, true, c.nnz_per_thread, c.block_warps);
  }
  KRYSP_THROW(InputError, "SpMV algorithm ", static_cast<int>(c.algorithm), " is not available");
}

template <class T>
void spmv_preload(const SpmvConfig& c) {
  switch (c.algorithm) {
    case SpmvAlgorithm::RowSequential: return spmv_row_sequential_preload<T>();
    case SpmvAlgorithm::RowSubwarp: return spmv_row_subwarp_preload<T>(c.subwarp);
    case SpmvAlgorithm::NnzSequential: return spmv_nnz_preload<T>(false, c.nnz_per_thread, c.block_warps);
    case SpmvAlgorithm::NnzSegmented: return spmv_nnz_preload<T>(true, c.nnz_per_thread, c.block_warps);
  }
}

template void spmv_preload<double>(const SpmvConfig&);
template void spmv_preload<float>(const SpmvConfig&);
template void spmv_device(const SpmvConfig&, const SpmvArgs<double>&);
template void spmv_device(const SpmvConfig&, const SpmvArgs<float>&);

}  // namespace krysp::detail
