// krysp tune: profile every SpMV candidate kernel on a matrix, print the table, cache the choice.
#include <algorithm>
#include <cstdio>
#include <string>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/cli/args.hpp"
#include "krysp/cli/commands.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "krysp/sparse/tune_cache.hpp"

namespace krysp::cli {

const char* const kTuneUsage =
    "usage: krysp tune A.mtx [options]\n"
    "\n"
    "Times every SpMV candidate kernel on the matrix (y = A*x, random x), prints the table and\n"
    "stores the fastest in the tuning cache, so that later solves on this matrix skip profiling.\n"
    "\n"
    "  --precision P     double | float                      (default double)\n"
    "  --reps N          timed runs per candidate (median)    (default 3)\n"
    "  --cache-dir DIR   tuning-cache folder (default $KRYSP_CACHE_DIR, else $XDG_CACHE_HOME/krysp,\n"
    "                    else ~/.cache/krysp)\n"
    "  --no-cache        do not store the result\n"
    "\n"
    "GB/s counts values, column indices, row offsets, x and y once each; % copy compares with a\n"
    "device-to-device copy measured in the same run (bytes read plus written).\n";

namespace {

template <class T>
int tune(const std::string& path, const Args& args) {
  const CsrMatrix<T> A = io::read_matrix_market<T>(path);
  if (!cuda_device_available()) KRYSP_THROW(DeviceError, "krysp tune needs a CUDA device");
  A.device_view();
  std::size_t free_b = 0, total_b = 0;
  cuda_memory_info(free_b, total_b);
  const double copy_gbs = measure_copy_bandwidth_gbs(std::min<std::size_t>(std::size_t(1) << 30, free_b / 4));

  SpmvPlanOptions opt;
  opt.select = SpmvPlanOptions::Select::Tune;
  opt.use_cache = false;  // always profile here; the result is stored below
  opt.tune_reps = int(args.get_int("reps", 3, 1, 1000));
  const SpmvPlan<T> plan(A, opt);
  const SpmvSelection& sel = plan.selection();
  const RowStats& st = plan.stats();

  const double bytes = double(A.nnz()) * (sizeof(T) + sizeof(index_t)) + double(A.rows() + 1) * sizeof(index_t) +
                       double(A.cols()) * sizeof(T) + double(A.rows()) * sizeof(T);
  std::printf("krysp: %s: %d x %d, %d nonzeros (%s)\n", path.c_str(), A.rows(), A.cols(), A.nnz(),
              sizeof(T) == 8 ? "double" : "float");
  std::printf("krysp: rows: mean %.2f, stddev %.2f, max %d, empty %d\n", st.mean, st.stddev, st.max_len,
              st.empty_rows);
  std::printf("krysp: device %s, copy bandwidth %.0f GB/s (read + write)\n", cached_device_name().c_str(), copy_gbs);
  std::printf("\n  %-22s %10s %9s %7s\n", "kernel", "ms", "GB/s", "% copy");
  for (const auto& c : sel.candidates) {
    const double gbs = c.ms > 0 ? bytes / (c.ms * 1e-3) / 1e9 : 0;
    std::string mark = c.config == plan.config() ? " <- chosen" : "";
    if (c.config == sel.rule) mark += mark.empty() ? " <- rule" : ", rule";
    std::printf("  %-22s %10.4f %9.1f %7.1f%s\n", c.config.to_string().c_str(), c.ms, gbs, 100 * gbs / copy_gbs,
                mark.c_str());
  }
  double rule_ms = 0;
  for (const auto& c : sel.candidates)
    if (c.config == sel.rule) rule_ms = c.ms;
  std::printf("\nkrysp: chosen %s, %.4f ms; rule picks %s (%+.1f%%); tuning took %.1f ms\n",
              plan.config().to_string().c_str(), sel.chosen_ms, sel.rule.to_string().c_str(),
              sel.chosen_ms > 0 ? 100 * (rule_ms / sel.chosen_ms - 1) : 0.0, 1e3 * sel.tuning_seconds);
  if (!args.has("no-cache")) {
    TuneCache cache(args.get("cache-dir", ""));
    if (!cache.enabled()) {
      std::printf("krysp: no cache folder (set KRYSP_CACHE_DIR or HOME): result not stored\n");
    } else if (cache.store(TuneEntry{{A.fingerprint(), sizeof(T) == 8 ? "double" : "float", cached_device_name(),
                                      kSpmvKernelVersion},
                                     plan.config(),
                                     sel.chosen_ms})) {
      std::printf("krysp: stored in %s\n", cache.file().c_str());
    }
  }
  return kExitOk;
}

}  // namespace

int tune_command(const std::vector<std::string>& argv) {
  const Args args(argv, {"precision", "reps", "cache-dir"}, {"no-cache", "help"});
  if (args.has("help")) {
    std::fputs(kTuneUsage, stdout);
    return kExitOk;
  }
  KRYSP_REQUIRE(args.positional().size() == 1, "tune expects exactly one matrix file, got ",
                args.positional().size(), " positional arguments\n", kTuneUsage);
  const std::string precision = args.get("precision", "double");
  KRYSP_REQUIRE(precision == "double" || precision == "float", "option --precision expects double or float, got '",
                precision, "'");
  return precision == "double" ? tune<double>(args.positional()[0], args) : tune<float>(args.positional()[0], args);
}

}  // namespace krysp::cli
