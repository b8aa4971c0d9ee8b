// Tests of the Matrix Market reader and writer (io/matrix_market.hpp).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"

namespace {
using krysp::CsrMatrix;
using krysp::index_t;
using krysp::InputError;
namespace io = krysp::io;

std::string data_file(const std::string& name) { return std::string(KRYSP_TEST_DATA) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A path in the temporary directory, removed when this goes out of scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& stem) {
    static int counter = 0;
    path = (std::filesystem::temp_directory_path() /
            ("krysp_mm_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + stem))
               .string();
  }
  ~TempFile() { std::remove(path.c_str()); }
  void write(const std::string& text) const {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
};

/// The value stored at (i, j), or 0 if nothing is stored there.
template <class T>
T entry(const CsrMatrix<T>& A, index_t i, index_t j) {
  const index_t* ci = A.col_idx().data();
  const index_t *b = ci + A.row_ptr()(i), *e = ci + A.row_ptr()(i + 1);
  const index_t* p = std::lower_bound(b, e, j);
  return p != e && *p == j ? A.values()(p - ci) : T(0);
}

template <class T>
bool stored(const CsrMatrix<T>& A, index_t i, index_t j) {
  const index_t* ci = A.col_idx().data();
  return std::binary_search(ci + A.row_ptr()(i), ci + A.row_ptr()(i + 1), j);
}

/// Same shape, same structure and bit-identical values.
template <class T>
void check_identical(const CsrMatrix<T>& a, const CsrMatrix<T>& b) {
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.cols() == b.cols());
  REQUIRE(a.nnz() == b.nnz());
  CHECK(std::equal(a.row_ptr().data(), a.row_ptr().data() + a.rows() + 1, b.row_ptr().data()));
  CHECK(std::equal(a.col_idx().data(), a.col_idx().data() + a.nnz(), b.col_idx().data()));
  CHECK(std::memcmp(a.values().data(), b.values().data(), sizeof(T) * static_cast<std::size_t>(a.nnz())) ==
        0);
}

template <class T>
void check_symmetric(const CsrMatrix<T>& A, T sign = T(1)) {
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) {
      const index_t j = A.col_idx()(k);
      REQUIRE(stored(A, j, i));
      CHECK(entry(A, j, i) == sign * A.values()(k));
    }
}

enum class Reader { Sparse, Dense, SparseFloat };

/// Parses `text` as "bad.mtx" and checks that it is refused with an InputError whose message
/// starts with "bad.mtx:<line>: " and contains `key`.
void expect_error(const std::string& text, int line, const std::string& key, Reader reader = Reader::Sparse) {
  CAPTURE(text);
  std::string msg;
  try {
    if (reader == Reader::Sparse) io::parse_matrix_market<double>(text, "bad.mtx");
    if (reader == Reader::SparseFloat) io::parse_matrix_market<float>(text, "bad.mtx");
    if (reader == Reader::Dense) io::parse_dense_matrix_market<double>(text, "bad.mtx");
  } catch (const InputError& e) {
    msg = e.what();
  }
  INFO("message: ", msg);
  REQUIRE_MESSAGE(!msg.empty(), "no InputError was thrown");
  const std::string prefix = "bad.mtx:" + std::to_string(line) + ": ";
  CHECK(msg.compare(0, prefix.size(), prefix) == 0);
  CHECK(msg.find(key) != std::string::npos);
}

const std::string kGeneral = "%%MatrixMarket matrix coordinate real general\n";
const std::string kSymmetric = "%%MatrixMarket matrix coordinate real symmetric\n";
const std::string kSkew = "%%MatrixMarket matrix coordinate real skew-symmetric\n";
const std::string kArray = "%%MatrixMarket matrix array real general\n";

std::vector<std::string> bundled_matrices() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(KRYSP_TEST_DATA))
    if (e.path().extension() == ".mtx") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Reading valid files

TEST_CASE("MatrixMarket bcsstk01: symmetric expansion and values") {
  io::MmInfo info;
  const auto A = io::read_matrix_market<double>(data_file("bcsstk01.mtx"), &info);
  CHECK(info.rows == 48);
  CHECK(info.cols == 48);
  CHECK(info.entries_in_file == 224);
  CHECK(info.field == io::MmField::Real);
  CHECK(info.symmetry == io::MmSymmetry::Symmetric);
  CHECK_FALSE(info.dense_array);
  REQUIRE(A.rows() == 48);
  REQUIRE(A.cols() == 48);
  CHECK(A.nnz() == 400);  // 48 diagonal + 2 * 176 off-diagonal
  CHECK(entry(A, 0, 0) == 2832268.51852);
  CHECK(entry(A, 4, 0) == 1e6);
  CHECK(entry(A, 0, 4) == 1e6);
  CHECK(entry(A, 6, 0) == -3333.33333333);
  CHECK(entry(A, 0, 6) == -3333.33333333);
  CHECK(entry(A, 18, 0) == -2.8e6);
  CHECK_FALSE(stored(A, 1, 0));
  check_symmetric(A);

  const auto F = io::read_matrix_market<float>(data_file("bcsstk01.mtx"));
  REQUIRE(F.nnz() == 400);
  for (index_t k = 0; k < A.nnz(); ++k) CHECK(F.values()(k) == static_cast<float>(A.values()(k)));
}

TEST_CASE("MatrixMarket pattern files: values are 1, symmetric ones expanded") {
  io::MmInfo info;
  const auto G = io::read_matrix_market<double>(data_file("GD06_theory.mtx"), &info);
  CHECK(info.field == io::MmField::Pattern);
  CHECK(info.symmetry == io::MmSymmetry::Symmetric);
  CHECK(info.entries_in_file == 190);
  CHECK(G.rows() == 101);
  CHECK(G.nnz() == 380);  // no diagonal: every entry mirrored
  CHECK(std::all_of(G.values().data(), G.values().data() + G.nnz(), [](double v) { return v == 1.0; }));
  check_symmetric(G);

  const auto E = io::read_matrix_market<float>(data_file("Erdos971.mtx"), &info);
  CHECK(info.field == io::MmField::Pattern);
  CHECK(info.entries_in_file == 1314);
  CHECK(E.rows() == 472);
  CHECK(E.cols() == 472);
  CHECK(E.nnz() == 2628);
  CHECK(std::all_of(E.values().data(), E.values().data() + E.nnz(), [](float v) { return v == 1.0f; }));
}

TEST_CASE("MatrixMarket integer file: Trefethen_2000") {
  io::MmInfo info;
  const auto A = io::read_matrix_market<double>(data_file("Trefethen_2000.mtx"), &info);
  CHECK(info.field == io::MmField::Integer);
  CHECK(info.entries_in_file == 21953);
  REQUIRE(A.rows() == 2000);
  CHECK(A.nnz() == 2 * 21953 - 2000);
  // Diagonal: the primes; off the diagonal: 1 where |i - j| is a power of two.
  const double primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29};
  for (index_t i = 0; i < 10; ++i) CHECK(entry(A, i, i) == primes[i]);
  CHECK(entry(A, 0, 1) == 1.0);
  CHECK(entry(A, 0, 4) == 1.0);
  CHECK(entry(A, 1024, 0) == 1.0);
  CHECK_FALSE(stored(A, 0, 3));
  check_symmetric(A);
}

TEST_CASE("MatrixMarket general file: rajat19") {
  io::MmInfo info;
  const auto A = io::read_matrix_market<double>(data_file("rajat19.mtx"), &info);
  CHECK(info.symmetry == io::MmSymmetry::General);
  CHECK(A.rows() == 1157);
  CHECK(A.nnz() == info.entries_in_file);
  CHECK(A.nnz() == 5399);
}

TEST_CASE("MatrixMarket skew-symmetric: mirrored with the sign negated") {
  const auto A = io::parse_matrix_market<double>(kSkew + "3 3 2\n2 1 4\n3 2 -1.5\n", "skew.mtx");
  CHECK(A.nnz() == 4);
  CHECK(entry(A, 1, 0) == 4.0);
  CHECK(entry(A, 0, 1) == -4.0);
  CHECK(entry(A, 2, 1) == -1.5);
  CHECK(entry(A, 1, 2) == 1.5);
  check_symmetric(A, -1.0);
}

TEST_CASE("MatrixMarket symmetric files may store the upper triangle") {
  const auto L = io::parse_matrix_market<double>(kSymmetric + "3 3 3\n1 1 2\n2 1 5\n3 2 7\n", "lower.mtx");
  const auto U = io::parse_matrix_market<double>(kSymmetric + "3 3 3\n1 1 2\n1 2 5\n2 3 7\n", "upper.mtx");
  check_identical(L, U);
  CHECK(L.nnz() == 5);
}

TEST_CASE("MatrixMarket symmetric file in random order, both triangles mixed, matches from_triplets") {
  std::mt19937 rng(99);
  std::uniform_int_distribution<index_t> idx(0, 39);
  std::vector<index_t> I, J;
  std::vector<double> V;
  std::string text = kSymmetric + "40 40 500\n";
  for (int k = 0; k < 500; ++k) {
    const index_t i = idx(rng), j = idx(rng);
    const double v = static_cast<double>(k % 17) - 8.25;
    text += std::to_string(i + 1) + " " + std::to_string(j + 1) + " " + std::to_string(v) + "\n";
    I.push_back(i);
    J.push_back(j);
    V.push_back(v);
    if (i != j) {
      I.push_back(j);
      J.push_back(i);
      V.push_back(v);
    }
  }
  const auto A = io::parse_matrix_market<double>(text, "mixed.mtx");
  const auto B = CsrMatrix<double>::from_triplets(40, 40, I, J, V);
  REQUIRE(A.nnz() == B.nnz());
  CHECK(std::equal(A.row_ptr().data(), A.row_ptr().data() + 41, B.row_ptr().data()));
  CHECK(std::equal(A.col_idx().data(), A.col_idx().data() + A.nnz(), B.col_idx().data()));
  for (index_t k = 0; k < A.nnz(); ++k) CHECK(A.values()(k) == doctest::Approx(B.values()(k)));
  check_symmetric(A);
}

TEST_CASE("MatrixMarket duplicates are summed") {
  SUBCASE("general, in any order") {
    const auto A = io::parse_matrix_market<double>(
        kGeneral + "2 3 5\n2 3 1\n1 1 1\n2 1 -2\n1 1 2.5\n2 3 0.25\n", "dup.mtx");
    CHECK(A.nnz() == 3);
    CHECK(entry(A, 0, 0) == 3.5);
    CHECK(entry(A, 1, 0) == -2.0);
    CHECK(entry(A, 1, 2) == 1.25);
    CHECK(A.col_idx()(1) == 0);  // row 1 sorted by column
    CHECK(A.col_idx()(2) == 2);
  }
  SUBCASE("symmetric file storing both (i,j) and (j,i)") {
    const auto A = io::parse_matrix_market<double>(kSymmetric + "2 2 3\n2 1 1\n1 2 2\n2 2 4\n", "dup.mtx");
    CHECK(A.nnz() == 3);
    CHECK(entry(A, 1, 0) == 3.0);
    CHECK(entry(A, 0, 1) == 3.0);
    CHECK(entry(A, 1, 1) == 4.0);
  }
  SUBCASE("explicit zeros stay in the structure") {
    const auto A = io::parse_matrix_market<double>(kGeneral + "2 2 2\n1 1 0\n2 2 1\n", "zero.mtx");
    CHECK(A.nnz() == 2);
    CHECK(stored(A, 0, 0));
  }
}

TEST_CASE("MatrixMarket layout leniency: CRLF, blank lines, comments, whitespace, case, BOM") {
  const std::string text =
      "\xEF\xBB\xBF%%MatrixMarket MATRIX Coordinate REAL Symmetric  \r\n"
      "% a comment\r\n"
      "\r\n"
      "   \t\r\n"
      "  3 3\t3  \r\n"
      "\r\n"
      "% comment between entries\r\n"
      "1 1 1.5e0\r\n"
      "\t3   1   -2\t \r\n"
      "\r\n"
      "3 3 +4\r\n"
      "% trailing comment\r\n"
      "\r\n";
  io::MmInfo info;
  const auto A = io::parse_matrix_market<double>(text, "crlf.mtx", &info);
  CHECK(info.symmetry == io::MmSymmetry::Symmetric);
  CHECK(A.nnz() == 4);
  CHECK(entry(A, 0, 0) == 1.5);
  CHECK(entry(A, 2, 0) == -2.0);
  CHECK(entry(A, 0, 2) == -2.0);
  CHECK(entry(A, 2, 2) == 4.0);
  // No final newline.
  CHECK(io::parse_matrix_market<double>(kGeneral + "1 1 1\n1 1 7", "nonl.mtx").values()(0) == 7.0);
}

TEST_CASE("MatrixMarket parsing never reads past the end of the buffer") {
  // The view stops after "2.5": the "e5" behind it, in the same allocation, must not be seen.
  const std::string text = kGeneral + "2 2 1\n1 1 2.5e5";
  const auto A = io::parse_matrix_market<double>(std::string_view(text.data(), text.size() - 2), "view.mtx");
  CHECK(A.values()(0) == 2.5);
  // Cut inside the size line: the count "1" is lost, so the size line is incomplete.
  const std::string cut = kGeneral + "2 2 1";
  const std::string_view short_view(cut.data(), cut.size() - 2);
  CHECK_THROWS_AS(io::parse_matrix_market<double>(short_view, "view.mtx"), InputError);
}

TEST_CASE("MatrixMarket empty matrices") {
  const auto A = io::parse_matrix_market<double>(kGeneral + "0 0 0\n", "empty.mtx");
  CHECK(A.rows() == 0);
  CHECK(A.nnz() == 0);
  const auto B = io::parse_matrix_market<double>(kGeneral + "4 5 0\n", "empty.mtx");
  CHECK(B.rows() == 4);
  CHECK(B.cols() == 5);
  CHECK(B.nnz() == 0);
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST_CASE("MatrixMarket round-trip of a random matrix") {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<index_t> row(0, 199), col(0, 149);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> expo(-300, 300);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (int k = 0; k < 3000; ++k) {
    I.push_back(row(rng));
    J.push_back(col(rng));
    V.push_back(mant(rng) * std::pow(10.0, expo(rng) / 10));
  }
  V[0] = 4.9406564584124654e-324;  // subnormal
  V[1] = -0.0;
  V[2] = 1.7976931348623157e308;
  I.push_back(199);  // make the last row and column non-empty
  J.push_back(149);
  V.push_back(1.0 / 3.0);

  SUBCASE("double") {
    const auto A = CsrMatrix<double>::from_triplets(200, 150, I, J, V);
    TempFile f("random.mtx");
    io::write_matrix_market(f.path, A);
    io::MmInfo info;
    const auto B = io::read_matrix_market<double>(f.path, &info);
    CHECK(info.symmetry == io::MmSymmetry::General);
    CHECK(info.entries_in_file == A.nnz());
    check_identical(A, B);
  }
  SUBCASE("float") {
    std::vector<float> Vf;
    for (double v : V) Vf.push_back(static_cast<float>(std::clamp(v, -1e30, 1e30)));
    const auto A = CsrMatrix<float>::from_triplets(200, 150, I, J, Vf);
    TempFile f("random_f.mtx");
    io::write_matrix_market(f.path, A);
    check_identical(A, io::read_matrix_market<float>(f.path));
  }
}

TEST_CASE("MatrixMarket round-trip of every bundled matrix") {
  const auto files = bundled_matrices();
  REQUIRE(files.size() >= 10);
  for (const auto& path : files) {
    CAPTURE(path);
    const auto A = io::read_matrix_market<double>(path);
    TempFile f("bundled.mtx");
    io::write_matrix_market(f.path, A);
    check_identical(A, io::read_matrix_market<double>(f.path));
    const auto Af = io::read_matrix_market<float>(path);
    io::write_matrix_market(f.path, Af);
    check_identical(Af, io::read_matrix_market<float>(f.path));
  }
}

TEST_CASE("MatrixMarket dense arrays") {
  SUBCASE("write then read back") {
    const index_t rows = 7, cols = 3;
    std::vector<double> x(rows * cols);
    std::mt19937 rng(7);
    std::normal_distribution<double> nd;
    for (auto& v : x) v = nd(rng);
    x[4] = 0.0;
    TempFile f("dense.mtx");
    io::write_dense_matrix_market(f.path, rows, cols, x.data());
    const auto d = io::read_dense_matrix_market<double>(f.path);
    CHECK(d.rows == rows);
    CHECK(d.cols == cols);
    REQUIRE(d.values.size() == x.size());
    CHECK(std::memcmp(d.values.data(), x.data(), sizeof(double) * x.size()) == 0);
    // The sparse reader takes the same file and drops its exact zeros.
    io::MmInfo info;
    const auto A = io::read_matrix_market<double>(f.path, &info);
    CHECK(info.dense_array);
    CHECK(info.entries_in_file == rows * cols);
    CHECK(A.nnz() == rows * cols - 1);
    CHECK(entry(A, 2, 1) == x[2 + 1 * rows]);
    CHECK_FALSE(stored(A, 4, 0));
  }
  SUBCASE("float write then read back") {
    const std::vector<float> x = {1.0f / 3.0f, -2.5e-38f, 3.4e38f, 0.1f};
    TempFile f("dense_f.mtx");
    io::write_dense_matrix_market(f.path, 2, 2, x.data());
    const auto d = io::read_dense_matrix_market<float>(f.path);
    REQUIRE(d.values.size() == 4);
    CHECK(std::memcmp(d.values.data(), x.data(), sizeof(float) * 4) == 0);
  }
  SUBCASE("array layout is column-major; comments and blank lines allowed") {
    const auto d =
        io::parse_dense_matrix_market<double>(kArray + "% c\n2 3\n1\n2\n\n3\n% c\n4\n5\n6\n", "a.mtx");
    CHECK(d.rows == 2);
    CHECK(d.cols == 3);
    CHECK(d.values == std::vector<double>{1, 2, 3, 4, 5, 6});
  }
  SUBCASE("symmetric and skew-symmetric arrays are expanded") {
    const auto s = io::parse_dense_matrix_market<double>(
        "%%MatrixMarket matrix array integer symmetric\n2 2\n1\n2\n3\n", "s.mtx");
    CHECK(s.values == std::vector<double>{1, 2, 2, 3});
    const auto k = io::parse_dense_matrix_market<double>(
        "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n", "k.mtx");
    CHECK(k.values == std::vector<double>{0, 1, 2, -1, 0, 3, -2, -3, 0});
  }
  SUBCASE("a coordinate file is filled densely") {
    const auto d =
        io::parse_dense_matrix_market<double>(kSymmetric + "3 3 3\n1 1 1\n3 1 2\n3 1 0.5\n", "c.mtx");
    CHECK(d.values == std::vector<double>{1, 0, 2.5, 0, 0, 0, 2.5, 0, 0});
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed input: each refused with "<file>:<line>: <problem>"

TEST_CASE("MatrixMarket malformed banner") {
  expect_error("", 1, "empty file");
  expect_error("\n  \n", 3, "empty file");
  expect_error("3 3 1\n1 1 1\n", 1, "missing banner");
  expect_error("%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "missing banner");
  expect_error("\x01\x02\xff garbage\n", 1, "missing banner");
  expect_error("%%MatrixMarket matrix coordinate real\n3 3 0\n", 1, "missing the symmetry");
  expect_error("%%MatrixMarket\n3 3 0\n", 1, "missing the object");
  expect_error("%%MatrixMarket vector coordinate real general\n3 0\n", 1, "unsupported object 'vector'");
  expect_error("%%MatrixMarket matrix sparse real general\n3 3 0\n", 1, "unknown format 'sparse'");
  expect_error("%%MatrixMarket matrix coordinate Quaternion general\n3 3 0\n", 1,
               "unknown field 'Quaternion'");
  expect_error("%%MatrixMarket matrix coordinate real upper\n3 3 0\n", 1, "unknown symmetry 'upper'");
  expect_error("%%MatrixMarket matrix coordinate real hermitian\n3 3 0\n", 1,
               "Hermitian matrices are not supported");
  expect_error("%%MatrixMarket matrix coordinate real general extra\n3 3 0\n", 1, "trailing garbage 'extra'");
  expect_error("%%MatrixMarket matrix array pattern general\n3 3\n", 1, "cannot have field 'pattern'");
  // The exact message users see for a complex matrix.
  CHECK_THROWS_WITH_AS(
      io::parse_matrix_market<double>("%%MatrixMarket matrix coordinate complex general\n1 1 0\n", "A.mtx"),
      "A.mtx:1: complex matrices are not supported (krysp solves real systems)", InputError);
  CHECK_THROWS_WITH_AS(
      io::parse_dense_matrix_market<double>("%%MatrixMarket matrix array complex general\n1 1\n", "A.mtx"),
      doctest::Contains("A.mtx:1: complex"), InputError);
}

TEST_CASE("MatrixMarket malformed size line") {
  expect_error(kGeneral, 2, "missing size line");
  expect_error(kGeneral + "% c\n\n", 4, "missing size line");
  expect_error(kGeneral + "3 x 1\n", 2, "column count 'x' is not an integer");
  expect_error(kGeneral + "3 3\n", 2, "missing entry count");
  expect_error(kGeneral + "-3 3 1\n", 2, "negative row count -3");
  expect_error(kGeneral + "3 -3 1\n", 2, "negative column count -3");
  expect_error(kGeneral + "3 3 -1\n", 2, "negative entry count -1");
  expect_error(kGeneral + "3 3 1 7\n1 1 1\n", 2, "trailing garbage '7' after the size line");
  expect_error(kGeneral + "3000000000 3 1\n", 2, "row count 3000000000 exceeds the int32 index limit");
  expect_error(kGeneral + "3 2147483648 1\n", 2, "column count 2147483648 exceeds the int32 index limit");
  expect_error(kGeneral + "99999999999999999999 3 1\n", 2, "out of range");
  expect_error(kGeneral + "3 3 3000000000\n1 1 1\n", 2, "too large for int32 row offsets");
  expect_error(kSymmetric + "\n3 4 1\n1 1 1\n", 3, "symmetric matrix must be square");
  expect_error(kSkew + "3 4 1\n2 1 1\n", 2, "skew-symmetric matrix must be square");
  expect_error(kArray + "2 2 4\n1\n2\n3\n4\n", 2, "trailing garbage '4' after the size line");
  expect_error(kArray + "2\n", 2, "missing column count");
}

TEST_CASE("MatrixMarket wrong entry counts") {
  expect_error(kGeneral + "3 3 3\n1 1 1\n2 2 2\n", 5, "truncated file: expected 3 entries, found 2");
  expect_error(kGeneral + "3 3 3\n1 1 1\n2 2 2", 4, "expected 3 entries, found 2");
  expect_error(kGeneral + "3 3 3\n", 3, "expected 3 entries, found 0");
  expect_error(kGeneral + "3 3 1\n1 1 1\n2 2 2\n", 4, "more entries than the 1 declared");
  expect_error(kGeneral + "3 3 0\n% only comments\n\n3 3 3\n", 5, "more entries than the 0 declared");
  expect_error(kArray + "2 2\n1\n2\n3\n", 6, "expected 4 values, found 3", Reader::Dense);
  expect_error(kArray + "2 2\n1\n2\n3\n4\n5\n", 7, "more values than the 4 declared", Reader::Dense);
  expect_error(kArray + "2 2\n1\n2\n3\n", 6, "expected 4 values, found 3");
}

TEST_CASE("MatrixMarket bad entries") {
  expect_error(kGeneral + "3 4 1\n4 1 1\n", 3, "row index 4 is out of range [1, 3]");
  expect_error(kGeneral + "3 4 1\n0 1 1\n", 3, "row index 0 is out of range [1, 3]");
  expect_error(kGeneral + "3 4 1\n-1 1 1\n", 3, "row index -1 is out of range");
  expect_error(kGeneral + "3 4 1\n1 5 1\n", 3, "column index 5 is out of range [1, 4]");
  expect_error(kGeneral + "3 4 1\n1 99999999999999999999 1\n", 3,
               "column index '99999999999999999999' is out of range");
  expect_error(kGeneral + "3 4 1\na 1 1\n", 3, "row index 'a' is not an integer");
  expect_error(kGeneral + "3 4 1\n1 1.5 1\n", 3, "column index '1.5' is not an integer");
  expect_error(kGeneral + "3 4 1\n1 1 abc\n", 3, "value 'abc' is not a number");
  expect_error(kGeneral + "3 4 1\n1 1 1.0x\n", 3, "value '1.0x' is not a number");
  expect_error(kGeneral + "3 4 1\n1 1 1,5\n", 3, "value '1,5' is not a number");
  expect_error(kGeneral + "3 4 1\n1 1 1.0D+00\n", 3, "is not a number");
  expect_error(kGeneral + "3 4 1\n1 1 +-1\n", 3, "value '+-1' is not a number");
  expect_error(kGeneral + "3 4 1\n1 1 +\n", 3, "value '+' is not a number");
  expect_error(kGeneral + "3 4 1\n1 ++1 1\n", 3, "column index '++1' is not an integer");
  expect_error(kGeneral + "3 4 1\n1 1 1.0 2.0\n", 3, "trailing garbage '2.0'");
  expect_error("%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 1 1\n", 3, "trailing garbage '1'");
  expect_error(kGeneral + "3 4 1\n1 1\n", 3, "missing value");
  expect_error(kGeneral + "3 4 1\n1\n", 3, "missing column index");
  expect_error("%%MatrixMarket matrix coordinate integer general\n3 4 1\n1 1 2.5\n", 3,
               "'2.5' is not an integer");
  expect_error(kSkew + "3 3 2\n2 1 1\n2 2 1\n", 4, "diagonal entry (2, 2)");
  // Line numbers count blank lines, comments and CRLF lines.
  expect_error(kGeneral + "3 3 2\n\n% c\n1 1 1\n\n1 9 1\n", 7, "column index 9");
  expect_error("%%MatrixMarket matrix coordinate real general\r\n3 3 1\r\n1 1 x\r\n", 3,
               "value 'x' is not a number");
  expect_error(kArray + "2 1\n1 2\n3\n", 3, "trailing garbage '2'", Reader::Dense);
}

TEST_CASE("MatrixMarket NaN, Inf and overflowing values are refused") {
  expect_error(kGeneral + "1 1 1\n1 1 nan\n", 3, "'nan' is not finite");
  expect_error(kGeneral + "1 1 1\n1 1 -inf\n", 3, "'-inf' is not finite");
  expect_error(kGeneral + "1 1 1\n1 1 Infinity\n", 3, "not finite");
  expect_error(kGeneral + "1 1 1\n1 1 1e999\n", 3, "value '1e999' overflows double");
  expect_error(kGeneral + "1 1 1\n1 1 -1e999\n", 3, "not finite");
  expect_error(kGeneral + "1 1 1\n1 1 1e39\n", 3, "value '1e39' overflows float", Reader::SparseFloat);
  expect_error(kArray + "1 1\nNaN\n", 3, "not finite", Reader::Dense);
  // Finite duplicates whose sum overflows (they are summed once the file is read).
  CHECK_THROWS_WITH_AS(io::parse_matrix_market<double>(kGeneral + "2 2 2\n2 1 1.5e308\n2 1 1.5e308\n", "dup.mtx"),
                       doctest::Contains("duplicate entries at (2,1) sum to inf"), InputError);
  // Underflow is not an error: it reads as 0 (or a subnormal).
  const auto A = io::parse_matrix_market<double>(kGeneral + "1 1 1\n1 1 1e-400\n", "under.mtx");
  CHECK(A.values()(0) == 0.0);
  const auto F = io::parse_matrix_market<float>(kGeneral + "1 1 1\n1 1 1e-40\n", "under.mtx");
  CHECK(F.values()(0) > 0.0f);
  CHECK(F.values()(0) < 1e-38f);
}

TEST_CASE("MatrixMarket size limits") {
  // Expansion past the entry limit: 3 off-diagonal entries become 6 > 5 at the third one.
  const std::string text = kSymmetric + "3 3 3\n2 1 1\n3 1 1\n3 2 1\n";
  CHECK_THROWS_WITH_AS(io::detail::parse_matrix_market_limited<double>(text, "big.mtx", 5),
                       doctest::Contains("big.mtx:5: "), InputError);
  CHECK_THROWS_WITH_AS(io::detail::parse_matrix_market_limited<double>(text, "big.mtx", 5),
                       doctest::Contains("too large for int32 row offsets"), InputError);
  CHECK(io::detail::parse_matrix_market_limited<double>(text, "big.mtx", 6).nnz() == 6);
  // A declared count above the limit fails on the size line, before anything is allocated.
  CHECK_THROWS_WITH_AS(io::detail::parse_matrix_market_limited<double>(text, "big.mtx", 2),
                       doctest::Contains("big.mtx:2: entry count 3 is too large for int32 row offsets"),
                       InputError);
  // A dense block read from a coordinate file is allocated only if rows*cols fits the limit.
  expect_error(kGeneral + "100000 100000 1\n1 1 1\n", 2, "too large", Reader::Dense);
  // A bogus huge size in an array header fails on the count, not on allocation.
  expect_error(kArray + "2000000000 2000000000\n1\n", 4, "expected 4000000000000000000 values, found 1",
               Reader::Dense);
}

TEST_CASE("MatrixMarket lowered limits (the fuzz targets' setting) bound rows, columns and dense blocks") {
  const io::detail::MmLimits small{100, 50};
  // Within the limits: parsed as usual.
  CHECK(io::detail::parse_matrix_market_limited<double>(kGeneral + "50 50 1\n50 50 1\n", "s.mtx", small).rows() == 50);
  // A 2^31-1-row empty matrix is valid under the int32 limits, but not under lowered ones: the size
  // line is refused before anything is allocated.
  CHECK_THROWS_WITH_AS(
      io::detail::parse_matrix_market_limited<double>(kGeneral + "2147483647 1 0\n", "s.mtx", small),
      doctest::Contains("s.mtx:2: row count 2147483647 exceeds the index limit (50)"), InputError);
  CHECK_THROWS_WITH_AS(io::detail::parse_matrix_market_limited<float>(kGeneral + "1 51 0\n", "s.mtx", small),
                       doctest::Contains("column count 51 exceeds the index limit (50)"), InputError);
  CHECK_THROWS_WITH_AS(io::detail::parse_dense_matrix_market_limited<double>(kGeneral + "20 20 0\n", "s.mtx", small),
                       doctest::Contains("block (400 values) is too large (limit 100)"), InputError);
  CHECK(io::detail::parse_dense_matrix_market_limited<double>(kGeneral + "10 10 1\n2 3 5\n", "s.mtx", small)
            .values[1 + 2 * 10] == 5.0);
  // The public functions keep the int32 wording.
  expect_error(kGeneral + "3000000000 3 1\n", 2, "exceeds the int32 index limit (2147483647)");
}

// ---------------------------------------------------------------------------------------------
// Files

TEST_CASE("MatrixMarket errors name the file path") {
  TempFile f("bad_file.mtx");
  f.write(kGeneral + "3 3 2\n1 1 1\n1 4 1\n");
  CHECK_THROWS_WITH_AS(io::read_matrix_market<double>(f.path),
                       doctest::Contains((f.path + ":4: column index 4").c_str()), InputError);
  CHECK_THROWS_WITH_AS(io::read_dense_matrix_market<double>(f.path),
                       doctest::Contains((f.path + ":4: ").c_str()), InputError);
}

TEST_CASE("MatrixMarket missing or unreadable file") {
  const std::string missing = "/nonexistent_krysp_dir/A.mtx";
  CHECK_THROWS_WITH_AS(io::read_matrix_market<double>(missing),
                       "cannot open '/nonexistent_krysp_dir/A.mtx': No such file or directory", InputError);
  CHECK_THROWS_WITH_AS(io::read_dense_matrix_market<float>(missing), doctest::Contains("cannot open"),
                       InputError);
  CHECK_THROWS_WITH_AS(io::read_matrix_market<double>(KRYSP_TEST_DATA), doctest::Contains("Is a directory"),
                       InputError);
  const auto A = CsrMatrix<double>::from_triplets(1, 1, {0}, {0}, {1.0});
  CHECK_THROWS_WITH_AS(io::write_matrix_market(missing, A), doctest::Contains("cannot open"), InputError);
  const double x = 1.0;
  CHECK_THROWS_WITH_AS(io::write_dense_matrix_market(missing, 1, 1, &x), doctest::Contains("for writing"),
                       InputError);
}

TEST_CASE("MatrixMarket truncated copy of a real file is refused") {
  const std::string full = slurp(data_file("bcsstk02.mtx"));
  const std::string cut = full.substr(0, full.size() * 6 / 10);
  TempFile f("bcsstk02_cut.mtx");
  f.write(cut);
  std::string msg;
  try {
    io::read_matrix_market<double>(f.path);
  } catch (const InputError& e) {
    msg = e.what();
  }
  INFO("message: ", msg);
  REQUIRE_FALSE(msg.empty());
  CHECK(msg.rfind(f.path + ":", 0) == 0);
  // The cut falls inside a line; whatever it leaves, the count cannot match.
  const auto lines = std::count(cut.begin(), cut.end(), '\n') + 1;
  const bool count_error = msg.find("expected 2211 entries") != std::string::npos;
  const bool line_error = msg.find(":" + std::to_string(lines) + ": ") != std::string::npos;
  CHECK(line_error);
  CHECK((count_error || msg.find("missing") != std::string::npos ||
         msg.find("not a number") != std::string::npos));

  // Cut at a line boundary: the count is what gives it away.
  const std::string whole_lines = cut.substr(0, cut.rfind('\n') + 1);
  const auto data_lines = std::count(whole_lines.begin(), whole_lines.end(), '\n') -
                          14;  // 13 banner/comment lines + the size line
  CHECK_THROWS_WITH_AS(
      io::parse_matrix_market<double>(whole_lines, "cut.mtx"),
      doctest::Contains(("expected 2211 entries, found " + std::to_string(data_lines)).c_str()), InputError);
}
