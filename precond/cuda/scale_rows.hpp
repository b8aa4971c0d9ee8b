#pragma once
/// \file scale_rows.hpp
/// Z = diag(d)·R for n × N row-major blocks (internal launcher; CUDA-free header).
#include "krysp/base/types.hpp"

namespace krysp::detail {
template <class T>
void scale_rows(index_t n, index_t N, const T* d, const T* R, index_t ldr, T* Z, index_t ldz);
}  // namespace krysp::detail
