#pragma once
/// \file row_stats.hpp
/// Row-length features of a matrix, computed once per plan: the kernel choice depends on them.
#include <cstdint>
#include <string>

#include "krysp/sparse/csr_view.hpp"

namespace krysp {

/// Row-length statistics of one matrix (what the kernel-choice rules look at).
struct RowStats {
  index_t rows = 0;
  index_t nnz = 0;
  double mean = 0;      ///< mean entries per row
  double stddev = 0;    ///< standard deviation of entries per row
  index_t max_len = 0;  ///< longest row
  index_t empty_rows = 0;
  /// Coefficient of variation: stddev / mean (0 for an empty matrix). The balance rule uses it.
  double cv() const { return mean > 0 ? stddev / mean : 0.0; }
  /// A one-line summary of the fields.
  std::string to_string() const;
};

/// Row statistics from host CSR arrays (O(rows)).
template <class T>
RowStats row_stats(const CsrView<T>& A);

/// Row statistics from exact integer sums (the device computes these; row_stats() uses the same
/// formula, so host and device give bitwise equal statistics): mean = nnz/rows,
/// stddev = sqrt(max(0, sum_sq/rows − mean²)), where sum_sq = Σ_i len_i².
RowStats make_row_stats(index_t rows, index_t nnz, unsigned long long sum_sq, index_t max_len, index_t empty_rows);

}  // namespace krysp
