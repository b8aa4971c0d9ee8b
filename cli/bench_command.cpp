// krysp bench: the plan's SpMV kernel against cuSPARSE (CSR ALG1 and ALG2, after preprocess) on one
// matrix, same process, same vectors.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/bench/bench_util.hpp"
#include "krysp/base/error.hpp"
#include "krysp/cli/args.hpp"
#include "krysp/cli/commands.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/cuda/cusparse_spmv.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp::cli {

const char* const kBenchUsage =
    "usage: krysp bench A.mtx [options]\n"
    "\n"
    "Times y = A*x (random x, alpha 1, beta 0) with the kernel krysp picks for this matrix (tuned,\n"
    "or from the tuning cache) and with cuSPARSE SpMV CSR ALG1 and ALG2 (after\n"
    "cusparseSpMV_preprocess), in the same process. Median of CUDA-event samples after warm-up.\n"
    "\n"
    "  --precision P     double | float          (default double)\n"
    "  --select S        tune | rule             (default tune; tune uses the cache)\n"
    "  --json out.json   also write the numbers, the device name and the date as JSON\n";

namespace {

using bench::json_escape;
using bench::utc_now;

struct Row {
  std::string name;
  double ms = 0;
  double gbs = 0;
};

template <class T>
int bench(const std::string& path, const Args& args) {
  const CsrMatrix<T> A = io::read_matrix_market<T>(path);
  if (!cuda_device_available()) KRYSP_THROW(DeviceError, "krysp bench needs a CUDA device");
  const CsrView<T> dA = A.device_view();
  std::size_t free_b = 0, total_b = 0;
  cuda_memory_info(free_b, total_b);
  const double copy_gbs = measure_copy_bandwidth_gbs(std::min<std::size_t>(std::size_t(1) << 30, free_b / 4));

  const std::string select = args.get("select", "tune");
  KRYSP_REQUIRE(select == "tune" || select == "rule", "option --select expects tune or rule, got '", select, "'");
  SpmvPlanOptions opt;
  opt.select = select == "tune" ? SpmvPlanOptions::Select::Tune : SpmvPlanOptions::Select::Rule;
  const SpmvPlan<T> plan(A, opt);

  const std::size_t n = std::size_t(A.rows()), m = std::size_t(A.cols());
  DeviceArray<T> x(std::max<std::size_t>(m, 1)), y(std::max<std::size_t>(n, 1)), y_ref(std::max<std::size_t>(n, 1));
  detail::fill_random_device(x.data(), x.size(), 42);
  detail::fill_random_device(y.data(), y.size(), 43);
  detail::fill_random_device(y_ref.data(), y_ref.size(), 44);
  const double bytes = double(A.nnz()) * (sizeof(T) + sizeof(index_t)) + double(A.rows() + 1) * sizeof(index_t) +
                       double(m) * sizeof(T) + double(n) * sizeof(T);
  auto gbs = [&](double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; };

  std::vector<Row> rows;
  const double ours = time_device_auto_ms([&] { plan.apply(A, T(1), x.data(), T(0), y.data()); });
  rows.push_back({"krysp " + plan.config().to_string(), ours, gbs(ours)});
  double best_cusparse = 0;
  double max_diff = 0, max_abs = 0;
  for (CusparseSpmvAlg alg : {CusparseSpmvAlg::Csr1, CusparseSpmvAlg::Csr2}) {
    CusparseSpmv<T> cs(dA, alg, T(1), x.data(), T(0), y_ref.data());
    const double ms = time_device_auto_ms([&] { cs.apply(T(1), x.data(), T(0), y_ref.data()); });
    rows.push_back({to_string(alg), ms, gbs(ms)});
    best_cusparse = best_cusparse == 0 ? ms : std::min(best_cusparse, ms);
  }
  {  // the two agree (y from krysp, y_ref from cuSPARSE ALG2)
    std::vector<T> a(n), b(n);
    y.download(a.data(), n);
    y_ref.download(b.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      max_diff = std::max(max_diff, double(std::fabs(a[i] - b[i])));
      max_abs = std::max(max_abs, double(std::fabs(b[i])));
    }
  }
  const double rel = max_abs > 0 ? max_diff / max_abs : max_diff;

  std::printf("krysp: %s: %d x %d, %d nonzeros (%s) on %s\n", path.c_str(), A.rows(), A.cols(), A.nnz(),
              sizeof(T) == 8 ? "double" : "float", cached_device_name().c_str());
  std::printf("krysp: copy bandwidth %.0f GB/s; kernel from %s\n\n", copy_gbs, to_string(plan.selection().source));
  std::printf("  %-28s %10s %9s %7s\n", "kernel", "ms", "GB/s", "% copy");
  for (const Row& r : rows)
    std::printf("  %-28s %10.4f %9.1f %7.1f\n", r.name.c_str(), r.ms, r.gbs, 100 * r.gbs / copy_gbs);
  std::printf("\nkrysp: speedup over best cuSPARSE %.2fx; max |y_krysp - y_cusparse| / max |y| = %.2e\n",
              best_cusparse / ours, rel);

  if (args.has("json")) {
    const std::string out = args.get("json", "");
    std::ofstream js(out);
    KRYSP_REQUIRE(js, "cannot write '", out, "'");
    js << "{\n  \"device\": \"" << json_escape(cached_device_name()) << "\",\n  \"date\": \"" << utc_now()
       << "\",\n  \"matrix\": \"" << json_escape(path) << "\",\n  \"rows\": " << A.rows() << ",\n  \"cols\": "
       << A.cols() << ",\n  \"nnz\": " << A.nnz() << ",\n  \"precision\": \"" << (sizeof(T) == 8 ? "double" : "float")
       << "\",\n  \"copy_bandwidth_gbs\": " << copy_gbs << ",\n  \"kernel\": \"" << plan.config().to_string()
       << "\",\n  \"kernel_source\": \"" << to_string(plan.selection().source) << "\",\n  \"results\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
      js << "    {\"name\": \"" << json_escape(rows[i].name) << "\", \"ms\": " << rows[i].ms
         << ", \"gbs\": " << rows[i].gbs << ", \"percent_copy\": " << 100 * rows[i].gbs / copy_gbs << "}"
         << (i + 1 < rows.size() ? ",\n" : "\n");
    js << "  ],\n  \"speedup_vs_best_cusparse\": " << best_cusparse / ours << ",\n  \"max_rel_diff\": " << rel
       << "\n}\n";
    KRYSP_REQUIRE(js.good(), "error writing '", out, "'");
    std::printf("krysp: wrote %s\n", out.c_str());
  }
  return kExitOk;
}

}  // namespace

int bench_command(const std::vector<std::string>& argv) {
  const Args args(argv, {"precision", "json", "select"}, {"help"});
  if (args.has("help")) {
    std::fputs(kBenchUsage, stdout);
    return kExitOk;
  }
  KRYSP_REQUIRE(args.positional().size() == 1, "bench expects exactly one matrix file, got ",
                args.positional().size(), " positional arguments\n", kBenchUsage);
  const std::string precision = args.get("precision", "double");
  KRYSP_REQUIRE(precision == "double" || precision == "float", "option --precision expects double or float, got '",
                precision, "'");
  return precision == "double" ? bench<double>(args.positional()[0], args) : bench<float>(args.positional()[0], args);
}

}  // namespace krysp::cli
