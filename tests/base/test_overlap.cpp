// Overlap of an operation's input and output: blocks_overlap against a brute-force count of the
// entries two blocks share, and the host SpMV / SpMM refusing operands that share entries while
// accepting interleaved column blocks of one array (with the same result as separate arrays).
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/base/overlap.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/host/spmm_reference.hpp"

using namespace krysp;

namespace {
/// Offsets of a block's entries from the buffer's start: row i, column j at start + i·ld + j.
std::set<long> entries(long start, int rows, int ld, int n) {
  std::set<long> s;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < n; ++j) s.insert(start + long(i) * ld + j);
  return s;
}

bool share(const std::set<long>& a, const std::set<long>& b) {
  for (long e : a)
    if (b.count(e)) return true;
  return false;
}
}  // namespace

TEST_CASE("blocks_overlap: true exactly where two blocks share an entry, same or different leading dimensions") {
  std::vector<double> buf(512);
  const double* base = buf.data() + 128;
  int cases = 0, overlapping = 0;
  for (int n = 1; n <= 4; ++n)
    for (int lda = n; lda <= n + 3; ++lda)
      for (int ldb = n; ldb <= n + 3; ++ldb)
        for (int ra = 1; ra <= 4; ++ra)
          for (int rb = 1; rb <= 4; ++rb)
            for (int off = -24; off <= 24; ++off) {
              const bool shared = share(entries(0, ra, lda, n), entries(off, rb, ldb, n));
              const bool found = blocks_overlap(base, ra, lda, base + off, rb, ldb, n);
              if (lda == ldb) {
                CAPTURE(n);
                CAPTURE(lda);
                CAPTURE(ra);
                CAPTURE(rb);
                CAPTURE(off);
                REQUIRE(found == shared);  // exact on a common grid
              } else if (shared) {
                REQUIRE(found);  // different grids: never a miss (a false alarm is allowed)
              }
              ++cases;
              overlapping += shared;
            }
  CHECK(overlapping > cases / 10);  // both answers were exercised
  CHECK(overlapping < cases);
  CHECK_FALSE(blocks_overlap(base, 0, 4, base, 3, 4, 2));  // empty blocks
  CHECK(ranges_overlap(base, 4, base + 3, 1));
  CHECK_FALSE(ranges_overlap(base, 4, base + 4, 1));
  CHECK_FALSE(ranges_overlap(base, 4, static_cast<const double*>(nullptr), 4));
}

TEST_CASE("Host SpMV and SpMM: operands sharing entries are an InputError; interleaved blocks are fine") {
  const auto A = laplacian_2d(6, 5);  // 30 × 30
  const index_t n = A.rows(), N = 3;
  std::vector<double> x(n, 1.0), y(n);
  CHECK_THROWS_AS(A.multiply_host(x.data(), x.data()), InputError);
  CHECK_THROWS_AS(A.multiply_host(x.data(), x.data() + n - 1), InputError);  // one shared entry
  A.multiply_host(x.data(), y.data());
  CHECK(y[0] == doctest::Approx(2.0));  // corner row: 4 − 2 neighbours

  // X and Y as columns [0, N) and [N, 2N) of one n × 2N array, against separate arrays.
  std::vector<double> XY(std::size_t(n) * 2 * N), X(std::size_t(n) * N), Y(std::size_t(n) * N, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < N; ++j) X[i * N + j] = XY[i * 2 * N + j] = 1.0 + i * 0.25 - j;
  spmm_host(A, N, 2.0, X.data(), N, 0.0, Y.data(), N);
  spmm_host(A, N, 2.0, XY.data(), 2 * N, 0.0, XY.data() + N, 2 * N);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < N; ++j) REQUIRE(XY[i * 2 * N + N + j] == Y[i * N + j]);
  CHECK(Y[0] != 0.0);

  CHECK_THROWS_AS(spmm_host(A, N, 1.0, XY.data(), 2 * N, 0.0, XY.data(), 2 * N), InputError);      // same block
  CHECK_THROWS_AS(spmm_host(A, N, 1.0, XY.data(), 2 * N, 0.0, XY.data() + 1, 2 * N), InputError);  // columns 1..3
  CHECK_THROWS_AS(spmm_host(A, N, 1.0, X.data(), N, 0.0, X.data() + N, N), InputError);  // Y = X one row on
}
