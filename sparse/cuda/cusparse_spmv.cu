#include "krysp/sparse/cuda/cusparse_spmv.hpp"

#include <cusparse.h>

#include <type_traits>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"

#define KRYSP_CUSPARSE_CHECK(call)                                                                  \
  do {                                                                                              \
    cusparseStatus_t krysp_st_ = (call);                                                            \
    if (krysp_st_ != CUSPARSE_STATUS_SUCCESS)                                                       \
      KRYSP_THROW(::krysp::DeviceError, #call " failed: ", cusparseGetErrorString(krysp_st_), " (", \
                  static_cast<int>(krysp_st_), ")");                                                \
  } while (0)

namespace krysp {

const char* to_string(CusparseSpmvAlg a) { return a == CusparseSpmvAlg::Csr1 ? "cusparse-csr-alg1" : "cusparse-csr-alg2"; }

template <class T>
struct CusparseSpmv<T>::Impl {
  cusparseHandle_t handle = nullptr;
  cusparseConstSpMatDescr_t mat = nullptr;
  cusparseDnVecDescr_t vx = nullptr;  // x is only read; the descriptor is non-const to be repointable
  cusparseDnVecDescr_t vy = nullptr;
  DeviceArray<unsigned char> buffer;
  cusparseSpMVAlg_t alg = CUSPARSE_SPMV_CSR_ALG1;
  const T* x = nullptr;
  T* y = nullptr;
  static constexpr cudaDataType kType = std::is_same_v<T, double> ? CUDA_R_64F : CUDA_R_32F;

  ~Impl() {
    if (vy) cusparseDestroyDnVec(vy);
    if (vx) cusparseDestroyDnVec(vx);
    if (mat) cusparseDestroySpMat(mat);
    if (handle) cusparseDestroy(handle);
  }
  void point(const T* nx, T* ny) {
    if (nx != x) {
      KRYSP_CUSPARSE_CHECK(cusparseDnVecSetValues(vx, const_cast<T*>(nx)));
      x = nx;
    }
    if (ny != y) {
      KRYSP_CUSPARSE_CHECK(cusparseDnVecSetValues(vy, ny));
      y = ny;
    }
  }
};

template <class T>
CusparseSpmv<T>::CusparseSpmv(const CsrView<T>& d, CusparseSpmvAlg alg, T alpha, const T* x, T beta, T* y)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.alg = alg == CusparseSpmvAlg::Csr1 ? CUSPARSE_SPMV_CSR_ALG1 : CUSPARSE_SPMV_CSR_ALG2;
  KRYSP_CUSPARSE_CHECK(cusparseCreate(&m.handle));
  KRYSP_CUSPARSE_CHECK(cusparseCreateConstCsr(&m.mat, d.rows, d.cols, d.nnz, d.row_ptr, d.col_idx, d.values,
                                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                              Impl::kType));
  KRYSP_CUSPARSE_CHECK(cusparseCreateDnVec(&m.vx, d.cols, const_cast<T*>(x), Impl::kType));
  KRYSP_CUSPARSE_CHECK(cusparseCreateDnVec(&m.vy, d.rows, y, Impl::kType));
  m.x = x;
  m.y = y;
  std::size_t bytes = 0;
  KRYSP_CUSPARSE_CHECK(cusparseSpMV_bufferSize(m.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.mat, m.vx, &beta,
                                               m.vy, Impl::kType, m.alg, &bytes));
  m.buffer = DeviceArray<unsigned char>(bytes > 0 ? bytes : 1);
  KRYSP_CUSPARSE_CHECK(cusparseSpMV_preprocess(m.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.mat, m.vx, &beta,
                                               m.vy, Impl::kType, m.alg, m.buffer.data()));
}

template <class T>
CusparseSpmv<T>::~CusparseSpmv() = default;

template <class T>
void CusparseSpmv<T>::apply(T alpha, const T* x, T beta, T* y) {
  Impl& m = *impl_;
  m.point(x, y);
  KRYSP_CUSPARSE_CHECK(cusparseSpMV(m.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, m.mat, m.vx, &beta, m.vy,
                                    Impl::kType, m.alg, m.buffer.data()));
}

template <class T>
std::size_t CusparseSpmv<T>::buffer_bytes() const {
  return impl_->buffer.size();
}

template class CusparseSpmv<double>;
template class CusparseSpmv<float>;

}  // namespace krysp
