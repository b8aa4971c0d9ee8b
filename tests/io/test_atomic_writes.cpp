// Safe output: every file krysp writes (HDF5 results, the SpMV and SpMM tuning caches) goes through
// io::AtomicOutput, so a failure in the middle of writing leaves the old file untouched (or no file
// at all) and no temporary file behind. The failure is real: RLIMIT_FSIZE makes write(2) fail with
// EFBIG part-way through the new file.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/hdf5_result.hpp"
#include "krysp/sparse/spmm_select.hpp"
#include "krysp/sparse/tune_cache.hpp"

namespace fs = std::filesystem;
using namespace krysp;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("krysp_atomic_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  /// Names of the files in the folder (to find stray temporary files).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

/// While alive, no file of this process may grow beyond `bytes` (write(2) fails with EFBIG;
/// SIGXFSZ is ignored so that the failure is an error code, not a killed process).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = old_;
    r.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
  bool ok_ = false;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TuneEntry spmv_entry(index_t rows) {
  TuneEntry e;
  e.key.fingerprint = {rows, rows, 5 * rows, 0x1234abcdULL + std::uint64_t(rows)};
  e.key.precision = "double";
  e.key.gpu = "NVIDIA H200";
  e.config.algorithm = SpmvAlgorithm::RowSubwarp;
  e.config.subwarp = 8;
  e.ms = 0.25;
  return e;
}

SpmmTuneEntry spmm_entry(index_t rows) {
  SpmmTuneEntry e;
  e.key.fingerprint = {rows, rows, 5 * rows, 0xfeedULL + std::uint64_t(rows)};
  e.key.precision = "double";
  e.key.gpu = "NVIDIA H200";
  e.key.n = 8;
  e.config.algorithm = SpmmAlgorithm::CscRow;
  e.config.subwarp = 16;
  e.config.per_lane = 1;
  e.ms = 0.5;
  return e;
}
}  // namespace

TEST_CASE("Atomic writes: HDF5 result: a write failing part-way keeps the old file, leaves no temp file") {
  TempDir dir;
  const std::string path = dir.file("result.h5");
  const std::vector<double> old_x = {1.0, 2.0, 3.0};
  io::write_hdf5(path, {{"/x", {3}, old_x}}, {{"solver", std::string("cg")}});
  const std::string before = slurp(path);
  REQUIRE(!before.empty());
  const std::vector<double> big(1 << 20, 4.0);  // 8 MB: cannot fit under the limit
  {
    FileSizeLimit limit(64 * 1024);
    REQUIRE(limit.ok());
    CHECK_THROWS_AS(io::write_hdf5(path, {{"/x", {big.size()}, big}}, {{"solver", std::string("cg")}}), Error);
  }
  CHECK(slurp(path) == before);
  CHECK(io::read_hdf5_dataset(path, "/x").data == old_x);
  CHECK(dir.names() == std::vector<std::string>{"result.h5"});

  // No old file: nothing at all is left.
  const std::string fresh = dir.file("fresh.h5");
  {
    FileSizeLimit limit(64 * 1024);
    CHECK_THROWS_AS(io::write_hdf5(fresh, {{"/x", {big.size()}, big}}, {}), Error);
  }
  CHECK_FALSE(fs::exists(fresh));
  CHECK(dir.names() == std::vector<std::string>{"result.h5"});
}

TEST_CASE("Atomic writes: SpMV tuning cache: a store failing part-way keeps the old file, leaves no temp file") {
  TempDir dir;
  TuneCache cache(dir.path.string());
  REQUIRE(cache.store(spmv_entry(100)));
  const std::string before = slurp(cache.file());
  REQUIRE(!before.empty());
  {
    FileSizeLimit limit(before.size() + 16);  // the rewritten file (two entries) cannot fit
    REQUIRE(limit.ok());
    CHECK_FALSE(cache.store(spmv_entry(200)));  // a warning, not an exception
  }
  CHECK(slurp(cache.file()) == before);
  CHECK(cache.lookup(spmv_entry(100).key));
  CHECK_FALSE(cache.lookup(spmv_entry(200).key));
  CHECK(dir.names() == std::vector<std::string>{"spmv_tune.txt"});
  CHECK(cache.store(spmv_entry(200)));  // and it works again once the disk has room
  CHECK(cache.lookup(spmv_entry(200).key));
}

TEST_CASE("Atomic writes: SpMM tuning cache: a store failing part-way keeps the old file, leaves no temp file") {
  TempDir dir;
  SpmmTuneCache cache(dir.path.string());
  REQUIRE(cache.store(spmm_entry(100)));
  const std::string before = slurp(cache.file());
  REQUIRE(!before.empty());
  {
    FileSizeLimit limit(before.size() + 16);
    REQUIRE(limit.ok());
    CHECK_FALSE(cache.store(spmm_entry(200)));
  }
  CHECK(slurp(cache.file()) == before);
  CHECK(cache.lookup(spmm_entry(100).key));
  CHECK_FALSE(cache.lookup(spmm_entry(200).key));
  CHECK(dir.names() == std::vector<std::string>{"spmm_tune.txt"});
}

TEST_CASE("Atomic writes: a corrupt tuning cache is ignored with a warning and replaced on the next store") {
  TempDir dir;
  {
    std::ofstream f(dir.file("spmv_tune.txt"), std::ios::binary);
    f << "\x7f" "ELF garbage\0\xff\xfe\n" << "version=2\tprecision=double\n" << std::string(5000, 'x');
  }
  {
    std::ofstream f(dir.file("spmm_tune.txt"), std::ios::binary);
    f << "not a cache\n\n\n=\t=\t=\n";
  }
  TuneCache spmv(dir.path.string());
  SpmmTuneCache spmm(dir.path.string());
  CHECK_FALSE(spmv.lookup(spmv_entry(100).key));
  CHECK_FALSE(spmm.lookup(spmm_entry(100).key));
  CHECK(spmv.store(spmv_entry(100)));
  CHECK(spmm.store(spmm_entry(100)));
  CHECK(spmv.lookup(spmv_entry(100).key)->config == spmv_entry(100).config);
  CHECK(spmm.lookup(spmm_entry(100).key)->config == spmm_entry(100).config);
  std::vector<std::string> warnings;
  CHECK(detail::parse_tune_text(slurp(spmv.file()), "x", &warnings).size() == 1);
  CHECK(warnings.empty());  // the corrupt lines are gone
}
