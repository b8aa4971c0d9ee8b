#include "krysp/io/matrix_market.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <utility>

#include "krysp/base/error.hpp"
#include "krysp/base/kokkos_runtime.hpp"

namespace krysp::io {
namespace {

// ------------------------------------------------------------------------------------------------
// Error reporting

/// Where a problem is: the file (or the name given for a buffer), the line, and what a data line
/// of this file should look like (for "missing ..." messages).
struct Where {
  const std::string* name;
  std::int64_t line;
  const char* layout;
};

/// Throws InputError "<file>:<line>: <message>".
template <class... Args>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const std::string& name, std::int64_t line,
                                                 const Args&... args) {
  throw InputError(::krysp::detail::concat(name, ":", line, ": ", args...));
}

template <class... Args>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const Where& at, const Args&... args) {
  fail(*at.name, at.line, args...);
}

/// A token quoted for a message: long ones cut short, unprintable bytes escaped, so that a binary
/// file cannot flood or garble the message.
std::string quoted(std::string_view s) {
  constexpr std::size_t kMaxShown = 40;
  std::string out = "'";
  for (std::size_t k = 0; k < s.size() && k < kMaxShown; ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out + "'";
}

// ------------------------------------------------------------------------------------------------
// Lines and tokens

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/// Hands out the lines of a buffer one at a time and counts them. Never looks past the buffer.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  /// The next line, without its '\n'; false at the end of the text.
  bool next(std::string_view& line) {
    if (p_ == end_) return false;
    const auto* nl = static_cast<const char*>(std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_)));
    const char* e = nl ? nl : end_;
    line = std::string_view(p_, static_cast<std::size_t>(e - p_));
    p_ = nl ? nl + 1 : end_;
    ended_with_newline_ = nl != nullptr;
    ++number_;
    return true;
  }
  /// Number (1-based) of the line last returned.
  std::int64_t number() const { return number_; }
  /// The line to blame when the text ends too early: the one the next entry would have been on.
  std::int64_t end_line() const { return number_ + (number_ == 0 || ended_with_newline_ ? 1 : 0); }

 private:
  const char* p_;
  const char* end_;
  std::int64_t number_ = 0;
  bool ended_with_newline_ = false;
};

/// Result of parsing one numeric token.
enum class Num { Ok, Missing, Bad, OutOfRange, NonFinite };

/// Walks the whitespace-separated tokens of one line. Numbers are parsed in place with
/// std::from_chars, bounded by the line end.
class Tokens {
 public:
  explicit Tokens(std::string_view line) : p_(line.data()), e_(line.data() + line.size()) {}

  /// True when nothing but whitespace is left.
  bool done() {
    skip_space();
    return p_ == e_;
  }
  /// True for a blank line or a comment line (call before taking any token).
  bool blank_or_comment() { return done() || *p_ == '%'; }
  /// The next token (empty when none is left).
  std::string_view next() {
    skip_space();
    const char* b = p_;
    while (p_ != e_ && !is_space(*p_)) ++p_;
    return {b, static_cast<std::size_t>(p_ - b)};
  }
  /// What is left of the line, trimmed (for "trailing garbage" messages).
  std::string_view rest() {
    skip_space();
    const char* e = e_;
    while (e != p_ && is_space(e[-1])) --e;
    return {p_, static_cast<std::size_t>(e - p_)};
  }

  /// Parses the next token as an integer; on failure `tok` holds the offending token.
  Num integer(std::int64_t& v, std::string_view& tok) {
    skip_space();
    // Fast path for plain digits, as indices nearly always are; 17 digits cannot overflow.
    const char* lim = e_ - p_ > 17 ? p_ + 17 : e_;
    const char* q = p_;
    std::uint64_t x = 0;
    for (unsigned d; q != lim && (d = static_cast<unsigned>(*q) - '0') < 10u; ++q) x = x * 10 + d;
    if (q != p_ && ends_token(q)) {
      v = static_cast<std::int64_t>(x);
      p_ = q;
      return Num::Ok;
    }
    return integer_slow(v, tok);
  }

  /// Parses the next token as a finite real of type T; on failure `tok` holds the token.
  template <class T>
  Num real(T& v, std::string_view& tok) {
    skip_space();
    if (p_ == e_) return Num::Missing;
    const auto r = std::from_chars(skip_plus(), e_, v);
    if (r.ec == std::errc() && ends_token(r.ptr)) {
      tok = {p_, static_cast<std::size_t>(r.ptr - p_)};
      p_ = r.ptr;
      return std::isfinite(v) ? Num::Ok : Num::NonFinite;  // from_chars accepts "nan", "inf"
    }
    tok = next();
    if (r.ec != std::errc::result_out_of_range || r.ptr != p_) return Num::Bad;
    // from_chars reports underflow and overflow alike; strtod tells them apart.
    return overflows(tok, v) ? Num::OutOfRange : Num::Ok;
  }

 private:
  /// integer() for what the fast path does not take: signs, long tokens, errors.
  [[gnu::noinline]] Num integer_slow(std::int64_t& v, std::string_view& tok) {
    if (p_ == e_) return Num::Missing;
    const auto r = std::from_chars(skip_plus(), e_, v);
    if (r.ec == std::errc() && ends_token(r.ptr)) {
      p_ = r.ptr;
      return Num::Ok;
    }
    tok = next();
    return r.ec == std::errc::result_out_of_range && r.ptr == p_ ? Num::OutOfRange : Num::Bad;
  }
  void skip_space() {
    while (p_ != e_ && is_space(*p_)) ++p_;
  }
  bool ends_token(const char* q) const { return q == e_ || is_space(*q); }
  /// Where from_chars should start: past a leading '+' (which it refuses but printf and Fortran
  /// writers emit), unless a second sign follows.
  const char* skip_plus() const {
    if (*p_ != '+' || p_ + 1 == e_ || p_[1] == '+' || p_[1] == '-' || is_space(p_[1])) return p_;
    return p_ + 1;
  }

  /// For a token from_chars found out of range: true if it overflows T; else sets v to the
  /// (zero or subnormal) underflowed value.
  template <class T>
  static bool overflows(std::string_view tok, T& v) {
    const std::string s(tok);  // strtod needs a terminated string
    T x;
    if constexpr (std::is_same_v<T, float>)
      x = std::strtof(s.c_str(), nullptr);
    else
      x = static_cast<T>(std::strtod(s.c_str(), nullptr));
    if (std::isinf(x)) return true;
    v = x;
    return false;
  }

  const char* p_;
  const char* e_;
};

// ------------------------------------------------------------------------------------------------
// Numbers in context

/// Reads a 1-based index in [1, limit] and returns it 0-based.
/// The error for an index that read_index() could not take (kept out of the hot path).
[[noreturn, gnu::cold, gnu::noinline]] void bad_index(Num result, std::int64_t v, std::string_view tok,
                                                      const Where& at, const char* what, index_t limit) {
  switch (result) {
    case Num::Ok:
      fail(at, what, " ", v, " is out of range [1, ", limit, "]");
    case Num::Missing:
      fail(at, "missing ", what, " (a data line here is '", at.layout, "')");
    case Num::OutOfRange:
      fail(at, what, " ", quoted(tok), " is out of range [1, ", limit, "]");
    default:
      fail(at, what, " ", quoted(tok), " is not an integer");
  }
}

/// Reads a 1-based index in [1, limit] and returns it 0-based.
inline index_t read_index(Tokens& t, const Where& at, const char* what, index_t limit) {
  std::int64_t v = 0;
  std::string_view tok;
  const Num result = t.integer(v, tok);
  if (result == Num::Ok && v >= 1 && v <= limit) return static_cast<index_t>(v - 1);
  bad_index(result, v, tok, at, what, limit);
}

/// Reads one value of the given field (not Pattern).
template <class T>
T read_value(Tokens& t, const Where& at, MmField field) {
  std::string_view tok;
  if (field == MmField::Integer) {
    std::int64_t v = 0;
    switch (t.integer(v, tok)) {
      case Num::Ok:
        return static_cast<T>(v);
      case Num::Missing:
        fail(at, "missing value (a data line here is '", at.layout, "')");
      case Num::OutOfRange:
        fail(at, "integer value ", quoted(tok), " is out of range");
      default:
        fail(at, "value ", quoted(tok), " is not an integer (the banner says 'integer')");
    }
  }
  T v{};
  switch (t.real(v, tok)) {
    case Num::Ok:
      return v;
    case Num::Missing:
      fail(at, "missing value (a data line here is '", at.layout, "')");
    case Num::NonFinite:
      fail(at, "value ", quoted(tok), " is not finite (NaN and Inf are refused)");
    case Num::OutOfRange:
      fail(at, "value ", quoted(tok), " overflows ", std::is_same_v<T, float> ? "float" : "double",
           " (not finite; NaN and Inf are refused)");
    default:
      fail(at, "value ", quoted(tok), " is not a number");
  }
}

/// Reads a non-negative count of the size line.
std::int64_t read_count(Tokens& t, const Where& at, const char* what) {
  std::int64_t v = 0;
  std::string_view tok;
  switch (t.integer(v, tok)) {
    case Num::Ok:
      if (v < 0) fail(at, "negative ", what, " ", v, " on the size line");
      return v;
    case Num::Missing:
      fail(at, "missing ", what, " on the size line (expected '", at.layout, "')");
    case Num::OutOfRange:
      fail(at, what, " ", quoted(tok), " on the size line is out of range");
    default:
      fail(at, "bad size line: ", what, " ", quoted(tok), " is not an integer");
  }
}

// ------------------------------------------------------------------------------------------------
// Header

/// The header of a file and the line its size line is on.
struct Header {
  MmInfo info;
  std::int64_t size_line = 0;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

constexpr const char* kBannerForm = "'%%MatrixMarket matrix <format> <field> <symmetry>'";

/// The next banner keyword as written; `what` names it if it is missing.
std::string_view banner_word(Tokens& t, const Where& at, const char* what) {
  const std::string_view tok = t.next();
  if (tok.empty()) fail(at, "incomplete banner: missing the ", what, " (expected ", kBannerForm, ")");
  return tok;
}

MmField parse_field(std::string_view word, const Where& at) {
  const std::string w = lower(word);
  if (w == "real" || w == "double") return MmField::Real;
  if (w == "integer") return MmField::Integer;
  if (w == "pattern") return MmField::Pattern;
  if (w == "complex") fail(at, "complex matrices are not supported (krysp solves real systems)");
  fail(at, "unknown field ", quoted(word), " in the banner (expected 'real', 'integer' or 'pattern')");
}

MmSymmetry parse_symmetry(std::string_view word, const Where& at) {
  const std::string w = lower(word);
  if (w == "general") return MmSymmetry::General;
  if (w == "symmetric") return MmSymmetry::Symmetric;
  if (w == "skew-symmetric") return MmSymmetry::SkewSymmetric;
  if (w == "hermitian") fail(at, "Hermitian matrices are not supported (krysp solves real systems)");
  fail(at, "unknown symmetry ", quoted(word),
       " in the banner (expected 'general', 'symmetric' or 'skew-symmetric')");
}

/// Parses the banner line into format, field and symmetry.
void parse_banner(std::string_view line, const Where& at, MmInfo& info) {
  Tokens t(line);
  const std::string_view first = t.next();
  if (lower(first) != "%%matrixmarket")
    fail(at, "missing banner: the first line must be ", kBannerForm, ", found ", quoted(Tokens(line).rest()));
  const std::string_view object = banner_word(t, at, "object");
  if (lower(object) != "matrix")
    fail(at, "unsupported object ", quoted(object), " in the banner (only 'matrix' is read)");
  const std::string_view format_word = banner_word(t, at, "format");
  const std::string format = lower(format_word);
  if (format != "coordinate" && format != "array")
    fail(at, "unknown format ", quoted(format_word), " in the banner (expected 'coordinate' or 'array')");
  info.dense_array = format == "array";
  info.field = parse_field(banner_word(t, at, "field"), at);
  info.symmetry = parse_symmetry(banner_word(t, at, "symmetry"), at);
  if (!t.done()) fail(at, "trailing garbage ", quoted(t.rest()), " after the symmetry in the banner");
  if (info.dense_array && info.field == MmField::Pattern)
    fail(at, "bad banner: the 'array' format cannot have field 'pattern'");
}

/// Parses the size line: "rows cols entries" (coordinate) or "rows cols" (array).
void parse_size_line(std::string_view line, const Where& at, const detail::MmLimits& limits, MmInfo& info) {
  const std::int64_t max_nnz = limits.max_nnz;
  Tokens t(line);
  const std::int64_t rows = read_count(t, at, "row count");
  const std::int64_t cols = read_count(t, at, "column count");
  const std::int64_t entries = info.dense_array ? 0 : read_count(t, at, "entry count");
  if (!t.done())
    fail(at, "trailing garbage ", quoted(t.rest()), " after the size line (expected '", at.layout, "')");
  const char* index_limit = limits.max_dim == kMaxIndex ? "the int32 index limit" : "the index limit";
  if (rows > limits.max_dim) fail(at, "row count ", rows, " exceeds ", index_limit, " (", limits.max_dim, ")");
  if (cols > limits.max_dim) fail(at, "column count ", cols, " exceeds ", index_limit, " (", limits.max_dim, ")");
  if (info.symmetry != MmSymmetry::General && rows != cols)
    fail(at, "a ", info.symmetry == MmSymmetry::Symmetric ? "symmetric" : "skew-symmetric",
         " matrix must be square, but the size line says ", rows, " x ", cols);
  if (entries > max_nnz)
    fail(at, "entry count ", entries, " is too large for int32 row offsets (limit ", max_nnz, ")");
  info.rows = static_cast<index_t>(rows);
  info.cols = static_cast<index_t>(cols);
  if (!info.dense_array) {
    info.entries_in_file = entries;
  } else if (info.symmetry == MmSymmetry::General) {
    info.entries_in_file = rows * cols;
  } else {  // the lower triangle, with (symmetric) or without (skew) the diagonal
    info.entries_in_file =
        info.symmetry == MmSymmetry::Symmetric ? rows * (rows + 1) / 2 : rows * (rows - 1) / 2;
  }
}

/// Reads the banner and the size line; leaves `lines` on the first data line.
Header read_header(LineReader& lines, const std::string& name, const detail::MmLimits& limits) {
  Header h;
  std::string_view line;
  do {
    if (!lines.next(line)) fail(name, lines.end_line(), "empty file: expected a banner like ", kBannerForm);
  } while (Tokens(line).done());
  parse_banner(line, {&name, lines.number(), ""}, h.info);
  do {
    if (!lines.next(line)) fail(name, lines.end_line(), "missing size line: the file ends after the header");
  } while (Tokens(line).blank_or_comment());
  h.size_line = lines.number();
  parse_size_line(line, {&name, h.size_line, h.info.dense_array ? "rows cols" : "rows cols entries"}, limits,
                  h.info);
  return h;
}

/// The text without a UTF-8 byte-order mark, which some editors put in front of the banner.
std::string_view strip_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  return text;
}

// ------------------------------------------------------------------------------------------------
// Data

/// The entries as stored in a coordinate file (0-based). Symmetric files are expanded only when
/// the matrix is built, which halves the memory and the work of this stage.
template <class T>
struct Triplets {
  std::vector<index_t> i, j;
  std::vector<T> v;  ///< empty for a pattern file: every value is 1
  bool pattern = false;
  bool mirrored = false;     ///< each off-diagonal (i, j) also stands for (j, i) ...
  T mirror_sign = T(1);      ///< ... with this sign (-1 for skew-symmetric)
  std::size_t expanded = 0;  ///< number of entries after expansion
  void reserve(std::size_t n) {
    i.reserve(n);
    j.reserve(n);
    if (!pattern) v.reserve(n);
  }
  void add(index_t r, index_t c, T x) {
    i.push_back(r);
    j.push_back(c);
    if (!pattern) v.push_back(x);
  }
  T value(std::size_t k) const { return pattern ? T(1) : v[k]; }
};

/// Reads the entries of a coordinate file. Checks the count against the size line and the count
/// after symmetric expansion against max_nnz.
template <class T>
Triplets<T> read_entries(LineReader& lines, const std::string& name, const Header& h, std::size_t text_bytes,
                         std::int64_t max_nnz) {
  const MmInfo& info = h.info;
  const bool mirrored = info.symmetry != MmSymmetry::General;
  const bool skew = info.symmetry == MmSymmetry::SkewSymmetric;
  const bool pattern = info.field == MmField::Pattern;
  const char* layout = pattern ? "row column" : "row column value";
  const std::int64_t declared = info.entries_in_file;
  Triplets<T> t;
  t.pattern = pattern;
  t.mirrored = mirrored;
  t.mirror_sign = skew ? T(-1) : T(1);
  // Every entry takes at least 4 bytes ("1 1\n"): the file size bounds what a bogus count reserves.
  t.reserve(static_cast<std::size_t>(
      std::min<std::int64_t>(declared, static_cast<std::int64_t>(text_bytes / 4 + 1))));
  std::int64_t found = 0, expanded = 0;
  std::string_view line;
  while (lines.next(line)) {
    Tokens tok(line);
    if (tok.blank_or_comment()) continue;
    const Where at{&name, lines.number(), layout};
    if (found == declared)
      fail(at, "more entries than the ", declared, " declared on the size line (line ", h.size_line, ")");
    const index_t r = read_index(tok, at, "row index", info.rows);
    const index_t c = read_index(tok, at, "column index", info.cols);
    const T x = pattern ? T(1) : read_value<T>(tok, at, info.field);
    if (!tok.done())
      fail(at, "trailing garbage ", quoted(tok.rest()), " after the entry (expected '", layout, "')");
    if (skew && r == c)
      fail(at, "skew-symmetric matrix has a diagonal entry (", r + 1, ", ", c + 1,
           "); its diagonal is zero and must not be stored");
    t.add(r, c, x);
    ++found;
    expanded += mirrored && r != c ? 2 : 1;
    if (expanded > max_nnz)
      fail(at, "more than ", max_nnz, " entries after symmetric expansion: too large for int32 row offsets");
  }
  if (found < declared)
    fail(name, lines.end_line(), "truncated file: expected ", declared, " entries, found ", found);
  t.expanded = static_cast<std::size_t>(expanded);
  return t;
}

/// Reads the values of an array file (one per line, column-major, the lower triangle only for
/// symmetric files), checking the count against the size line.
template <class T>
std::vector<T> read_array_values(LineReader& lines, const std::string& name, const Header& h,
                                 std::size_t text_bytes) {
  const std::int64_t declared = h.info.entries_in_file;
  std::vector<T> values;
  // Every value takes at least 2 bytes ("1\n"): the file size bounds what a bogus size reserves.
  values.reserve(static_cast<std::size_t>(
      std::min<std::int64_t>(declared, static_cast<std::int64_t>(text_bytes / 2 + 1))));
  std::string_view line;
  while (lines.next(line)) {
    Tokens tok(line);
    if (tok.blank_or_comment()) continue;
    const Where at{&name, lines.number(), "value"};
    if (static_cast<std::int64_t>(values.size()) == declared)
      fail(at, "more values than the ", declared, " declared by the size line (line ", h.size_line, ")");
    values.push_back(read_value<T>(tok, at, h.info.field));
    if (!tok.done())
      fail(at, "trailing garbage ", quoted(tok.rest()), " after the value (expected one value per line)");
  }
  if (static_cast<std::int64_t>(values.size()) < declared)
    fail(name, lines.end_line(), "truncated file: expected ", declared, " values, found ", values.size());
  return values;
}

/// Expands the stored values of an array file into a full column-major block.
template <class T>
DenseBlock<T> array_to_dense(const MmInfo& info, std::vector<T> stored) {
  DenseBlock<T> d;
  d.rows = info.rows;
  d.cols = info.cols;
  if (info.symmetry == MmSymmetry::General) {
    d.values = std::move(stored);
    return d;
  }
  const std::size_t n = static_cast<std::size_t>(info.rows);
  const bool skew = info.symmetry == MmSymmetry::SkewSymmetric;
  d.values.assign(n * n, T(0));
  std::size_t k = 0;
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t i = skew ? j + 1 : j; i < n; ++i) {
      const T x = stored[k++];
      d.values[i + j * n] = x;
      if (i != j) d.values[j + i * n] = skew ? -x : x;
    }
  }
  return d;
}

/// Sorts one row by column (stably, so duplicates are summed in file order).
template <class T>
void sort_row(index_t* ci, T* va, index_t len, std::vector<std::pair<index_t, T>>& scratch) {
  scratch.resize(static_cast<std::size_t>(len));
  for (index_t k = 0; k < len; ++k) scratch[k] = {ci[k], va[k]};
  std::stable_sort(scratch.begin(), scratch.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (index_t k = 0; k < len; ++k) std::tie(ci[k], va[k]) = scratch[k];
}

/// Makes the columns of every row strictly increasing: sorts the rows that are not and sums
/// duplicates, compacting in place. Updates rp and returns the new nnz.
template <class T>
index_t sort_and_merge_rows(index_t rows, index_t* rp, index_t* ci, T* va) {
  std::vector<std::pair<index_t, T>> scratch;
  index_t out = 0;
  for (index_t r = 0; r < rows; ++r) {
    const index_t b = rp[r], e = rp[r + 1];
    const bool increasing = std::is_sorted(ci + b, ci + e, std::less_equal<index_t>());
    rp[r] = out;
    if (increasing && out == b) {  // the usual case: nothing to sort, merge or move
      out = e;
      continue;
    }
    if (!increasing) sort_row(ci + b, va + b, e - b, scratch);
    for (index_t k = b; k < e; ++k) {
      if (out > rp[r] && ci[out - 1] == ci[k]) {
        va[out - 1] += va[k];  // duplicate (r, c): summed, and finite values may sum to an overflow
        if (!std::isfinite(double(va[out - 1])))
          KRYSP_THROW(InputError, "duplicate entries at (", r + 1, ",", ci[k] + 1, ") sum to ", double(va[out - 1]),
                      ", which is not finite");
      } else {
        ci[out] = ci[k];
        va[out] = va[k];
        ++out;
      }
    }
  }
  rp[rows] = out;
  return out;
}

template <class V>
V uninitialized_view(const char* label, std::size_t n) {
  return V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
}

/// Builds the CSR matrix from triplets, expanding symmetric ones: a stable counting sort by row
/// keeps each row in file order, which for the usual column-major files (lower or upper triangle)
/// is already by increasing column, so only the rows that are out of order pay for a sort.
template <class T>
CsrMatrix<T> triplets_to_csr(index_t rows, index_t cols, const Triplets<T>& t) {
  using IndexView = typename CsrMatrix<T>::IndexView;
  using ValueView = typename CsrMatrix<T>::ValueView;
  ensure_kokkos();
  const std::size_t n = t.expanded;  // <= kMaxNnz, checked while reading: int32 offsets do not overflow
  const std::size_t stored = t.i.size();
  auto rp = uninitialized_view<IndexView>("row_ptr", static_cast<std::size_t>(rows) + 1);
  auto ci = uninitialized_view<IndexView>("col_idx", n);
  auto va = uninitialized_view<ValueView>("values", n);
  index_t* p = rp.data();
  std::fill(p, p + rows + 1, 0);
  for (std::size_t k = 0; k < stored; ++k) {
    ++p[t.i[k] + 1];
    if (t.mirrored && t.i[k] != t.j[k]) ++p[t.j[k] + 1];
  }
  std::partial_sum(p, p + rows + 1, p);
  {
    std::vector<index_t> next(p, p + rows);
    index_t* c = ci.data();
    T* v = va.data();
    for (std::size_t k = 0; k < stored; ++k) {
      const index_t r = t.i[k], col = t.j[k];
      const index_t q = next[static_cast<std::size_t>(r)]++;
      const T x = t.value(k);
      c[q] = col;
      v[q] = x;
      if (t.mirrored && r != col) {
        const index_t qm = next[static_cast<std::size_t>(col)]++;
        c[qm] = r;
        v[qm] = t.mirror_sign * x;
      }
    }
  }
  const auto nnz = static_cast<std::size_t>(sort_and_merge_rows(rows, p, ci.data(), va.data()));
  if (nnz != n) {  // duplicates were summed: shrink to fit
    auto ci2 = uninitialized_view<IndexView>("col_idx", nnz);
    auto va2 = uninitialized_view<ValueView>("values", nnz);
    std::copy(ci.data(), ci.data() + nnz, ci2.data());
    std::copy(va.data(), va.data() + nnz, va2.data());
    ci = ci2;
    va = va2;
  }
  return CsrMatrix<T>(rows, cols, rp, ci, va);
}

/// The nonzeros of a dense block as a CSR matrix (exact zeros dropped).
template <class T>
CsrMatrix<T> dense_to_csr(const DenseBlock<T>& d, const Where& at, std::int64_t max_nnz) {
  const std::size_t rows = static_cast<std::size_t>(d.rows);
  const auto nonzeros = std::count_if(d.values.begin(), d.values.end(), [](T x) { return x != T(0); });
  if (nonzeros > max_nnz)
    fail(at, "the array has ", nonzeros, " nonzero values: too large for int32 row offsets (limit ", max_nnz,
         ")");
  std::vector<index_t> rp(rows + 1, 0), ci;
  std::vector<T> va;
  ci.reserve(static_cast<std::size_t>(nonzeros));
  va.reserve(static_cast<std::size_t>(nonzeros));
  for (std::size_t i = 0; i < rows; ++i) {
    for (index_t j = 0; j < d.cols; ++j) {
      const T x = d.values[i + static_cast<std::size_t>(j) * rows];
      if (x != T(0)) {
        ci.push_back(j);
        va.push_back(x);
      }
    }
    rp[i + 1] = static_cast<index_t>(ci.size());
  }
  return CsrMatrix<T>::from_arrays(d.rows, d.cols, rp, ci, va);
}

/// Coordinate entries added into a zero dense block (duplicates summed, symmetric ones expanded).
template <class T>
DenseBlock<T> triplets_to_dense(index_t rows, index_t cols, const Triplets<T>& t) {
  DenseBlock<T> d;
  d.rows = rows;
  d.cols = cols;
  d.values.assign(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols), T(0));
  const auto at = [&](index_t i, index_t j) -> T& {
    return d
        .values[static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * static_cast<std::size_t>(rows)];
  };
  for (std::size_t k = 0; k < t.i.size(); ++k) {
    at(t.i[k], t.j[k]) += t.value(k);
    if (t.mirrored && t.i[k] != t.j[k]) at(t.j[k], t.i[k]) += t.mirror_sign * t.value(k);
  }
  return d;
}

// ------------------------------------------------------------------------------------------------
// Files

/// The whole file in memory, read with one fread (a loop only for pipes and other non-regular files).
std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, &std::fclose);
  struct stat st {};
  const bool have_stat = fstat(fileno(f), &st) == 0;
  if (have_stat && S_ISDIR(st.st_mode))
    throw InputError("cannot open '" + path + "': " + std::strerror(EISDIR));
  std::string text;
  if (have_stat && S_ISREG(st.st_mode)) {
    text.resize(static_cast<std::size_t>(st.st_size));
    text.resize(std::fread(text.data(), 1, text.size(), f));
  } else {
    char chunk[1 << 16];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, f)) > 0;) text.append(chunk, got);
  }
  if (std::ferror(f)) throw InputError("cannot read '" + path + "': " + std::strerror(errno));
  return text;
}

/// Buffered output to a file. Any failure throws InputError, and the partial file is removed.
class OutFile {
 public:
  explicit OutFile(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw InputError("cannot open '" + path + "' for writing: " + std::strerror(errno));
    buf_.reserve(kFlushAt + 256);
  }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile() {
    if (f_) {  // only on an exception: do not leave a truncated file behind
      std::fclose(f_);
      std::remove(path_.c_str());
    }
  }
  void put(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= kFlushAt) flush();
  }
  void put(std::int64_t v) {
    char b[24];
    buf_.append(b, std::to_chars(b, b + sizeof b, v).ptr);
  }
  /// %.17g for double and %.9g for float: the fewest fixed digits that always read back exactly.
  template <class T>
  void put_real(T v) {
    char b[48];
    const int digits = std::is_same_v<T, float> ? 9 : 17;
    buf_.append(b, std::to_chars(b, b + sizeof b, v, std::chars_format::general, digits).ptr);
  }
  void close() {
    flush();
    std::FILE* f = std::exchange(f_, nullptr);
    if (std::fclose(f) != 0) {
      const int err = errno;
      std::remove(path_.c_str());
      throw InputError("cannot write '" + path_ + "': " + std::strerror(err));
    }
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  void flush() {
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      throw InputError("cannot write '" + path_ + "': " + std::strerror(errno));
    buf_.clear();
  }
  std::string path_;
  std::FILE* f_;
  std::string buf_;
};

// ------------------------------------------------------------------------------------------------
// Entry points

template <class T>
CsrMatrix<T> parse_sparse(std::string_view text, const std::string& name, const detail::MmLimits& limits,
                          MmInfo* info) {
  const std::int64_t max_nnz = limits.max_nnz;
  LineReader lines(strip_bom(text));
  const Header h = read_header(lines, name, limits);
  CsrMatrix<T> A;
  if (h.info.dense_array) {
    const auto d = array_to_dense(h.info, read_array_values<T>(lines, name, h, text.size()));
    A = dense_to_csr(d, {&name, h.size_line, ""}, max_nnz);
  } else {
    A = triplets_to_csr(h.info.rows, h.info.cols, read_entries<T>(lines, name, h, text.size(), max_nnz));
  }
  if (info) *info = h.info;
  return A;
}

}  // namespace

template <class T>
CsrMatrix<T> parse_matrix_market(std::string_view text, const std::string& name, MmInfo* info) {
  return parse_sparse<T>(text, name, detail::MmLimits{}, info);
}

template <class T>
CsrMatrix<T> read_matrix_market(const std::string& path, MmInfo* info) {
  return parse_sparse<T>(read_file(path), path, detail::MmLimits{}, info);
}

namespace {

/// parse_dense_matrix_market() under the given limits.
template <class T>
DenseBlock<T> parse_dense(std::string_view text, const std::string& name, const detail::MmLimits& limits) {
  LineReader lines(strip_bom(text));
  const Header h = read_header(lines, name, limits);
  if (h.info.dense_array) return array_to_dense(h.info, read_array_values<T>(lines, name, h, text.size()));
  const std::int64_t size = std::int64_t(h.info.rows) * h.info.cols;
  if (size > limits.max_nnz)
    fail(name, h.size_line, "a dense ", h.info.rows, " x ", h.info.cols, " block (", size,
         " values) is too large (limit ", limits.max_nnz, "); read it with read_matrix_market() instead");
  return triplets_to_dense(h.info.rows, h.info.cols,
                           read_entries<T>(lines, name, h, text.size(), limits.max_nnz));
}

}  // namespace

template <class T>
DenseBlock<T> parse_dense_matrix_market(std::string_view text, const std::string& name) {
  return parse_dense<T>(text, name, detail::MmLimits{});
}

template <class T>
DenseBlock<T> read_dense_matrix_market(const std::string& path) {
  return parse_dense_matrix_market<T>(read_file(path), path);
}

template <class T>
void write_matrix_market(const std::string& path, const CsrMatrix<T>& A) {
  OutFile out(path);
  out.put("%%MatrixMarket matrix coordinate real general\n% written by krysp\n");
  out.put(std::int64_t(A.rows()));
  out.put(" ");
  out.put(std::int64_t(A.cols()));
  out.put(" ");
  out.put(std::int64_t(A.nnz()));
  out.put("\n");
  const index_t* rp = A.row_ptr().data();
  const index_t* ci = A.col_idx().data();
  const T* va = A.values().data();
  for (index_t i = 0; i < A.rows(); ++i) {
    for (index_t k = rp[i]; k < rp[i + 1]; ++k) {
      out.put(std::int64_t(i) + 1);
      out.put(" ");
      out.put(std::int64_t(ci[k]) + 1);
      out.put(" ");
      out.put_real(va[k]);
      out.put("\n");
    }
  }
  out.close();
}

template <class T>
void write_dense_matrix_market(const std::string& path, index_t rows, index_t cols, const T* colmajor) {
  KRYSP_REQUIRE(rows >= 0 && cols >= 0, "write_dense_matrix_market: negative size ", rows, " x ", cols);
  KRYSP_REQUIRE(colmajor || std::int64_t(rows) * cols == 0,
                "write_dense_matrix_market: no values given for a ", rows, " x ", cols, " block");
  OutFile out(path);
  out.put("%%MatrixMarket matrix array real general\n% written by krysp\n");
  out.put(std::int64_t(rows));
  out.put(" ");
  out.put(std::int64_t(cols));
  out.put("\n");
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  for (std::size_t k = 0; k < n; ++k) {
    out.put_real(colmajor[k]);
    out.put("\n");
  }
  out.close();
}

namespace detail {
template <class T>
CsrMatrix<T> parse_matrix_market_limited(std::string_view text, const std::string& name, std::int64_t max_nnz,
                                         MmInfo* info) {
  return parse_sparse<T>(text, name, MmLimits{max_nnz, kMaxIndex}, info);
}
template <class T>
CsrMatrix<T> parse_matrix_market_limited(std::string_view text, const std::string& name, const MmLimits& limits,
                                         MmInfo* info) {
  return parse_sparse<T>(text, name, limits, info);
}
template <class T>
DenseBlock<T> parse_dense_matrix_market_limited(std::string_view text, const std::string& name,
                                                const MmLimits& limits) {
  return parse_dense<T>(text, name, limits);
}
}  // namespace detail

#define KRYSP_MM_INSTANTIATE(T)                                                                      \
  template CsrMatrix<T> read_matrix_market<T>(const std::string&, MmInfo*);                          \
  template CsrMatrix<T> parse_matrix_market<T>(std::string_view, const std::string&, MmInfo*);       \
  template DenseBlock<T> read_dense_matrix_market<T>(const std::string&);                            \
  template DenseBlock<T> parse_dense_matrix_market<T>(std::string_view, const std::string&);         \
  template void write_matrix_market<T>(const std::string&, const CsrMatrix<T>&);                     \
  template void write_dense_matrix_market<T>(const std::string&, index_t, index_t, const T*);        \
  template CsrMatrix<T> detail::parse_matrix_market_limited<T>(std::string_view, const std::string&, \
                                                               std::int64_t, MmInfo*);       \
  template CsrMatrix<T> detail::parse_matrix_market_limited<T>(std::string_view, const std::string&, \
                                                               const detail::MmLimits&, MmInfo*);    \
  template DenseBlock<T> detail::parse_dense_matrix_market_limited<T>(std::string_view, const std::string&, \
                                                                      const detail::MmLimits&);
KRYSP_MM_INSTANTIATE(double)
KRYSP_MM_INSTANTIATE(float)
#undef KRYSP_MM_INSTANTIATE

}  // namespace krysp::io
