#include "krysp/sparse/row_stats.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace krysp {

std::string RowStats::to_string() const {
  std::ostringstream os;
  os << "rows=" << rows << " nnz=" << nnz << " mean=" << mean << " stddev=" << stddev << " max=" << max_len
     << " empty=" << empty_rows;
  return os.str();
}

RowStats make_row_stats(index_t rows, index_t nnz, unsigned long long sum_sq, index_t max_len, index_t empty_rows) {
  RowStats s;
  s.rows = rows;
  s.nnz = nnz;
  s.max_len = max_len;
  s.empty_rows = empty_rows;
  if (rows == 0) return s;
  s.mean = double(nnz) / rows;
  s.stddev = std::sqrt(std::max(0.0, double(sum_sq) / rows - s.mean * s.mean));
  return s;
}

template <class T>
RowStats row_stats(const CsrView<T>& A) {
  // Σ len² is exact in 64 bits: it is at most nnz·max_len < 2^62.
  unsigned long long sum_sq = 0;
  index_t max_len = 0, empty = 0;
  for (index_t i = 0; i < A.rows; ++i) {
    const index_t len = A.row_ptr[i + 1] - A.row_ptr[i];
    max_len = std::max(max_len, len);
    empty += (len == 0);
    sum_sq += static_cast<unsigned long long>(len) * static_cast<unsigned long long>(len);
  }
  return make_row_stats(A.rows, A.nnz, sum_sq, max_len, empty);
}

template RowStats row_stats(const CsrView<double>&);
template RowStats row_stats(const CsrView<float>&);

}  // namespace krysp
