#include "krysp/sparse/host/spmm_reference.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/base/overlap.hpp"

namespace krysp {

template <class T>
void check_spmm_operands(const char* who, const CsrMatrix<T>& A, index_t N, const T* X, index_t ldx, const T* Y,
                         index_t ldy) {
  KRYSP_REQUIRE(ldx >= N, who, ": ldx = ", ldx, " < N = ", N);
  KRYSP_REQUIRE(ldy >= N, who, ": ldy = ", ldy, " < N = ", N);
  KRYSP_REQUIRE(A.rows() == 0 || Y != nullptr, who, ": Y is null");
  KRYSP_REQUIRE(A.nnz() == 0 || X != nullptr, who, ": X is null");
  KRYSP_REQUIRE(A.nnz() == 0 || !blocks_overlap(X, A.cols(), ldx, Y, A.rows(), ldy, N), who,
                ": X and Y share entries (X at ", static_cast<const void*>(X), ", ldx = ", ldx, "; Y at ",
                static_cast<const void*>(Y), ", ldy = ", ldy, "; N = ", N, "): Y would be written while X is read");
}

template <class T>
void spmm_host(const CsrMatrix<T>& A, index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy) {
  KRYSP_REQUIRE(N >= 1, "spmm_host: N = ", N, " (must be at least 1)");
  check_spmm_operands("spmm_host", A, N, X, ldx, Y, ldy);
  const auto v = A.host_view();
  std::vector<T> acc(static_cast<std::size_t>(N));
  for (index_t i = 0; i < v.rows; ++i) {
    std::fill(acc.begin(), acc.end(), T(0));
    for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) {
      const T a = v.values[k];
      const T* x = X + static_cast<std::int64_t>(v.col_idx[k]) * ldx;
      for (index_t j = 0; j < N; ++j) acc[j] += a * x[j];
    }
    T* y = Y + static_cast<std::int64_t>(i) * ldy;
    if (beta == T(0))
      for (index_t j = 0; j < N; ++j) y[j] = alpha * acc[j];
    else
      for (index_t j = 0; j < N; ++j) y[j] = alpha * acc[j] + beta * y[j];
  }
}

template void spmm_host(const CsrMatrix<double>&, index_t, double, const double*, index_t, double, double*,
                        index_t);
template void spmm_host(const CsrMatrix<float>&, index_t, float, const float*, index_t, float, float*, index_t);
template void check_spmm_operands(const char*, const CsrMatrix<double>&, index_t, const double*, index_t, const double*,
                                  index_t);
template void check_spmm_operands(const char*, const CsrMatrix<float>&, index_t, const float*, index_t, const float*,
                                  index_t);

}  // namespace krysp
