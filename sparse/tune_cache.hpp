#pragma once
/// \file tune_cache.hpp
/// The SpMV tuning cache: what Select::Tune measured, kept in a small text file so that a second
/// run on the same matrix and GPU skips the profiling. Host-only code.
///
/// Where: the folder is, in order of precedence,
///   1. SpmvPlanOptions::cache_dir (or the `dir` given to TuneCache), when not empty;
///   2. $KRYSP_CACHE_DIR;
///   3. $XDG_CACHE_HOME/krysp;
///   4. $HOME/.cache/krysp;
///   5. no cache at all when none of these is set (lookups miss, stores are skipped).
/// The file in that folder is `spmv_tune.txt`; the folder is created on the first store.
///
/// Key: the matrix fingerprint (rows, cols, nnz, structure hash: values may change), the value
/// precision ("double" or "float"), the GPU name and kSpmvKernelVersion.
///
/// Format: one entry per line, tab-separated `name=value` fields, `#` lines are comments:
///   version=1  precision=double  rows=..  cols=..  nnz=..  hash=<16 hex digits>
///   algorithm=<0..3>  subwarp=<2..32>  nnz_per_thread=<0|4|8|16>  block_warps=<4|8>  ms=<time>
///   gpu=<device name>
/// Every field is validated on reading. A line that does not parse, names an invalid
/// configuration or carries another kernel version is ignored with a warning on stderr, never
/// trusted. Lines for other GPUs, precisions or matrices are kept untouched.
///
/// Writing is atomic: the whole file is rewritten to a temporary file in the same folder, which is
/// then renamed over the old one, so a reader sees the old or the new file, never half of one. Two
/// processes storing at the same moment may lose one of the two entries (the last rename wins):
/// the cache is an optimisation, and a lost entry only means profiling once more.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// The cache folder from the environment (items 2–4 above), or "" when none is set.
std::string default_tune_cache_dir();

/// What an SpMV tuning entry is looked up by.
struct TuneKey {
  StructureFingerprint fingerprint;
  std::string precision;  ///< "double" or "float"
  std::string gpu;        ///< device name (tabs and newlines are stored as spaces)
  int kernel_version = kSpmvKernelVersion;
};

/// One SpMV tuning-cache line: the key, the chosen configuration and its measured time.
struct TuneEntry {
  TuneKey key;
  SpmvConfig config;
  double ms = 0;  ///< measured time of the chosen kernel when it was tuned
};

/// The SpMV tuning-cache file (format above).
class TuneCache {
 public:
  /// `dir` empty: default_tune_cache_dir().
  explicit TuneCache(const std::string& dir = "");
  /// The cache file, or "" when no folder is known.
  const std::string& file() const { return file_; }
  /// False when no folder is known (lookups miss, stores do nothing).
  bool enabled() const { return !file_.empty(); }
  /// The entry for `key`, if the file holds a valid one. Never throws on a bad file (warns).
  std::optional<TuneEntry> lookup(const TuneKey& key) const;
  /// Adds or replaces the entry for e.key (atomically, see the file comment). Returns false, with
  /// a warning on stderr, when the folder or file cannot be written; never throws for that.
  bool store(const TuneEntry& e) const;

 private:
  std::string file_;
};

namespace detail {
/// Parses one cache line; on failure returns nullopt and sets *why. Exposed for tests.
std::optional<TuneEntry> parse_tune_line(const std::string& line, std::string* why);
/// Parses the text of a whole cache file: the valid entries of the current kernel version, in file
/// order. Each ignored line (corrupt or stale) adds "<name>:<line>: <why>" to *warnings when given.
/// Never throws on bad text. Exposed for tests and the fuzz target.
std::vector<TuneEntry> parse_tune_text(std::string_view text, const std::string& name,
                                       std::vector<std::string>* warnings);
/// Formats one entry as a cache line (without the newline). Exposed for tests.
std::string format_tune_line(const TuneEntry& e);
}  // namespace detail

}  // namespace krysp
