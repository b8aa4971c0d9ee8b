// The distributed matrix: its product against the global one's, the halo plan, odd partitions,
// and input that must be refused on every rank.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "krysp/base/error.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_test_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
// |y − A·x| within rounding: 1e-14 of Σ|a_ij·x_j| for the row (the order of the sum differs).
bool close(const CsrMatrix<double>& A, const std::vector<double>& x, std::int64_t i, double y, double ax) {
  const auto v = A.host_view();
  double scale = 0;
  for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) scale += std::abs(v.values[k] * x[v.col_idx[k]]);
  return std::abs(y - ax) <= 1e-14 * scale;
}

// A·x on each rank's rows against the global product, as a vector and as a 3-column block.
void check_product(const DistCsrMatrix& D, const CsrMatrix<double>& A) {
  const std::int64_t n = A.rows(), first = D.first_row(), m = D.rows();
  REQUIRE(D.global_rows() == n);
  CHECK(D.global_nnz() == A.nnz());
  const auto x = fixed_vector(n);
  std::vector<double> ax(static_cast<std::size_t>(n));
  A.multiply_host(x.data(), ax.data());
  const auto xl = slice(x, first, first + m);
  std::vector<double> yl(static_cast<std::size_t>(m));
  D.apply(xl.data(), yl.data());
  for (std::int64_t i = 0; i < m; ++i) CHECK(close(A, x, first + i, yl[i], ax[first + i]));
  const index_t N = 3, ld = 4;  // padded rows: the padding is neither read nor written
  std::vector<double> X(static_cast<std::size_t>(m * ld), 7.0), Y(static_cast<std::size_t>(m * ld), -5.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (index_t j = 0; j < N; ++j) X[i * ld + j] = fixed_entry(first + i, j + 1);
  D.apply_block(N, X.data(), ld, Y.data(), ld);
  for (index_t j = 0; j < N; ++j) {
    const auto xj = fixed_vector(n, j + 1);
    A.multiply_host(xj.data(), ax.data());
    for (std::int64_t i = 0; i < m; ++i) CHECK(close(A, xj, first + i, Y[i * ld + j], ax[first + i]));
  }
  for (std::int64_t i = 0; i < m; ++i) CHECK(Y[i * ld + 3] == -5.0);
}
}  // namespace

TEST_CASE("dist_csr: the product matches the global one on bundled and generated matrices") {
  const auto& comm = world();
  for (const std::string name : {"bcsstk06", "1138_bus", "gr_30_30"}) {
    CAPTURE(name);
    const auto D = DistCsrMatrix::read_matrix_market(comm, std::string(KRYSP_TEST_DATA) + "/" + name + ".mtx");
    check_product(D, load(name));
  }
  const auto L = laplacian_3d(7, 6, 5);
  check_product(DistCsrMatrix::scatter(comm, comm.rank() == 0 ? L : CsrMatrix<double>()), L);
}

TEST_CASE("dist_csr: the partition balances nonzeros and the halo plan is consistent") {
  const auto& comm = world();
  const auto A = load("1138_bus");
  const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>());
  const auto nnz = comm.allgather(std::int64_t(D.local_block().nnz() + D.off_block().nnz()));
  for (auto e : nnz) CHECK(double(e) <= double(A.nnz()) / comm.size() + 40);  // rows of 1138_bus have ≤ 18 entries
  // What each rank sends a neighbour is exactly what that neighbour expects in its halo slots.
  std::vector<std::vector<std::int64_t>> sent(comm.size());
  for (const auto& nb : D.neighbours())
    for (index_t r : nb.send_rows) sent[nb.rank].push_back(D.first_row() + r);
  const auto got = comm.all_to_all(sent);
  for (const auto& nb : D.neighbours()) {
    const std::vector<std::int64_t> expect(D.halo_columns().begin() + nb.recv_begin,
                                           D.halo_columns().begin() + nb.recv_end);
    CHECK(got[nb.rank] == expect);
  }
}

TEST_CASE("dist_csr: empty ranks, a one-row rank, and no off-rank columns") {
  const auto& comm = world();
  const int P = comm.size();
  SUBCASE("more ranks than rows") {
    const auto A = laplacian_1d(2);
    const auto D = DistCsrMatrix::scatter(comm, A);
    CHECK(comm.sum(std::int64_t(D.rows())) == 2);
    check_product(D, A);
  }
  SUBCASE("a rank with one row, then the rest") {
    const auto A = laplacian_1d(23);
    std::vector<std::int64_t> starts(P + 1, 23);
    starts[0] = 0;
    if (P > 1) starts[1] = 1;  // rank 0: one row
    for (int p = 2; p < P; ++p) starts[p] = 1 + (p - 1) * 22 / (P - 1);
    const auto D = DistCsrMatrix::scatter(comm, A, 0, starts);
    if (P > 1 && comm.rank() == 0) CHECK(D.rows() == 1);
    check_product(D, A);
  }
  SUBCASE("block-diagonal: no rank needs another's entries") {
    const index_t b = 5;
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (int p = 0; p < P; ++p)
      for (index_t i = 0; i < b; ++i)
        for (index_t j = 0; j < b; ++j) {
          I.push_back(p * b + i), J.push_back(p * b + j);
          V.push_back(i == j ? 4.0 : -1.0 / (1 + i + j));
        }
    const auto A = CsrMatrix<double>::from_triplets(P * b, P * b, I, J, V);
    const LocalRows mine = rows_of(A, comm.rank() * b, (comm.rank() + 1) * b);
    const auto D = DistCsrMatrix::from_local_rows(comm, P * b, mine.row_ptr, mine.cols, mine.values);
    CHECK(D.neighbours().empty());
    CHECK(D.off_block().nnz() == 0);
    check_product(D, A);
  }
}

TEST_CASE("dist_csr: balanced row starts aligned to nodes") {
  // bcsstk06 (420 rows) in 2 to 7 parts, aligned to 3 and 4: every start a multiple, in order,
  // from 0 to n; 7 does not divide 420 and leaves the starts as they were.
  const auto A = load("bcsstk06");
  for (int parts = 2; parts <= 7; ++parts)
    for (index_t align : {3, 4, 7, 11}) {
      CAPTURE(parts);
      CAPTURE(align);
      const auto plain = DistCsrMatrix::balanced_row_starts(A, parts);
      const auto s = DistCsrMatrix::balanced_row_starts(A, parts, align);
      REQUIRE(s.size() == std::size_t(parts) + 1);
      CHECK(s.front() == 0);
      CHECK(s.back() == 420);
      for (std::size_t k = 0; k + 1 < s.size(); ++k) {
        CHECK(s[k] <= s[k + 1]);
        CHECK((420 % align != 0 ? s[k] == plain[k] : s[k] % align == 0 && plain[k] - s[k] < align));
      }
    }
}

TEST_CASE("dist_csr: bad input on one rank is an InputError on every rank") {
  const auto& comm = world();
  const int P = comm.size(), bad = P > 1 ? 1 : 0;
  const auto A = laplacian_2d(6, 5);
  const auto starts = DistCsrMatrix::balanced_row_starts(A, P);
  LocalRows mine = rows_of(A, starts[comm.rank()], starts[comm.rank() + 1]);
  auto make = [&](const LocalRows& r, std::int64_t n = 30) {
    return DistCsrMatrix::from_local_rows(comm, n, r.row_ptr, r.cols, r.values);
  };
  REQUIRE(!mine.values.empty());
  const std::string who = P > 1 ? "rank 1: " : "";
  SUBCASE("a NaN value") {
    if (comm.rank() == bad) mine.values[0] = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(make(mine), doctest::Contains("is not finite"), InputError);
    try {
      make(mine);
    } catch (const InputError& e) {
      // "rank 1: <file>:<line>: ..." everywhere, the file named relative to the source tree
      CHECK(std::string(e.what()).rfind(who + "sparse/dist_csr.cpp:", 0) == 0);
    }
  }
  SUBCASE("a column out of range") {
    if (comm.rank() == bad) mine.cols.back() = 30;
    CHECK_THROWS_WITH_AS(make(mine), doctest::Contains("column 31 in row"), InputError);
  }
  SUBCASE("a duplicate entry") {
    if (comm.rank() == bad) mine.cols[1] = mine.cols[0];
    CHECK_THROWS_WITH_AS(make(mine), doctest::Contains("is given twice"), InputError);
  }
  SUBCASE("non-square") {
    CHECK_THROWS_WITH_AS(make(mine, 31), doctest::Contains("matrix is 30x31, not square"), InputError);
  }
  if (P > 1) SUBCASE("global_cols differing between ranks") {
    CHECK_THROWS_WITH_AS(make(mine, comm.rank() == bad ? 31 : 30), doctest::Contains("global_cols is"), InputError);
  }
  SUBCASE("non-symmetric across ranks") {  // an off-diagonal entry changed on the last rank only
    if (comm.rank() == P - 1) {
      std::size_t k = 0;
      while (mine.cols[k] == starts[P - 1]) ++k;  // not the first row's diagonal
      mine.values[k] *= 2;
    }
    CHECK_THROWS_WITH_AS(make(mine), doctest::Contains("A is not symmetric"), InputError);
  }
  SUBCASE("a bad matrix file") {
    CHECK_THROWS_WITH_AS(DistCsrMatrix::read_matrix_market(comm, std::string(KRYSP_TEST_DATA) + "/bad/nonsquare.mtx"),
                         doctest::Contains("not square"), InputError);
    CHECK_THROWS_WITH_AS(DistCsrMatrix::read_matrix_market(comm, std::string(KRYSP_TEST_DATA) + "/bad/nonsymmetric.mtx"),
                         doctest::Contains("A is not symmetric"), InputError);
    CHECK_THROWS_AS(DistCsrMatrix::read_matrix_market(comm, std::string(KRYSP_TEST_DATA) + "/no_such.mtx"), InputError);
  }
}
