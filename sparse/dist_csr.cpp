#include "krysp/sparse/dist_csr.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "krysp/base/comm_backend.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"
#include "krysp/sparse/symmetry.hpp"

namespace krysp {

namespace {
constexpr double kSymmetryTolerance = 1e-12;  // relative to max|A|, as sparse/symmetry.hpp

// The rank owning global row (or column) g: the last p with row_starts[p] <= g (skipping empty ranks).
int owner_of(const std::vector<std::int64_t>& row_starts, std::int64_t g) {
  return int(std::upper_bound(row_starts.begin(), row_starts.end(), g) - row_starts.begin()) - 1;
}

// Position of `key` in the sorted range [first, last), or -1.
template <class It, class K>
std::ptrdiff_t find_sorted(It first, It last, const K& key) {
  const It it = std::lower_bound(first, last, key);
  return it != last && *it == key ? it - first : -1;
}

// One entry of the symmetry check: A(row, col) = value, sent to the owner of col.
struct Mirror {
  std::int64_t row, col;
  double value;
};
}  // namespace

DistCsrMatrix DistCsrMatrix::from_local_rows(const Communicator& comm, std::int64_t global_cols,
                                             const std::vector<index_t>& row_ptr,
                                             const std::vector<std::int64_t>& cols, const std::vector<double>& values,
                                             bool check_symmetry) {
  DistCsrMatrix A;
  A.comm_ = comm;
  const int P = comm.size(), me = comm.rank();
  const std::int64_t m64 = row_ptr.empty() ? -1 : std::int64_t(row_ptr.size()) - 1;
  const auto counts = comm.allgather(m64);
  const auto widths = comm.allgather(global_cols);
  A.row_starts_.assign(static_cast<std::size_t>(P) + 1, 0);
  for (int p = 0; p < P; ++p) A.row_starts_[p + 1] = A.row_starts_[p] + std::max<std::int64_t>(counts[p], 0);
  const std::int64_t n = A.row_starts_.back();

  // Checks first (every rank knows every other's sizes now), then the split; all agreed.
  std::vector<std::int64_t> halo;
  comm.collective([&] {
    KRYSP_REQUIRE(m64 >= 0, "DistCsrMatrix: row_ptr is empty (a rank without rows passes {0})");
    KRYSP_REQUIRE(m64 <= kMaxIndex, "DistCsrMatrix: ", m64, " local rows exceed the int32 local index range");
    for (int p = 0; p < P; ++p)
      KRYSP_REQUIRE(widths[p] == global_cols, "DistCsrMatrix: global_cols is ", global_cols, " here but ", widths[p],
                    " on rank ", p);
    KRYSP_REQUIRE(global_cols == n, "DistCsrMatrix: matrix is ", n, "x", global_cols, ", not square");
    const index_t m = index_t(m64);
    KRYSP_REQUIRE(row_ptr[0] == 0, "DistCsrMatrix: row_ptr[0] = ", row_ptr[0], ", expected 0");
    for (index_t i = 0; i < m; ++i)
      KRYSP_REQUIRE(row_ptr[i] <= row_ptr[i + 1], "DistCsrMatrix: row_ptr decreases at local row ", i);
    KRYSP_REQUIRE(std::size_t(row_ptr[m]) == cols.size() && cols.size() == values.size(), "DistCsrMatrix: row_ptr ends at ",
                  row_ptr[m], " but there are ", cols.size(), " column ids and ", values.size(), " values");
    const std::int64_t first = A.row_starts_[me], last = A.row_starts_[me + 1];

    // Each row sorted by global column; duplicates refused (silently summing would hide an
    // assembly error the caller should see).
    std::vector<index_t> lp(1, 0), op(1, 0), lc, oc;
    std::vector<double> lv, ov;
    std::vector<std::int64_t> off_global;  // global column of each off-rank entry, for the slots
    std::vector<std::size_t> order;
    for (index_t i = 0; i < m; ++i) {
      const std::int64_t g = first + i;
      order.resize(std::size_t(row_ptr[i + 1] - row_ptr[i]));
      std::iota(order.begin(), order.end(), std::size_t(row_ptr[i]));
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cols[a] < cols[b]; });
      for (std::size_t k = 0; k < order.size(); ++k) {
        const std::int64_t c = cols[order[k]];
        const double v = values[order[k]];
        KRYSP_REQUIRE(c >= 0 && c < n, "DistCsrMatrix: column ", c + 1, " in row ", g + 1, " is outside [1, ", n, "]");
        KRYSP_REQUIRE(k == 0 || cols[order[k - 1]] != c, "DistCsrMatrix: entry (", g + 1, ",", c + 1,
                      ") is given twice");
        KRYSP_REQUIRE(std::isfinite(v), "DistCsrMatrix: value ", v, " of entry (", g + 1, ",", c + 1, ") is not finite");
        if (c >= first && c < last) {
          lc.push_back(index_t(c - first));
          lv.push_back(v);
        } else {
          off_global.push_back(c);
          ov.push_back(v);
        }
      }
      lp.push_back(index_t(lc.size()));
      op.push_back(index_t(off_global.size()));
    }
    halo = off_global;
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    KRYSP_REQUIRE(std::int64_t(halo.size()) <= kMaxIndex, "DistCsrMatrix: ", halo.size(), " halo columns");
    oc.resize(off_global.size());
    for (std::size_t k = 0; k < off_global.size(); ++k)
      oc[k] = index_t(find_sorted(halo.begin(), halo.end(), off_global[k]));
    A.local_ = CsrMatrix<double>::from_arrays(m, m, lp, lc, lv);
    A.off_ = CsrMatrix<double>::from_arrays(m, index_t(halo.size()), op, oc, ov);
  });
  A.halo_columns_ = std::move(halo);
  A.global_nnz_ = comm.sum(std::int64_t(A.local_.nnz() + A.off_.nnz()));

  // The halo plan: ask each owner for the columns we need; what others ask of us is what we send.
  std::vector<std::vector<std::int64_t>> wanted(static_cast<std::size_t>(P));
  std::vector<index_t> slot_begin(static_cast<std::size_t>(P), 0), slot_end(static_cast<std::size_t>(P), 0);
  for (std::size_t k = 0; k < A.halo_columns_.size(); ++k) {
    const int q = owner_of(A.row_starts_, A.halo_columns_[k]);
    if (wanted[q].empty()) slot_begin[q] = index_t(k);
    wanted[q].push_back(A.halo_columns_[k]);
    slot_end[q] = index_t(k + 1);
  }
  const auto asked = comm.all_to_all(wanted);
  for (int q = 0; q < P; ++q) {
    if (wanted[q].empty() && asked[q].empty()) continue;
    HaloNeighbour nb;
    nb.rank = q;
    nb.recv_begin = slot_begin[q];
    nb.recv_end = slot_end[q];
    for (std::int64_t g : asked[q]) nb.send_rows.push_back(index_t(g - A.first_row()));  // ours by owner_of
    A.neighbours_.push_back(std::move(nb));
  }
  if (check_symmetry) A.check_symmetric();
  return A;
}

void DistCsrMatrix::check_symmetric() const {
  const int P = comm_.size();
  const std::int64_t first = first_row();
  double amax = 0;
  for (const CsrMatrix<double>* B : {&local_, &off_}) {
    const auto v = B->host_view();
    for (index_t k = 0; k < v.nnz; ++k) amax = std::max(amax, std::abs(v.values[k]));
  }
  const double tol = kSymmetryTolerance * comm_.max(amax);
  auto not_symmetric = [](std::int64_t i, std::int64_t j, double aij, double aji) {
    return detail::concat("A is not symmetric: A(", i + 1, ",", j + 1, ") = ", aij, " but A(", j + 1, ",", i + 1,
                          ") = ", aji, " (CG and LOBPCG need a symmetric matrix)");
  };
  // The local block: (i, j) against (j, i) here. The off-rank entries: each goes to the owner of
  // its column, which looks for the mirror in its own rows; the mirrors it holds towards a rank
  // must all be matched by what that rank sent, else some entry there has none.
  std::string why;
  const auto L = local_.host_view(), O = off_.host_view();
  for (index_t i = 0; i < L.rows && why.empty(); ++i)
    for (index_t k = L.row_ptr[i]; k < L.row_ptr[i + 1] && why.empty(); ++k) {
      const index_t j = L.col_idx[k];
      const auto pos = find_sorted(L.col_idx + L.row_ptr[j], L.col_idx + L.row_ptr[j + 1], i);
      const double aji = pos < 0 ? 0.0 : L.values[L.row_ptr[j] + pos];
      if (!(std::abs(L.values[k] - aji) <= tol)) why = not_symmetric(first + i, first + j, L.values[k], aji);
    }
  std::vector<std::vector<Mirror>> out(static_cast<std::size_t>(P));
  for (index_t i = 0; i < O.rows; ++i)
    for (index_t k = O.row_ptr[i]; k < O.row_ptr[i + 1]; ++k) {
      const std::int64_t g = halo_columns_[O.col_idx[k]];
      out[owner_of(row_starts_, g)].push_back({first + i, g, O.values[k]});
    }
  const auto in = comm_.all_to_all(out);
  std::vector<char> matched(static_cast<std::size_t>(O.nnz), 0);
  for (const auto& from : in)
    for (const Mirror& e : from) {
      if (!why.empty()) break;
      const index_t j = index_t(e.col - first);  // our row
      const auto slot = find_sorted(halo_columns_.begin(), halo_columns_.end(), e.row);
      const auto pos = slot < 0 ? -1 : find_sorted(O.col_idx + O.row_ptr[j], O.col_idx + O.row_ptr[j + 1], index_t(slot));
      const double aji = pos < 0 ? 0.0 : O.values[O.row_ptr[j] + pos];
      if (pos >= 0) matched[std::size_t(O.row_ptr[j] + pos)] = 1;
      if (!(std::abs(e.value - aji) <= tol)) why = not_symmetric(e.row, e.col, e.value, aji);
    }
  for (index_t i = 0; i < O.rows && why.empty(); ++i)
    for (index_t k = O.row_ptr[i]; k < O.row_ptr[i + 1] && why.empty(); ++k)
      if (!matched[std::size_t(k)]) why = not_symmetric(first + i, halo_columns_[O.col_idx[k]], O.values[k], 0.0);
  comm_.agree(why.empty(), why);
}

std::vector<std::int64_t> DistCsrMatrix::balanced_row_starts(const CsrMatrix<double>& A, int parts, index_t align) {
  KRYSP_REQUIRE(parts >= 1, "balanced_row_starts: ", parts, " parts");
  const auto rp = A.host_view().row_ptr;
  const std::int64_t n = A.rows(), nnz = A.nnz();
  std::vector<std::int64_t> starts(static_cast<std::size_t>(parts) + 1, n);
  starts[0] = 0;
  std::int64_t i = 0;
  for (int k = 1; k < parts; ++k) {
    // Without entries, balance rows instead.
    if (nnz == 0) { starts[k] = n * k / parts; continue; }
    while (i < n && std::int64_t(rp[i]) * parts < std::int64_t(k) * nnz) ++i;
    starts[k] = i;
  }
  if (align > 1 && n % align == 0)
    for (std::int64_t& s : starts) s -= s % align;
  return starts;
}

DistCsrMatrix DistCsrMatrix::scatter(const Communicator& comm, const CsrMatrix<double>& A, int root,
                                     const std::vector<std::int64_t>& row_starts, bool check_symmetry) {
  const int P = comm.size(), me = comm.rank();
  KRYSP_REQUIRE(root >= 0 && root < P, "DistCsrMatrix::scatter: root ", root, " of ", P, " ranks");
  std::vector<std::int64_t> starts(static_cast<std::size_t>(P) + 1, 0);
  std::int64_t n = 0;
  comm.collective([&] {
    if (me != root) return;
    KRYSP_REQUIRE(A.rows() == A.cols(), "matrix is ", A.rows(), "x", A.cols(), ", not square");
    if (check_symmetry) {
      const std::string why = symmetry_violation_cached(A, "A");
      KRYSP_REQUIRE(why.empty(), why, " (CG and LOBPCG need a symmetric matrix)");
    }
    starts = row_starts.empty() ? balanced_row_starts(A, P) : row_starts;
    KRYSP_REQUIRE(starts.size() == std::size_t(P) + 1 && starts.front() == 0 && starts.back() == A.rows() &&
                      std::is_sorted(starts.begin(), starts.end()),
                  "DistCsrMatrix::scatter: row_starts must be ", P + 1, " ascending offsets from 0 to ", A.rows());
    n = A.rows();
  });
  comm.broadcast(&n, sizeof n, root);
  // Root cuts A into each rank's rows; the others send nothing.
  std::vector<std::vector<index_t>> ptr_out(static_cast<std::size_t>(P));
  std::vector<std::vector<std::int64_t>> col_out(static_cast<std::size_t>(P));
  std::vector<std::vector<double>> val_out(static_cast<std::size_t>(P));
  if (me == root) {
    const auto v = A.host_view();
    for (int p = 0; p < P; ++p) {
      const index_t b = index_t(starts[p]), e = index_t(starts[p + 1]);
      auto& rp = ptr_out[p];
      for (index_t i = b; i <= e; ++i) rp.push_back(v.row_ptr[i] - v.row_ptr[b]);
      col_out[p].assign(v.col_idx + v.row_ptr[b], v.col_idx + v.row_ptr[e]);
      val_out[p].assign(v.values + v.row_ptr[b], v.values + v.row_ptr[e]);
    }
  }
  auto row_ptr = std::move(comm.all_to_all(ptr_out)[root]);
  auto cols = std::move(comm.all_to_all(col_out)[root]);
  auto values = std::move(comm.all_to_all(val_out)[root]);
  // Symmetry was checked on the whole matrix at root, where its message names the file's entries.
  return from_local_rows(comm, n, row_ptr, cols, values, false);
}

DistCsrMatrix DistCsrMatrix::scaled(int e) const {
  auto times = [e](const CsrMatrix<double>& M) {
    const auto v = M.host_view();
    std::vector<index_t> rp = v.row_ptr ? std::vector<index_t>(v.row_ptr, v.row_ptr + v.rows + 1)
                                        : std::vector<index_t>(std::size_t(v.rows) + 1, 0);
    std::vector<index_t> ci(v.col_idx, v.col_idx + v.nnz);
    std::vector<double> val(v.values, v.values + v.nnz);
    for (double& x : val) x = std::ldexp(x, e);
    return CsrMatrix<double>::from_arrays(M.rows(), M.cols(), rp, ci, val);
  };
  DistCsrMatrix D;
  D.comm_ = comm_;
  D.row_starts_ = row_starts_;
  D.global_nnz_ = global_nnz_;
  D.local_ = times(local_);
  D.off_ = times(off_);
  D.halo_columns_ = halo_columns_;
  D.neighbours_ = neighbours_;
  return D;
}

DistCsrMatrix DistCsrMatrix::read_matrix_market(const Communicator& comm, const std::string& path,
                                                bool check_symmetry, index_t align) {
  CsrMatrix<double> A;
  std::vector<std::int64_t> starts;
  comm.collective([&] {
    if (comm.rank() != 0) return;
    A = io::read_matrix_market<double>(path);
    starts = balanced_row_starts(A, comm.size(), align);
  });
  return scatter(comm, A, 0, starts, check_symmetry);
}

void DistCsrMatrix::exchange_and_multiply(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  const std::size_t w = static_cast<std::size_t>(N);
  std::size_t sent = 0;
  for (const auto& nb : neighbours_) sent += nb.send_rows.size();
  send_buffer_.resize(sent * w);
  halo_buffer_.resize(halo_columns_.size() * w);
  std::vector<detail::CommMessage> sends, recvs;
  std::size_t at = 0;
  for (const auto& nb : neighbours_) {
    const std::size_t from = at;
    for (index_t r : nb.send_rows)
      for (std::size_t j = 0; j < w; ++j) send_buffer_[at++] = X[std::size_t(r) * std::size_t(ldx) + j];
    if (at > from) sends.push_back({nb.rank, send_buffer_.data() + from, (at - from) * sizeof(double)});
    if (nb.recv_end > nb.recv_begin)
      recvs.push_back({nb.rank, halo_buffer_.data() + std::size_t(nb.recv_begin) * w,
                       std::size_t(nb.recv_end - nb.recv_begin) * w * sizeof(double)});
  }
  const auto pending = comm_.size() > 1 ? comm_.backend().start_exchange(sends, recvs) : nullptr;
  // The local block while the halo is in flight; then the off-rank block adds the halo's share.
  if (rows() > 0) {
    if (N == 1 && ldx == 1 && ldy == 1) local_.multiply_host(X, Y);  // the vector path, as CgOps had
    else spmm_host(local_, N, 1.0, X, ldx, 0.0, Y, ldy);
  }
  if (pending) pending->wait();
  if (off_.nnz() > 0) spmm_host(off_, N, 1.0, halo_buffer_.data(), N, 1.0, Y, ldy);
}

void DistCsrMatrix::apply(const double* x, double* y) const {
  KRYSP_REQUIRE(rows() == 0 || (x && y), "DistCsrMatrix::apply: null vector");
  exchange_and_multiply(1, x, 1, y, 1);
}

void DistCsrMatrix::apply_block(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const {
  KRYSP_REQUIRE(N >= 1 && ldx >= N && ldy >= N && (rows() == 0 || (X && Y)), "DistCsrMatrix: block of ", N,
                " columns with ld ", ldx, " and ", ldy);
  exchange_and_multiply(N, X, ldx, Y, ldy);
}

}  // namespace krysp
