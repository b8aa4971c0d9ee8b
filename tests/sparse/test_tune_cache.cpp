// The SpMV tuning cache (host only): round trip, atomic rewrite, and every way an entry must be
// refused (corrupt, stale kernel version, another GPU, another matrix or precision).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "krysp/sparse/tune_cache.hpp"

using namespace krysp;
namespace fs = std::filesystem;

namespace {

/// A fresh, empty folder under the system temp folder, removed at the end of the scope.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("krysp_tune_cache_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Sets an environment variable for the scope, restoring the old value after.
struct EnvGuard {
  std::string name;
  bool had;
  std::string old;
  EnvGuard(const std::string& n, const char* value) : name(n) {
    const char* o = std::getenv(n.c_str());
    had = o != nullptr;
    if (had) old = o;
    if (value)
      ::setenv(n.c_str(), value, 1);
    else
      ::unsetenv(n.c_str());
  }
  ~EnvGuard() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TuneEntry entry(std::uint64_t hash = 0x0123456789abcdefull, const std::string& gpu = "NVIDIA H100 80GB HBM3") {
  TuneEntry e;
  e.key.fingerprint = {4096, 4096, 28000, hash};
  e.key.precision = "double";
  e.key.gpu = gpu;
  e.key.kernel_version = kSpmvKernelVersion;
  e.config.algorithm = SpmvAlgorithm::NnzSegmented;
  e.config.subwarp = 32;
  e.config.nnz_per_thread = 8;
  e.ms = 0.0123;
  return e;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

}  // namespace

TEST_CASE("tune cache: round trip") {
  TempDir dir;
  TuneCache cache(dir.path.string());
  REQUIRE(cache.enabled());
  CHECK(cache.file() == (dir.path / "spmv_tune.txt").string());
  CHECK_FALSE(cache.lookup(entry().key).has_value());  // no file yet: a miss, no error

  const TuneEntry e = entry();
  REQUIRE(cache.store(e));
  auto got = cache.lookup(e.key);
  REQUIRE(got.has_value());
  CHECK(got->config == e.config);
  CHECK(got->ms == doctest::Approx(e.ms));
  CHECK(got->key.gpu == e.key.gpu);

  // A second entry (another matrix) and an update of the first: both kept, the update wins.
  TuneEntry other = entry(0xfeedull);
  other.config = {SpmvAlgorithm::RowSubwarp, 8, 0};
  REQUIRE(cache.store(other));
  TuneEntry updated = e;
  updated.config = {SpmvAlgorithm::RowSequential, 32, 0};
  updated.ms = 0.5;
  REQUIRE(cache.store(updated));
  CHECK(cache.lookup(e.key)->config == updated.config);
  CHECK(cache.lookup(other.key)->config == other.config);
  // One line per key: the file holds exactly two entries.
  const std::string text = read_file(cache.file());
  std::size_t entries = 0;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) entries += (!l.empty() && l[0] != '#');
  CHECK(entries == 2);
  // No temporary files left behind.
  for (const auto& f : fs::directory_iterator(dir.path)) CHECK(f.path().filename() == "spmv_tune.txt");
}

TEST_CASE("tune cache: the folder is created on the first store") {
  TempDir dir;
  TuneCache cache((dir.path / "a" / "b").string());
  REQUIRE(cache.store(entry()));
  CHECK(cache.lookup(entry().key).has_value());
}

TEST_CASE("tune cache: different GPU, precision or matrix is a miss") {
  TempDir dir;
  TuneCache cache(dir.path.string());
  REQUIRE(cache.store(entry()));
  TuneKey k = entry().key;
  k.gpu = "NVIDIA H200";
  CHECK_FALSE(cache.lookup(k).has_value());
  k = entry().key;
  k.precision = "float";
  CHECK_FALSE(cache.lookup(k).has_value());
  k = entry().key;
  k.fingerprint.hash ^= 1;
  CHECK_FALSE(cache.lookup(k).has_value());
  k = entry().key;
  k.fingerprint.nnz += 1;
  CHECK_FALSE(cache.lookup(k).has_value());
}

TEST_CASE("tune cache: stale kernel version is ignored") {
  TempDir dir;
  TuneCache cache(dir.path.string());
  TuneEntry old = entry();
  old.key.kernel_version = kSpmvKernelVersion + 1;  // written by another build
  write_file(cache.file(), detail::format_tune_line(old) + "\n");
  CHECK_FALSE(cache.lookup(entry().key).has_value());
  TuneKey k = entry().key;
  k.kernel_version = kSpmvKernelVersion + 1;
  CHECK_FALSE(cache.lookup(k).has_value());  // never trusted, even when asked for
  // A store drops the stale line and keeps working.
  REQUIRE(cache.store(entry()));
  CHECK(cache.lookup(entry().key).has_value());
  CHECK(read_file(cache.file()).find("version=" + std::to_string(kSpmvKernelVersion + 1)) == std::string::npos);
}

TEST_CASE("tune cache: corrupt files and lines are ignored, never trusted") {
  TempDir dir;
  TuneCache cache(dir.path.string());
  const std::string good = detail::format_tune_line(entry());
  SUBCASE("binary junk") {
    write_file(cache.file(), std::string("\x01\x02garbage\xff\n\n", 12));
    CHECK_FALSE(cache.lookup(entry().key).has_value());
  }
  SUBCASE("a good line survives bad neighbours") {
    write_file(cache.file(), "junk\n" + good + "\nversion=1\talgorithm=2\n");
    CHECK(cache.lookup(entry().key).has_value());
  }
  SUBCASE("each field out of range or malformed") {
    auto replace = [&](const std::string& from, const std::string& to) {
      std::string l = good;
      const auto p = l.find(from);
      REQUIRE(p != std::string::npos);
      l.replace(p, from.size(), to);
      return l;
    };
    const std::string bad[] = {
        replace("algorithm=3", "algorithm=4"),         replace("algorithm=3", "algorithm=-1"),
        replace("algorithm=3", "algorithm=x"),         replace("subwarp=32", "subwarp=6"),
        replace("subwarp=32", "subwarp=64"),           replace("subwarp=32", "subwarp=0"),
        replace("nnz_per_thread=8", "nnz_per_thread=0"), replace("nnz_per_thread=8", "nnz_per_thread=7"),
        replace("block_warps=4", "block_warps=5"),     replace("block_warps=4", "block_warps=16"),
        replace("\tblock_warps=4", ""),
        replace("precision=double", "precision=half"), replace("rows=4096", "rows=-1"),
        replace("rows=4096", "rows=99999999999"),      replace("hash=0123456789abcdef", "hash=xyz"),
        replace("hash=0123456789abcdef", "hash=0123456789abcdef0"), replace("ms=0.0123", "ms=nan"),
        replace("ms=0.0123", "ms=-1"),                 replace("ms=0.0123", "ms="),
        replace("version=" + std::to_string(kSpmvKernelVersion), "version=abc"),           replace("\tgpu=NVIDIA H100 80GB HBM3", ""),
        replace("\tms=0.0123", "\tms=0.0123\tms=1"),   replace("\tms=0.0123", "\tms=0.0123\tcolour=red"),
        replace("\tcols=", "\t\tcols="),               replace("rows=4096", "rows=4096 "),
        good.substr(0, good.size() / 2),
    };
    for (const std::string& line : bad) {
      CAPTURE(line);
      std::string why;
      CHECK_FALSE(detail::parse_tune_line(line, &why).has_value());
      CHECK(!why.empty());
      write_file(cache.file(), line + "\n");
      CHECK_FALSE(cache.lookup(entry().key).has_value());
    }
  }
  SUBCASE("a row kernel must not carry nnz_per_thread") {
    TuneEntry e = entry();
    e.config = {SpmvAlgorithm::RowSubwarp, 8, 0};
    std::string l = detail::format_tune_line(e);
    l.replace(l.find("nnz_per_thread=0"), 16, "nnz_per_thread=8");
    CHECK_FALSE(detail::parse_tune_line(l, nullptr).has_value());
  }
}

TEST_CASE("tune cache: line format round trip") {
  TuneEntry e = entry(0xffffffffffffffffull, "GPU\twith\ttabs\nand newline");
  const std::string line = detail::format_tune_line(e);
  CHECK(line.find('\n') == std::string::npos);
  std::string why;
  auto p = detail::parse_tune_line(line, &why);
  REQUIRE_MESSAGE(p.has_value(), why);
  CHECK(p->key.fingerprint == e.key.fingerprint);
  CHECK(p->key.gpu == "GPU with tabs and newline");
  CHECK(p->config == e.config);
  // The sanitized name still matches the key it came from.
  TempDir dir;
  TuneCache cache(dir.path.string());
  REQUIRE(cache.store(e));
  CHECK(cache.lookup(e.key).has_value());
}

TEST_CASE("tune cache: default folder from the environment") {
  {
    EnvGuard a("KRYSP_CACHE_DIR", "/tmp/kc"), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/tmp/home");
    CHECK(default_tune_cache_dir() == "/tmp/kc");
  }
  {
    EnvGuard a("KRYSP_CACHE_DIR", ""), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/tmp/home");
    CHECK(default_tune_cache_dir() == "/tmp/xdg/krysp");
  }
  {
    EnvGuard a("KRYSP_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", "/tmp/home");
    CHECK(default_tune_cache_dir() == "/tmp/home/.cache/krysp");
    CHECK(TuneCache().file() == "/tmp/home/.cache/krysp/spmv_tune.txt");
    CHECK(TuneCache("/elsewhere").file() == "/elsewhere/spmv_tune.txt");  // explicit folder wins
  }
  {
    EnvGuard a("KRYSP_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", nullptr);
    CHECK(default_tune_cache_dir().empty());
    TuneCache none;
    CHECK_FALSE(none.enabled());
    CHECK_FALSE(none.lookup(entry().key).has_value());
    CHECK_FALSE(none.store(entry()));
  }
}

TEST_CASE("tune cache: an unwritable folder warns and fails softly") {
  TempDir dir;
  const fs::path blocker = dir.path / "file";
  write_file(blocker, "x");
  TuneCache cache((blocker / "sub").string());  // a folder under a regular file cannot exist
  CHECK_FALSE(cache.store(entry()));
  CHECK_FALSE(cache.lookup(entry().key).has_value());
}

TEST_CASE("tune cache: parse_tune_text (the fuzzed reader) names each ignored line and keeps the good ones") {
  const std::string good = detail::format_tune_line(entry());
  TuneEntry stale_e = entry(0x42);
  stale_e.key.kernel_version = kSpmvKernelVersion + 1;
  const std::string stale = detail::format_tune_line(stale_e);
  const std::string text = "# comment\r\n" + good + "\r\n" + "junk\n" + std::string("\0\xff", 2) + "\n\n" + stale +
                           "\n" + good;  // no final newline
  std::vector<std::string> warnings;
  const auto entries = detail::parse_tune_text(text, "cache.txt", &warnings);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].config == entry().config);
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[0].rfind("cache.txt:3: ignoring corrupt entry", 0) == 0);
  CHECK(warnings[1].rfind("cache.txt:4: ignoring corrupt entry", 0) == 0);
  CHECK(warnings[2].rfind("cache.txt:6: ignoring stale entry", 0) == 0);
  CHECK(detail::parse_tune_text("", "x", nullptr).empty());
  CHECK(detail::parse_tune_text("\n\n\r\n", "x", nullptr).empty());
}
