#pragma once
// A matrix's arrays copied to device memory the test owns, and the device-borrowed CsrMatrix on
// them (its own memo; values converted to T): the caller-input path from_device_pointers.
#include <cstddef>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::test {

template <class T>
struct Borrowed {
  DeviceArray<index_t> row_ptr, col_idx;
  DeviceArray<T> values;
  CsrMatrix<T> M;
  template <class U>
  explicit Borrowed(const CsrMatrix<U>& A)
      : row_ptr(A.row_ptr().extent(0)), col_idx(std::size_t(A.nnz())), values(std::size_t(A.nnz())) {
    row_ptr.upload(A.row_ptr().data(), row_ptr.size());
    col_idx.upload(A.col_idx().data(), col_idx.size());
    const std::vector<T> v(A.values().data(), A.values().data() + A.nnz());
    values.upload(v.data(), v.size());
    M = CsrMatrix<T>::from_device_pointers(A.rows(), A.cols(), A.nnz(), row_ptr.data(), col_idx.data(),
                                           values.data());
  }
};

}  // namespace krysp::test
