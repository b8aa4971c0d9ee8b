// Scaling of the library's distributed solvers on the GPUs (issue 29's run, on as many GPUs as
// the machine has): CG (solve_distributed) and LOBPCG k smallest (eigensolve_distributed), both
// with --backend cuda and Jacobi, on an N³ 3-D Laplacian that the ranks assemble as slabs of
// z-planes (bench/dist_slab.hpp). Each solve runs a fixed number of iterations (a tolerance it
// cannot meet), so the time per iteration is measured on the same work at every rank count:
// the median of R solves, each the slowest rank's. One rank per GPU.
//
// usage: mpirun -np P bench_dist_scale [--n N] [--what cg|lobpcg|both] [--k 8] [--cg-iters 200]
//                                      [--eig-iters 20] [--reps 3] [--json out.json] [--backend cuda|host]
//   N defaults to 464 (99.9 M rows). The device transport is NCCL when built, else MPI staged
//   through pinned host memory; KRYSP_COMM=mpi|nccl forces one. --backend host: the same on the
//   host backend (a check of the program without a GPU; its times say nothing of the GPUs').
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist_slab.hpp"
#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/bench/bench_util.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/distributed_solve.hpp"

using namespace krysp;

namespace {

struct Result {
  std::string what;
  index_t iterations = 0;
  double per_iteration_s = 0, setup_s = 0;
};

// `reps` solves after a warm-up, each run by `solve()` returning {iterations, seconds, setup
// seconds}; the medians of the slowest rank's time per iteration and set-up.
template <class Solve>
Result time_solves(const Communicator& comm, const std::string& what, int reps, Solve solve) {
  std::vector<double> per, setup;
  Result r{what};
  for (int t = 0; t <= reps; ++t) {  // the first is a warm-up
    const auto [iterations, seconds, setup_seconds] = solve();
    if (t == 0) continue;
    per.push_back(comm.max(seconds / double(std::max<index_t>(iterations, 1))));
    setup.push_back(comm.max(setup_seconds));
    r.iterations = iterations;
  }
  r.per_iteration_s = bench::median(per);
  r.setup_s = bench::median(setup);
  return r;
}

struct Run {
  index_t iterations;
  double seconds, setup_seconds;
};

Result time_cg(const Communicator& comm, const DistCsrMatrix& A, Backend backend, int iters, int reps) {
  SolveOptions o;
  o.backend = backend;
  o.precond.kind = PrecondKind::Jacobi;
  o.cg.rtol = 0;  // unreachable: every solve runs `iters` iterations
  o.cg.atol = 0;
  o.cg.max_iters = iters;
  const std::vector<double> b(static_cast<std::size_t>(A.rows()), 1.0);
  return time_solves(comm, "cg", reps, [&] {
    std::vector<double> x;
    const SolveReport rep = solve_distributed(A, b, x, o);
    return Run{rep.iterations, rep.seconds, rep.setup_seconds};
  });
}

Result time_lobpcg(const Communicator& comm, const DistCsrMatrix& A, Backend backend, index_t k, int iters,
                   int reps) {
  EigOptions o;
  o.backend = backend;
  o.lobpcg.k = k;
  o.lobpcg.which = EigWhich::Smallest;
  o.lobpcg.tol = 1e-300;  // unreachable: every solve runs `iters` iterations
  o.lobpcg.max_iters = iters;
  o.precond.kind = PrecondKind::Jacobi;
  o.verify = false;
  o.refine = false;
  o.check_symmetry = false;
  return time_solves(comm, "lobpcg", reps, [&] {
    const EigReport rep = eigensolve_distributed(A, nullptr, o);
    return Run{rep.iterations, rep.seconds, rep.setup_seconds};
  });
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::string what = "both", json;
  std::int64_t n = 464;
  index_t k = 8;
  int cg_iters = 200, eig_iters = 20, reps = 3;
  Backend backend = Backend::Cuda;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        if (world_rank == 0) std::fprintf(stderr, "%s needs a value\n", a.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      return argv[++i];
    };
    if (a == "--n") n = std::atoll(next().c_str());
    else if (a == "--what") what = next();
    else if (a == "--k") k = index_t(std::atoi(next().c_str()));
    else if (a == "--cg-iters") cg_iters = std::atoi(next().c_str());
    else if (a == "--eig-iters") eig_iters = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--json") json = next();
    else if (a == "--backend") backend = next() == "host" ? Backend::Host : Backend::Cuda;
    else {
      if (world_rank == 0) std::fprintf(stderr, "unknown option %s (see the file comment)\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (n < 2 || k < 1 || cg_iters < 1 || eig_iters < 1 || reps < 1 || (what != "cg" && what != "lobpcg" && what != "both")) {
    if (world_rank == 0) std::fprintf(stderr, "bad arguments (see the file comment)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int have = backend == Backend::Host || cuda_device_available() ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (world_rank == 0) std::printf("bench_dist_scale: no CUDA device on every rank, nothing to measure\n");
    MPI_Finalize();
    return 0;
  }
  if (backend == Backend::Cuda) detail::use_local_gpu(world_rank);
  int status = 0;
  try {
    const Communicator comm = Communicator::world();
    const auto [z0, z1] = bench::slab_planes(comm, n);
    const DistCsrMatrix A = bench::laplacian_slab(comm, n, n, n, z0, z1);
    std::vector<Result> results;
    if (what != "lobpcg") results.push_back(time_cg(comm, A, backend, cg_iters, reps));
    if (what != "cg") results.push_back(time_lobpcg(comm, A, backend, k, eig_iters, reps));
    // The device transport's name is collective at its first call: every rank asks.
    const std::string transport = backend == Backend::Host ? "host" : comm.device_kind();
    if (comm.rank() == 0) {
      const std::string device = backend == Backend::Host ? "host" : cuda_device_name(), date = bench::utc_now();
      for (const auto& r : results)
        std::printf("%-6s ranks %d  rows %lld  %d iterations  %.3f ms/iteration  setup %.3f s\n", r.what.c_str(),
                    comm.size(), static_cast<long long>(n * n * n), int(r.iterations), 1e3 * r.per_iteration_s,
                    r.setup_s);
      if (!json.empty()) {
        FILE* f = std::fopen(json.c_str(), "w");
        if (!f) throw std::runtime_error("cannot write " + json);
        std::fprintf(f, "{\n  \"benchmark\": \"bench_dist_scale\",\n  \"device\": \"%s\",\n  \"date\": \"%s\",\n",
                     device.c_str(), date.c_str());
        std::fprintf(f, "  \"ranks\": %d,\n  \"grid\": %lld,\n  \"rows\": %lld,\n  \"k\": %d,\n  \"precond\": \"jacobi\",\n",
                     comm.size(), static_cast<long long>(n), static_cast<long long>(n * n * n), int(k));
        std::fprintf(f, "  \"transport\": \"%s\",\n  \"results\": [\n", transport.c_str());
        for (std::size_t i = 0; i < results.size(); ++i)
          std::fprintf(f, "    {\"solver\": \"%s\", \"iterations\": %d, \"seconds_per_iteration\": %.6e, \"setup_seconds\": %.4f}%s\n",
                       results[i].what.c_str(), int(results[i].iterations), results[i].per_iteration_s,
                       results[i].setup_s, i + 1 < results.size() ? "," : "");
        std::fprintf(f, "  ]\n}\n");
        std::fclose(f);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", world_rank, e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
