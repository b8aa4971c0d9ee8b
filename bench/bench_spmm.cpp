// SpMM (fp64, Y = A·X, alpha 1, beta 0, X and Y dense blocks of N columns): krysp's SpMM kernels
// (row-major X and Y) against the best of cuSPARSE SpMM CSR ALG1, ALG2 and ALG3, each in row-major
// and in column-major dense layout (combinations cuSPARSE rejects are skipped; preprocessing is
// done where cuSPARSE supports it), same process, same random X (values in [0.5, 1.5), never
// zero); the device copy bandwidth measured in the same run as the yardstick.
//
// usage: bench_spmm [--quick] [--no-generated] [--no-tune] [--tune-launch] [--ns 2,4,8,16,32,64] [--max-files K] [--profile]
//        bench_spmm [--quick] --panel-sweep   (column panel counts × kernels on the power-law matrix)
//                   [--json out.json] [A.mtx ...]
//   Matrices given on the command line (at most K of them), then the four generated ones of the
//   SpMV benchmark, each >= 20 M nonzeros: 2-D Laplacian (2048^2), 3-D Laplacian (160^3 = 4.1 M
//   rows), power-law graph (3 M rows, mean 8), random banded (1.5 M rows, rows of 1..31).
//   --quick: the same shapes, ~100x smaller. --no-tune: only the rule's kernel (faster).
//   --tune-launch: tuning also times the rule's pick with the launchers' other choices
//   (SpmmConfig::launch: early loads, CSC row rounds, CSC batched walk), to retune them.
//   --profile: per (matrix, N), one run of the rule's kernel, of every tuning candidate and of
//   every cuSPARSE combination, in that order, between cudaProfilerStart and cudaProfilerStop, for
//   `ncu --profile-from-start off` (GPU time per kernel, without the launch cost that dominates
//   event timings of small matrices). The order is printed.
//
// Per (matrix, N): the rule's kernel time (median of CUDA-event samples after warm-up, taken
// round-robin with the tuned kernel and the cuSPARSE combinations, so that interference on a
// shared machine hits all alike: time_device_auto_interleaved_ms), the tuned plan's kernel and
// time (Select::Tune without the cache), the best cuSPARSE time and which algorithm/layout, the
// speedups, and the time relative to the ideal-traffic time (matrix once + X once + Y written
// once, at the copy bandwidth). Results are checked against cuSPARSE.
// Graph timing (the "graph" columns): the rule's and the tuned kernel and every cuSPARSE
// combination, each as up to 32 calls captured into a CUDA graph (CapturedCalls) and replayed,
// again round-robin. The rule's kernel is also timed, both ways, with overlapped launches off
// (base/overlapped_launch.hpp: "plain" keys and summary line). Replays leave out
// the host's submission of each launch (~4 us on the H100 machine, more than the GPU needs for a
// small matrix), which otherwise caps both sides alike; this is the GPU time a solver sees when
// its iterations are replayed from a graph. The graph's result is checked too.
// For the 3-D Laplacian: SpMM(N=2) / SpMV for krysp (SpmvPlan) and for cuSPARSE (SpMV CSR ALG1).
// Summary: geometric-mean speedups over the best cuSPARSE for N in {2,4,8} and N in {16,32,64},
// also split by matrix size (nnz < 1e6: latency-bound launches), and restricted to the cases whose
// best cuSPARSE time is at least 4x the dependent-load floor (bench/launch_floor.hpp: an empty
// launch and a 4-row CSR SpMV in one block, timed the same way in the same run), where a speedup
// is not capped by launch and load latency.
// Without a CUDA device: prints a message and exits 0.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/bench/launch_floor.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/overlapped_launch.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/cuda/cusparse_spmv.hpp"
#include "krysp/sparse/cuda/spmm_launch.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmm_select.hpp"
#include "krysp/sparse/spmv_plan.hpp"

using namespace krysp;
using bench::geomean;
using bench::json_escape;
using bench::matrix_name;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kSmallNnz = 1e6;  // small / large split of the summary (as bench_spmv)
// Cases whose best cuSPARSE time is below this multiple of the dependent-load floor are left out
// of the "above floor" summary: at ~1x the floor neither side can go much faster. (Its JSON keys
// say 4x.)
constexpr double kFloorFactor = 4;
// Graph timing: calls of one SpMM per captured graph, enough for a replay to last about
// kGraphSampleMs (the replay's own launch is then small next to it), at most kGraphMaxCalls.
constexpr double kGraphSampleMs = 0.1;
constexpr int kGraphMaxCalls = 32;

#define CUDA_OK(call)                                                                                      \
  do {                                                                                                     \
    cudaError_t e_ = (call);                                                                               \
    if (e_ != cudaSuccess) KRYSP_THROW(DeviceError, #call " failed: ", cudaGetErrorString(e_));           \
  } while (0)
#define CUSPARSE_OK(call)                                                                                  \
  do {                                                                                                     \
    cusparseStatus_t s_ = (call);                                                                          \
    if (s_ != CUSPARSE_STATUS_SUCCESS) KRYSP_THROW(DeviceError, #call " failed: ", cusparseGetErrorString(s_)); \
  } while (0)

struct Combo {
  cusparseSpMMAlg_t alg;
  cusparseOrder_t order;
  const char* name;
};
const Combo kCombos[] = {
    {CUSPARSE_SPMM_CSR_ALG1, CUSPARSE_ORDER_ROW, "alg1/row"}, {CUSPARSE_SPMM_CSR_ALG1, CUSPARSE_ORDER_COL, "alg1/col"},
    {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_ORDER_ROW, "alg2/row"}, {CUSPARSE_SPMM_CSR_ALG2, CUSPARSE_ORDER_COL, "alg2/col"},
    {CUSPARSE_SPMM_CSR_ALG3, CUSPARSE_ORDER_ROW, "alg3/row"}, {CUSPARSE_SPMM_CSR_ALG3, CUSPARSE_ORDER_COL, "alg3/col"},
};
constexpr int kNumCombos = int(sizeof(kCombos) / sizeof(kCombos[0]));

struct Result {
  std::string name;
  index_t rows = 0, cols = 0, nnz = 0, N = 0;
  bool generated = false;
  std::string rule, tuned;
  double rule_ms = 0, tuned_ms = 0, tuning_s = 0;
  // the rule's kernel with overlapped launches off (base/overlapped_launch.hpp), stream and graph
  double rule_plain_ms = -1, rule_graph_plain_ms = -1;
  double combo_ms[kNumCombos] = {};  // < 0: rejected by cuSPARSE
  double best_cusparse_ms = 0;
  std::string best_cusparse;
  double speedup_rule = 0, speedup_tuned = 0;
  double ideal_ms = 0, rule_vs_ideal = 0;
  double max_rel_diff = -1;  // -1: not checked
  // graph timing (per call, replayed from a graph of graph_calls calls); < 0: not measured
  int graph_calls = 0;
  double rule_graph_ms = -1, tuned_graph_ms = -1, best_cusparse_graph_ms = -1;
  double speedup_rule_graph = 0, speedup_tuned_graph = 0;
  double combo_graph_ms[kNumCombos] = {};  // < 0: rejected, or its calls could not be captured
  std::string best_cusparse_graph;
  double graph_max_rel_diff = -1;  // our graph's result against cuSPARSE; -1: not checked
  std::vector<SpmmSelection::Candidate> candidates;
};

/// Max |ours − theirs| / max |theirs| over the first rows of the result (at most ~1 M entries);
/// `theirs` is row-major (ld N) or column-major (ld rows).
double compare(const double* ours, const double* theirs, bool theirs_col_major, index_t rows, index_t N) {
  const index_t r = index_t(std::min<std::int64_t>(rows, std::max<std::int64_t>(1, (1 << 20) / N)));
  std::vector<double> a(std::size_t(r) * N), b(std::size_t(r) * N);
  CUDA_OK(cudaMemcpy(a.data(), ours, a.size() * sizeof(double), cudaMemcpyDeviceToHost));
  if (!theirs_col_major) {
    CUDA_OK(cudaMemcpy(b.data(), theirs, b.size() * sizeof(double), cudaMemcpyDeviceToHost));
  } else {
    std::vector<double> col(static_cast<std::size_t>(r));
    for (index_t j = 0; j < N; ++j) {
      CUDA_OK(cudaMemcpy(col.data(), theirs + std::size_t(j) * rows, col.size() * sizeof(double),
                         cudaMemcpyDeviceToHost));
      for (index_t i = 0; i < r; ++i) b[std::size_t(i) * N + j] = col[std::size_t(i)];
    }
  }
  double md = 0, mx = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    md = std::max(md, std::fabs(a[i] - b[i]));
    mx = std::max(mx, std::fabs(b[i]));
  }
  return mx > 0 ? md / mx : md;
}

/// One cuSPARSE SpMM combination, set up for timing (descriptors, buffer, preprocessing where
/// cuSPARSE supports it) and run once; ok() is false when cuSPARSE rejects it. Leaves its result in Y.
class CusparseSpmm {
 public:
  CusparseSpmm(cusparseHandle_t h, cusparseConstSpMatDescr_t A, index_t rows, index_t cols, index_t N,
               const Combo& c, const double* X, double* Y)
      : h_(h), A_(A), alg_(c.alg) {
    const bool row = c.order == CUSPARSE_ORDER_ROW;
    if (cusparseCreateConstDnMat(&dx_, cols, N, row ? N : cols, X, CUDA_R_64F, c.order) != CUSPARSE_STATUS_SUCCESS)
      return;
    if (cusparseCreateDnMat(&dy_, rows, N, row ? N : rows, Y, CUDA_R_64F, c.order) != CUSPARSE_STATUS_SUCCESS) return;
    std::size_t bytes = 0;
    if (cusparseSpMM_bufferSize(h_, kOp, kOp, &one_, A_, dx_, &zero_, dy_, CUDA_R_64F, alg_, &bytes) !=
        CUSPARSE_STATUS_SUCCESS)
      return;
    buf_ = DeviceArray<unsigned char>(std::max<std::size_t>(bytes, 1));
    // Preprocessing where supported; a refusal here only means no preprocessing.
    (void)cusparseSpMM_preprocess(h_, kOp, kOp, &one_, A_, dx_, &zero_, dy_, CUDA_R_64F, alg_, buf_.data());
    (void)cudaGetLastError();
    ok_ = true;
    run();
    CUDA_OK(cudaDeviceSynchronize());
  }
  ~CusparseSpmm() {
    if (dy_) cusparseDestroyDnMat(dy_);
    if (dx_) cusparseDestroyDnMat(dx_);
  }
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;
  /// Accepted by cuSPARSE, and every run so far succeeded.
  bool ok() const { return ok_; }
  /// Enqueues one Y = A·X.
  void run() {
    if (ok_ && cusparseSpMM(h_, kOp, kOp, &one_, A_, dx_, &zero_, dy_, CUDA_R_64F, alg_, buf_.data()) !=
                   CUSPARSE_STATUS_SUCCESS)
      ok_ = false;
  }

 private:
  static constexpr cusparseOperation_t kOp = CUSPARSE_OPERATION_NON_TRANSPOSE;
  cusparseHandle_t h_;
  cusparseConstSpMatDescr_t A_;
  cusparseSpMMAlg_t alg_;
  cusparseConstDnMatDescr_t dx_ = nullptr;
  cusparseDnMatDescr_t dy_ = nullptr;
  DeviceArray<unsigned char> buf_;
  double one_ = 1, zero_ = 0;
  bool ok_ = false;
};

struct Bench {
  double copy_gbs = 0;
  bool tune = true;
  bool tune_launch = false;  // also time the launchers' other choices (SpmmPlanOptions::tune_launch)
  bool profile = false;  // --profile
  cusparseHandle_t handle = nullptr;
};

/// All N for one matrix.
std::vector<Result> run(const Bench& b, const std::string& name, const CsrMatrix<double>& A, bool generated,
                        const std::vector<index_t>& Ns) {
  std::vector<Result> out;
  const CsrView<double> dA = A.device_view();
  cusparseConstSpMatDescr_t sp = nullptr;
  CUSPARSE_OK(cusparseCreateConstCsr(&sp, dA.rows, dA.cols, dA.nnz, dA.row_ptr, dA.col_idx, dA.values,
                                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  try {
    const index_t maxN = *std::max_element(Ns.begin(), Ns.end());
    DeviceArray<double> X(std::size_t(A.cols()) * maxN), Y(std::size_t(A.rows()) * maxN),
        Yc(std::size_t(A.rows()) * maxN);
    detail::spmm_fill_device(X.data(), X.size(), 1234);
    detail::spmm_fill_device(Y.data(), Y.size(), 1235);
    detail::spmm_fill_device(Yc.data(), Yc.size(), 1236);
    for (index_t N : Ns) {
      Result r;
      r.name = name;
      r.rows = A.rows();
      r.cols = A.cols();
      r.nnz = A.nnz();
      r.N = N;
      r.generated = generated;
      const SpmmPlan<double> rule(A, N);
      r.rule = rule.config().to_string();
      std::optional<SpmmPlan<double>> tuned;
      if (b.tune) {
        SpmmPlanOptions o;
        o.select = SpmmPlanOptions::Select::Tune;
        o.use_cache = false;
        o.tune_launch = b.tune_launch;
        tuned.emplace(A, N, o);
        r.tuned = tuned->config().to_string();
        r.tuning_s = tuned->selection().tuning_seconds;
        r.candidates = tuned->selection().candidates;
      } else {
        r.tuned = r.rule;
      }
      // Every cuSPARSE combination runs once into Yc and is checked against the rule's result.
      rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N);
      std::vector<std::unique_ptr<CusparseSpmm>> combos;
      for (int c = 0; c < kNumCombos; ++c) {
        combos.push_back(
            std::make_unique<CusparseSpmm>(b.handle, sp, A.rows(), A.cols(), N, kCombos[c], X.data(), Yc.data()));
        if (combos.back()->ok() && r.max_rel_diff < 0)
          r.max_rel_diff = compare(Y.data(), Yc.data(), kCombos[c].order == CUSPARSE_ORDER_COL, A.rows(), N);
      }
      if (b.profile) {
        // One run each inside the profiler range; the plans are made (and tuned) outside it.
        std::vector<SpmmPlan<double>> forced;
        for (const auto& c : r.candidates) {
          SpmmPlanOptions o;
          o.force = true;
          o.forced = c.config;
          forced.emplace_back(A, N, o);
        }
        std::printf("profile %s N=%d: rule %s", name.c_str(), N, r.rule.c_str());
        for (const auto& c : r.candidates) std::printf(", %s", c.config.to_string().c_str());
        for (int c = 0; c < kNumCombos; ++c)
          if (combos[std::size_t(c)]->ok()) std::printf(", cusparse %s", kCombos[c].name);
        std::printf("\n");
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaProfilerStart());
        rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N);
        for (const auto& p : forced) p.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N);
        for (auto& c : combos) c->run();
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaProfilerStop());
      }
      // Ours and every accepted combination timed round-robin (time_device_auto_interleaved_ms).
      auto apply_plain = [&](DeviceStream st) {  // overlapped launches off for this call only
        const bool was = overlapped_launch();
        set_overlapped_launch(false);
        rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N, st);
        set_overlapped_launch(was);
      };
      std::vector<std::function<void()>> fns = {[&] { rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N); },
                                                [&] { apply_plain({}); }};
      const bool tuned_differs = tuned && tuned->config() != rule.config();
      if (tuned_differs) fns.push_back([&] { tuned->apply(A, 1.0, X.data(), N, 0.0, Y.data(), N); });
      std::vector<int> slot(kNumCombos, -1);
      for (int c = 0; c < kNumCombos; ++c)
        if (combos[std::size_t(c)]->ok()) {
          slot[std::size_t(c)] = int(fns.size());
          fns.push_back([&, c] { combos[std::size_t(c)]->run(); });
        }
      const std::vector<double> ms = time_device_auto_interleaved_ms(fns);
      r.rule_ms = ms[0];
      r.rule_plain_ms = ms[1];
      r.tuned_ms = tuned_differs ? ms[2] : r.rule_ms;
      r.best_cusparse_ms = -1;
      for (int c = 0; c < kNumCombos; ++c) {
        const int k = slot[std::size_t(c)];
        r.combo_ms[c] = k >= 0 && combos[std::size_t(c)]->ok() ? ms[std::size_t(k)] : -1;
        if (r.combo_ms[c] > 0 && (r.best_cusparse_ms < 0 || r.combo_ms[c] < r.best_cusparse_ms)) {
          r.best_cusparse_ms = r.combo_ms[c];
          r.best_cusparse = kCombos[c].name;
        }
      }
      // Graph timing: the rule's kernel, the tuned one and every accepted combination, the same
      // number of calls a graph (from the rule's time in a stream of launches).
      {
        const int calls = int(std::clamp(kGraphSampleMs / r.rule_ms, 1.0, double(kGraphMaxCalls)));
        std::vector<std::unique_ptr<CapturedCalls>> graphs;
        graphs.push_back(std::make_unique<CapturedCalls>(
            [&](DeviceStream st) { rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N, st); }, calls));
        graphs.push_back(std::make_unique<CapturedCalls>(apply_plain, calls));
        if (tuned_differs)
          graphs.push_back(std::make_unique<CapturedCalls>(
              [&](DeviceStream st) { tuned->apply(A, 1.0, X.data(), N, 0.0, Y.data(), N, st); }, calls));
        for (const auto& g : graphs)
          if (!g->ok()) KRYSP_THROW(DeviceError, "bench_spmm: ", name, " N=", N, ": our SpMM could not be captured");
        std::vector<int> gslot(kNumCombos, -1);
        for (int c = 0; c < kNumCombos; ++c) {
          if (!combos[std::size_t(c)]->ok()) continue;
          auto g = std::make_unique<CapturedCalls>(
              [&, c](DeviceStream st) {
                CUSPARSE_OK(cusparseSetStream(b.handle, static_cast<cudaStream_t>(st.handle)));
                combos[std::size_t(c)]->run();
              },
              calls);
          CUSPARSE_OK(cusparseSetStream(b.handle, nullptr));
          if (!g->ok() || !combos[std::size_t(c)]->ok()) {
            std::fprintf(stderr, "bench_spmm: %s N=%d: cuSPARSE %s could not be captured into a graph\n", name.c_str(),
                         N, kCombos[c].name);
            continue;
          }
          gslot[std::size_t(c)] = int(graphs.size());
          graphs.push_back(std::move(g));
        }
        // The rule graph's result, from a poisoned Y, against the first accepted combination's.
        detail::spmm_fill_device(Y.data(), std::size_t(A.rows()) * N, 4321);
        graphs[0]->launch();
        for (int c = 0; c < kNumCombos; ++c)
          if (combos[std::size_t(c)]->ok()) {
            combos[std::size_t(c)]->run();
            r.graph_max_rel_diff = compare(Y.data(), Yc.data(), kCombos[c].order == CUSPARSE_ORDER_COL, A.rows(), N);
            break;
          }
        std::vector<std::function<void()>> gfns;
        for (const auto& g : graphs) gfns.push_back([&g] { g->launch(); });
        const std::vector<double> gms = time_device_auto_interleaved_ms(gfns);
        r.graph_calls = calls;
        r.rule_graph_ms = gms[0] / calls;
        r.rule_graph_plain_ms = gms[1] / calls;
        r.tuned_graph_ms = tuned_differs ? gms[2] / calls : r.rule_graph_ms;
        for (int c = 0; c < kNumCombos; ++c) {
          const int k = gslot[std::size_t(c)];
          r.combo_graph_ms[c] = k >= 0 ? gms[std::size_t(k)] / calls : -1;
          if (r.combo_graph_ms[c] > 0 &&
              (r.best_cusparse_graph_ms < 0 || r.combo_graph_ms[c] < r.best_cusparse_graph_ms)) {
            r.best_cusparse_graph_ms = r.combo_graph_ms[c];
            r.best_cusparse_graph = kCombos[c].name;
          }
        }
        r.speedup_rule_graph = r.best_cusparse_graph_ms > 0 ? r.best_cusparse_graph_ms / r.rule_graph_ms : 0;
        r.speedup_tuned_graph = r.best_cusparse_graph_ms > 0 ? r.best_cusparse_graph_ms / r.tuned_graph_ms : 0;
      }
      r.speedup_rule = r.best_cusparse_ms > 0 ? r.best_cusparse_ms / r.rule_ms : 0;
      r.speedup_tuned = r.best_cusparse_ms > 0 ? r.best_cusparse_ms / r.tuned_ms : 0;
      const double bytes = 12.0 * A.nnz() + 4.0 * (double(A.rows()) + 1) + 8.0 * double(A.cols()) * N +
                           8.0 * double(A.rows()) * N;
      r.ideal_ms = bytes / (b.copy_gbs * 1e9) * 1e3;
      r.rule_vs_ideal = r.rule_ms / r.ideal_ms;
      out.push_back(r);
    }
  } catch (...) {
    cusparseDestroySpMat(sp);
    throw;
  }
  cusparseDestroySpMat(sp);
  return out;
}

/// Our result (stream or graph) differs from cuSPARSE's by more than rounding.
bool mismatch(const Result& r) { return r.max_rel_diff > 1e-10 || r.graph_max_rel_diff > 1e-10; }

void print_header() {
  std::printf("%-20s %9s %10s %3s %-22s %9s %-22s %9s %9s %-9s %7s %7s %7s %9s %9s %7s%s\n", "matrix", "rows", "nnz",
              "N", "rule", "rule ms", "tuned", "tuned ms", "cuSP ms", "cuSP", "x rule", "x tuned", "/ideal",
              "g rule ms", "g cuSP ms", "x graph", "");
}

void print_row(const Result& r) {
  std::printf("%-20.20s %9d %10d %3d %-22s %9.4f %-22s %9.4f %9.4f %-9s %6.2fx %6.2fx %6.2fx %9.4f %9.4f %6.2fx%s\n",
              r.name.c_str(), r.rows, r.nnz, r.N, r.rule.c_str(), r.rule_ms, r.tuned.c_str(), r.tuned_ms,
              r.best_cusparse_ms, r.best_cusparse.c_str(), r.speedup_rule, r.speedup_tuned, r.rule_vs_ideal,
              r.rule_graph_ms, r.best_cusparse_graph_ms, r.speedup_rule_graph,
              mismatch(r) ? "  MISMATCH" : (r.max_rel_diff < 0 || r.graph_max_rel_diff < 0 ? "  unchecked" : ""));
  std::fflush(stdout);
}

std::vector<index_t> parse_ns(const std::string& s) {
  std::vector<index_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const int n = std::atoi(item.c_str());
    if (n < 1 || n > 4096) throw InputError("bench_spmm: bad N '" + item + "' in --ns");
    v.push_back(n);
  }
  if (v.empty()) throw InputError("bench_spmm: --ns needs at least one N");
  return v;
}

}  // namespace

/// --panel-sweep: Y = A·X on the generated power-law matrix for column panel counts and kernels
/// (forced plans), to set the panel rule (sparse/spmm_panels.hpp) from measurements.
void panel_sweep(bool quick) {
  const index_t n = quick ? 40000 : 3000000;
  const auto A = random_power_law(n, 8, quick ? 5000 : 100000, 7);
  std::printf("panel sweep on powerlaw_%d (%d nonzeros), ms per Y = A*X (median)\n", n, A.nnz());
  DeviceArray<double> X(std::size_t(A.cols()) * 8), Y(std::size_t(A.rows()) * 8);
  detail::spmm_fill_device(X.data(), X.size(), 1234);
  for (const index_t N : {2, 4, 8}) {
    const SpmmPlan<double> rule(A, N);
    std::printf("N=%d rule %s %.4f ms\n", N, rule.config().to_string().c_str(),
                time_device_auto_ms([&] { rule.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N); }));
    for (const int P : {1, 2, 3, 4, 6, 8, 12}) {
      std::printf("  N=%d P=%2d:", N, P);
      for (const auto& [alg, S] : std::vector<std::pair<SpmmAlgorithm, int>>{{SpmmAlgorithm::VdlNnz, 2},
                                                                           {SpmmAlgorithm::VdlNnz, 4},
                                                                           {SpmmAlgorithm::VdlRow, 2},
                                                                           {SpmmAlgorithm::VdlRow, 4},
                                                                           {SpmmAlgorithm::CscNnz, N >= 8 ? 8 : 2},
                                                                           {SpmmAlgorithm::CscRow, N >= 8 ? 8 : 2},
                                                                           {SpmmAlgorithm::SeqNnz, 32}}) {
        SpmmPlanOptions o;
        o.force = true;
        o.forced.algorithm = alg;
        o.forced.subwarp = S;
        o.forced.panels = P;
        const SpmmPlan<double> plan(A, N, o);
        const double ms = time_device_auto_ms([&] { plan.apply(A, 1.0, X.data(), N, 0.0, Y.data(), N); });
        std::printf("  %s %.4f", plan.config().to_string().c_str(), ms);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

int main(int argc, char** argv) {
  bool quick = false, generated = true, tune = true, profile = false, tune_launch = false;
  int max_files = -1;
  std::string json;
  std::vector<index_t> Ns = {2, 4, 8, 16, 32, 64};
  std::vector<std::string> files;
  const char* usage =
      "usage: bench_spmm [--quick] [--no-generated] [--no-tune] [--tune-launch] [--ns 2,4,8,16,32,64] "
      "[--max-files K] [--profile] [--json out.json] [A.mtx ...]\n";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") {
        quick = true;
      } else if (a == "--panel-sweep") {
        panel_sweep(quick);
        return 0;
      } else if (a == "--no-generated") {
        generated = false;
      } else if (a == "--no-tune") {
        tune = false;
      } else if (a == "--profile") {
        profile = true;
      } else if (a == "--tune-launch") {
        tune_launch = true;
      } else if (a == "--ns" && i + 1 < argc) {
        Ns = parse_ns(argv[++i]);
      } else if (a == "--max-files" && i + 1 < argc) {
        max_files = std::atoi(argv[++i]);
      } else if (a == "--json" && i + 1 < argc) {
        json = argv[++i];
      } else if (a == "--help" || a == "-h") {
        std::printf("%s", usage);
        return 0;
      } else if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
        std::fprintf(stderr, "bench_spmm: unknown option %s\n%s", a.c_str(), usage);
        return 2;
      } else {
        files.push_back(a);
      }
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  if (max_files >= 0 && int(files.size()) > max_files) files.resize(std::size_t(max_files));
  if (!cuda_device_available()) {
    std::printf("bench_spmm: no CUDA device, nothing to measure\n");
    return 0;
  }
  try {
    const auto t_start = Clock::now();
    Bench b;
    b.tune = tune;
    b.tune_launch = tune_launch;
    b.profile = profile;
    const std::string device = cached_device_name();
    std::size_t free_b = 0, total_b = 0;
    cuda_memory_info(free_b, total_b);
    b.copy_gbs = measure_copy_bandwidth_gbs(std::min<std::size_t>(std::size_t(1) << 30, free_b / 4), 15);
    const bench::LaunchFloor launch_floor = bench::measure_launch_floor();
    CUSPARSE_OK(cusparseCreate(&b.handle));
    std::printf("bench_spmm: %s, copy bandwidth %.0f GB/s (read + write), fp64, Y = A*X, row-major X/Y\n",
                device.c_str(), b.copy_gbs);
    std::printf("latency floor (back-to-back launches): empty kernel %.4f ms, dependent-load floor (4-row CSR "
                "SpMV, one block) %.4f ms\n",
                launch_floor.empty_launch_ms, launch_floor.dependent_load_ms);
    std::printf("host submission %.4f ms per empty launch (wall time of a stream of launches); the GPU's own cost "
                "per empty kernel, replayed from a graph, %.4f ms\n",
                launch_floor.host_submit_ms, launch_floor.graph_kernel_ms);

    std::vector<Result> results;
    print_header();
    for (const std::string& f : files) {
      try {
        const CsrMatrix<double> A = io::read_matrix_market<double>(f);
        if (A.rows() == 0 || A.nnz() == 0) {
          std::fprintf(stderr, "bench_spmm: skipping %s: empty\n", f.c_str());
          continue;
        }
        for (const Result& r : run(b, matrix_name(f), A, false, Ns)) {
          results.push_back(r);
          print_row(r);
        }
      } catch (const InputError& e) {
        std::fprintf(stderr, "bench_spmm: skipping %s: %s\n", f.c_str(), e.what());
      }
    }

    // 3-D Laplacian: SpMM(N=2) / SpMV, krysp and cuSPARSE.
    double lap_spmv_ms = -1, lap_cusparse_spmv_ms = -1, lap_spmm2_ms = -1, lap_cusparse_spmm2_ms = -1;
    std::string lap_name;
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
        const auto t0 = Clock::now();
        const CsrMatrix<double> A = g.make();
        std::fprintf(stderr, "bench_spmm: generated %s (%d rows, %d nonzeros) in %.1f s\n", g.name.c_str(), A.rows(),
                     A.nnz(), std::chrono::duration<double>(Clock::now() - t0).count());
        const bool lap3d = g.name.rfind("laplace3d", 0) == 0;
        std::vector<index_t> ns = Ns;
        if (lap3d && std::find(ns.begin(), ns.end(), 2) == ns.end()) ns.insert(ns.begin(), 2);
        for (const Result& r : run(b, g.name, A, true, ns)) {
          if (lap3d && r.N == 2) {
            lap_name = r.name;
            lap_spmm2_ms = r.rule_ms;
            lap_cusparse_spmm2_ms = r.best_cusparse_ms;
          }
          if (std::find(Ns.begin(), Ns.end(), r.N) == Ns.end()) continue;
          results.push_back(r);
          print_row(r);
        }
        if (lap3d) {
          const SpmvPlan<double> spmv(A);
          DeviceArray<double> x(std::size_t(A.cols())), y(std::size_t(A.rows()));
          detail::spmm_fill_device(x.data(), x.size(), 99);
          detail::spmm_fill_device(y.data(), y.size(), 98);
          lap_spmv_ms = time_device_auto_ms([&] { spmv.apply(A, 1.0, x.data(), 0.0, y.data()); });
          CusparseSpmv<double> cs(A.device_view(), CusparseSpmvAlg::Csr1, 1.0, x.data(), 0.0, y.data());
          lap_cusparse_spmv_ms = time_device_auto_ms([&] { cs.apply(1.0, x.data(), 0.0, y.data()); });
        }
      }
    }

    // Summary.
    std::vector<double> small_rule, small_tuned, large_rule, large_tuned;
    // the same split by matrix size (nnz < kSmallNnz: latency-bound launches of a few µs)
    std::vector<double> by_size[2][2];  // [big matrix][N >= 16], rule speedups
    std::vector<double> above_floor[2];  // [N >= 16], rule speedups where cuSPARSE >= kFloorFactor x floor
    std::vector<double> graph[2][2];     // [big matrix][N >= 16], rule speedups replayed from graphs
    std::vector<double> graph_tuned[2];  // [N >= 16], tuned speedups replayed from graphs
    std::vector<double> plain[2], graph_plain[2];  // [N >= 16], rule speedups with overlapped launches off
    int mismatches = 0, unchecked = 0, rule_hits = 0;
    double tuning_s = 0;
    for (const Result& r : results) {
      if (r.best_cusparse_ms > 0) {
        (r.N <= 8 ? small_rule : large_rule).push_back(r.speedup_rule);
        (r.N <= 8 ? small_tuned : large_tuned).push_back(r.speedup_tuned);
        by_size[r.nnz >= kSmallNnz][r.N > 8].push_back(r.speedup_rule);
        if (r.rule_plain_ms > 0) plain[r.N > 8].push_back(r.best_cusparse_ms / r.rule_plain_ms);
        if (r.best_cusparse_ms >= kFloorFactor * launch_floor.dependent_load_ms)
          above_floor[r.N > 8].push_back(r.speedup_rule);
      }
      if (r.speedup_rule_graph > 0) {
        graph[r.nnz >= kSmallNnz][r.N > 8].push_back(r.speedup_rule_graph);
        graph_tuned[r.N > 8].push_back(r.speedup_tuned_graph);
        if (r.rule_graph_plain_ms > 0) graph_plain[r.N > 8].push_back(r.best_cusparse_graph_ms / r.rule_graph_plain_ms);
      }
      mismatches += mismatch(r);
      unchecked += r.max_rel_diff < 0 || r.graph_max_rel_diff < 0;
      rule_hits += r.rule == r.tuned;
      tuning_s += r.tuning_s;
    }
    std::printf("\n==== bench_spmm summary (%s, copy %.0f GB/s) ====\n", device.c_str(), b.copy_gbs);
    std::printf("geomean speedup over best cuSPARSE, N in {2,4,8}:   rule %.3fx  tuned %.3fx  (%zu cases)\n",
                geomean(small_rule), geomean(small_tuned), small_rule.size());
    std::printf("geomean speedup over best cuSPARSE, N in {16..64}:  rule %.3fx  tuned %.3fx  (%zu cases)\n",
                geomean(large_rule), geomean(large_tuned), large_rule.size());
    std::printf("  by size (rule): nnz < %.0e: N<=8 %.3fx (%zu), N>=16 %.3fx (%zu);  nnz >= %.0e: N<=8 %.3fx (%zu), "
                "N>=16 %.3fx (%zu)\n",
                kSmallNnz, geomean(by_size[0][0]), by_size[0][0].size(), geomean(by_size[0][1]), by_size[0][1].size(),
                kSmallNnz, geomean(by_size[1][0]), by_size[1][0].size(), geomean(by_size[1][1]), by_size[1][1].size());
    std::printf("  cuSPARSE >= %.0fx dependent-load floor (%.4f ms), rule: N<=8 %.3fx (%zu), N>=16 %.3fx (%zu)\n",
                kFloorFactor, launch_floor.dependent_load_ms, geomean(above_floor[0]), above_floor[0].size(),
                geomean(above_floor[1]), above_floor[1].size());
    auto all_graph = [&](int big_n) {
      std::vector<double> v = graph[0][big_n];
      v.insert(v.end(), graph[1][big_n].begin(), graph[1][big_n].end());
      return v;
    };
    std::printf(
        "replayed from graphs (no host submission per call): rule N<=8 %.3fx (%zu), N>=16 %.3fx (%zu); "
        "tuned %.3fx / %.3fx;  rule, nnz < %.0e: %.3fx / %.3fx;  nnz >= %.0e: %.3fx / %.3fx\n",
        geomean(all_graph(0)), all_graph(0).size(), geomean(all_graph(1)), all_graph(1).size(), geomean(graph_tuned[0]),
        geomean(graph_tuned[1]), kSmallNnz, geomean(graph[0][0]), geomean(graph[0][1]), kSmallNnz, geomean(graph[1][0]),
        geomean(graph[1][1]));
    std::printf("overlapped launches off (rule): stream N<=8 %.3fx, N>=16 %.3fx;  graph N<=8 %.3fx, N>=16 %.3fx\n",
                geomean(plain[0]), geomean(plain[1]), geomean(graph_plain[0]), geomean(graph_plain[1]));
    double lap_ratio = -1, lap_cusparse_ratio = -1;
    if (lap_spmv_ms > 0 && lap_spmm2_ms > 0) {
      lap_ratio = lap_spmm2_ms / lap_spmv_ms;
      lap_cusparse_ratio = lap_cusparse_spmm2_ms > 0 ? lap_cusparse_spmm2_ms / lap_cusparse_spmv_ms : -1;
      std::printf("%s: SpMM(N=2)/SpMV  krysp %.3f (%.4f / %.4f ms)   cuSPARSE %.3f (%.4f / %.4f ms)\n",
                  lap_name.c_str(), lap_ratio, lap_spmm2_ms, lap_spmv_ms, lap_cusparse_ratio, lap_cusparse_spmm2_ms,
                  lap_cusparse_spmv_ms);
    }
    std::printf("rule pick = tuned pick on %d of %zu; total tuning time %.1f s\n", rule_hits, results.size(),
                tuning_s);
    std::printf("results checked against cuSPARSE: %d mismatch(es), %d unchecked\n", mismatches, unchecked);
    std::printf("wall time %.1f s\n", std::chrono::duration<double>(Clock::now() - t_start).count());

    if (!json.empty()) {
      std::ofstream js(json);
      if (!js) throw InputError("cannot write '" + json + "'");
      const std::string date = bench::utc_now();
      js << "{\n  \"benchmark\": \"bench_spmm\",\n  \"device\": \"" << json_escape(device) << "\",\n  \"date\": \""
         << date << "\",\n  \"precision\": \"double\",\n  \"layout\": \"row-major X and Y, alpha 1, beta 0\",\n"
         << "  \"copy_bandwidth_gbs\": " << b.copy_gbs << ",\n  \"kernel_version\": " << kSpmmKernelVersion
         << ",\n  \"empty_launch_ms\": " << launch_floor.empty_launch_ms
         << ",\n  \"dependent_load_floor_ms\": " << launch_floor.dependent_load_ms
         << ",\n  \"host_submit_ms\": " << launch_floor.host_submit_ms
         << ",\n  \"graph_kernel_ms\": " << launch_floor.graph_kernel_ms
         << ",\n  \"summary\": {\"geomean_speedup_rule_n2_8\": " << geomean(small_rule)
         << ", \"geomean_speedup_tuned_n2_8\": " << geomean(small_tuned)
         << ", \"geomean_speedup_rule_n16_64\": " << geomean(large_rule)
         << ", \"geomean_speedup_tuned_n16_64\": " << geomean(large_tuned)
         << ", \"geomean_speedup_rule_small_matrices_n2_8\": " << geomean(by_size[0][0])
         << ", \"geomean_speedup_rule_small_matrices_n16_64\": " << geomean(by_size[0][1])
         << ", \"geomean_speedup_rule_large_matrices_n2_8\": " << geomean(by_size[1][0])
         << ", \"geomean_speedup_rule_large_matrices_n16_64\": " << geomean(by_size[1][1]) << ", \"laplace3d\": \""
         << json_escape(lap_name) << "\", \"laplace3d_spmm2_over_spmv\": " << lap_ratio
         << ", \"laplace3d_cusparse_spmm2_over_spmv\": " << lap_cusparse_ratio
         << ", \"laplace3d_spmm2_ms\": " << lap_spmm2_ms << ", \"laplace3d_spmv_ms\": " << lap_spmv_ms
         << ", \"laplace3d_cusparse_spmm2_ms\": " << lap_cusparse_spmm2_ms
         << ", \"laplace3d_cusparse_spmv_alg1_ms\": " << lap_cusparse_spmv_ms << ", \"mismatches\": " << mismatches
         << ", \"rule_hits\": " << rule_hits
         << ", \"geomean_speedup_rule_n2_8_above_4x_floor\": " << geomean(above_floor[0])
         << ", \"cases_n2_8_above_4x_floor\": " << above_floor[0].size()
         << ", \"geomean_speedup_rule_n16_64_above_4x_floor\": " << geomean(above_floor[1])
         << ", \"cases_n16_64_above_4x_floor\": " << above_floor[1].size()
         << ", \"geomean_speedup_rule_graph_n2_8\": " << geomean(all_graph(0))
         << ", \"geomean_speedup_tuned_graph_n2_8\": " << geomean(graph_tuned[0])
         << ", \"geomean_speedup_tuned_graph_n16_64\": " << geomean(graph_tuned[1])
         << ", \"geomean_speedup_rule_graph_n16_64\": " << geomean(all_graph(1))
         << ", \"geomean_speedup_rule_graph_small_matrices_n2_8\": " << geomean(graph[0][0])
         << ", \"geomean_speedup_rule_graph_small_matrices_n16_64\": " << geomean(graph[0][1])
         << ", \"geomean_speedup_rule_graph_large_matrices_n2_8\": " << geomean(graph[1][0])
         << ", \"geomean_speedup_rule_graph_large_matrices_n16_64\": " << geomean(graph[1][1])
         << ", \"geomean_speedup_rule_plain_n2_8\": " << geomean(plain[0])
         << ", \"geomean_speedup_rule_plain_n16_64\": " << geomean(plain[1])
         << ", \"geomean_speedup_rule_graph_plain_n2_8\": " << geomean(graph_plain[0])
         << ", \"geomean_speedup_rule_graph_plain_n16_64\": " << geomean(graph_plain[1])
         << ", \"unchecked\": " << unchecked << "},\n  \"results\": [\n";
      for (std::size_t i = 0; i < results.size(); ++i) {
        const Result& r = results[i];
        js << "    {\"name\": \"" << json_escape(r.name) << "\", \"generated\": " << (r.generated ? "true" : "false")
           << ", \"rows\": " << r.rows << ", \"cols\": " << r.cols << ", \"nnz\": " << r.nnz << ", \"N\": " << r.N
           << ", \"rule\": \"" << r.rule << "\", \"rule_ms\": " << r.rule_ms
           << ", \"rule_plain_ms\": " << r.rule_plain_ms << ", \"rule_graph_plain_ms\": " << r.rule_graph_plain_ms
           << ", \"tuned\": \"" << r.tuned
           << "\", \"tuned_ms\": " << r.tuned_ms << ", \"tuning_s\": " << r.tuning_s
           << ", \"best_cusparse\": \"" << r.best_cusparse << "\", \"best_cusparse_ms\": " << r.best_cusparse_ms
           << ", \"cusparse_ms\": {";
        for (int c = 0; c < kNumCombos; ++c)
          js << (c ? ", " : "") << "\"" << kCombos[c].name << "\": " << r.combo_ms[c];
        js << "}, \"speedup_rule\": " << r.speedup_rule << ", \"speedup_tuned\": " << r.speedup_tuned
           << ", \"ideal_ms\": " << r.ideal_ms << ", \"rule_over_ideal\": " << r.rule_vs_ideal
           << ", \"rule_over_floor\": " << r.rule_ms / launch_floor.dependent_load_ms << ", \"cusparse_over_floor\": "
           << (r.best_cusparse_ms > 0 ? r.best_cusparse_ms / launch_floor.dependent_load_ms : -1)
           << ", \"max_rel_diff\": " << r.max_rel_diff << ", \"graph_calls\": " << r.graph_calls
           << ", \"rule_graph_ms\": " << r.rule_graph_ms << ", \"tuned_graph_ms\": " << r.tuned_graph_ms
           << ", \"best_cusparse_graph\": \"" << r.best_cusparse_graph
           << "\", \"best_cusparse_graph_ms\": " << r.best_cusparse_graph_ms << ", \"cusparse_graph_ms\": {";
        for (int c = 0; c < kNumCombos; ++c)
          js << (c ? ", " : "") << "\"" << kCombos[c].name << "\": " << r.combo_graph_ms[c];
        js << "}, \"speedup_rule_graph\": " << r.speedup_rule_graph
           << ", \"speedup_tuned_graph\": " << r.speedup_tuned_graph
           << ", \"graph_max_rel_diff\": " << r.graph_max_rel_diff << ", \"candidates\": [";
        for (std::size_t k = 0; k < r.candidates.size(); ++k)
          js << (k ? ", " : "") << "{\"config\": \"" << r.candidates[k].config.to_string()
             << "\", \"ms\": " << r.candidates[k].ms << "}";
        js << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
      }
      js << "  ]\n}\n";
    }
    cusparseDestroy(b.handle);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_spmm: %s\n", e.what());
    return 1;
  }
  return 0;
}
