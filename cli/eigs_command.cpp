// krysp eigs: the k extreme eigenpairs of a symmetric matrix (or pencil) with LOBPCG, to HDF5.
#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
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
#include "krysp/solvers/dense_eigensolve.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/eigensolve.hpp"

namespace krysp::cli {

const char* const kEigsUsage =
    "usage: krysp eigs A.mtx -k K [options]\n"
    "\n"
    "The K extreme eigenpairs of a symmetric A (A x = lambda x), or of A x = lambda B x with B\n"
    "symmetric positive definite, by LOBPCG (block, preconditioned, soft locking).\n"
    "\n"
    "  -k K, --k K          number of eigenpairs (required; at most 256 by LOBPCG, whose block is\n"
    "                       at most 256 columns; 3K > n is solved densely whatever K)\n"
    "  --which W            smallest | largest                 (default smallest)\n"
    "  --B M.mtx            B of the generalized problem (same size as A, SPD)\n"
    "  --precond P          auto | none | jacobi | chebyshev | block-jacobi | amg\n"
    "                       | jacobi-b (Jacobi of B)\n"
    "                       (default auto: smallest: 8 inner PCG steps on A with chebyshev, falling\n"
    "                       back to jacobi or none when it cannot be set up; largest: none, from\n"
    "                       100000 rows the same as for smallest on sigma*I - A (sigma >= the\n"
    "                       largest eigenvalue), or jacobi-b when B is given)\n"
    "  --cheb-degree d      degree of the Chebyshev preconditioner (default 4)\n"
    "  --tol T              convergence tolerance (default 1e-6), under the test of --conv\n"
    "  --conv C             rel:  |A x - lambda B x| <= T |lambda| |B x|   (default; relative to lambda)\n"
    "                       norm: |A x - lambda B x| <= T (|A| + |lambda| |B|) |x|, norms estimated\n"
    "                             from below (backward error: no relative accuracy for small lambda)\n"
    "                       abs:  |A x - lambda B x| <= T with x'Bx = 1 (SciPy's and CuPy's test)\n"
    "  --inner-iters m      precondition LOBPCG by up to m PCG steps on A (fewer once the residual\n"
    "                       fell 10x), each preconditioned by --precond\n"
    "                       (0: --precond alone; default: 8 with --precond auto or amg for\n"
    "                       smallest, else 0)\n"
    "  --no-verify          skip the check that no eigenvalue beyond the K-th was missed\n"
    "  --no-refine          smallest pairs: do not refine a stagnated run by inverse iteration\n"
    "  --max-iters N        iteration limit                    (default 5000)\n"
    "  --block-size b       block size, K <= b, 3b + constraints <= n (default K + max(2, ceil(K/2)));\n"
    "                       without it or constraints, 3K > n is solved densely by LAPACK instead\n"
    "  --x0 X0.mtx          starting vectors, n x (at most b) (dense Matrix Market); the rest random\n"
    "  --constraints Y.mtx  eigenvectors are kept B-orthogonal to the columns of Y (n x c)\n"
    "  --seed S             seed of the random starting vectors (default 20240601)\n"
    "  --backend B          auto | cuda | host                 (default auto: cuda when a GPU is present)\n"
    "  --out eigs.h5        write /eigenvalues, /eigenvectors (n x k), /residual_norms,\n"
    "                       /relative_residuals, /history (iterations+1 x k) and run attributes\n"
    "  --quiet              only errors\n"
    "\n"
    "Eigenvalues are printed ascending for smallest, descending for largest. After convergence a\n"
    "second small run checks that no eigenvalue beyond the K-th was missed (restarting if one was).\n"
    "exit codes: 0 all K converged and verified, 1 not converged or unverified (the best pairs are\n"
    "            still written),\n"
    "            2 bad input or usage (including B not positive definite), 3 device error\n";


namespace {
/// LOBPCG's progress lines (the first iteration, then at most as often as `throttle` allows).
std::function<void(const EigProgress&)> progress_printer(Throttle& throttle) {
  return [&throttle](const EigProgress& p) {
    if (p.iteration > 1 && !throttle.due()) return;
    std::printf("  iter %6d  converged %4d/%d  max relres %.3e  %.0f it/s\n", p.iteration, p.converged, p.k,
                p.max_residual, p.seconds > 0 ? p.iteration / p.seconds : 0.0);
    std::fflush(stdout);
  };
}

/// The report of an eigensolve (eigenvectors: all n rows) and the HDF5 file when `out` is given;
/// returns the exit code.
int report_eigs(const EigReport& rep, const EigOptions& opt, const std::string& path, const std::string& bpath,
                std::int64_t n, std::int64_t nnz, const std::string& out, bool quiet) {
  const index_t k = opt.lobpcg.k;
  const bool have_pairs = rep.eigenvalues.size() == std::size_t(k);
  // B refused before any iteration (its Cholesky factor): the error below says it all.
  const bool refused = rep.status == EigStatus::NotPositiveDefinite && !have_pairs && rep.iterations == 0;

  if (!quiet && !refused) {
    if (!rep.precond_note.empty())
      std::printf("krysp: %s; used %s instead\n", rep.precond_note.c_str(), rep.preconditioner.c_str());
    if (rep.solver == "lobpcg")
      std::printf("krysp: %s after %d iterations (block size %d, preconditioner %s)\n", to_string(rep.status),
                  rep.iterations, rep.block_size, rep.preconditioner.c_str());
    else  // dense_eigensolve.hpp: k pairs leave no room for LOBPCG's basis of 3k columns
      std::printf("krysp: %s, the whole spectrum by a dense solve (LAPACK %s; n = %lld is too small for LOBPCG "
                  "with k = %d)\n", to_string(rep.status), rep.solver.substr(rep.solver.find('-') + 1).c_str(),
                  static_cast<long long>(n), k);
    if (have_pairs) {
      std::printf("  %4s  %24s  %12s  %12s\n", "i", "eigenvalue", "|Ax-lBx|",
                  rep.convergence == EigConvergence::Relative ? "relres(rel)"
                  : rep.convergence == EigConvergence::Norm   ? "relres(norm)"
                                                              : "res(abs)");
      for (index_t i = 0; i < k; ++i)
        std::printf("  %4d  %24.16e  %12.4e  %12.4e%s\n", i, rep.eigenvalues[i], rep.residual_norms[i],
                    rep.relative_residuals[i], rep.relative_residuals[i] <= opt.lobpcg.tol ? "" : "  (not converged)");
    }
    std::printf("krysp: solve %.4f s (%.2f ms/iteration), setup %.4f s, backend %s, device %s, spmm %s\n",
                rep.solve_seconds, rep.iterations > 0 ? 1e3 * rep.seconds / rep.iterations : 0.0, rep.setup_seconds,
                rep.backend.c_str(), rep.device.c_str(), rep.spmm_kernel.c_str());
    if (!rep.converged() && opt.lobpcg.convergence == EigConvergence::Relative && rep.accuracy_floor > 0.1 * opt.lobpcg.tol)
      std::printf("krysp: note: tol %g is near or below what double precision allows for these pairs "
                  "(eps*|A|/|lambda| = %.1e): ask for a larger --tol, or --conv norm\n",
                  opt.lobpcg.tol, rep.accuracy_floor);
    if (rep.refine_sweeps > 0)
      std::printf("krysp: LOBPCG stagnated; refined by inverse iteration: %d sweeps, solves by %s%s\n",
                  rep.refine_sweeps, rep.refine_method.c_str(),
                  rep.refine_inner_iterations > 0
                      ? detail::concat(" (", rep.refine_inner_iterations, " iterations)").c_str()
                      : "");
    std::printf("krysp: missed-eigenvalue check: %s", rep.verification.c_str());
    if (rep.verify_iterations > 0)
      std::printf(" (%d iterations, %d restarts)", rep.verify_iterations, rep.verify_restarts);
    std::printf("\n");
    if (rep.p_restarts + rep.svqb_passes + rep.reduced_rr > 0)
      std::printf("krysp: basis repairs: %d P restarts, %d SVQB passes, %d directions dropped, %d reduced RR\n",
                  rep.p_restarts, rep.svqb_passes, rep.dropped_directions, rep.reduced_rr);
  }
  if (!out.empty() && have_pairs) {
    const std::size_t kk = std::size_t(k);
    io::write_hdf5(out,
                   {{"/eigenvalues", {kk}, rep.eigenvalues},
                    {"/eigenvectors", {std::size_t(n), kk}, rep.eigenvectors},
                    {"/residual_norms", {kk}, rep.residual_norms},
                    {"/relative_residuals", {kk}, rep.relative_residuals},
                    {"/history", {std::size_t(rep.history_rows), kk}, rep.history}},
                   {{"solver", rep.solver},
                    {"converged", std::int64_t(rep.converged() ? 1 : 0)},
                    {"status", std::string(to_string(rep.status))},
                    {"iterations", std::int64_t(rep.iterations)},
                    {"k", std::int64_t(k)},
                    {"block_size", std::int64_t(rep.block_size)},
                    {"tol", opt.lobpcg.tol},
                    {"convergence_test", std::string(to_string(rep.convergence))},
                    {"verification", rep.verification},
                    {"complement_bound", rep.complement_bound},
                    {"accuracy_floor", rep.accuracy_floor},
                    {"verify_iterations", std::int64_t(rep.verify_iterations)},
                    {"verify_restarts", std::int64_t(rep.verify_restarts)},
                    {"refine_sweeps", std::int64_t(rep.refine_sweeps)},
                    {"refine_inner_iterations", std::int64_t(rep.refine_inner_iterations)},
                    {"refine_method", rep.refine_method},
                    {"which", rep.which},
                    {"preconditioner", rep.preconditioner},
                    {"backend", rep.backend},
                    {"device", rep.device},
                    {"spmm_kernel", rep.spmm_kernel},
                    {"matrix", path},
                    {"b_matrix", bpath},
                    {"n", n},
                    {"nnz", nnz},
                    {"constraints", std::int64_t(rep.constraints)},
                    {"a_norm_estimate", rep.a_norm_estimate},
                    {"b_norm_estimate", rep.b_norm_estimate},
                    {"p_restarts", std::int64_t(rep.p_restarts)},
                    {"svqb_passes", std::int64_t(rep.svqb_passes)},
                    {"dropped_directions", std::int64_t(rep.dropped_directions)},
                    {"elapsed_seconds", rep.solve_seconds},
                    {"setup_seconds", rep.setup_seconds}});
    if (!quiet) std::printf("krysp: wrote %s\n", out.c_str());
  }
  if (rep.status == EigStatus::NotPositiveDefinite) {
    std::fprintf(stderr, "krysp: error: %s: %s: B is not symmetric positive definite\n",
                 bpath.empty() ? path.c_str() : bpath.c_str(), rep.status_note.c_str());
    return kExitBadInput;
  }
  return rep.converged() ? kExitOk : kExitNotConverged;
}

/// `mpirun -np P krysp eigs` (P > 1): rank 0 reads A (and B) and scatters them (B on A's rows),
/// eigensolve_distributed solves with none or Jacobi (auto: 8 inner PCG steps over Jacobi for the
/// smallest pairs, Jacobi of B for the largest of a pencil, none otherwise), rank 0 gathers the
/// eigenvectors, prints and writes the file (the same layout as one process); the others are
/// silent and return the same exit code.
int eigs_mpi(const Communicator& world, const Args& args, const std::string& path, const std::string& bpath,
             EigOptions& opt, bool auto_precond, const std::string& out, bool quiet) {
  KRYSP_REQUIRE(!args.has("x0") && !args.has("constraints"),
                "--x0 and --constraints are not supported under mpirun yet (one process takes them)");
  // --backend cuda: one GPU a rank, picked by local rank. auto stays on the host under mpirun.
  opt.backend = opt.backend == Backend::Cuda ? Backend::Cuda : Backend::Host;
  if (opt.backend == Backend::Cuda) {
    world.collective([&] {
      KRYSP_REQUIRE(cuda_device_available(), "--backend cuda under mpirun: no CUDA device on this rank");
      detail::use_local_gpu(world.rank());
    });
    world.device_kind();  // collective: the device transport is made now, on every rank's GPU
  }
  const auto t_read = std::chrono::steady_clock::now();
  const DistCsrMatrix A = DistCsrMatrix::read_matrix_market(world, path, true, partition_align(opt.precond));
  std::optional<DistCsrMatrix> B;
  if (!bpath.empty()) {
    CsrMatrix<double> whole;
    world.collective([&] {
      if (world.rank() != 0) return;
      whole = io::read_matrix_market<double>(bpath);
      KRYSP_REQUIRE(whole.rows() == A.global_rows() && whole.cols() == A.global_rows(), bpath, ": B is ",
                    whole.rows(), "x", whole.cols(), " but A is ", A.global_rows(), "x", A.global_rows());
    });
    B.emplace(DistCsrMatrix::scatter(world, whole, 0, A.row_starts()));
  }
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  KRYSP_REQUIRE(A.global_rows() <= kMaxIndex, path, ": ", A.global_rows(),
                " rows: the command line gathers the eigenvectors on rank 0, which holds at most 2^31-1 rows");
  if (auto_precond) {
    opt.precond.kind = opt.lobpcg.which == EigWhich::Smallest || B ? PrecondKind::Jacobi : PrecondKind::None;
    opt.precond_from_b = opt.lobpcg.which == EigWhich::Largest && B;
    opt.precond_fallback = true;  // a zero diagonal: none instead
    // The smallest pairs need an approximate A⁻¹: PCG steps over Jacobi, as one process uses them
    // over Chebyshev (Jacobi alone stagnates on bcsstk06 and 1138_bus).
    if (opt.lobpcg.which == EigWhich::Smallest) opt.inner_iters = kDefaultInnerIters;
  }
  if (args.has("inner-iters")) opt.inner_iters = int(args.get_int("inner-iters", 0, 0, 1000));
  if (!quiet) {
    std::printf("krysp: %s: %lld x %lld, %lld nonzeros (read in %.2f s)%s%s\n", path.c_str(),
                (long long)A.global_rows(), (long long)A.global_rows(), (long long)A.global_nnz(), read_seconds,
                bpath.empty() ? "" : ", B = ", bpath.c_str());
    if (opt.backend == Backend::Cuda)
      std::printf("krysp: backend cuda, %d MPI ranks, one GPU each (rank 0 on %s), halos and sums by %s (rows "
                  "balanced by nonzeros)\n",
                  world.size(), cuda_device_name().c_str(), world.device_kind().c_str());
    else
      std::printf("krysp: backend host, %d MPI ranks (rows balanced by nonzeros)\n", world.size());
    std::printf("krysp: LOBPCG, %d %s eigenpairs, preconditioner %s%s%s, tol %g (test %s)\n", opt.lobpcg.k,
                to_string(opt.lobpcg.which), opt.inner_iters > 0 ? "inner-cg over " : "", to_string(opt.precond.kind),
                opt.precond_from_b ? " of B" : "", opt.lobpcg.tol, to_string(opt.lobpcg.convergence));
  }
  Throttle throttle;
  if (!quiet) opt.lobpcg.progress = progress_printer(throttle);
  EigReport rep = eigensolve_distributed(A, B ? &*B : nullptr, opt);
  const bool have_pairs = rep.eigenvalues.size() == std::size_t(opt.lobpcg.k);
  std::vector<double> X = have_pairs ? gather_to_root(A, rep.eigenvectors, opt.lobpcg.k, true) : std::vector<double>();
  if (world.rank() != 0)
    return rep.status == EigStatus::NotPositiveDefinite ? kExitBadInput : rep.converged() ? kExitOk : kExitNotConverged;
  rep.eigenvectors = std::move(X);
  return report_eigs(rep, opt, path, bpath, A.global_rows(), A.global_nnz(), out, quiet);
}
}  // namespace

int eigs_command(const std::vector<std::string>& argv_in) {
  std::vector<std::string> argv = argv_in;
  for (auto& a : argv)  // -k K is the usual spelling; the parser knows --name value
    if (a == "-k") a = "--k";
  std::set<std::string> valued{"k",     "which",       "B",    "precond", "cheb-degree", "tol",
                                "max-iters", "block-size", "x0", "constraints", "seed", "backend",
                                "out",   "conv",        "inner-iters"};
  valued.insert(amg_option_names().begin(), amg_option_names().end());
  const Args args(argv, valued, {"quiet", "help", "no-verify", "no-refine"});
  if (args.has("help")) {
    std::fputs(kEigsUsage, stdout);
    std::fputs(amg_option_help(), stdout);
    return kExitOk;
  }
  KRYSP_REQUIRE(args.positional().size() == 1, "eigs expects exactly one matrix file, got ",
                args.positional().size(), " positional arguments\n", kEigsUsage);
  KRYSP_REQUIRE(args.has("k"), "eigs: -k K (the number of eigenpairs) is required\n", kEigsUsage);
  const std::string path = args.positional()[0];
  const bool quiet = args.has("quiet");

  EigOptions opt;
  opt.lobpcg.k = index_t(args.get_int("k", 1, 1, kMaxIndex));
  opt.lobpcg.which = parse_which(args.get("which", "smallest"));
  opt.lobpcg.tol = args.get_double("tol", 1e-6);
  KRYSP_REQUIRE(opt.lobpcg.tol > 0, "option --tol expects a positive number, got '", args.get("tol", ""), "'");
  opt.lobpcg.convergence = parse_convergence(args.get("conv", "rel"));
  opt.verify = !args.has("no-verify");
  opt.refine = !args.has("no-refine");
  opt.lobpcg.max_iters = index_t(args.get_int("max-iters", 0, 1, kMaxIndex));
  opt.lobpcg.block_size = index_t(args.get_int("block-size", 0, 1, kMaxIndex));
  opt.lobpcg.seed = std::uint64_t(args.get_int("seed", 20240601, 0, 1LL << 62));
  opt.backend = parse_backend(args.get("backend", "auto"));
  const std::string out = args.get("out", "");
  const std::string bpath = args.get("B", "");
  // Preconditioners (measurements in solvers/eigensolve.hpp): for the smallest pairs one that
  // approximates A⁻¹, Chebyshev best; for the largest of A x = l B x, M⁻¹ ≈ B⁻¹ (Jacobi of B:
  // 67 iterations instead of 1512 on bcsstk07/bcsstm07); for the largest of A x = l x, none, or
  // on large matrices the smallest of σI − A with Chebyshev (kSpectralFlipMinRows).
  const std::string pc = args.get("precond", "auto");
  const bool auto_precond = pc == "auto";  // decided once the matrices are read (Jacobi needs a positive diagonal)
  if (pc == "jacobi-b") {
    KRYSP_REQUIRE(!bpath.empty(), "--precond jacobi-b needs --B (it is the Jacobi preconditioner of B)");
    opt.precond.kind = PrecondKind::Jacobi;
    opt.precond_from_b = true;
  } else if (!auto_precond) {
    opt.precond.kind = parse_precond(pc);
  }
  opt.precond.cheb_degree = int(args.get_int("cheb-degree", kDefaultChebyshevDegree, 1, 32));
  opt.precond.amg = read_amg_options(args);
  validate(opt.precond);
  // AMG for the smallest pairs serves as the inner solve's preconditioner, as Chebyshev does under
  // --precond auto: a V-cycle alone is a weaker approximate inverse at the low end of the spectrum.
  if (opt.precond.kind == PrecondKind::Amg && opt.lobpcg.which == EigWhich::Smallest)
    opt.inner_iters = kDefaultInnerIters;
  // An approximate inverse of A steers LOBPCG toward the low end: for the largest pairs it slows it
  // down (docs/eigensolver.md, "Preconditioners"); say so, and go on.
  const Communicator* const world = distributed_world();
  if (!quiet && (!world || world->rank() == 0) && opt.lobpcg.which == EigWhich::Largest && !opt.precond_from_b &&
      (opt.precond.kind == PrecondKind::Amg || opt.precond.kind == PrecondKind::Chebyshev))
    std::printf("krysp: note: --precond %s approximates A^-1, which helps the smallest pairs; for the largest, "
                "--precond auto (none, or jacobi-b with --B) is usually far faster\n", to_string(opt.precond.kind));
  if (world)
    return eigs_mpi(*world, args, path, bpath, opt, auto_precond, out, quiet || world->rank() != 0);
  if (!out.empty()) io::AtomicOutput probe(out);  // an unwritable --out fails now, not after the solve

  const auto t_read = std::chrono::steady_clock::now();
  const CsrMatrix<double> A = io::read_matrix_market<double>(path);
  CsrMatrix<double> B;
  if (!bpath.empty()) B = io::read_matrix_market<double>(bpath);
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_read).count();
  KRYSP_REQUIRE(A.rows() == A.cols(), path, ": matrix is ", A.rows(), "x", A.cols(), "; eigs needs a square matrix");
  if (!bpath.empty())
    KRYSP_REQUIRE(B.rows() == A.rows() && B.cols() == A.cols(), bpath, ": B is ", B.rows(), "x", B.cols(),
                  " but A is ", A.rows(), "x", A.cols());
  if (auto_precond) choose_auto_preconditioner(opt, A, bpath.empty() ? nullptr : &B);
  if (args.has("inner-iters")) opt.inner_iters = int(args.get_int("inner-iters", 0, 0, 1000));
  io::DenseBlock<double> x0, Y;
  if (args.has("x0")) {
    x0 = io::read_dense_matrix_market<double>(args.get("x0", ""));
    KRYSP_REQUIRE(x0.rows == A.rows(), args.get("x0", ""), ": x0 is ", x0.rows, "x", x0.cols, ", expected ", A.rows(),
                  " rows");
  }
  if (args.has("constraints")) {
    Y = io::read_dense_matrix_market<double>(args.get("constraints", ""));
    KRYSP_REQUIRE(Y.rows == A.rows() && Y.cols >= 1, args.get("constraints", ""), ": the constraint block is ",
                  Y.rows, "x", Y.cols, ", expected ", A.rows(), " rows and at least one column");
  }

  const Backend backend = resolve_backend(opt.backend);
  opt.backend = backend;
  if (!quiet) {
    std::printf("krysp: %s: %d x %d, %d nonzeros (read in %.2f s)%s%s\n", path.c_str(), A.rows(), A.cols(), A.nnz(),
                read_seconds, bpath.empty() ? "" : ", B = ", bpath.c_str());
    if (backend == Backend::Cuda)
      std::printf("krysp: backend cuda on %s\n", cuda_device_name().c_str());
    else if (args.get("backend", "auto") == "auto")
      std::printf("krysp: no CUDA device found: running on the host backend (slower; --backend cuda to insist)\n");
    else
      std::printf("krysp: backend host\n");
    if (detail::dense_eigensolve_applies(opt, A.rows(), Y.cols))
      std::printf("krysp: %d %s eigenpairs of %d rows: too few rows for LOBPCG, a dense solve; tol %g (test %s)\n",
                  opt.lobpcg.k, to_string(opt.lobpcg.which), A.rows(), opt.lobpcg.tol,
                  to_string(opt.lobpcg.convergence));
    else
      std::printf("krysp: LOBPCG, %d %s eigenpairs, preconditioner %s%s%s, tol %g (test %s)\n", opt.lobpcg.k,
                  to_string(opt.lobpcg.which), opt.inner_iters > 0 ? "inner-cg over " : "",
                  to_string(opt.precond.kind), opt.precond_from_b ? " of B" : "", opt.lobpcg.tol,
                  to_string(opt.lobpcg.convergence));
  }
  Throttle throttle;
  if (!quiet) opt.lobpcg.progress = progress_printer(throttle);

  const EigReport rep = eigensolve(A, bpath.empty() ? nullptr : &B, opt, {x0.rows, x0.cols, x0.values.data()},
                                   {Y.rows, Y.cols, Y.values.data()});
  return report_eigs(rep, opt, path, bpath, A.rows(), A.nnz(), out, quiet);
}

}  // namespace krysp::cli
