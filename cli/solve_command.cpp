// krysp solve: A·x = b from a Matrix Market file, on the GPU or the host, result to HDF5.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/base/error.hpp"
#include "krysp/cli/amg_args.hpp"
#include "krysp/cli/args.hpp"
#include "krysp/cli/commands.hpp"
#include "krysp/cli/distributed_io.hpp"
#include "krysp/cli/mpi_session.hpp"
#include "krysp/cli/throttle.hpp"
#include "krysp/io/atomic_file.hpp"
#include "krysp/io/hdf5_result.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/precond/spd_block.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/solvers/solve.hpp"

namespace krysp::cli {

const char* const kSolveUsage =
    "usage: krysp solve A.mtx [options]\n"
    "\n"
    "Solves A x = b with preconditioned conjugate gradients (A symmetric positive definite).\n"
    "\n"
    "  --rhs B.mtx          right-hand side(s) (Matrix Market array or coordinate, n x s); s > 1\n"
    "                       solves all columns at once with block CG\n"
    "  --nrhs s             without --rhs: s right-hand sides b_j = A*x_j for known x_j (x_1 = 1,\n"
    "                       the others reproducible random), so the error is printed (default 1)\n"
    "  --block-group G      s > G right-hand sides run as block CG solves of at most G columns\n"
    "                       (fewer iterations in one wide block; faster kernels up to 8 columns\n"
    "                       on large matrices); 0: all at once (default 0)\n"
    "  --x0 X0.mtx          initial guess, n x s (default 0)\n"
    "  --rtol R             stop when |r| <= R |b|            (default 1e-8)\n"
    "  --atol A             ... or when |r| <= A              (default 0)\n"
    "  --max-iters N        iteration limit                   (default max(1000, 10 n))\n"
    "  --check-every K      iterations between stopping checks on the GPU (default 16)\n"
    "  --precond P          none | jacobi | chebyshev | block-jacobi | amg (default jacobi)\n"
    "                         chebyshev: polynomial in D^-1 A on [lmax/ratio, lmax], lmax by Lanczos\n"
    "                         block-jacobi: b x b diagonal blocks, b detected from the pattern or given\n"
    "                         amg: smoothed-aggregation V-cycle (set up on the GPU for b 1 and mis2 on\n"
    "                         cuda, else on the host; V-cycle on either backend)\n"
    "  --cheb-degree D      Chebyshev degree, D-1 SpMVs per application  (default 4)\n"
    "  --cheb-ratio R       Chebyshev lmax/lmin                           (default 30)\n"
    "  --cheb-single        run the Chebyshev polynomial in fp32 (CG stays fp64)\n"
    "  --block-size B       block-Jacobi block size 1..8; 0 detects it    (default 0)\n"
    "  --backend B          auto | cuda | host                (default auto: cuda when a GPU is present)\n"
    "  --out result.h5      write x, the residual history and run attributes to HDF5\n"
    "  --quiet              only errors\n"
    "\n"
    "exit codes: 0 converged, 1 not converged, 2 bad input or usage, 3 device error\n";

namespace {

/// An n × s column-major block from a Matrix Market file; s = 0 accepts any number of columns.
std::vector<double> read_block(const std::string& path, index_t n, index_t& s, const char* what) {
  auto v = io::read_dense_matrix_market<double>(path);
  KRYSP_REQUIRE(v.rows == n && v.cols >= 1 && (s == 0 || v.cols == s), path, ": ", what, " is ", v.rows, "x", v.cols,
                ", expected ", n, "x", s == 0 ? std::string("s") : std::to_string(s));
  s = v.cols;
  return std::move(v.values);
}

/// Known solutions for generated right-hand sides: column 0 all ones, the others smooth but
/// distinct (reproducible, never zero), so that errors can be printed.
std::vector<double> known_solutions(index_t n, index_t s) {
  std::vector<double> x(std::size_t(n) * s);
  for (index_t j = 0; j < s; ++j)
    for (index_t i = 0; i < n; ++i) x[std::size_t(j) * n + i] = j == 0 ? 1.0 : 1.0 + 0.5 * std::sin(0.1 * (j + 1) * i + j);
  return x;
}

void print_setup(const std::string& path, std::int64_t n, std::int64_t nnz, double read_seconds, Backend backend,
                 const std::string& requested, const SolveOptions& opt, index_t s) {
  std::printf("krysp: %s: %lld x %lld, %lld nonzeros (read in %.2f s)\n", path.c_str(), (long long)n, (long long)n,
              (long long)nnz, read_seconds);
  if (const Communicator* world = distributed_world()) {
    if (backend == Backend::Cuda)
      std::printf("krysp: backend cuda, %d MPI ranks, one GPU each (rank 0 on %s), halos and sums by %s (rows "
                  "balanced by nonzeros)\n",
                  world->size(), cuda_device_name().c_str(), world->device_kind().c_str());
    else
      std::printf("krysp: backend host, %d MPI ranks (rows balanced by nonzeros)\n", world->size());
  }
  else if (backend == Backend::Cuda)
    std::printf("krysp: backend cuda on %s\n", cuda_device_name().c_str());
  else if (requested == "auto")
    std::printf("krysp: no CUDA device found: running on the host backend (slower; --backend cuda to insist)\n");
  else
    std::printf("krysp: backend host\n");
  std::printf("krysp: %s, %d right-hand side%s, preconditioner %s, rtol %g, atol %g\n", s > 1 ? "block CG" : "CG", s,
              s > 1 ? "s" : "", describe(opt.precond).c_str(), opt.cg.rtol, opt.cg.atol);
}

/// ‖x_j − x*_j‖/‖x*_j‖ for column j.
double column_error(const std::vector<double>& x, const std::vector<double>& exact, index_t n, index_t j) {
  double e = 0, r = 0;
  for (index_t i = 0; i < n; ++i) {
    const double d = x[std::size_t(j) * n + i] - exact[std::size_t(j) * n + i];
    e += d * d;
    r += exact[std::size_t(j) * n + i] * exact[std::size_t(j) * n + i];
  }
  return std::sqrt(e / r);
}

// The report of one solve (x: all n entries); the HDF5 file when `out` is given.
int report_single(const std::string& path, std::int64_t n, std::int64_t nnz, const SolveReport& rep,
                  const std::vector<double>& x, const std::vector<double>& exact, const SolveOptions& opt,
                  const std::string& out, bool quiet) {
  if (!quiet) {
    std::printf("krysp: %s after %d iterations\n", to_string(rep.status), rep.iterations);
    std::printf("krysp: true relative residual |b-Ax|/|b| = %.3e (recursive %.3e)\n", rep.true_relative_residual,
                rep.relative_residual);
    if (rep.residual_replacements > 0)
      std::printf("krysp: the recursive residual drifted from b-Ax: replaced by it and restarted %d time(s)\n",
                  rep.residual_replacements);
    if (rep.residual_floor > 0)
      std::printf("krysp: double precision resolves |b-Ax|/|b| only to about eps*||A|*|x||/|b| = %.1e here: ask for "
                  "an rtol above it\n", rep.residual_floor);
    if (!exact.empty()) std::printf("krysp: error |x-x*|/|x*| = %.3e\n", column_error(x, exact, index_t(n), 0));
    if (opt.precond.kind == PrecondKind::Amg) std::printf("krysp: preconditioner %s\n", rep.preconditioner.c_str());
    std::printf("krysp: solve %.4f s (%.1f us/iteration), setup %.4f s, backend %s, device %s, spmv %s\n",
                rep.seconds, rep.iterations > 0 ? 1e6 * rep.seconds / rep.iterations : 0.0, rep.setup_seconds,
                rep.backend.c_str(), rep.device.c_str(), rep.spmv_kernel.c_str());
  }
  if (!out.empty()) {
    io::write_hdf5(out,
                   {{"/x", {x.size()}, x},
                    {"/residual_history", {rep.residual_history.size()}, rep.residual_history}},
                   {{"solver", std::string(rep.solver)},
                    {"preconditioner", rep.preconditioner},
                    {"iterations", std::int64_t(rep.iterations)},
                    {"converged", std::int64_t(rep.converged() ? 1 : 0)},
                    {"status", std::string(to_string(rep.status))},
                    {"relative_residual", rep.true_relative_residual},
                    {"recursive_relative_residual", rep.relative_residual},
                    {"residual_replacements", std::int64_t(rep.residual_replacements)},
                    {"residual_floor", rep.residual_floor},
                    {"b_norm", rep.b_norm},
                    {"rtol", opt.cg.rtol},
                    {"atol", opt.cg.atol},
                    {"backend", rep.backend},
                    {"device", rep.device},
                    {"spmv_kernel", rep.spmv_kernel},
                    {"matrix", path},
                    {"n", n},
                    {"nnz", nnz},
                    {"nrhs", std::int64_t(1)},
                    {"elapsed_seconds", rep.seconds},
                    {"setup_seconds", rep.setup_seconds}});
    if (!quiet) std::printf("krysp: wrote %s\n", out.c_str());
  }
  return rep.converged() ? kExitOk : kExitNotConverged;
}

// A column's status in the block table's width: to_string's words up to its colon.
std::string short_status(SolveStatus s) {
  const std::string full = to_string(s);
  const std::size_t colon = full.find(':');
  return colon == std::string::npos ? full : full.substr(0, colon) + (s == SolveStatus::NotSpd        ? " (not SPD)"
                                                                      : s == SolveStatus::PrecondNotSpd ? " (M not SPD)"
                                                                      : s == SolveStatus::NonFinite     ? " (NaN/Inf)"
                                                                                                       : "");
}

// The report of a block solve (X: all n × s entries, column-major); the HDF5 file when `out` is given.
int report_many(const std::string& path, index_t n, std::int64_t nnz, const BlockSolveReport& rep, index_t s,
                const std::vector<double>& X, const std::vector<double>& exact, const SolveOptions& opt,
                const std::string& out, bool quiet) {
  if (!quiet) {
    std::printf("krysp: block CG %s after %d block iterations\n", rep.converged() ? "converged" : "did not converge",
                rep.iterations);
    std::printf("  %4s  %-24s %6s %12s %12s\n", "col", "status", "iters", "true relres", exact.empty() ? "" : "error");
    for (index_t j = 0; j < s; ++j) {
      const auto& c = rep.columns[j];
      std::printf("  %4d  %-24.24s %6d %12.3e", j, short_status(c.status).c_str(), c.iterations,
                  c.true_relative_residual);
      if (!exact.empty()) std::printf(" %12.3e", column_error(X, exact, n, j));
      std::printf("\n");
    }
    for (index_t j = 0; j < s; ++j)
      if (rep.columns[j].residual_floor > 0)
        std::printf("krysp: column %d: double precision resolves |b-Ax|/|b| only to about eps*||A|*|x||/|b| = %.1e "
                    "here: ask for an rtol above it\n", j, rep.columns[j].residual_floor);
    if (opt.precond.kind == PrecondKind::Amg) std::printf("krysp: preconditioner %s\n", rep.preconditioner.c_str());
    std::printf("krysp: solve %.4f s (%.1f us/block iteration), setup %.4f s, backend %s, device %s, spmm %s\n",
                rep.seconds, rep.iterations > 0 ? 1e6 * rep.seconds / rep.iterations : 0.0, rep.setup_seconds,
                rep.backend.c_str(), rep.device.c_str(), rep.spmm_kernel.c_str());
  }
  if (!out.empty()) {
    // /X is n × s row-major in the file (h5py: f["X"][:, j] is column j).
    std::vector<double> xr(X.size());
    for (index_t j = 0; j < s; ++j)
      for (index_t i = 0; i < n; ++i) xr[std::size_t(i) * s + j] = X[std::size_t(j) * n + i];
    std::vector<double> iters, conv, rel, rec;
    std::vector<io::Hdf5Dataset> ds = {{"/X", {std::size_t(n), std::size_t(s)}, xr}};
    for (index_t j = 0; j < s; ++j) {
      const auto& c = rep.columns[j];
      iters.push_back(c.iterations);
      conv.push_back(c.converged() ? 1 : 0);
      rel.push_back(c.true_relative_residual);
      rec.push_back(c.relative_residual);
      ds.push_back({"/residual_history/col" + std::to_string(j), {c.residual_history.size()}, c.residual_history});
    }
    ds.push_back({"/iterations", {std::size_t(s)}, iters});
    ds.push_back({"/converged", {std::size_t(s)}, conv});
    ds.push_back({"/relative_residual", {std::size_t(s)}, rel});
    ds.push_back({"/recursive_relative_residual", {std::size_t(s)}, rec});
    io::write_hdf5(out, ds,
                   {{"solver", std::string(rep.solver)},
                    {"preconditioner", rep.preconditioner},
                    {"iterations", std::int64_t(rep.iterations)},
                    {"converged", std::int64_t(rep.converged() ? 1 : 0)},
                    {"rtol", opt.cg.rtol},
                    {"atol", opt.cg.atol},
                    {"backend", rep.backend},
                    {"device", rep.device},
                    {"spmm_kernel", rep.spmm_kernel},
                    {"matrix", path},
                    {"n", std::int64_t(n)},
                    {"nnz", nnz},
                    {"nrhs", std::int64_t(s)},
                    {"elapsed_seconds", rep.seconds},
                    {"setup_seconds", rep.setup_seconds}});
    if (!quiet) std::printf("krysp: wrote %s\n", out.c_str());
  }
  return rep.converged() ? kExitOk : kExitNotConverged;
}

int solve_single(const std::string& path, const CsrMatrix<double>& A, const std::vector<double>& b,
                 std::vector<double>& x, const std::vector<double>& exact, SolveOptions& opt, const std::string& out,
                 bool quiet) {
  const SolveReport rep = solve(A, b, x, opt);
  return report_single(path, A.rows(), A.nnz(), rep, x, exact, opt, out, quiet);
}

int solve_many(const std::string& path, const CsrMatrix<double>& A, const std::vector<double>& B, index_t s,
               std::vector<double>& X, const std::vector<double>& exact, SolveOptions& opt, const std::string& out,
               bool quiet) {
  const BlockSolveReport rep = solve_block(A, B, s, X, opt);
  return report_many(path, A.rows(), A.nnz(), rep, s, X, exact, opt, out, quiet);
}

/// `mpirun -np P krysp solve` (P > 1): rank 0 reads A and scatters it, every rank reads the
/// small --rhs/--x0 files and keeps its rows, solve_distributed / solve_block_distributed solve,
/// rank 0 gathers x, prints and writes the file (the same layout as one process); the others are
/// silent. Every rank returns the same exit code (the reports are the same on all ranks).
int solve_mpi(const Communicator& world, const Args& args, const std::string& path, SolveOptions& opt,
              const std::string& out, bool quiet) {
  // --backend cuda: one GPU a rank, picked by local rank. auto stays on the host under mpirun.
  const Backend backend = opt.backend == Backend::Cuda ? Backend::Cuda : Backend::Host;
  opt.backend = backend;
  if (backend == Backend::Cuda) {
    world.collective([&] {
      KRYSP_REQUIRE(cuda_device_available(), "--backend cuda under mpirun: no CUDA device on this rank");
      detail::use_local_gpu(world.rank());
    });
    world.device_kind();  // collective: the device transport is made now, on every rank's GPU
  }
  const auto t_read = std::chrono::steady_clock::now();
  const DistCsrMatrix A = DistCsrMatrix::read_matrix_market(world, path, true, partition_align(opt.precond));
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  KRYSP_REQUIRE(A.global_rows() <= kMaxIndex, path, ": ", A.global_rows(),
                " rows: the command line gathers x on rank 0, which holds at most 2^31-1 rows");
  const index_t n = index_t(A.global_rows()), m = A.rows();
  index_t s = index_t(args.get_int("nrhs", 1, 1, 64));
  std::vector<double> B, X, exact;
  if (args.has("rhs")) {
    s = 0;
    std::vector<double> all;
    world.collective([&] { all = read_block(args.get("rhs", ""), n, s, "right-hand side"); });
    KRYSP_REQUIRE(s <= 64, args.get("rhs", ""), ": ", s, " right-hand sides; at most 64 are solved at once");
    B = rows_of_block(A, all, s);
  } else {  // B = A·X* for known X*, so the error can be printed
    exact = known_solutions(n, s);
    const std::vector<double> mine = rows_of_block(A, exact, s);
    B.resize(mine.size());
    for (index_t j = 0; j < s; ++j) A.apply(mine.data() + std::size_t(j) * m, B.data() + std::size_t(j) * m);
  }
  if (args.has("x0")) {
    std::vector<double> all;
    world.collective([&] { all = read_block(args.get("x0", ""), n, s, "initial guess"); });
    X = rows_of_block(A, all, s);
  }
  KRYSP_REQUIRE(s == 1 || opt.block_group == 0 || s <= opt.block_group, "--block-group ", opt.block_group,
                " under mpirun: block groups are not distributed yet (0 solves all ", s, " columns at once)");
  opt.block_group = 0;
  if (!quiet) print_setup(path, n, A.global_nnz(), read_seconds, backend, to_string(backend), opt, s);
  const std::string root_out = world.rank() == 0 ? out : std::string();
  if (s == 1) {
    const SolveReport rep = solve_distributed(A, B, X, opt);
    const std::vector<double> x = gather_to_root(A, X, 1, false);
    if (world.rank() != 0) return rep.converged() ? kExitOk : kExitNotConverged;
    return report_single(path, n, A.global_nnz(), rep, x, exact, opt, root_out, quiet);
  }
  const BlockSolveReport rep = solve_block_distributed(A, B, s, X, opt);
  const std::vector<double> Xg = gather_to_root(A, X, s, false);
  if (world.rank() != 0) return rep.converged() ? kExitOk : kExitNotConverged;
  return report_many(path, n, A.global_nnz(), rep, s, Xg, exact, opt, root_out, quiet);
}
}  // namespace

int solve_command(const std::vector<std::string>& argv) {
  std::set<std::string> valued{"rhs",         "nrhs",    "block-group", "x0",  "rtol",        "atol",
                                "max-iters",   "check-every", "precond", "backend", "out", "cheb-degree",
                                "cheb-ratio",  "block-size"};
  valued.insert(amg_option_names().begin(), amg_option_names().end());
  const Args args(argv, valued, {"quiet", "help", "cheb-single"});
  if (args.has("help")) {
    std::fputs(kSolveUsage, stdout);
    std::fputs(amg_option_help(), stdout);
    return kExitOk;
  }
  KRYSP_REQUIRE(args.positional().size() == 1, "solve expects exactly one matrix file, got ",
                args.positional().size(), " positional arguments\n", kSolveUsage);
  KRYSP_REQUIRE(!(args.has("rhs") && args.has("nrhs")), "give --rhs or --nrhs, not both");
  const std::string path = args.positional()[0];
  const bool quiet = args.has("quiet");

  SolveOptions opt;
  opt.cg.rtol = args.get_double("rtol", 1e-8);
  opt.cg.atol = args.get_double("atol", 0.0);
  opt.cg.max_iters = index_t(args.get_int("max-iters", 0, 1, kMaxIndex));
  opt.cg.check_every = int(args.get_int("check-every", 16, 1, 1 << 20));
  opt.precond.kind = parse_precond(args.get("precond", "jacobi"));
  opt.precond.cheb_degree = int(args.get_int("cheb-degree", kDefaultChebyshevDegree, 1, 32));
  opt.precond.cheb_ratio = args.get_double("cheb-ratio", kDefaultChebyshevRatio);
  opt.precond.cheb_single = args.has("cheb-single");
  opt.precond.block_size = int(args.get_int("block-size", 0, 0, kMaxBlockSize));
  opt.precond.amg = read_amg_options(args);
  validate(opt.precond);
  opt.backend = parse_backend(args.get("backend", "auto"));
  opt.block_group = index_t(args.get_int("block-group", kDefaultBlockGroup, 0, 64));
  const std::string out = args.get("out", "");
  if (const Communicator* world = distributed_world()) {
    const bool silent = quiet || world->rank() != 0;
    Throttle throttle;
    if (!silent)
      opt.cg.progress = [&](const SolveProgress& p) {
        if (!throttle.due()) return;
        std::printf("  iter %8d  relres %.3e  %.0f it/s\n", p.iteration, p.relative_residual,
                    p.seconds > 0 ? p.iteration / p.seconds : 0.0);
        std::fflush(stdout);
      };
    return solve_mpi(*world, args, path, opt, out, silent);
  }
  if (!out.empty()) io::AtomicOutput probe(out);  // an unwritable --out fails now, not after the solve

  const auto t_read = std::chrono::steady_clock::now();
  const CsrMatrix<double> A = io::read_matrix_market<double>(path);
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  KRYSP_REQUIRE(A.rows() == A.cols(), path, ": matrix is ", A.rows(), "x", A.cols(), "; CG needs a square matrix");
  const index_t n = A.rows();

  index_t s = index_t(args.get_int("nrhs", 1, 1, 64));
  std::vector<double> B, X, exact;
  if (args.has("rhs")) {
    s = 0;
    B = read_block(args.get("rhs", ""), n, s, "right-hand side");
    KRYSP_REQUIRE(s <= 64, args.get("rhs", ""), ": ", s, " right-hand sides; at most 64 are solved at once");
  } else {  // B = A·X* for known X*, so the error can be printed
    exact = known_solutions(n, s);
    B.resize(exact.size());
    for (index_t j = 0; j < s; ++j) A.multiply_host(exact.data() + std::size_t(j) * n, B.data() + std::size_t(j) * n);
  }
  if (args.has("x0")) X = read_block(args.get("x0", ""), n, s, "initial guess");

  const Backend backend = resolve_backend(opt.backend);
  opt.backend = backend;
  if (!quiet) print_setup(path, A.rows(), A.nnz(), read_seconds, backend, args.get("backend", "auto"), opt, s);
  Throttle throttle;
  if (!quiet)
    opt.cg.progress = [&](const SolveProgress& p) {
      if (!throttle.due()) return;
      std::printf("  iter %8d  relres %.3e  %.0f it/s\n", p.iteration, p.relative_residual,
                  p.seconds > 0 ? p.iteration / p.seconds : 0.0);
      std::fflush(stdout);
    };
  return s == 1 ? solve_single(path, A, B, X, exact, opt, out, quiet) : solve_many(path, A, B, s, X, exact, opt, out, quiet);
}

}  // namespace krysp::cli
