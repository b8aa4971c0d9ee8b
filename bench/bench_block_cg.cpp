// Block CG against s sequential krysp CG solves, in the same process: time to solve s systems to
// rtol 1e-8 (Jacobi; the Laplacian also with Chebyshev), and iterations. Times are wall times of
// whole calls (set-up, transfers and solve; the sequential side sets one CgSolver up and solves s
// times), the median of 3 rounds. A 3-D Laplacian (160^3 = 4.1 M rows; 64^3 with --quick) and the
// SPD matrices given on the command line.
//
// usage: bench_block_cg [--quick] [--profile-only] [--json out.json] [A.mtx ...]
// --profile-only: the step and loop profiles of the Laplacian, no solves against sequential CG.
// --target-only: only the target row (the Laplacian, s = 8, Jacobi), no profiles.
// --hard: no Laplacian rows: 3-D diffusion with jumps 1e4 and anisotropy 100 (64,000 rows),
//         nearly incompressible elasticity scaled over 6 decades (13,872 rows) and the matrices
//         given, s = 4, 8, 16 with Jacobi and s = 8 with Chebyshev; per column, block iterations
//         against CG's alone, and both sides' true residuals.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "krysp/bench/bench_util.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/block_cg.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/solvers/cuda/block_cg_kernels.hpp"
#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"
#include "krysp/sparse/cuda/timing.hpp"
#include "krysp/sparse/spmv_plan.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"

using namespace krysp;

namespace {
constexpr int kReps = 3;  // rounds of block and sequential solves per configuration

struct Row {
  std::string name;
  index_t n, nnz, s, group;  // group: SolveOptions::block_group (0: all s columns in one block)
  PrecondKind precond;       // on both sides
  double block_s, seq_s;
  index_t block_iters, max_seq_iters;
  bool block_ok, seq_ok;
  std::string spmm;
  double block_setup_s = 0, seq_setup_s = 0;  // parts of block_s and seq_s: plans, preconditioner, uploads
  double block_loop_s = 0;                     // block CG's own loop (BlockSolveResult::seconds)
  std::vector<double> ratios;                  // every round's block / sequential time
  // per column j: block iterations of column j / CG's iterations for b_j alone (the worst), and
  // the worst true relative residual ‖b_j − A·x_j‖/‖b_j‖ of each side, recomputed on the host
  double column_ratio = 0;
  index_t slowest_column = 0;
  double block_true = 0, seq_true = 0;
  // columns reported converged whose true residual misses rtol beyond its rounding (either side)
  index_t false_converged = 0;
};

/// ‖b − A·x‖/‖b‖ on the host, independent of both solvers.
double true_relative(const CsrMatrix<double>& A, const double* b, const double* x) {
  const std::size_t n = std::size_t(A.rows());
  std::vector<double> ax(n);
  A.multiply_host(x, ax.data());
  double rr = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    rr += (b[i] - ax[i]) * (b[i] - ax[i]);
    bb += b[i] * b[i];
  }
  return std::sqrt(rr / bb);
}

/// What computing b − A·x in double may err by, relative to ‖b‖: 32ε·‖|b| + |A|·|x|‖/‖b‖ (as the
/// trust tests allow). Solver and this check compute the residual in different orders, so a
/// column at rtol may read just above it here without being wrong.
double residual_rounding(const CsrMatrix<double>& A, const double* b, const double* x) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  double s = 0, bb = 0;
  for (index_t i = 0; i < A.rows(); ++i) {
    double r = std::abs(b[i]);
    for (index_t k = rp(i); k < rp(i + 1); ++k) r += std::abs(va(k) * x[ci(k)]);
    s += r * r;
    bb += b[i] * b[i];
  }
  return 32 * std::numeric_limits<double>::epsilon() * std::sqrt(s / bb);
}

/// smooth_first: b_0 = A·1 (as `krysp solve` makes b), the other columns random.
Row measure(const std::string& name, const CsrMatrix<double>& A, index_t s, index_t group, PrecondKind precond,
            bool smooth_first = false) {
  const index_t n = A.rows();
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> B(std::size_t(n) * s);
  for (auto& b : B) b = u(rng);
  if (smooth_first) {
    const std::vector<double> ones(std::size_t(n), 1.0);
    A.multiply_host(ones.data(), B.data());
  }
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.cg.rtol = 1e-8;
  o.block_group = group;
  o.precond.kind = precond;
  Row r{name, n, A.nnz(), s, group, precond, 0, 0, 0, 0, true, true, ""};
  {  // warm-up: plans, cuBLAS handle, module load
    std::vector<double> X;
    std::vector<double> b1(B.begin(), B.begin() + n), x1;
    solve(A, b1, x1, o);
    solve_block(A, B, s, X, o);
  }
  // Wall time of whole calls, transfers included on both sides. The sequential side sets one
  // CgSolver up and solves s times, as a user with s systems would. Block and sequential take
  // turns, kReps times; the ratio reported is the median of the rounds' ratios (one round's
  // ratio moved by up to 10% from run to run on the H100 machines), the times are those of the
  // median round.
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  // The s right-hand sides as a user with s systems holds them, made before the clock starts (the
  // block side gets B ready-made too); each solve returns a fresh x, as solve_block returns X.
  std::vector<std::vector<double>> bs;
  for (index_t j = 0; j < s; ++j) bs.emplace_back(B.begin() + std::size_t(j) * n, B.begin() + std::size_t(j + 1) * n);
  std::vector<Row> rounds;
  std::vector<std::vector<double>> seq_x;
  std::vector<index_t> seq_iters, block_columns;
  for (int k = 0; k < kReps; ++k) {
    Row q = r;
    std::vector<double> X;
    auto t = Clock::now();
    const auto rep = solve_block(A, B, s, X, o);
    q.block_s = since(t);
    q.block_setup_s = rep.setup_seconds;
    q.block_loop_s = rep.seconds;
    q.block_iters = rep.iterations;
    block_columns.clear();
    for (const auto& c : rep.columns) block_columns.push_back(c.iterations);
    q.block_ok = rep.converged();
    q.spmm = rep.spmm_kernel;
    q.block_true = q.seq_true = q.column_ratio = 0;
    q.slowest_column = 0;
    q.false_converged = 0;
    for (index_t j = 0; j < s; ++j) {
      const double* xj = X.data() + std::size_t(j) * n;
      const double tr = true_relative(A, bs[std::size_t(j)].data(), xj);
      q.block_true = std::max(q.block_true, tr);
      q.slowest_column = std::max(q.slowest_column, rep.columns[std::size_t(j)].iterations);
      q.false_converged += rep.columns[std::size_t(j)].converged() && tr > o.cg.rtol + residual_rounding(A, bs[std::size_t(j)].data(), xj);
    }
    t = Clock::now();
    CgSolver solver(A, o);
    q.seq_setup_s = since(t);
    std::vector<char> seq_converged;
    for (index_t j = 0; j < s; ++j) {
      std::vector<double> x;
      const auto single = solver.solve(bs[std::size_t(j)], x);
      q.max_seq_iters = std::max(q.max_seq_iters, single.iterations);
      q.seq_ok = q.seq_ok && single.converged();
      seq_converged.push_back(single.converged());
      seq_x.push_back(std::move(x));
      seq_iters.push_back(single.iterations);
    }
    q.seq_s = since(t);
    for (index_t j = 0; j < s; ++j) {  // outside the clock
      const double tr = true_relative(A, bs[std::size_t(j)].data(), seq_x[std::size_t(j)].data());
      q.seq_true = std::max(q.seq_true, tr);
      q.false_converged += seq_converged[std::size_t(j)] &&
                           tr > o.cg.rtol + residual_rounding(A, bs[std::size_t(j)].data(), seq_x[std::size_t(j)].data());
      q.column_ratio = std::max(q.column_ratio, double(block_columns[std::size_t(j)]) / double(seq_iters[std::size_t(j)]));
    }
    seq_x.clear();
    seq_iters.clear();
    rounds.push_back(q);
  }
  std::sort(rounds.begin(), rounds.end(),
            [](const Row& x, const Row& y) { return x.block_s / x.seq_s < y.block_s / y.seq_s; });
  Row m = rounds[rounds.size() / 2];
  for (const auto& q : rounds) m.ratios.push_back(q.block_s / q.seq_s);
  return m;
}

std::string join(const std::vector<double>& v) {
  std::string out;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.4f", out.empty() ? "" : ", ", x);
    out += buf;
  }
  return out;
}

/// Block CG's backend with a wall clock around every call: block_cg(TimedOps) splits the loop's
/// time into the backend's calls (launch, kernels, waiting for the results) and the host's own
/// work between them (the s × s algebra, the convergence test).
struct TimedOps {
  using Block = CudaBlockCgOps<double>::Block;
  CudaBlockCgOps<double>& ops;
  std::map<std::string, std::pair<double, int>> calls;  // name -> (seconds, count)
  template <class F>
  auto timed(const char* name, F f) {
    const auto t = std::chrono::steady_clock::now();
    struct Add {
      std::pair<double, int>& slot;
      std::chrono::steady_clock::time_point t;
      ~Add() { slot.first += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(), ++slot.second; }
    } add{calls[name], t};
    return f();
  }
  index_t size() const { return ops.size(); }
  index_t cols() const { return ops.cols(); }
  Block block() const { return ops.block(); }
  void zero_columns(Block& X, const std::vector<char>& z) { timed("zero_columns", [&] { ops.zero_columns(X, z); }); }
  void residual(const Block& B, const Block& X, Block& R) { timed("residual", [&] { ops.residual(B, X, R); }); }
  std::vector<double> spmm_gram(const Block& P, index_t w, Block& Q) {
    return timed("spmm_gram", [&] { return ops.spmm_gram(P, w, Q); });
  }
  void precondition(const Block& R, index_t w, Block& Z) { timed("precondition", [&] { ops.precondition(R, w, Z); }); }
  std::vector<double> gram(const Block& X, index_t bx, const Block& Y, index_t by) {
    return timed("gram", [&] { return ops.gram(X, bx, Y, by); });
  }
  std::pair<std::vector<double>, std::vector<double>> gram2(const Block& X, index_t b, const Block& Y1,
                                                            const Block& Y2) {
    return timed("gram2", [&] { return ops.gram2(X, b, Y1, Y2); });
  }
  void combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta, Block& Y,
               index_t by) {
    timed("combine", [&] { ops.combine(X, bx, C, alpha, beta, Y, by); });
  }
  std::pair<std::vector<double>, std::vector<double>> step(const Block& AP, index_t w, const std::vector<double>& xi,
                                                           Block& Q, index_t wq, const std::vector<double>& Cq,
                                                           Block& Z) {
    return timed("step", [&] { return ops.step(AP, w, xi, Q, wq, Cq, Z); });
  }
  void rotate(const Block& Q, const Block& Z, Block& P, Block& X, index_t w, index_t w2,
              const std::vector<double>& Cw, const std::vector<double>& Tt, const std::vector<double>& Cx) {
    timed("rotate", [&] { ops.rotate(Q, Z, P, X, w, w2, Cw, Tt, Cx); });
  }
};

/// One solve of the profile's problem through TimedOps: per call kind, its count and mean wall
/// time, and what is left of the solve for the host.
void profile_loop(const std::string& name, const CsrMatrix<double>& A, index_t s) {
  SpmvPlan<double> spmv(A);
  PrecondOptions po;
  po.kind = PrecondKind::Jacobi;
  const auto M = make_device_preconditioner(A, spmv, po);
  CudaBlockCgOps<double> ops(A, s, M.get());
  TimedOps timed{ops, {}};
  auto B = ops.block(), X = ops.block();
  {
    std::vector<double> h(std::size_t(A.rows()) * s);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : h) v = u(rng);
    B.upload(h.data(), h.size());
  }
  CgOptions o;
  o.rtol = 1e-8;
  auto timed_solve = [&](const char* label) {
    X.zero();
    timed.calls.clear();
    const auto res = block_cg(timed, B, X, o);
    double in_calls = 0;
    for (const auto& [what, c] : timed.calls) {
      in_calls += c.first;
      std::printf("  %-22s s=%2d loop (%s): %-32s %5d calls %8.3f ms each\n", name.c_str(), s, label, what.c_str(),
                  c.second, 1e3 * c.first / c.second);
    }
    std::printf("  %-22s s=%2d loop (%s): %d iterations, %.3f ms/it, of which host %.3f ms/it\n", name.c_str(), s,
                label, res.iterations, 1e3 * res.seconds / res.iterations,
                1e3 * (res.seconds - in_calls) / res.iterations);
  };
  X.zero();
  block_cg(ops, B, X, o);  // warm-up: plans for every width the solve meets
  timed_solve("row-major B");
  // The same through solve_block: B from the host, X returned (sized on the host while the device
  // iterates when no initial guess is given)
  std::vector<double> hb(std::size_t(A.rows()) * s);
  B.download(hb.data(), hb.size());
  {  // on the right-hand sides solve_block gets (hb read column-major)
    DeviceArray<double> cmaj(hb.size());
    cmaj.upload(hb.data(), hb.size());
    detail::transpose(cmaj.data(), s, A.rows(), B.data());
    timed_solve("solve_block's B");
  }
  SolveOptions so;
  so.backend = Backend::Cuda;
  so.cg = o;
  so.precond.kind = PrecondKind::Jacobi;
  for (const bool guess : {false, true, false}) {
    std::vector<double> hx;
    if (guess) hx.assign(hb.size(), 0.0);
    const auto t = std::chrono::steady_clock::now();
    const auto rep = solve_block(A, hb, s, hx, so);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    std::printf("  %-22s s=%2d solve_block (%s): %.4f s, setup %.4f s, loop %.3f ms/it (%d it)\n", name.c_str(), s,
                guess ? "zero X given" : "no X given", wall, rep.setup_seconds, 1e3 * rep.seconds / rep.iterations,
                rep.iterations);
  }
}

/// One block CG iteration step by step (median of CUDA-event timings, random blocks, Jacobi), with
/// the bytes each step must move and the bandwidth that makes: where an iteration's time goes.
void profile_steps(const std::string& name, const CsrMatrix<double>& A, index_t s, double copy_gbs) {
  // setup, piece by piece (wall clock, device synchronised): what solve_block does before iterating
  auto t = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    cuda_synchronize();
    const auto now = std::chrono::steady_clock::now();
    std::printf("  %-22s s=%2d setup: %-28s %8.3f ms\n", name.c_str(), s, what,
                std::chrono::duration<double, std::milli>(now - t).count());
    t = now;
  };
  SpmvPlan<double> spmv(A);
  lap("SpMV plan");
  PrecondOptions po;
  po.kind = PrecondKind::Jacobi;
  const auto M = make_device_preconditioner(A, spmv, po);
  lap("Jacobi preconditioner");
  CudaBlockCgOps<double> ops(A, s, M.get());
  lap("block ops (SpMM plan, buffers)");
  {
    std::vector<double> h(std::size_t(A.rows()) * s, 1.0);
    DeviceArray<double> d(h.size());
    lap("host + device block allocation");
    d.upload(h.data(), h.size());
    lap("upload one n x s block");
    d.download(h.data(), h.size());
    lap("download one n x s block");
  }
  const std::size_t n = std::size_t(A.rows()), ns = n * s;
  auto P = ops.block(), Q = ops.block(), X = ops.block(), R = ops.block(), Pn = ops.block();
  for (auto* b : {&P, &Q, &X, &R}) {
    std::vector<double> h(ns);
    std::mt19937_64 rng(ns + std::size_t(b - &P));
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : h) v = u(rng);
    b->upload(h.data(), ns);
  }
  const std::vector<double> C(std::size_t(s) * s, 1e-3);
  const double blk = double(ns) * 8, mat = double(A.nnz()) * 12 + double(n + 1) * 4;
  struct Step {
    const char* what;
    double bytes;
    std::function<void()> fn;
  };
  // one iteration's calls (block_cg.hpp): SpMM and Gram; the step (W = Q·C − AS·ξ, Z = D⁻¹·W on
  // the fly, WᵀZ and WᵀW); the rotation (X += S·C, S = Z·C + S·C)
  std::vector<Step> steps = {
      {"spmm Q = A*P", mat + 2 * blk, [&] { ops.spmm(P, s, Q); }},
      {"gram PtQ", 2 * blk, [&] { ops.gram(P, s, Q, s); }},
      {"step R + grams", 3 * blk + 8.0 * n, [&] { ops.step(Q, s, C, R, s, C, Pn); }},
      {"rotate X, P", 5 * blk + 8.0 * n, [&] { ops.rotate(R, Pn, P, X, s, s, C, C, C); }},
  };
  const std::size_t iteration_steps = steps.size();
  // the fused SpMM + Gram pass, each variant (not part of the sum: it replaces the first two)
  std::vector<std::string> fused_names;
  for (const auto& v : detail::spmm_gram_variants(s, s))
    fused_names.push_back("spmm+gram fused " + std::to_string(v.lanes) + "x" + std::to_string(v.cols) + "/b" +
                          std::to_string(v.min_blocks) + (v.prefetch ? "/pf" : ""));
  for (const auto& v : detail::spmm_gram_variants(s, s))
    steps.push_back({fused_names[steps.size() - iteration_steps].c_str(), mat + 2 * blk, [&ops, &P, &Q, s, v] {
                       ops.force_spmm_gram(s, v);
                       ops.spmm_gram(P, s, Q);
                     }});
  double total = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto& st = steps[k];
    const double ms = time_device_ms(st.fn, 2, 5);
    if (k < iteration_steps) total += ms;
    std::printf("  %-22s s=%2d %-24s %8.3f ms  %6.0f GB/s  %5.1f%% of copy\n", name.c_str(), s, st.what, ms,
                st.bytes / (ms * 1e-3) / 1e9, 100 * st.bytes / (ms * 1e-3) / 1e9 / copy_gbs);
  }
  std::printf("  %-22s s=%2d %-20s %8.3f ms\n", name.c_str(), s, "iteration (sum)", total);
}
}  // namespace

int main(int argc, char** argv) {
  if (!cuda_device_available()) {
    std::printf("bench_block_cg: no CUDA device, nothing to measure\n");
    return 0;
  }
  bool quick = false, profile_only = false, target_only = false, hard = false;
  std::string json;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--profile-only")) profile_only = true;
    else if (!std::strcmp(argv[i], "--target-only")) target_only = true;
    else if (!std::strcmp(argv[i], "--hard")) hard = true;
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else files.push_back(argv[i]);
  }
  const index_t g = quick ? 64 : 160;
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  mats.emplace_back("laplace3d_" + std::to_string(g) + "^3", laplacian_3d(g, g, g));
  for (const auto& f : files) mats.emplace_back(f.substr(f.find_last_of('/') + 1), io::read_matrix_market<double>(f));
  const double copy_gbs = measure_copy_bandwidth_gbs();
  std::printf("device %s, copy bandwidth %.0f GB/s\n", cuda_device_name().c_str(), copy_gbs);
  if (!target_only && !hard) {
    for (index_t s : {8, 16}) profile_steps(mats.front().first, mats.front().second, s, copy_gbs);
    profile_loop(mats.front().first, mats.front().second, 8);
  }
  if (profile_only) return 0;
  std::vector<Row> rows;
  auto run = [&](const std::string& name, const CsrMatrix<double>& A, index_t s, index_t group, PrecondKind pk) {
    rows.push_back(measure(name, A, s, group, pk, hard));
    const auto& r = rows.back();
    std::printf("%-22s %-9s s=%2d group %2d block %.4f s (setup %.4f, %d it%s, loop %.3f ms/it)  sequential %.4f s "
                "(setup %.4f, max %d it%s)  ratio %.3f (rounds %s)  spmm %s  slowest column %d it, column/CG %.2f, "
                "true residual block %.1e seq %.1e%s\n",
                r.name.c_str(), to_string(r.precond), r.s, r.group, r.block_s, r.block_setup_s, r.block_iters,
                r.block_ok ? "" : ", NOT converged", 1e3 * r.block_loop_s / std::max<index_t>(r.block_iters, 1), r.seq_s,
                r.seq_setup_s, r.max_seq_iters, r.seq_ok ? "" : ", NOT converged", r.block_s / r.seq_s, join(r.ratios).c_str(), r.spmm.c_str(),
                r.slowest_column, r.column_ratio, r.block_true, r.seq_true,
                r.false_converged ? "  FALSELY CONVERGED COLUMNS" : "");
    std::fflush(stdout);
  };
  if (hard) {  // issue 30: hard problems, s = 4, 8, 16, Jacobi; s = 8 also with Chebyshev
    std::vector<std::pair<std::string, CsrMatrix<double>>> hard_mats;
    hard_mats.emplace_back("diffusion3d_40_jumps1e4_aniso_z", diffusion_3d(40, 1.0, 1.0, 0.01, 1e4));
    hard_mats.emplace_back("diffusion3d_40_jumps1e4_aniso_x", diffusion_3d(40, 100.0, 1.0, 1.0, 1e4));
    // Structural-like and badly scaled: nearly incompressible elasticity, rows scaled over 6 decades.
    hard_mats.emplace_back("elasticity3d_16_nu0.45_scaled1e6", scaled_symmetric(elasticity_3d(16, 16, 16, 0.45), 6.0, 7));
    for (std::size_t k = 1; k < mats.size(); ++k) hard_mats.push_back(mats[k]);
    for (const auto& [name, A] : hard_mats) {
      for (const index_t s : {4, 8, 16}) run(name, A, s, 0, PrecondKind::Jacobi);
      run(name, A, 8, 0, PrecondKind::Chebyshev);
    }
  } else if (target_only) {  // the direct loop profile before and after, to tell the solve's overheads from the device's state
    profile_loop(mats.front().first, mats.front().second, 8);
    run(mats.front().first, mats.front().second, 8, 0, PrecondKind::Jacobi);
    profile_loop(mats.front().first, mats.front().second, 8);
  } else {
    for (const auto& [name, A] : mats)
      for (const auto [s, group] : {std::pair<index_t, index_t>{8, 0}, {16, 0}, {16, 8}})
        run(name, A, s, group, PrecondKind::Jacobi);
    // The Laplacian with the preconditioner that solves it fastest one vector at a time (issue 7),
    // on both sides again: the block applies it to all columns at once (SpMM steps).
    for (const index_t s : {8, 16}) run(mats.front().first, mats.front().second, s, 0, PrecondKind::Chebyshev);
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) return 2;
    const std::string date = bench::utc_now();
    std::fprintf(f, "{\n  \"benchmark\": \"bench_block_cg\",\n  \"device\": \"%s\",\n  \"date\": \"%s\",\n",
                 cuda_device_name().c_str(), date.c_str());
    std::fprintf(f, "  \"rtol\": 1e-8,\n  \"rows\": [\n");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      std::fprintf(f,
                   "    {\"matrix\": \"%s\", \"precond\": \"%s\", \"n\": %d, \"nnz\": %d, \"s\": %d, \"block_group\": %d, \"block_seconds\": %.6f, "
                   "\"block_iterations\": %d, \"block_converged\": %s, \"sequential_seconds\": %.6f, "
                   "\"block_setup_seconds\": %.6f, \"sequential_setup_seconds\": %.6f, \"sequential_max_iterations\": %d, \"sequential_converged\": %s, \"ratio\": %.4f, \"round_ratios\": [%s], \"spmm\": \"%s\", "
                   "\"slowest_column_iterations\": %d, \"worst_column_over_cg_iterations\": %.4f, \"block_worst_true_relres\": %.3e, "
                   "\"sequential_worst_true_relres\": %.3e, \"false_converged_columns\": %d}%s\n",
                   r.name.c_str(), to_string(r.precond), r.n, r.nnz, r.s, r.group, r.block_s, r.block_iters, r.block_ok ? "true" : "false", r.seq_s,
                   r.block_setup_s, r.seq_setup_s, r.max_seq_iters, r.seq_ok ? "true" : "false", r.block_s / r.seq_s, join(r.ratios).c_str(),
                   r.spmm.c_str(), r.slowest_column, r.column_ratio, r.block_true, r.seq_true, r.false_converged,
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
  return 0;
}
