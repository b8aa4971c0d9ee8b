// Matrix Market reading speed, on the CPU.
//
//   bench_mm_parse file.mtx [more.mtx...] [--repeat N] [--json out.json]
//
// For each file: its size in MB (10^6 bytes), the median time of N read_matrix_market<double>()
// calls (file read + parse + CSR build) and the MB/s that gives, the same from a buffer already in
// memory (parse_matrix_market, no I/O), the share of that spent in the CsrMatrix constructor's
// checks and fingerprint, and the matrix's rows and nnz (stored in the file / after expansion).
// On a shared machine wall-clock time also counts time spent waiting for a core, so the median
// process CPU time of the full read is reported too (cpu_s, cpu MB/s): the load barely changes it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"

using krysp::bench::json_escape;

namespace {

struct Result {
  std::string file;
  double mb = 0;
  double read_s = 0, parse_s = 0, check_s = 0, cpu_s = 0;
  krysp::io::MmInfo info;
  krysp::index_t nnz = 0;
};

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Median over `repeat` calls of f, timed with `clock`.
template <class Clock, class F>
double median_seconds(int repeat, Clock clock, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const double t0 = clock();
    f();
    t.push_back(clock() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Result measure(const std::string& path, int repeat) {
  Result res;
  res.file = path;
  const std::string text = slurp(path);
  res.mb = static_cast<double>(text.size()) / 1e6;
  const auto A = krysp::io::read_matrix_market<double>(path, &res.info);  // also a warm-up
  res.nnz = A.nnz();
  const auto read = [&] { krysp::io::read_matrix_market<double>(path); };
  res.read_s = median_seconds(repeat, wall_now, read);
  res.cpu_s = median_seconds(repeat, cpu_now, read);
  res.parse_s = median_seconds(repeat, wall_now, [&] { krysp::io::parse_matrix_market<double>(text, path); });
  // The constructor re-checks the invariants and hashes the structure; timed alone to show its share.
  res.check_s = median_seconds(repeat, wall_now, [&] {
    krysp::CsrMatrix<double>(A.rows(), A.cols(), A.row_ptr(), A.col_idx(), A.values());
  });
  return res;
}

void write_json(const std::string& path, const std::vector<Result>& results, int repeat) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fprintf(f, "[\n");
  for (std::size_t k = 0; k < results.size(); ++k) {
    const Result& r = results[k];
    std::fprintf(
        f,
        "  {\"file\": \"%s\", \"mb\": %.6f, \"repeat\": %d, \"seconds\": %.6g, \"mb_per_s\": %.2f, "
        "\"cpu_seconds\": %.6g, \"cpu_mb_per_s\": %.2f, \"parse_seconds\": %.6g, \"parse_mb_per_s\": %.2f, "
        "\"csr_check_seconds\": %.6g, "
        "\"rows\": %d, \"cols\": %d, \"entries_in_file\": %lld, \"nnz\": %d}%s\n",
        json_escape(r.file).c_str(), r.mb, repeat, r.read_s, r.mb / r.read_s, r.cpu_s, r.mb / r.cpu_s,
        r.parse_s, r.mb / r.parse_s, r.check_s, r.info.rows, r.info.cols,
        static_cast<long long>(r.info.entries_in_file), r.nnz, k + 1 < results.size() ? "," : "");
  }
  std::fprintf(f, "]\n");
  std::fclose(f);
}

int usage() {
  std::fprintf(stderr, "usage: bench_mm_parse file.mtx [more.mtx...] [--repeat N] [--json out.json]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string json;
  int repeat = 5;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--repeat" && k + 1 < argc) {
      repeat = std::atoi(argv[++k]);
    } else if (a == "--json" && k + 1 < argc) {
      json = argv[++k];
    } else if (a.rfind("--", 0) == 0) {
      return usage();
    } else {
      files.push_back(a);
    }
  }
  if (files.empty() || repeat < 1) return usage();

  std::printf("%-22s %6s %9s %7s %9s %7s %9s %7s %9s %8s %9s %9s\n", "file", "MB", "read_s", "MB/s", "cpu_s",
              "MB/s", "parse_s", "MB/s", "check_s", "rows", "nnz_file", "nnz");
  std::vector<Result> results;
  int status = 0;
  for (const auto& path : files) {
    try {
      const Result r = measure(path, repeat);
      const std::string name = path.substr(path.find_last_of('/') + 1);
      std::printf("%-22s %6.2f %9.5f %7.1f %9.5f %7.1f %9.5f %7.1f %9.5f %8d %9lld %9d\n", name.c_str(), r.mb,
                  r.read_s, r.mb / r.read_s, r.cpu_s, r.mb / r.cpu_s, r.parse_s, r.mb / r.parse_s, r.check_s,
                  r.info.rows, static_cast<long long>(r.info.entries_in_file), r.nnz);
      results.push_back(r);
    } catch (const krysp::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      status = 1;
    }
  }
  if (!json.empty()) write_json(json, results, repeat);
  return status;
}
