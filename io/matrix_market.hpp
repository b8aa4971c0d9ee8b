#pragma once
/// \file matrix_market.hpp
/// Reading and writing Matrix Market (.mtx) files.
///
/// What is read:
///  - `coordinate` files with field `real` (`double` is accepted as a synonym), `integer` or
///    `pattern` (every value 1), and symmetry `general`, `symmetric` or `skew-symmetric`;
///  - `array` (dense, column-major) files with field `real` or `integer` and the same symmetries.
/// `complex` and `hermitian` files, `vector` objects and any unknown keyword are refused.
///
/// Conventions and leniencies:
///  - Header keywords are case-insensitive. Comment lines (`%`) and blank lines may appear anywhere
///    after the banner; CRLF line endings, tabs and leading/trailing whitespace are accepted, and so
///    is a UTF-8 byte-order mark before the banner. Indices are 1-based in the file, 0-based in krysp.
///  - Duplicate (i, j) entries are SUMMED (as in CsrMatrix::from_triplets), and explicitly stored
///    zeros of a coordinate file are kept in the structure.
///  - Symmetric files are expanded to both triangles (the diagonal once). The standard says the lower
///    triangle is stored, but many tools write the upper one, so either is accepted. If a symmetric
///    file stores both (i, j) and (j, i) off the diagonal, each is mirrored and the two become a
///    duplicate pair after expansion: they are summed (so A(i,j) = A(j,i) = a_ij + a_ji).
///  - Skew-symmetric files are mirrored with the sign negated and must store no diagonal entry.
///  - NaN and Inf are refused, whether spelled out (`nan`, `inf`) or produced by overflow (`1e999`,
///    or `1e39` read as float). Values that underflow become 0 or subnormal, as strtod does.
///  - When read_matrix_market() reads an `array` file, exact zeros are dropped from the CSR
///    structure (a dense file has no notion of "stored" entries).
///
/// Errors: every malformed input throws krysp::InputError with the message
/// "<file>:<line>: <problem>", naming the value that was wrong; a file that cannot be opened gives
/// "cannot open '<path>': <reason>". No partial matrix is ever returned and *info is only written
/// on success. Matrices whose stored entries after symmetric expansion exceed kMaxNnz are refused
/// ("too large for int32 row offsets"), as are dimensions above int32.
///
/// Speed: the file is read with one fread and parsed in a single pass with std::from_chars; the
/// triplet vectors are reserved from the size line, capped by the file size so that a bogus entry
/// count cannot allocate before the parse fails.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp::io {

/// The field keyword of the banner (what the values are).
enum class MmField {
  Real,     ///< `real` (or `double`): floating-point values
  Integer,  ///< `integer`: integer values, converted to T
  Pattern,  ///< `pattern`: no values in the file; every stored entry is 1
};
/// The symmetry keyword of the banner (which triangle is stored and how it mirrors).
enum class MmSymmetry {
  General,        ///< every entry is stored
  Symmetric,      ///< one triangle is stored; A(j,i) = A(i,j)
  SkewSymmetric,  ///< the strict lower (or upper) triangle is stored; A(j,i) = -A(i,j)
};

/// What the header of a Matrix Market file says.
struct MmInfo {
  index_t rows = 0;                           ///< rows from the size line
  index_t cols = 0;                           ///< columns from the size line
  std::int64_t entries_in_file = 0;           ///< entries stored in the file (before symmetric expansion)
  MmField field = MmField::Real;              ///< value type of the file
  MmSymmetry symmetry = MmSymmetry::General;  ///< symmetry of the file
  bool dense_array = false;                   ///< true for the `array` format, false for `coordinate`
};

/// Reads a Matrix Market file into a CSR matrix (see the file comment for what is accepted).
/// Throws InputError on a missing or malformed file. If `info` is given, it receives the header.
template <class T>
CsrMatrix<T> read_matrix_market(const std::string& path, MmInfo* info = nullptr);

/// Same as read_matrix_market(), from text in memory (for tests and fuzzing). The text need not be
/// NUL-terminated; nothing outside it is read. `name` stands for the path in error messages.
template <class T>
CsrMatrix<T> parse_matrix_market(std::string_view text, const std::string& name, MmInfo* info = nullptr);

/// A dense block, column-major: values[i + j * rows] is entry (i, j).
template <class T>
struct DenseBlock {
  index_t rows = 0;       ///< number of rows
  index_t cols = 0;       ///< number of columns
  std::vector<T> values;  ///< rows*cols values, column-major
};

/// Reads a dense block (right-hand sides, initial guesses) from an `array` file. A `coordinate`
/// file is accepted too and filled densely (absent entries are 0, duplicates summed, symmetric
/// files expanded); its rows*cols must not exceed kMaxNnz. Throws InputError like
/// read_matrix_market().
template <class T>
DenseBlock<T> read_dense_matrix_market(const std::string& path);

/// Same as read_dense_matrix_market(), from text in memory; `name` is used in error messages.
template <class T>
DenseBlock<T> parse_dense_matrix_market(std::string_view text, const std::string& name);

/// Writes A as `coordinate real general`, one entry per line in row order, values printed like
/// %.17g (%.9g for float), which reads back bit for bit. Non-finite values are written as
/// nan/inf, which the reader here refuses. Throws InputError if the file cannot be written.
template <class T>
void write_matrix_market(const std::string& path, const CsrMatrix<T>& A);

/// Writes a column-major rows x cols block as `array real general` (%.17g, %.9g for float).
/// Throws InputError if the file cannot be written or the sizes are negative.
template <class T>
void write_dense_matrix_market(const std::string& path, index_t rows, index_t cols, const T* colmajor);

namespace detail {
/// Size limits of a parse. The public functions use the int32 limits; tests and the fuzz targets
/// lower them to reach the "too large" paths, and to bound what a tiny file may make the parser
/// allocate (a 2^31-row empty matrix is valid, but needs 8 GB of row offsets).
struct MmLimits {
  std::int64_t max_nnz = kMaxNnz;    ///< stored entries after symmetric expansion (and dense size)
  std::int64_t max_dim = kMaxIndex;  ///< rows and columns
};
/// parse_matrix_market() with an entry limit other than kMaxNnz, so that tests can reach the
/// "too large for int32 row offsets" path without a multi-gigabyte file.
template <class T>
CsrMatrix<T> parse_matrix_market_limited(std::string_view text, const std::string& name, std::int64_t max_nnz,
                                         MmInfo* info = nullptr);
/// parse_matrix_market() under the given limits.
template <class T>
CsrMatrix<T> parse_matrix_market_limited(std::string_view text, const std::string& name, const MmLimits& limits,
                                         MmInfo* info = nullptr);
/// parse_dense_matrix_market() under the given limits (max_nnz bounds rows*cols of the block).
template <class T>
DenseBlock<T> parse_dense_matrix_market_limited(std::string_view text, const std::string& name,
                                                const MmLimits& limits);
}  // namespace detail

}  // namespace krysp::io
