// SpMV (fp64, y = A·x, alpha 1, beta 0): krysp's adaptive kernels against cuSPARSE CSR ALG1 and
// ALG2 (both after cusparseSpMV_preprocess), same process, same random x; the copy bandwidth of
// the device measured in the same run as the yardstick.
//
// usage: bench_spmv [--quick] [--no-generated] [--only SUBSTR] [--sweep] [--json out.json] [A.mtx ...]
//   Matrices given on the command line, then four generated ones of >= 20 M nonzeros: 2-D
//   Laplacian (2048^2), 3-D Laplacian (160^3 = 4.1 M rows), power-law graph (3 M rows, mean 8),
//   random banded with row lengths 1..31 (1.5 M rows). --quick: the same shapes, ~100x smaller.
//   --only SUBSTR: only the matrices whose name contains SUBSTR. --sweep: instead, the tuning
//   table (every candidate's time) and cuSPARSE ALG1 for 3-D Laplacians and power-law matrices of
//   1e5 to 2e7 nonzeros, to place the rule's small/large threshold.
//
// Per matrix: the tuned kernel's time (median of CUDA-event samples after warm-up, random x),
// GB/s (values + column indices + row offsets + x + y, each once), % of copy bandwidth, the best
// cuSPARSE time and the speedup over it; the rule's pick timed the same way and its distance from
// the faster of the two; and the cost of making the plan with profiling in SpMV-equivalents
// (wall time of the SpmvPlan constructor, matrix already on the device and kernels already loaded,
// over the tuned kernel's time). Results are checked against cuSPARSE.
// Summary: geometric-mean speedup for small (< 1e6 nonzeros) and large matrices, the slowest
// matrix relative to cuSPARSE, the 3-D Laplacian's % of copy bandwidth, the rule's mean distance
// from the fastest, plan cost. Without a CUDA device: prints a message and exits 0.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/cuda/cusparse_spmv.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "krysp/sparse/spmv_select.hpp"

using namespace krysp;
using bench::geomean;
using bench::json_escape;
using bench::matrix_name;
using bench::median;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kSmallNnz = 1e6;  // small / large split of the summary

struct Result {
  std::string name;
  index_t rows = 0, cols = 0, nnz = 0;
  bool generated = false;
  std::string kernel, rule;
  double ms = 0, gbs = 0, pct_copy = 0;
  double alg1_ms = 0, alg2_ms = 0, best_cusparse_ms = 0, speedup = 0;
  double rule_ms = 0, rule_gap = 0;  // rule_ms / min(rule_ms, ms) - 1
  double plan_ms = 0, plan_spmvs = 0;  // median of kPlanRuns plan creations
  double plan_first_ms = 0;            // the first one (also loads kernels this process has not used yet)
  std::string carry;
  double max_rel_diff = 0;
  std::vector<SpmvSelection::Candidate> candidates;
};

Result run(const std::string& name, const CsrMatrix<double>& A, bool generated, double copy_gbs) {
  Result r;
  r.name = name;
  r.rows = A.rows();
  r.cols = A.cols();
  r.nnz = A.nnz();
  r.generated = generated;
  const CsrView<double> dA = A.device_view();
  cuda_synchronize();

  // Plan with profiling (no cache: always profile), wall clock. The first plan of a process also
  // pays CUDA's lazy loading of every kernel it has not launched yet (once per process), so the
  // cost reported is the median of kPlanRuns creations; the first is kept beside it.
  SpmvPlanOptions tune;
  tune.select = SpmvPlanOptions::Select::Tune;
  tune.use_cache = false;
  constexpr int kPlanRuns = 3;
  std::vector<double> plan_ms;
  SpmvPlan<double> plan;
  for (int i = 0; i < kPlanRuns; ++i) {
    const auto t0 = Clock::now();
    plan = SpmvPlan<double>(A, tune);
    cuda_synchronize();
    plan_ms.push_back(1e3 * std::chrono::duration<double>(Clock::now() - t0).count());
  }
  r.plan_first_ms = plan_ms[0];
  r.plan_ms = median(plan_ms);
  r.kernel = plan.config().to_string();
  r.rule = plan.selection().rule.to_string();
  r.candidates = plan.selection().candidates;
  r.carry = plan.carry_mode();

  const std::size_t n = std::size_t(A.rows()), m = std::size_t(A.cols());
  DeviceArray<double> x(std::max<std::size_t>(m, 1)), y(std::max<std::size_t>(n, 1)), yc(std::max<std::size_t>(n, 1));
  detail::fill_random_device(x.data(), x.size(), 1234);  // never time on zeros
  detail::fill_random_device(y.data(), y.size(), 1235);
  detail::fill_random_device(yc.data(), yc.size(), 1236);

  // Ours, the rule's pick and cuSPARSE ALG1/ALG2 (preprocessed) are timed in kRounds interleaved
  // rounds and each keeps its median round: a burst of noise on the machine then hits one round of
  // one of them, not the whole comparison.
  SpmvPlanOptions ro;
  ro.force = true;
  ro.forced = plan.selection().rule;
  const SpmvPlan<double> rp(A, ro);
  DeviceArray<double> yr(std::max<std::size_t>(n, 1));
  CusparseSpmv<double> cs1(dA, CusparseSpmvAlg::Csr1, 1.0, x.data(), 0.0, yc.data());
  CusparseSpmv<double> cs2(dA, CusparseSpmvAlg::Csr2, 1.0, x.data(), 0.0, yc.data());
  constexpr int kRounds = 3;
  std::vector<double> t_ours, t_rule, t_alg1, t_alg2;
  for (int round = 0; round < kRounds; ++round) {
    t_ours.push_back(time_device_auto_ms([&] { plan.apply(A, 1.0, x.data(), 0.0, y.data()); }));
    if (!(plan.selection().rule == plan.config()))
      t_rule.push_back(time_device_auto_ms([&] { rp.apply(A, 1.0, x.data(), 0.0, yr.data()); }));
    t_alg1.push_back(time_device_auto_ms([&] { cs1.apply(1.0, x.data(), 0.0, yc.data()); }));
    t_alg2.push_back(time_device_auto_ms([&] { cs2.apply(1.0, x.data(), 0.0, yc.data()); }));
  }
  r.ms = median(t_ours);
  r.rule_ms = t_rule.empty() ? r.ms : median(t_rule);
  r.rule_gap = r.rule_ms / std::min(r.rule_ms, r.ms) - 1;
  r.plan_spmvs = r.plan_ms / r.ms;
  r.alg1_ms = median(t_alg1);
  r.alg2_ms = median(t_alg2);
  r.best_cusparse_ms = std::min(r.alg1_ms, r.alg2_ms);
  r.speedup = r.best_cusparse_ms / r.ms;
  const double bytes = double(A.nnz()) * 12.0 + double(A.rows() + 1) * 4.0 + double(m) * 8.0 + double(n) * 8.0;
  r.gbs = bytes / (r.ms * 1e-3) / 1e9;
  r.pct_copy = 100 * r.gbs / copy_gbs;

  std::vector<double> a(n), b(n);
  y.download(a.data(), n);
  yc.download(b.data(), n);
  double md = 0, mx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    md = std::max(md, std::fabs(a[i] - b[i]));
    mx = std::max(mx, std::fabs(b[i]));
  }
  r.max_rel_diff = mx > 0 ? md / mx : md;
  return r;
}

void print_row(const Result& r) {
  std::printf("%-22.22s %9d %10d %-17s %9.4f %7.0f %5.1f %9.4f %6.2fx %-17s %5.1f%% %6.1f%s\n", r.name.c_str(), r.rows,
              r.nnz, r.kernel.c_str(), r.ms, r.gbs, r.pct_copy, r.best_cusparse_ms, r.speedup, r.rule.c_str(),
              100 * r.rule_gap, r.plan_spmvs, r.max_rel_diff > 1e-10 ? "  MISMATCH" : "");
  std::fflush(stdout);
}

void print_header() {
  std::printf("%-22s %9s %10s %-17s %9s %7s %5s %9s %7s %-17s %6s %6s\n", "matrix", "rows", "nnz", "kernel", "ms",
              "GB/s", "%copy", "cuSP ms", "speedup", "rule pick", "gap", "plan");
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, generated = true, sweep = false;
  std::string json, only;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--no-generated") {
      generated = false;
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--sweep") {
      sweep = true;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_spmv [--quick] [--no-generated] [--only SUBSTR] [--sweep] [--json out.json] [A.mtx ...]\n");
      return 0;
    } else if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::fprintf(stderr, "bench_spmv: unknown option %s\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (!cuda_device_available()) {
    std::printf("bench_spmv: no CUDA device, nothing to measure\n");
    return 0;
  }
  try {
    const std::string device = cached_device_name();
    std::size_t free_b = 0, total_b = 0;
    cuda_memory_info(free_b, total_b);
    const double copy_gbs = measure_copy_bandwidth_gbs(std::min<std::size_t>(std::size_t(1) << 30, free_b / 4), 15);
    std::printf("bench_spmv: %s, copy bandwidth %.0f GB/s (read + write), fp64, y = A*x\n", device.c_str(), copy_gbs);

    {  // Load every kernel once (lazy module loading), so plan costs below exclude it.
      const CsrMatrix<double> w = random_power_law(20000, 6, 3000, 1);
      DeviceArray<double> x(20000), y(20000);
      detail::fill_random_device(x.data(), x.size(), 1);
      std::vector<SpmvConfig> all = {{SpmvAlgorithm::RowSequential, 32, 0}};
      for (int sw : {2, 4, 8, 16, 32}) all.push_back({SpmvAlgorithm::RowSubwarp, sw, 0});
      for (int k : {4, 8, 16})
        for (int b : {4, 8}) {
          all.push_back({SpmvAlgorithm::NnzSequential, 32, k, b});
          all.push_back({SpmvAlgorithm::NnzSegmented, 32, k, b});
        }
      for (const SpmvConfig& c : all) {
        SpmvPlanOptions f;
        f.force = true;
        f.forced = c;
        const SpmvPlan<double> p(w, f);
        p.apply(w, 1.0, x.data(), 0.0, y.data());
      }
      SpmvPlanOptions o;
      o.select = SpmvPlanOptions::Select::Tune;
      o.use_cache = false;
      const SpmvPlan<double> p(w, o);
      for (CusparseSpmvAlg alg : {CusparseSpmvAlg::Csr1, CusparseSpmvAlg::Csr2}) {
        CusparseSpmv<double> cs(w.device_view(), alg, 1.0, x.data(), 0.0, y.data());
        cs.apply(1.0, x.data(), 0.0, y.data());
      }
      cuda_synchronize();
    }

    if (sweep) {
      std::printf("%-20s %10s  %s\n", "matrix", "nnz", "candidates (us), fastest first | cuSPARSE ALG1 (us)");
      auto one = [&](const std::string& name, const CsrMatrix<double>& A) {
        SpmvPlanOptions o;
        o.select = SpmvPlanOptions::Select::Tune;
        o.use_cache = false;
        o.tune_reps = 5;
        const SpmvPlan<double> p(A, o);
        auto c = p.selection().candidates;
        std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.ms < b.ms; });
        std::printf("%-20s %10d ", name.c_str(), A.nnz());
        for (const auto& e : c) std::printf(" %s=%.1f", e.config.to_string().c_str(), 1e3 * e.ms);
        DeviceArray<double> x(std::size_t(A.cols())), y(std::size_t(A.rows()));
        detail::fill_random_device(x.data(), x.size(), 5);
        CusparseSpmv<double> cs(A.device_view(), CusparseSpmvAlg::Csr1, 1.0, x.data(), 0.0, y.data());
        std::printf(" | %.1f  (rule %s)\n", 1e3 * time_device_auto_ms([&] { cs.apply(1.0, x.data(), 0.0, y.data()); }),
                    p.selection().rule.to_string().c_str());
        std::fflush(stdout);
      };
      for (index_t n : {30, 48, 64, 80, 100, 128, 160}) one("laplace3d_" + std::to_string(n), laplacian_3d(n, n, n));
      for (index_t n : {15000, 40000, 120000, 400000, 1200000})
        one("powerlaw_" + std::to_string(n), random_power_law(n, 8, 20000, 3));
      for (index_t n : {10000, 30000, 100000, 300000, 1000000})
        one("banded_" + std::to_string(n), random_banded(n, 16, 2000, 4));
      return 0;
    }

    std::vector<Result> results;
    print_header();
    for (const std::string& f : files) {
      if (!only.empty() && matrix_name(f).find(only) == std::string::npos) continue;
      try {
        const CsrMatrix<double> A = io::read_matrix_market<double>(f);
        results.push_back(run(matrix_name(f), A, false, copy_gbs));
        print_row(results.back());
      } catch (const InputError& e) {
        std::fprintf(stderr, "bench_spmv: skipping %s: %s\n", f.c_str(), e.what());
      }
    }
    if (generated) {
      const index_t s2 = quick ? 256 : 2048, s3 = quick ? 40 : 160;
      const index_t npl = quick ? 40000 : 3000000, nb = quick ? 20000 : 1500000;
      struct Gen {
        std::string name;
        std::function<CsrMatrix<double>()> make;
      };
      const std::vector<Gen> gens = {
          {"laplace2d_" + std::to_string(s2), [=] { return laplacian_2d(s2, s2); }},
          {"laplace3d_" + std::to_string(s3), [=] { return laplacian_3d(s3, s3, s3); }},
          {"powerlaw_" + std::to_string(npl), [=] { return random_power_law(npl, 8, quick ? 5000 : 100000, 7); }},
          {"banded_" + std::to_string(nb), [=] { return random_banded(nb, 16, 2000, 8); }},
      };
      for (const Gen& g : gens) {
        if (!only.empty() && g.name.find(only) == std::string::npos) continue;
        const auto t0 = Clock::now();
        const CsrMatrix<double> A = g.make();
        std::fprintf(stderr, "bench_spmv: generated %s (%d rows, %d nonzeros) in %.1f s\n", g.name.c_str(), A.rows(),
                     A.nnz(), std::chrono::duration<double>(Clock::now() - t0).count());
        results.push_back(run(g.name, A, true, copy_gbs));
        print_row(results.back());
      }
    }

    // Summary.
    std::vector<double> small, large, plan_small, plan_large, gaps;
    const Result* worst = nullptr;
    double lap3d_pct = -1;
    int mismatches = 0;
    for (const Result& r : results) {
      (r.nnz < kSmallNnz ? small : large).push_back(r.speedup);
      (r.nnz < kSmallNnz ? plan_small : plan_large).push_back(r.plan_spmvs);
      gaps.push_back(r.rule_gap);
      if (!worst || r.speedup < worst->speedup) worst = &r;
      if (r.name.rfind("laplace3d", 0) == 0) lap3d_pct = r.pct_copy;
      mismatches += r.max_rel_diff > 1e-10;
    }
    double mean_gap = 0;
    for (double g : gaps) mean_gap += g;
    mean_gap = gaps.empty() ? 0 : mean_gap / double(gaps.size());
    int rule_hits = 0;
    for (const Result& r : results) rule_hits += r.rule == r.kernel;

    std::printf("\n==== bench_spmv summary (%s, copy %.0f GB/s) ====\n", device.c_str(), copy_gbs);
    print_header();
    for (const Result& r : results) print_row(r);
    std::printf("\n");
    std::printf("geomean speedup over best cuSPARSE: small (<1e6 nnz, %zu) %.3fx   large (%zu) %.3fx\n", small.size(),
                geomean(small), large.size(), geomean(large));
    if (worst) std::printf("slowest relative to cuSPARSE: %s %.3fx\n", worst->name.c_str(), worst->speedup);
    if (lap3d_pct >= 0) std::printf("3-D Laplacian: %.1f%% of copy bandwidth\n", lap3d_pct);
    std::printf("rule pick vs fastest: mean gap %.1f%%, same kernel on %d of %zu\n", 100 * mean_gap, rule_hits,
                results.size());
    std::printf("plan creation with profiling, SpMV-equivalents: small median %.1f max %.1f; large median %.1f max %.1f\n",
                median(plan_small), plan_small.empty() ? 0 : *std::max_element(plan_small.begin(), plan_small.end()),
                median(plan_large), plan_large.empty() ? 0 : *std::max_element(plan_large.begin(), plan_large.end()));
    std::printf("results checked against cuSPARSE: %d mismatch(es)\n", mismatches);

    if (!json.empty()) {
      std::ofstream js(json);
      if (!js) throw InputError("cannot write '" + json + "'");
      const std::string date = bench::utc_now();
      js << "{\n  \"benchmark\": \"bench_spmv\",\n  \"device\": \"" << json_escape(device) << "\",\n  \"date\": \""
         << date << "\",\n  \"precision\": \"double\",\n  \"copy_bandwidth_gbs\": " << copy_gbs
         << ",\n  \"kernel_version\": " << kSpmvKernelVersion << ",\n  \"summary\": {\"geomean_speedup_small\": "
         << geomean(small) << ", \"geomean_speedup_large\": " << geomean(large)
         << ", \"min_speedup\": " << (worst ? worst->speedup : 0) << ", \"min_speedup_matrix\": \""
         << (worst ? json_escape(worst->name) : "") << "\", \"laplace3d_percent_copy\": " << lap3d_pct
         << ", \"rule_mean_gap\": " << mean_gap << ", \"plan_spmvs_median_small\": " << median(plan_small)
         << ", \"plan_spmvs_median_large\": " << median(plan_large) << ", \"plan_spmvs_max\": "
         << std::max(plan_small.empty() ? 0 : *std::max_element(plan_small.begin(), plan_small.end()),
                     plan_large.empty() ? 0 : *std::max_element(plan_large.begin(), plan_large.end()))
         << ", \"mismatches\": " << mismatches
         << "},\n  \"matrices\": [\n";
      for (std::size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        js << "    {\"name\": \"" << json_escape(r.name) << "\", \"generated\": " << (r.generated ? "true" : "false")
           << ", \"rows\": " << r.rows << ", \"cols\": " << r.cols << ", \"nnz\": " << r.nnz << ", \"kernel\": \""
           << r.kernel << "\", \"carry\": \"" << r.carry << "\"" << ", \"ms\": " << r.ms << ", \"gbs\": " << r.gbs
           << ", \"percent_copy\": " << r.pct_copy << ", \"cusparse_alg1_ms\": " << r.alg1_ms
           << ", \"cusparse_alg2_ms\": " << r.alg2_ms << ", \"speedup\": " << r.speedup << ", \"rule\": \"" << r.rule
           << "\", \"rule_ms\": " << r.rule_ms << ", \"rule_gap\": " << r.rule_gap << ", \"plan_ms\": " << r.plan_ms
           << ", \"plan_first_ms\": " << r.plan_first_ms << ", \"plan_spmvs\": " << r.plan_spmvs << ", \"max_rel_diff\": " << r.max_rel_diff
           << ", \"candidates\": [";
        for (std::size_t c = 0; c < r.candidates.size(); ++c)
          js << (c ? ", " : "") << "{\"kernel\": \"" << r.candidates[c].config.to_string()
             << "\", \"ms\": " << r.candidates[c].ms << "}";
        js << "]}" << (i + 1 < results.size() ? ",\n" : "\n");
      }
      js << "  ]\n}\n";
      std::printf("bench_spmv: wrote %s\n", json.c_str());
    }
    return mismatches == 0 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_spmv: %s\n", e.what());
    return 3;
  }
}
