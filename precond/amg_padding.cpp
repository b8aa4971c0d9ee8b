#include "krysp/precond/amg_padding.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "krysp/base/error.hpp"
#include "krysp/precond/spd_block.hpp"

namespace krysp::amg {

namespace {

// Lengths of the runs of consecutive rows with the same column set; empty once more than
// max_single rows stand alone (runs of one row count for no b ≥ 2: no b can qualify then).
std::vector<index_t> pattern_runs(index_t n, const index_t* rp, const index_t* ci, double max_single) {
  std::vector<index_t> runs;
  index_t single = 0;
  for (index_t i = 0; i < n;) {
    index_t k = i + 1;
    while (k < n && rp[k + 1] - rp[k] == rp[i + 1] - rp[i] && std::equal(ci + rp[k], ci + rp[k + 1], ci + rp[i])) ++k;
    if (k - i == 1 && double(++single) > max_single) return {};
    runs.push_back(k - i);
    i = k;
  }
  return runs;
}

// The largest b whose runs of b rows (or of whole multiples: nodes alike side by side) hold
// kPaddedNodeShare of the n rows, nodes of 6 being nodes of 3 too, twice over; 1 where none does,
// where no node would be short (equal nodes: the block size detection's case), or where the
// padded rows would not fit the index type.
int padded_node_size(const std::vector<index_t>& runs, index_t n) {
  int b = 1;
  for (int c = kMaxBlockSize; c >= 2 && b == 1; --c) {
    index_t full = 0;
    for (index_t L : runs) full += L % c == 0 ? L : 0;
    if (double(full) >= kPaddedNodeShare * double(n)) b = c;
  }
  if (b == 1) return 1;
  std::int64_t padded = 0;
  for (index_t L : runs) padded += (std::int64_t(L) + b - 1) / b * b;
  return padded == n || padded > kMaxIndex ? 1 : b;
}

}  // namespace

template <class T>
NodePadding node_padding(const CsrMatrix<T>& A) {
  NodePadding p;
  const index_t n = A.rows();
  if (n == 0 || A.rows() != A.cols()) return p;
  // A structure pass, memoised as the block size detection is: the factories ask on every AMG
  // set-up where no block size divides n (every scalar problem), and most of them stop early.
  const double max_single = (1 - kPaddedNodeShare) * double(n);
  auto runs_of_a = [&] { return pattern_runs(n, A.row_ptr().data(), A.col_idx().data(), max_single); };
  std::vector<index_t> runs;
  const int b = std::stoi(A.memo("amg: padded node size", [&] {
    runs = runs_of_a();
    return std::to_string(padded_node_size(runs, n));
  }));
  if (b == 1) return p;
  if (runs.empty()) runs = runs_of_a();  // the size was memoised: the runs once more
  p.position.resize(std::size_t(n));
  index_t row = 0, out = 0;
  for (index_t L : runs) {
    for (index_t k = 0; k < L; ++k) p.position[std::size_t(row + k)] = out + k;  // the unit rows after the run
    out += (L + b - 1) / b * b;
    p.short_nodes += L % b != 0;
    row += L;
  }
  p.b = b;
  p.padded_rows = out;
  return p;
}

template <class T>
CsrMatrix<T> padded_matrix(const CsrMatrix<T>& A, const NodePadding& p) {
  KRYSP_REQUIRE(p.b > 1 && p.position.size() == std::size_t(A.rows()), "AMG padding: made for ", p.position.size(),
                " rows, the matrix has ", A.rows());
  const index_t n = A.rows(), m = p.padded_rows;
  const index_t* rp = A.row_ptr().data();
  const index_t* ci = A.col_idx().data();
  const T* va = A.values().data();
  std::vector<index_t> source(std::size_t(m), -1);  // padded row → A's row (−1: a unit row)
  for (index_t i = 0; i < n; ++i) source[std::size_t(p.position[std::size_t(i)])] = i;
  std::vector<index_t> prp(std::size_t(m) + 1, 0), pci;
  std::vector<T> pva;
  pci.reserve(std::size_t(A.nnz() + m - n));
  pva.reserve(pci.capacity());
  for (index_t r = 0; r < m; ++r) {
    const index_t i = source[std::size_t(r)];
    if (i < 0) {
      pci.push_back(r);
      pva.push_back(T(1));
    } else {
      for (index_t k = rp[i]; k < rp[i + 1]; ++k) {  // positions increase with the columns: still sorted
        pci.push_back(p.position[std::size_t(ci[k])]);
        pva.push_back(va[k]);
      }
    }
    prp[std::size_t(r) + 1] = index_t(pci.size());
  }
  return CsrMatrix<T>::from_arrays(m, m, prp, pci, pva);
}

template NodePadding node_padding(const CsrMatrix<double>&);
template NodePadding node_padding(const CsrMatrix<float>&);
template CsrMatrix<double> padded_matrix(const CsrMatrix<double>&, const NodePadding&);
template CsrMatrix<float> padded_matrix(const CsrMatrix<float>&, const NodePadding&);

}  // namespace krysp::amg
