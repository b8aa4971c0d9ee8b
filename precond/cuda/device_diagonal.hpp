#pragma once
/// \file device_diagonal.hpp
/// A's diagonal read on the GPU, from A's device arrays (the mirror, or the caller's own for a
/// device-borrowed matrix): setup makes no host pass over the values and downloads one small
/// status, not the matrix. The values are bitwise those of the host functions, and a bad diagonal
/// entry is the host's InputError (same text: the first such row, 1-based, and its value).
/// CUDA-free header.
#include "krysp/base/device_memory.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// D⁻¹ of A in device memory: jacobi_inverse_diagonal on the GPU (see the file comment).
template <class T>
DeviceArray<T> device_jacobi_inverse_diagonal(const CsrMatrix<T>& A);

/// What Chebyshev's setup needs from A's diagonal.
template <class T>
struct DeviceChebyshevScaling {
  DeviceArray<T> inv;       ///< D⁻¹, as chebyshev_scaling
  DeviceArray<T> inv_sqrt;  ///< D^{-1/2} = T(sqrt(double(D⁻¹))), the Lanczos scaling (empty unless asked)
  double gershgorin = 0;    ///< max_i Σ_j |a_ij|/a_ii, as chebyshev_scaling (NaN or Inf if A has such entries)
};
/// chebyshev_scaling on the GPU (see the file comment), with D^{-1/2} too when `with_sqrt`.
template <class T>
DeviceChebyshevScaling<T> device_chebyshev_scaling(const CsrMatrix<T>& A, bool with_sqrt);

}  // namespace krysp
