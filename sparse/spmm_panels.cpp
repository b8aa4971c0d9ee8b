#include "krysp/sparse/spmm_panels.hpp"

#include <algorithm>
#include <cmath>

#include "krysp/base/error.hpp"

namespace krysp {

double spmm_far_fraction(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols, double window,
                         index_t sample_rows) {
  if (rows == 0) return 0.0;
  const index_t step = std::max<index_t>(1, rows / std::max<index_t>(1, sample_rows));
  std::int64_t far = 0, seen = 0;
  const double scale = double(cols) / double(rows);
  for (index_t i = 0; i < rows; i += step) {
    const double diag = double(i) * scale;
    for (index_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) far += std::abs(double(col_idx[k]) - diag) > window;
    seen += row_ptr[i + 1] - row_ptr[i];
  }
  return seen > 0 ? double(far) / double(seen) : 0.0;
}

int choose_spmm_panels(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols, index_t N,
                       int value_bytes, std::int64_t l2_bytes, const SpmmPanelParams& p) {
  const double budget = p.l2_share * double(l2_bytes);
  const double row_bytes = double(N) * value_bytes, x_bytes = double(cols) * row_bytes;
  if (budget <= 0 || rows == 0 || x_bytes <= budget) return 0;
  const int P = int(std::ceil(x_bytes / budget));
  if (P > kMaxSpmmPanels || P > cols) return 0;
  const double nnz = double(row_ptr[rows]);
  const double far = spmm_far_fraction(row_ptr, col_idx, rows, cols, p.local_share * budget / row_bytes, p.sample_rows);
  const double sector = 32.0 * std::ceil(row_bytes / 32.0);  // bytes a gather of one row of X moves
  const double miss = 1.0 - budget / x_bytes;
  const double matrix = nnz * (4.0 + value_bytes), per_row = 4.0 + 2.0 * row_bytes + p.row_bytes;
  const double unsplit = matrix + double(rows) * per_row + x_bytes + p.random_byte_cost * nnz * far * sector * miss;
  const double split = matrix + double(rows) * P * per_row + x_bytes;
  return split < p.min_gain * unsplit ? P : 0;
}

RowStats spmm_first_panel_stats(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols,
                                int panels) {
  const index_t width = cols == 0 ? 0 : (cols + panels - 1) / std::max(panels, 1);
  index_t nnz = 0, max_len = 0, empty = 0;
  unsigned long long sum_sq = 0;
  for (index_t i = 0; i < rows; ++i) {
    // columns increase along the row: the panel's entries are the first ones, below width
    const index_t* first = col_idx + row_ptr[i];
    const index_t len = index_t(std::lower_bound(first, col_idx + row_ptr[i + 1], width) - first);
    nnz += len;
    max_len = std::max(max_len, len);
    empty += len == 0;
    sum_sq += static_cast<unsigned long long>(len) * static_cast<unsigned long long>(len);
  }
  return make_row_stats(rows, nnz, sum_sq, max_len, empty);
}

SpmmPanelSplit spmm_panel_split(const index_t* row_ptr, const index_t* col_idx, index_t rows, index_t cols,
                                int panels) {
  KRYSP_REQUIRE(panels >= 1 && (cols == 0 || panels <= cols), "SpMM panel split: ", panels, " panels for ", cols,
                " columns");
  SpmmPanelSplit s;
  s.panels = panels;
  s.width = cols == 0 ? 0 : (cols + panels - 1) / panels;
  const index_t nnz = row_ptr[rows];
  const std::size_t stride = std::size_t(rows) + 1;
  s.row_ptr.assign(std::size_t(panels) * stride, 0);
  // counts: entries of row i in panel p go to row_ptr[p·stride + i + 1]
  for (index_t i = 0; i < rows; ++i)
    for (index_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k)
      ++s.row_ptr[std::size_t(col_idx[k] / s.width) * stride + std::size_t(i) + 1];
  s.start.assign(std::size_t(panels) + 1, 0);
  for (int p = 0; p < panels; ++p) {
    index_t* rp = s.row_ptr.data() + std::size_t(p) * stride;
    for (index_t i = 0; i < rows; ++i) rp[i + 1] += rp[i];
    s.start[std::size_t(p) + 1] = s.start[std::size_t(p)] + rp[rows];
  }
  s.col_idx.resize(std::size_t(nnz));
  s.source.resize(std::size_t(nnz));
  for (index_t i = 0; i < rows; ++i) {
    // columns increase along the row: its entries of one panel form one run, panels in order
    index_t run = row_ptr[i];
    int run_panel = -1;
    for (index_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const int p = int(col_idx[k] / s.width);
      if (p != run_panel) run = k, run_panel = p;
      const std::size_t at = std::size_t(s.start[std::size_t(p)]) +
                             std::size_t(s.row_ptr[std::size_t(p) * stride + std::size_t(i)]) + std::size_t(k - run);
      s.col_idx[at] = col_idx[k];
      s.source[at] = k;
    }
  }
  return s;
}

}  // namespace krysp
