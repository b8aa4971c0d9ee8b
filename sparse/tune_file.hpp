#pragma once
/// \file tune_file.hpp
/// What the SpMV tuning cache (tune_cache.hpp) and the SpMM one (spmm_select.hpp) share (internal):
/// one entry per line of tab-separated name=value fields, the fields every key has (kernel
/// version, precision, matrix fingerprint, GPU name), strict field parsing, the line loop with
/// line numbers for warnings, and the atomic rewrite of the file.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

/// The fields of a line by name, each required field present exactly once, each optional one at
/// most once, and no other; nullopt with *why set otherwise.
std::optional<std::map<std::string, std::string>> split_tune_fields(const std::string& line,
                                                                    const std::vector<const char*>& fields,
                                                                    std::string* why,
                                                                    const std::vector<const char*>& optional = {});
/// Decimal integer in [lo, hi] (no sign but '-', no spaces, at most 20 characters).
bool parse_tune_int(const std::string& s, long long lo, long long hi, long long* out);
/// Non-negative finite milliseconds.
bool parse_tune_ms(const std::string& s, double* out);

/// The key fields every entry has, in file order: version, precision, rows, cols, nnz, hash
/// (first), gpu (last).
struct TuneKeyFields {
  int kernel_version = 0;
  std::string precision;
  StructureFingerprint fingerprint;
  std::string gpu;
};
inline constexpr const char* kTuneKeyHead[] = {"version", "precision", "rows", "cols", "nnz", "hash"};
/// Reads version..hash from `f`; false with *why naming the bad field.
bool parse_tune_key_head(std::map<std::string, std::string>& f, TuneKeyFields* k, std::string* why);
/// Reads ms and gpu from `f`; false with *why naming the bad field.
bool parse_tune_tail(std::map<std::string, std::string>& f, double* ms, std::string* gpu, std::string* why);
/// "version=…\tprecision=…\trows=…\tcols=…\tnnz=…\thash=…" and "\tms=…\tgpu=…".
std::string format_tune_key_head(const TuneKeyFields& k);
std::string format_tune_tail(double ms, const std::string& gpu);
/// `gpu` with tabs and line breaks replaced (they would break the line format).
std::string sanitize_tune_field(std::string s);

/// Calls parse(line, why) on every entry line of `text` (comments '#' and blank lines skipped);
/// when it returns false, adds "name:line: ignoring corrupt entry (why)" to *warnings.
void for_each_tune_line(std::string_view text, const std::string& name, std::vector<std::string>* warnings,
                        const std::function<bool(const std::string& line, std::size_t number, std::string* why)>& parse);

/// The whole file, or "" when it cannot be opened.
std::string read_tune_file(const std::string& file);
/// Replaces `file` by `text` atomically (its folder made if needed); false after calling warn().
bool write_tune_file(const std::string& file, const std::string& text,
                     const std::function<void(const std::string&)>& warn);

}  // namespace krysp::detail
