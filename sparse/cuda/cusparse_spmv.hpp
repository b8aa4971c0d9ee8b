#pragma once
/// \file cusparse_spmv.hpp
/// The cuSPARSE SpMV baseline (CSR ALG1 / ALG2, after cusparseSpMV_preprocess), in one place for
/// `krysp bench` and bench/bench_spmv. No CUDA types in this header. Timing and copy-bandwidth
/// helpers live in sparse/cuda/timing.hpp.
#include <cstddef>
#include <memory>

#include "krysp/sparse/csr_view.hpp"

namespace krysp {

enum class CusparseSpmvAlg { Csr1, Csr2 };  ///< CUSPARSE_SPMV_CSR_ALG1 / CUSPARSE_SPMV_CSR_ALG2
const char* to_string(CusparseSpmvAlg a);

/// y = alpha·A·x + beta·y through cuSPARSE, on the default stream, with the plan made once:
/// descriptors, the work buffer and cusparseSpMV_preprocess happen in the constructor, for the
/// given alpha, beta, x and y. apply() may pass other vectors (descriptors are repointed) and
/// scalars. Throws DeviceError on any failed cuSPARSE or CUDA call.
template <class T>
class CusparseSpmv {
 public:
  /// A: a device view (CsrMatrix::device_view()); it must outlive this object.
  CusparseSpmv(const CsrView<T>& A, CusparseSpmvAlg alg, T alpha, const T* x, T beta, T* y);
  ~CusparseSpmv();
  CusparseSpmv(const CusparseSpmv&) = delete;
  CusparseSpmv& operator=(const CusparseSpmv&) = delete;
  void apply(T alpha, const T* x, T beta, T* y);
  std::size_t buffer_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class CusparseSpmv<double>;
extern template class CusparseSpmv<float>;

}  // namespace krysp
