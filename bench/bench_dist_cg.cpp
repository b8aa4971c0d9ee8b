// Distributed CG on the GPUs (docs/distributed.md): time per iteration of a textbook CG on a 3-D
// Laplacian (7-point) that each rank assembles as its own slab of z-planes (no global matrix
// anywhere), with the share of each iteration the default stream spends waiting for halos and
// for reductions. One rank per GPU (rank r on GPU local-rank mod the device count).
//
// With --library it then times the library's own CG on the same slab: solve_distributed with
// Backend::Cuda (cg() on CudaCgOps over a DeviceDistCsr made from the rank's DistCsrMatrix, as a
// simulation code calls it: its own rows, global column ids, no global matrix), without a
// preconditioner and with Chebyshev, for I iterations (rtol 0: the iteration cap stops it). Each
// call makes its device matrix and preconditioner again (set-up, reported apart); the time per
// iteration is the solve's wall time (set-up excluded, the stopping checks every 16 iterations
// included) over its iterations, on the slowest rank.
//
// usage: mpirun -np P bench_dist_cg [--mode strong|weak] [--n N] [--iters I] [--warmup W]
//                                   [--reps R] [--library] [--json out.json]
//   strong: an N³ grid over all ranks (default N = 384: 56.6 M rows);
//   weak:   an N × N × (N·P) grid, N³ rows per rank (default N = 256: 16.8 M rows a rank).
//   I iterations a sample (default 100), W untimed ones first (default 20), R samples (default 5);
//   the median sample counts (--library: one untimed solve of W iterations, then R solves of I).
//   The device transport is NCCL when built, else MPI staged through pinned host memory;
//   KRYSP_COMM=mpi|nccl forces one.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "dist_cg_kernels.hpp"
#include "dist_slab.hpp"
#include "krysp/base/communicator.hpp"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/device_transport.hpp"
#include "krysp/bench/bench_util.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/dist_csr_device.hpp"

using namespace krysp;

#define CK(call)                                                                                \
  do {                                                                                          \
    auto e_ = (call);                                                                           \
    if (e_ != 0) {                                                                              \
      std::fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, int(e_)); \
      MPI_Abort(MPI_COMM_WORLD, 3);                                                             \
    }                                                                                           \
  } while (0)

namespace {

// A pool of CUDA event pairs around the reductions, read after the run (no synchronisation in it).
struct ReductionTimer {
  std::vector<cudaEvent_t> events;
  std::size_t used = 0;
  void around(const Communicator& comm, double* slot) {
    while (events.size() < used + 2) {
      events.emplace_back();
      CK(cudaEventCreate(&events.back()));
    }
    CK(cudaEventRecord(events[used], 0));
    comm.sum_device(slot, 1);
    CK(cudaEventRecord(events[used + 1], 0));
    used += 2;
  }
  double ms() const {
    double t = 0;
    for (std::size_t k = 0; k + 1 < used; k += 2) {
      float e = 0;
      CK(cudaEventSynchronize(events[k + 1]));
      CK(cudaEventElapsedTime(&e, events[k], events[k + 1]));
      t += e;
    }
    return t;
  }
};

// The textbook CG's figures (medians over the samples, slowest rank).
struct Textbook {
  double ms = 0, halo_share = 0, reduction_share = 0, rr_end = 0;
  std::vector<double> samples;
  std::string transport;
};

// The textbook CG on the DeviceDistCsr of A: W warm-up iterations, then R samples of I.
Textbook run_textbook(const Communicator& comm, const DistCsrMatrix& A, int iters, int warmup, int reps) {
  const DeviceDistCsr op(A);
  const std::int64_t m = A.rows();
  const std::size_t mz = static_cast<std::size_t>(m);
  DeviceArray<double> x(mz), r(mz), p(mz), q(mz), partials(bench::kDotPartials), slots(3);
  double* rr = slots.data();
  double* rr_new = slots.data() + 1;
  double* pq = slots.data() + 2;

  ReductionTimer red;
  auto restart = [&] {  // x = 0, r = p = b = 1, rr = rᵀr
    bench::dist_fill(x.data(), m, 0.0);
    bench::dist_fill(r.data(), m, 1.0);
    bench::dist_fill(p.data(), m, 1.0);
    bench::dist_dot(r.data(), r.data(), m, partials.data(), rr);
    comm.sum_device(rr, 1);
  };
  auto iterate = [&](int count) {
    for (int k = 0; k < count; ++k) {
      op.apply(p.data(), q.data());
      bench::dist_dot(p.data(), q.data(), m, partials.data(), pq);
      red.around(comm, pq);
      bench::dist_cg_update(m, rr, pq, p.data(), q.data(), x.data(), r.data(), partials.data(), rr_new);
      red.around(comm, rr_new);
      bench::dist_cg_direction(m, rr_new, rr, r.data(), p.data());
      std::swap(rr, rr_new);
    }
  };
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  restart();
  iterate(warmup);
  std::vector<double> halo_share, red_share;
  Textbook tb;
  for (int s = 0; s < reps; ++s) {
    restart();
    CK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    op.set_timing(true);
    red.used = 0;
    CK(cudaEventRecord(start, 0));
    iterate(iters);
    CK(cudaEventRecord(stop, 0));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    // The slowest rank sets the pace of a collective loop.
    tb.samples.push_back(comm.max(double(ms) / iters));
    halo_share.push_back(comm.max(op.halo_wait_ms() / ms));
    red_share.push_back(comm.max(red.ms() / ms));
    op.set_timing(false);
  }
  detail::copy_to_host(&tb.rr_end, rr, sizeof tb.rr_end);  // rr: the slot the last swap left current
  tb.ms = bench::median(tb.samples);
  tb.halo_share = bench::median(halo_share);
  tb.reduction_share = bench::median(red_share);
  tb.transport = comm.size() > 1 ? op.transport() : "none";
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return tb;
}

// The library's CG (solve_distributed, Backend::Cuda) with one preconditioner: medians over the
// samples of the solve's time per iteration (slowest rank) and of the set-up time.
struct Library {
  std::string precond;
  double ms = 0, setup_s = 0, true_relative_residual = 0;
  index_t iterations = 0;
  std::vector<double> samples;
};

Library run_library(const DistCsrMatrix& A, PrecondKind precond, int iters, int warmup, int reps) {
  const Communicator& comm = A.comm();
  const std::vector<double> b(static_cast<std::size_t>(A.rows()), 1.0);  // as the textbook run
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.precond.kind = precond;
  o.cg.rtol = 0;  // never met: every sample runs the cap
  auto solve = [&](int cap) {
    o.cg.max_iters = index_t(cap);
    std::vector<double> x;  // x0 = 0
    return solve_distributed(A, b, x, o);
  };
  if (warmup > 0) solve(warmup);
  Library lib;
  lib.precond = to_string(precond);
  std::vector<double> setup;
  for (int s = 0; s < reps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const SolveReport rep = solve(iters);
    lib.iterations = rep.iterations;
    lib.true_relative_residual = rep.true_relative_residual;
    lib.samples.push_back(comm.max(1e3 * rep.seconds / std::max<index_t>(1, rep.iterations)));
    setup.push_back(comm.max(rep.setup_seconds));
  }
  lib.ms = bench::median(lib.samples);
  lib.setup_s = bench::median(setup);
  return lib;
}

void print_samples(std::FILE* f, const std::vector<double>& v) {
  std::fprintf(f, "[");
  for (std::size_t k = 0; k < v.size(); ++k) std::fprintf(f, "%s%.6f", k ? ", " : "", v[k]);
  std::fprintf(f, "]");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::string mode = "strong", json;
  std::int64_t n = 0;
  int iters = 100, warmup = 20, reps = 5;
  bool library = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        if (world_rank == 0) std::fprintf(stderr, "%s needs a value\n", a.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      return argv[++i];
    };
    if (a == "--mode") mode = next();
    else if (a == "--n") n = std::atoll(next().c_str());
    else if (a == "--iters") iters = std::atoi(next().c_str());
    else if (a == "--warmup") warmup = std::atoi(next().c_str());
    else if (a == "--reps") reps = std::atoi(next().c_str());
    else if (a == "--library") library = true;
    else if (a == "--json") json = next();
    else {
      if (world_rank == 0) std::fprintf(stderr, "unknown option %s (see the file comment)\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if ((mode != "strong" && mode != "weak") || iters < 1 || warmup < 0 || reps < 1) {
    if (world_rank == 0) std::fprintf(stderr, "bad arguments (see the file comment)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int have = cuda_device_available() ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (world_rank == 0) std::printf("bench_dist_cg: no CUDA device on every rank, nothing to measure\n");
    MPI_Finalize();
    return 0;
  }
  const int gpu = detail::use_local_gpu(world_rank);
  int status = 0;
  try {
    const Communicator comm = Communicator::world();
    const int P = comm.size(), me = comm.rank();
    if (n <= 0) n = mode == "strong" ? 384 : 256;
    const std::int64_t nx = n, ny = n, nz = mode == "strong" ? n : n * P;
    const std::int64_t z0 = nz * me / P, z1 = nz * (me + 1) / P;
    const DistCsrMatrix A = bench::laplacian_slab(comm, nx, ny, nz, z0, z1);
    const Textbook tb = run_textbook(comm, A, iters, warmup, reps);  // its device memory is freed on return
    std::vector<Library> libs;
    if (library)
      for (const PrecondKind k : {PrecondKind::None, PrecondKind::Chebyshev})
        libs.push_back(run_library(A, k, iters, warmup, reps));
    const std::int64_t rows = A.global_rows();
    const std::int64_t rows_max = static_cast<std::int64_t>(comm.max(double(A.rows())));
    if (me == 0) {
      std::printf("bench_dist_cg: %s scaling, %d rank(s), %lld x %lld x %lld grid = %lld rows (%lld nnz), transport %s\n",
                  mode.c_str(), P, (long long)nx, (long long)ny, (long long)nz, (long long)rows,
                  (long long)A.global_nnz(), tb.transport.c_str());
      std::printf("  device %s (GPU %d of rank 0), %d iterations x %d samples after %d warm-up\n",
                  cuda_device_name().c_str(), gpu, iters, reps, warmup);
      std::printf("  time per iteration %.4f ms (median), waiting for halos %.1f%%, for reductions %.1f%%\n", tb.ms,
                  100 * tb.halo_share, 100 * tb.reduction_share);
      std::printf("  ||r||^2 after the last sample: %.6e\n", tb.rr_end);
      for (const Library& l : libs)
        std::printf("  library CG (solve_distributed), preconditioner %s: %.4f ms per iteration (median), set-up "
                    "%.3f s, %d iterations, true relative residual %.3e\n",
                    l.precond.c_str(), l.ms, l.setup_s, int(l.iterations), l.true_relative_residual);
      if (!json.empty()) {
        std::FILE* f = std::fopen(json.c_str(), "w");
        if (!f) {
          std::fprintf(stderr, "cannot write %s\n", json.c_str());
          status = 2;
        } else {
          std::fprintf(f,
                       "{\n  \"benchmark\": \"bench_dist_cg\",\n  \"date\": \"%s\",\n  \"device\": \"%s\",\n"
                       "  \"ranks\": %d,\n  \"transport\": \"%s\",\n  \"mode\": \"%s\",\n"
                       "  \"grid\": [%lld, %lld, %lld],\n  \"rows\": %lld,\n  \"nnz\": %lld,\n"
                       "  \"rows_per_rank_max\": %lld,\n  \"iterations\": %d,\n  \"warmup\": %d,\n  \"samples\": %d,\n"
                       "  \"ms_per_iteration\": %.6f,\n  \"ms_per_iteration_samples\": ",
                       bench::utc_now().c_str(), bench::json_escape(cuda_device_name()).c_str(), P,
                       tb.transport.c_str(), mode.c_str(), (long long)nx, (long long)ny, (long long)nz,
                       (long long)rows, (long long)A.global_nnz(), (long long)rows_max, iters, warmup, reps, tb.ms);
          print_samples(f, tb.samples);
          std::fprintf(f,
                       ",\n  \"halo_wait_share\": %.6f,\n  \"reduction_wait_share\": %.6f,\n"
                       "  \"residual_norm2_end\": %.6e",
                       tb.halo_share, tb.reduction_share, tb.rr_end);
          // The library's runs, one object per preconditioner ("none", "chebyshev").
          if (!libs.empty()) {
            std::fprintf(f, ",\n  \"library\": {");
            for (std::size_t k = 0; k < libs.size(); ++k) {
              const Library& l = libs[k];
              std::fprintf(f,
                           "%s\n    \"%s\": {\"ms_per_iteration\": %.6f, \"ms_per_iteration_samples\": ",
                           k ? "," : "", l.precond.c_str(), l.ms);
              print_samples(f, l.samples);
              std::fprintf(f, ", \"setup_seconds\": %.6f, \"iterations\": %d, \"true_relative_residual\": %.6e}",
                           l.setup_s, int(l.iterations), l.true_relative_residual);
            }
            std::fprintf(f, "\n  }");
          }
          std::fprintf(f, "\n}\n");
          std::fclose(f);
        }
      }
    }
  } catch (const std::exception& e) {
    // The library's errors are agreed over the ranks: every rank lands here with the same message.
    if (world_rank == 0) std::fprintf(stderr, "bench_dist_cg: %s\n", e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
