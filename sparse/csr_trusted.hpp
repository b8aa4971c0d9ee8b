#pragma once
/// \file csr_trusted.hpp
/// Internal, not installed: a device-borrowed CsrMatrix over CSR arrays krysp itself built on the
/// device, valid by construction (the GPU AMG set-up's level matrices and prolongators: rows
/// sorted, columns in range). It lives apart from csr.hpp because it skips the row-by-row check
/// that CsrMatrix::from_device_pointers makes of caller input: a structure that breaks the
/// invariants is undefined behaviour, so no public call may reach it.
#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

/// The only way to CsrMatrix's unchecked borrow (a friend of CsrMatrix).
struct CsrTrustedBorrow {
  /// As CsrMatrix::from_device_pointers (same pointer, size and device checks), but the structure
  /// stays on the device: its fingerprint is hashed there (StructureHashKind::Device, one pass and
  /// a 16-byte download, which also checks the end offsets), row_stats() are computed there, and
  /// the host arrays are downloaded only when a host-side use asks for them (row_ptr(), col_idx(),
  /// host_view(), multiply_host()). Rows and columns are not checked. Never for caller input.
  template <class T>
  static CsrMatrix<T> from_device_pointers(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                           const index_t* d_col_idx, T* d_values) {
    return CsrMatrix<T>::borrow_device(rows, cols, nnz, d_row_ptr, d_col_idx, d_values, false);
  }
};

}  // namespace krysp::detail
