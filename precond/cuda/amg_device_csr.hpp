#pragma once
/// \file amg_device_csr.hpp
/// A level's CSR matrix in double during the GPU AMG set-up (amg_device_setup.cu and the Lanczos
/// of amg_device_lanczos.cu): pointers, and the storage when the level owns its arrays (level 0
/// reads A's own). Internal; CUDA-free.
#include "krysp/base/device_memory.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Pointers (rp, ci, va) to the arrays, which are the *_own ones after own().
struct DCsr {
  index_t rows = 0, cols = 0, nnz = 0;
  const index_t* rp = nullptr;
  const index_t* ci = nullptr;
  const double* va = nullptr;
  DeviceArray<index_t> rp_own, ci_own;
  DeviceArray<double> va_own;
  void own() {
    rp = rp_own.data();
    ci = ci_own.data();
    va = va_own.data();
  }
};


}  // namespace krysp::detail
