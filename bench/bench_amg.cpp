// AMG-preconditioned CG on the GPU against Jacobi- and Chebyshev-CG: CG to rtol 1e-8 with b = ones
// and x0 = 0, through CgSolver with Backend::Cuda. Per problem and preconditioner: iterations,
// set-up time (SpMV plan + preconditioner, wall clock; the solver synchronises), solve time (CUDA
// events around CgSolver::solve, which uploads b and downloads x), time to solution = set-up +
// solve, and the true relative residual ‖b − A·x‖/‖b‖ recomputed here on the host. For AMG also
// the full set-up and the numeric re-set-up (update_values to a time step's values, the same
// structure) of DeviceAmg alone, and the host set-up / upload split, levels, complexities and GPU
// bytes. One untimed warm-up solve per preconditioner; medians over --reps repetitions.
//
// usage: bench_amg [--sizes 64,128,256] [--diffusion 40] [--media N] [--precond jacobi,chebyshev,amg]
//                  [--reps R] [--setup-reps S] [--max-iters N] [--json out.json]
//                  [--write-mtx DIR] [--no-solve] [--profile-setup] [--label-suffix S]
//                  [--amg-* options of krysp solve] [--coordinates-beside] [--block-products M]
//                  [A.mtx ...]
//   --reps: CG runs per preconditioner after the warm-up (default 3); --setup-reps: DeviceAmg
//   full + numeric set-ups timed alone (default 1). --precond amg sets up on the GPU (MIS-2, the
//   default); amg-greedy sets up on the host (greedy) and uploads: tens of seconds at 256³. For
//   amg the "host set-up" figures are the GPU set-up's (info().setup_seconds) and "upload" the
//   SpMV plans made for its levels.
//   Problems: the 7-point 3-D Laplacian on each size³; 3-D diffusion with coefficient jumps 1e4
//   and anisotropy 100 (diffusion_3d(n, 1, 1, 0.01, 1e4)) on --diffusion n³ (0: none); random
//   media, a fifth of the cells 1e4 stiffer, anisotropy 100 (diffusion_3d_random(n, 100, 1, 1,
//   1e4, 0.2, 1)) on --media n³ (default 0: none); every
//   Matrix Market file given. --write-mtx DIR writes the generated problems as DIR/<name>.mtx
//   (coordinate real general; b = ones is implied) so that AmgX can be run on the same matrices
//   (../shared/peers/amgx/build_and_run.sh run DIR/*.mtx); --no-solve stops after writing.
//   --profile-setup: for amg (GPU set-up), one more DeviceAmg set-up and numeric re-set-up after
//   the timed ones, with AmgOptions::profile_setup on (a device synchronisation around every
//   phase), printed as a phase × level table of seconds (AmgInfo::setup_phases; in the JSON too).
//   The --amg-* options of `krysp solve` (cli::amg_option_names, its help too): the AmgOptions of
//   the amg and amg-greedy runs, spelt, parsed (cli/amg_args.cpp, compiled in) and range-checked
//   (validate) as `krysp solve` takes them; a bad value exits 2 before any problem is made. Each amg run's
//   JSON object records them as "amg_options" ("auto" where left to the set-up; its summary says
//   what auto chose) with the level row counts. The CG runs set AMG up through the factory, which
//   pads nodes of unequal size (amg_padding.hpp); the "full set-up" and "re-set-up" lines time
//   DeviceAmg on A itself. --label-suffix S appends S
//   to every run's label (printed and in the JSON) so that the JSON of two sweeps can be merged.
//   --coordinates-beside: for each file PATH.mtx with a PATH_xyz.mtx beside it (nodes × 2 or 3,
//   dense Matrix Market, as `krysp solve --coordinates` reads it), the amg runs take those node
//   coordinates (rigid-body modes; the summary says so).
//   --block-products auto|always|never: which levels of b > 1 and K > 1 form the GPU set-up's
//   products in dense blocks (detail::set_block_products; default auto, the library's rule).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/cli/amg_args.hpp"
#include "krysp/cli/args.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/cuda/amg_device_setup.hpp"
#include "krysp/precond/cuda/device_amg.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/spmv_plan.hpp"

using namespace krysp;
using bench::json_escape;
using bench::median;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

#define CK(call)                                                                                \
  do {                                                                                          \
    const cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) KRYSP_THROW(DeviceError, #call " failed: ", cudaGetErrorString(e_)); \
  } while (0)

std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

struct Run {
  std::string label, precond, status, summary;
  index_t iterations = 0;
  double setup = 0, solve = 0, total = 0, true_relres = 0;  // medians (seconds)
  int reps = 0;
  bool failed = false;
  // AMG only: DeviceAmg alone
  double amg_setup = 0, amg_resetup = 0, amg_host_setup = 0, amg_host_resetup = 0, amg_upload = 0;
  double op_complexity = 0, grid_complexity = 0;
  int levels = 0;
  std::vector<index_t> level_rows;
  std::size_t gpu_bytes = 0;
  // --profile-setup: the profiled full set-up's and re-set-up's phases, and their totals
  std::vector<AmgSetupPhase> phases, rephases;
  double profiled_setup = 0, profiled_upload = 0, profiled_resetup = 0;
};

struct Problem {
  std::string name;
  CsrMatrix<double> A;
};

// A --precond label's kind: parse_precond's names, and amg-greedy (AMG).
PrecondKind kind_of(const std::string& label) {
  return label == "amg-greedy" ? PrecondKind::Amg : parse_precond(label);
}

// `amg`: the options given (--amg-*) on top of AmgOptions' defaults.
PrecondOptions precond_of(const std::string& label, const AmgOptions& amg) {
  PrecondOptions o;
  o.kind = kind_of(label);
  if (o.kind == PrecondKind::Amg) o.amg = amg;
  if (label == "amg-greedy") o.amg.aggregation = AmgAggregation::Greedy;  // the host set-up, uploaded
  return o;
}

// The AmgOptions fields the --amg-* flags set, and the aggregation, as a JSON object.
std::string amg_options_json(const AmgOptions& a) {
  std::ostringstream js;
  js << "{\"theta\": " << (a.theta == kAmgAuto ? std::string("\"auto\"") : num(a.theta))
     << ", \"degree\": "
     << (a.smoother_degree == kAmgAuto ? std::string("\"auto\"") : std::to_string(a.smoother_degree))
     << ", \"coarse_size\": " << a.coarse_size << ", \"dense_coarse_rows\": "
     << (a.dense_coarse_rows == kAmgAuto ? std::string("\"auto\"") : std::to_string(a.dense_coarse_rows))
     << ", \"sweeps\": " << a.sweeps << ", \"filter\": \"" << to_string(a.filter)
     << "\", \"max_levels\": " << a.max_levels << ", \"ratio\": "
     << (a.smoother_ratio == kAmgAuto ? std::string("\"auto\"") : num(a.smoother_ratio))
     << ", \"omega\": " << num(a.prolongation_weight) << ", \"smoother\": \"" << to_string(a.smoother)
     << "\", \"aggregation\": \"" << to_string(a.aggregation) << "\", \"adaptive_cycles\": "
     << (a.adaptive_cycles == kAmgAuto ? std::string("\"auto\"") : std::to_string(a.adaptive_cycles))
     << ", \"block_size\": " << a.block_size << ", \"block_smoother\": " << (a.block_smoother ? "true" : "false")
     << ", \"coordinate_nodes\": " << (a.coordinates.empty() ? 0 : a.coordinates.size() / std::size_t(a.coordinate_dim))
     << "}";
  return js.str();
}

/// A with its entries rescaled by (1 + 0.05 sin 0.7i)(1 + 0.05 sin 0.7j): a time step's change of
/// values on the same structure (symmetric, SPD), for the numeric re-set-up's timing.
CsrMatrix<double> time_step_values(const CsrMatrix<double>& A) {
  std::vector<index_t> rp(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1);
  std::vector<index_t> ci(A.col_idx().data(), A.col_idx().data() + A.nnz());
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = rp[std::size_t(i)]; k < rp[std::size_t(i) + 1]; ++k)
      v[std::size_t(k)] *= (1 + 0.05 * std::sin(0.7 * i)) * (1 + 0.05 * std::sin(0.7 * ci[std::size_t(k)]));
  return CsrMatrix<double>::from_arrays(A.rows(), A.cols(), std::move(rp), std::move(ci), std::move(v));
}

double true_relres(const CsrMatrix<double>& A, const std::vector<double>& b, const std::vector<double>& x) {
  std::vector<double> ax(b.size());
  A.multiply_host(x.data(), ax.data());
  double r = 0, nb = 0;
  for (std::size_t i = 0; i < b.size(); ++i) r += (b[i] - ax[i]) * (b[i] - ax[i]), nb += b[i] * b[i];
  return std::sqrt(r / nb);
}

Run measure(const Problem& p, const std::string& label, const AmgOptions& amg, int reps, int setup_reps,
            index_t max_iters, bool profile_setup) {
  Run run;
  run.label = label;
  const PrecondOptions pc = precond_of(label, amg);
  run.precond = describe(pc);
  const CsrMatrix<double>& A = p.A;
  const std::vector<double> b(static_cast<std::size_t>(A.rows()), 1.0);
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.precond = pc;
  o.cg.rtol = 1e-8;
  o.cg.max_iters = max_iters;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  try {
    std::vector<double> setup, solve_s, total;
    for (int r = -1; r < reps; ++r) {  // r = −1: warm-up, not counted
      const auto t0 = Clock::now();
      CgSolver solver(A, o);  // plan + preconditioner; synchronises
      const double s = since(t0);
      std::vector<double> x;  // empty: x0 = 0
      CK(cudaEventRecord(e0));
      const auto rep = solver.solve(b, x);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r < 0) continue;
      setup.push_back(s);
      solve_s.push_back(ms * 1e-3);
      total.push_back(s + ms * 1e-3);
      run.iterations = rep.iterations;
      run.status = to_string(rep.status);
      run.summary = rep.preconditioner;
      run.true_relres = true_relres(A, b, x);
      run.reps = r + 1;
    }
    run.setup = median(setup);
    run.solve = median(solve_s);
    run.total = median(total);
    if (pc.kind == PrecondKind::Amg) {
      // DeviceAmg alone: the full set-up (host set-up + upload) and the numeric re-set-up to the
      // values of a time step: A's entries rescaled by (1 + 0.05 sin 0.7i)(1 + 0.05 sin 0.7j),
      // symmetric and SPD.
      SpmvPlan<double> plan(A);
      const CsrMatrix<double> A_step = time_step_values(A);
      {  // untimed: A_step's one-time costs (upload, structure fingerprint), which a
         // time-stepping code pays once for the matrix it keeps updating
        DeviceAmg<double> M0(A, plan, pc.amg);
        M0.update_values(A_step);
      }
      std::vector<double> full, re, host_full, host_re, upload;
      for (int r = 0; r < setup_reps; ++r) {  // warm already: the CG runs above set AMG up
        const auto t0 = Clock::now();
        DeviceAmg<double> M(A, plan, pc.amg);  // synchronises after the upload
        const double f = since(t0);
        const double hf = M.info().setup_seconds, uf = M.upload_seconds();
        const auto t1 = Clock::now();
        M.update_values(A_step);
        const double u = since(t1);
        full.push_back(f);
        re.push_back(u);
        host_full.push_back(hf);
        host_re.push_back(M.info().resetup_seconds);
        upload.push_back(uf);
        run.levels = int(M.info().levels.size());
        run.op_complexity = M.info().operator_complexity;
        run.grid_complexity = M.info().grid_complexity;
        run.level_rows.clear();
        for (const auto& lv : M.info().levels) run.level_rows.push_back(lv.rows);
        run.gpu_bytes = M.device_bytes();
      }
      run.amg_setup = median(full);
      run.amg_resetup = median(re);
      run.amg_host_setup = median(host_full);
      run.amg_host_resetup = median(host_re);
      run.amg_upload = median(upload);
      if (profile_setup) {  // after the timed set-ups: its synchronisations do not touch them
        AmgOptions po = pc.amg;
        po.profile_setup = true;
        DeviceAmg<double> M(A, plan, po);
        run.phases = M.info().setup_phases;
        run.profiled_setup = M.info().setup_seconds;
        run.profiled_upload = M.upload_seconds();
        M.update_values(A_step);
        run.rephases = M.info().setup_phases;
        run.profiled_resetup = M.info().resetup_seconds;
      }
    }
  } catch (const Error& e) {
    run.failed = true;
    run.status = e.what();
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return run;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

// A phase × level table of the profiled set-up's seconds (--profile-setup).
void print_phases(const char* title, const std::vector<AmgSetupPhase>& phases, double total) {
  if (phases.empty()) return;
  int max_level = 0;
  std::vector<std::string> names;
  double sum = 0;
  for (const auto& ph : phases) {
    max_level = std::max(max_level, ph.level);
    sum += ph.seconds;
    bool seen = false;
    for (const auto& n : names) seen = seen || n == ph.name;
    if (!seen) names.push_back(ph.name);
  }
  std::printf("    %s: %.4f s (phases sum to %.4f s)\n", title, total, sum);
  std::printf("      %-52s %8s %8s", "phase (seconds; synchronised)", "total", "outside");
  for (int l = 0; l <= max_level; ++l) std::printf("  level %d", l);
  std::printf("\n");
  for (const auto& n : names) {
    std::vector<double> by(std::size_t(max_level) + 2, -1.0);  // [0]: level −1
    std::vector<int> count(by.size(), 0);
    double t = 0;
    for (const auto& ph : phases)
      if (ph.name == n) {
        const std::size_t k = std::size_t(ph.level + 1);
        by[k] = std::max(by[k], 0.0) + ph.seconds;
        count[k] += ph.count;
        t += ph.seconds;
      }
    std::printf("      %-52s %8.4f", n.c_str(), t);
    for (std::size_t k = 0; k < by.size(); ++k) {
      if (by[k] < 0) {
        std::printf(" %8s", "-");
      } else if (count[k] > 1 && n.find("MIS-2") != std::string::npos) {
        char cell[32];
        std::snprintf(cell, sizeof cell, "%.4f/%d", by[k], count[k]);
        std::printf(" %8s", cell);
      } else {
        std::printf(" %8.4f", by[k]);
      }
    }
    std::printf("\n");
  }
}

std::string phases_json(const std::vector<AmgSetupPhase>& phases) {
  std::ostringstream js;
  js << "[";
  for (std::size_t k = 0; k < phases.size(); ++k)
    js << (k ? ", " : "") << "{\"level\": " << phases[k].level << ", \"phase\": \"" << json_escape(phases[k].name)
       << "\", \"seconds\": " << num(phases[k].seconds) << ", \"count\": " << phases[k].count << "}";
  return js.str() + "]";
}

int main(int argc, char** argv) {
  std::vector<index_t> sizes = {64, 128, 256};
  index_t diffusion = 40;
  index_t media = 0;  // random media, diffusion_3d_random(n, 100, 1, 1, 1e4, 0.2, 1); 0: none
  std::vector<std::string> preconds = {"jacobi", "chebyshev", "amg"};
  int reps = 3;
  int setup_reps = 1;  // DeviceAmg alone: the host set-up of 256³ takes tens of seconds
  index_t max_iters = 20000;
  bool no_solve = false, profile_setup = false, coordinates_beside = false;
  std::string json, write_dir, label_suffix;
  std::vector<std::string> files;
  std::vector<std::string> amg_argv;  // the --amg-* options and their values, for cli::Args
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--amg-", 0) == 0) {  // --amg-NAME VALUE or --amg-NAME=VALUE; cli::Args checks them
      amg_argv.push_back(a);
      if (a.find('=') == std::string::npos && i + 1 < argc) amg_argv.push_back(argv[++i]);
    } else if (a == "--label-suffix") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_amg: option --label-suffix needs a value\n");
        return 2;
      }
      label_suffix = argv[++i];
    } else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      for (const auto& s : split(argv[++i])) sizes.push_back(index_t(std::atoi(s.c_str())));
    } else if (a == "--diffusion" && i + 1 < argc) diffusion = index_t(std::atoi(argv[++i]));
    else if (a == "--media" && i + 1 < argc) media = index_t(std::atoi(argv[++i]));
    else if (a == "--precond" && i + 1 < argc) preconds = split(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--setup-reps" && i + 1 < argc) setup_reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--max-iters" && i + 1 < argc) max_iters = index_t(std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--write-mtx" && i + 1 < argc) write_dir = argv[++i];
    else if (a == "--no-solve") no_solve = true;
    else if (a == "--profile-setup") profile_setup = true;
    else if (a == "--coordinates-beside") coordinates_beside = true;
    else if (a == "--block-products" && i + 1 < argc) {
      const std::string m = argv[++i];
      if (m != "auto" && m != "always" && m != "never") {
        std::fprintf(stderr, "bench_amg: --block-products takes auto, always or never, not '%s'\n", m.c_str());
        return 2;
      }
      detail::set_block_products(m == "always"  ? detail::BlockProducts::Always
                                 : m == "never" ? detail::BlockProducts::Never
                                                : detail::BlockProducts::Auto);
    }
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_amg [--sizes 64,128,256] [--diffusion 40] [--media 0]\n"
                  "                 [--precond jacobi,chebyshev,amg] [--reps R] [--setup-reps S]\n"
                  "                 [--max-iters N] [--json out.json] [--write-mtx DIR] [--no-solve]\n"
                  "                 [--profile-setup] [--label-suffix S] [--coordinates-beside]\n"
                  "                 [--block-products auto|always|never]\n"
                  "                 [AMG options] [A.mtx ...]\n"
                  "  --label-suffix S     appended to every run's label, printed and in the JSON\n"
                  "  --coordinates-beside the amg runs of PATH.mtx take node coordinates from\n"
                  "                       PATH_xyz.mtx where there is one (rigid-body modes)\n"
                  "  --block-products M   auto | always | never: levels of b > 1 and K > 1 whose GPU\n"
                  "                       set-up forms A*P and R*(AP) in dense blocks (default auto)\n"
                  "  The --amg-* options of `krysp solve` set the amg and amg-greedy runs' AMG options\n"
                  "  (--coordinates and --near-nullspace are per matrix here: see --coordinates-beside):\n"
                  "%s",
                  cli::amg_option_help());
      return 0;
    } else files.push_back(a);
  }
  for (const auto& p : preconds) {
    try {
      kind_of(p);
    } catch (const Error& e) {
      std::fprintf(stderr, "bench_amg: %s\n", e.what());
      return 2;
    }
  }
  // The --amg-* options: parsed by the CLI's reader, then range-checked as a set-up would.
  AmgOptions amg;
  const std::set<std::string>& kAmgFlags = cli::amg_option_names();  // krysp solve's, one list
  try {
    const cli::Args args(amg_argv, kAmgFlags, {});
    amg = cli::read_amg_options(args);
    PrecondOptions check;
    check.kind = PrecondKind::Amg;
    check.amg = amg;
    validate(check);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_amg: %s\n", e.what());
    return 2;
  }

  // The problems are made one at a time (256³ is 17 M rows): generate, write, measure, drop.
  struct Spec {
    std::string name, file;
    index_t n = 0;
    bool laplacian = false;
    bool media = false;
  };
  std::vector<Spec> specs;
  for (index_t s : sizes)
    if (s > 0) specs.push_back({"laplace3d_" + std::to_string(s), "", s, true});
  if (diffusion > 0) specs.push_back({"diffusion3d_jump1e4_aniso100_" + std::to_string(diffusion), "", diffusion, false});
  if (media > 0)
    specs.push_back({"media3d_jump1e4_aniso100_" + std::to_string(media), "", media, false, true});
  for (const auto& f : files) specs.push_back({bench::matrix_name(f), f, 0, false});

  const bool gpu = cuda_device_available();
  if (!gpu && !(no_solve && !write_dir.empty())) {
    std::printf("bench_amg: no CUDA device, nothing to measure%s\n",
                write_dir.empty() ? "" : " (--write-mtx DIR --no-solve writes the matrices without one)");
    return 0;
  }
  const std::string device = gpu ? cuda_device_name() : "none";
  const auto t_start = Clock::now();
  std::printf("bench_amg on %s: CG to rtol 1e-8, b = ones, x0 = 0; medians of %d after a warm-up\n", device.c_str(),
              reps);
  std::printf("(AMG set-up: strength, aggregation and Galerkin products on the host, then one upload)\n");
  {
    PrecondOptions shown;
    shown.kind = PrecondKind::Amg;
    shown.amg = amg;
    std::printf("AMG options: %s%s%s\n", describe(shown).c_str(), label_suffix.empty() ? "" : "; label suffix ",
                label_suffix.c_str());
  }
  std::ostringstream rows_json;
  bool first_row = true;
  for (const auto& sp : specs) {
    Problem p;
    p.name = sp.name;
    try {
      if (!sp.file.empty()) p.A = io::read_matrix_market<double>(sp.file);
      else if (sp.laplacian) p.A = laplacian_3d(sp.n, sp.n, sp.n);
      else if (sp.media) p.A = diffusion_3d_random(sp.n, 100.0, 1.0, 1.0, 1e4, 0.2, 1);
      else p.A = diffusion_3d(sp.n, 1.0, 1.0, 0.01, 1e4);
    } catch (const Error& e) {
      std::printf("\n%s: cannot be made or read, skipped: %s\n", sp.name.c_str(), e.what());
      continue;
    }
    if (!write_dir.empty() && sp.file.empty()) {
      const std::string path = write_dir + "/" + sp.name + ".mtx";
      try {
        io::write_matrix_market(path, p.A);
        std::printf("bench_amg: wrote %s\n", path.c_str());
      } catch (const Error& e) {
        std::fprintf(stderr, "bench_amg: %s\n", e.what());
        return 2;
      }
    }
    if (no_solve) continue;
    AmgOptions problem_amg = amg;  // with the node coordinates beside the file, where asked and found
    std::string xyz;
    if (coordinates_beside && sp.file.size() > 4 && sp.file.compare(sp.file.size() - 4, 4, ".mtx") == 0 &&
        std::ifstream(sp.file.substr(0, sp.file.size() - 4) + "_xyz.mtx").good()) {
      xyz = sp.file.substr(0, sp.file.size() - 4) + "_xyz.mtx";
      try {
        std::vector<std::string> with = amg_argv;
        with.insert(with.end(), {"--coordinates", xyz});
        problem_amg = cli::read_amg_options(cli::Args(with, kAmgFlags, {}));
      } catch (const Error& e) {
        std::printf("\n%s: coordinates %s cannot be read, skipped: %s\n", sp.name.c_str(), xyz.c_str(), e.what());
        continue;
      }
    }
    std::printf("\n%s: n = %d, nnz = %d%s%s\n", p.name.c_str(), p.A.rows(), p.A.nnz(),
                xyz.empty() ? "" : ", AMG with the node coordinates of ", xyz.c_str());
    std::printf("  %-10s %7s %-15s %9s %9s %9s %10s\n", "precond", "iters", "status", "setup s", "solve s", "total s",
                "true relres");
    std::vector<Run> runs;
    for (const auto& label : preconds) {
      Run r = measure(p, label, problem_amg, reps, setup_reps, max_iters, profile_setup);
      const std::string shown = label + label_suffix;
      if (r.failed) {
        std::printf("  %-10s failed: %s\n", shown.c_str(), r.status.c_str());
      } else {
        std::printf("  %-10s %7d %-15s %9.4f %9.4f %9.4f %10.2e\n", shown.c_str(), r.iterations, r.status.c_str(),
                    r.setup, r.solve, r.total, r.true_relres);
        if (kind_of(label) == PrecondKind::Amg)
          std::printf("  %-10s full set-up %.4f s (host %.4f + upload %.4f), numeric re-set-up %.4f s (%.0f%%; host "
                      "%.4f), %d levels, op/grid complexity %.2f/%.2f, %zu GPU bytes\n             %s\n",
                      "", r.amg_setup, r.amg_host_setup, r.amg_upload, r.amg_resetup,
                      r.amg_setup > 0 ? 100 * r.amg_resetup / r.amg_setup : 0.0, r.amg_host_resetup, r.levels,
                      r.op_complexity, r.grid_complexity, r.gpu_bytes, r.summary.c_str());
        if (!r.phases.empty()) {
          char title[160];
          std::snprintf(title, sizeof title, "profiled GPU set-up (--profile-setup): setup_seconds %.4f + adoption %.4f =",
                        r.profiled_setup, r.profiled_upload);
          print_phases(title, r.phases, r.profiled_setup + r.profiled_upload);
          print_phases("profiled numeric re-set-up", r.rephases, r.profiled_resetup);
        }
      }
      std::fflush(stdout);
      runs.push_back(r);
    }
    rows_json << (first_row ? "" : ",\n") << "    {\"matrix\": \"" << json_escape(p.name) << "\", \"n\": " << p.A.rows()
              << ", \"nnz\": " << p.A.nnz() << ", \"runs\": [\n";
    first_row = false;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const Run& r = runs[k];
      rows_json << "      {\"label\": \"" << json_escape(r.label + label_suffix) << "\", \"precond\": \""
                << json_escape(r.precond)
                << "\", \"status\": \"" << json_escape(r.status) << "\", \"iterations\": " << r.iterations
                << ", \"setup_s\": " << num(r.setup) << ", \"solve_s\": " << num(r.solve)
                << ", \"total_s\": " << num(r.total) << ", \"true_relres\": " << num(r.true_relres)
                << ", \"reps\": " << r.reps;
      if (!r.failed && kind_of(r.label) == PrecondKind::Amg)
        rows_json << ", \"amg_setup_s\": " << num(r.amg_setup) << ", \"amg_resetup_s\": " << num(r.amg_resetup)
                  << ", \"amg_host_setup_s\": " << num(r.amg_host_setup)
                  << ", \"amg_host_resetup_s\": " << num(r.amg_host_resetup)
                  << ", \"amg_upload_s\": " << num(r.amg_upload) << ", \"levels\": " << r.levels
                  << ", \"operator_complexity\": " << num(r.op_complexity)
                  << ", \"grid_complexity\": " << num(r.grid_complexity) << ", \"gpu_bytes\": " << r.gpu_bytes
                  << ", \"summary\": \"" << json_escape(r.summary) << "\"";
      if (kind_of(r.label) == PrecondKind::Amg) {
        rows_json << ", \"amg_options\": " << amg_options_json(precond_of(r.label, problem_amg).amg)
                  << ", \"level_rows\": [";
        for (std::size_t l = 0; l < r.level_rows.size(); ++l) rows_json << (l ? ", " : "") << r.level_rows[l];
        rows_json << "]";
      }
      if (!r.phases.empty())
        rows_json << ", \"profiled_setup_s\": " << num(r.profiled_setup) << ", \"profiled_adopt_s\": "
                  << num(r.profiled_upload) << ", \"setup_phases\": " << phases_json(r.phases)
                  << ", \"profiled_resetup_s\": " << num(r.profiled_resetup)
                  << ", \"resetup_phases\": " << phases_json(r.rephases);
      rows_json << "}" << (k + 1 < runs.size() ? "," : "") << "\n";
    }
    rows_json << "    ]}";
  }
  const double wall = since(t_start);
  std::printf("bench_amg: %.1f s in all\n", wall);
  if (!json.empty() && !no_solve) {
    std::ofstream js(json);
    if (!js) {
      std::fprintf(stderr, "bench_amg: cannot write '%s'\n", json.c_str());
      return 2;
    }
    js << "{\n  \"benchmark\": \"bench_amg\",\n  \"device\": \"" << json_escape(device) << "\",\n  \"date\": \""
       << bench::utc_now() << "\",\n  \"rtol\": 1e-8,\n  \"rhs\": \"ones\",\n  \"x0\": \"zero\",\n  \"reps\": " << reps
       << ",\n  \"setup_reps\": " << setup_reps << ",\n  \"label_suffix\": \"" << json_escape(label_suffix)
       << "\",\n  \"wall_seconds\": " << num(wall) << ",\n  \"matrices\": [\n"
       << rows_json.str() << "\n  ]\n}\n";
    std::printf("bench_amg: wrote %s\n", json.c_str());
  }
  return 0;
}
