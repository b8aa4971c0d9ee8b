#pragma once
/// \file csr_view.hpp
/// A non-owning view of CSR arrays, host or device. Kernels take this, so that CUDA code never
/// sees Kokkos or std containers.
#include "krysp/base/types.hpp"

namespace krysp {
/// The sizes and the three CSR array pointers of one matrix, all host or all device memory.
template <class T>
struct CsrView {
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;
  const index_t* row_ptr = nullptr;  ///< rows + 1 offsets, row_ptr[0] == 0
  const index_t* col_idx = nullptr;  ///< nnz column indices, sorted within each row
  const T* values = nullptr;         ///< nnz values
};
}  // namespace krysp
