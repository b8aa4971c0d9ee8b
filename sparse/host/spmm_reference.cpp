#include "sparse/host/spmm_reference.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "base/overlap.hpp"

namespace krysp {

template <class T>
void spmm_host(const CsrMatrix<T>& A, index_t N, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy) {
  KRYSP_REQUIRE(N >= 1, "spmm_host: N = ", N, " (must be at least 1)");
  KRYSP_REQUIRE(ldx >= N, "spmm_host: ldx = ", ldx, " < N = ", N);
  KRYSP_REQUIRE(ldy >= N, "spmm_host: ldy = ", ldy, " < N = ", N);
  KRYSP_REQUIRE(A.rows() == 0 || Y != nullptr, "spmm_host: Y is null");
  KRYSP_REQUIRE(A.nnz() == 0 || X != nullptr, "spmm_host: X is null");
  KRYSP_REQUIRE(A.nnz() == 0 || !blocks_overlap(X, A.cols(), ldx, static_cast<const T*>(Y), A.rows(), ldy, N),
                "spmm_host: X and Y share entries (X at ", static_cast<const void*>(X), ", ldx = ", ldx, "; Y at ",
                static_cast<const void*>(Y), ", ldy = ", ldy, "; N = ", N, "): Y would be written while X is read");
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

}  // namespace krysp
