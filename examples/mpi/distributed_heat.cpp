// Heat equation u_t = Δu on the unit cube over MPI ranks (docs/distributed.md), implicit Euler:
//   (I + dt·L) u_{k+1} = u_k,  L = the 7-point Laplacian / h², u = 0 on the boundary.
// Each rank assembles its own slab of z-planes, with global column ids, as a simulation code
// would; a DistCsrMatrix is made from those rows once, and every time step is a CG solve
// (solve_distributed) warm-started from the previous step. Rank 0 prints the solution norm per
// step. The start is φ = sin(πx)·sin(πy)·sin(πz), an eigenvector of the discrete L, plus a hot
// spot. (I + dt·L) is symmetric, so each step divides u's component along φ, ⟨u, φ⟩/⟨φ, φ⟩, by
// exactly 1 + dt·μ (μ: φ's eigenvalue), whatever the hot spot does: the run checks that (and that
// |u| decreases) and fails otherwise.
//   mpirun -np P example_distributed_heat [grid=32] [steps=10]
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace {
constexpr double kPi = 3.14159265358979323846;

int run(int argc, char** argv) {
  using namespace krysp;
  const std::int64_t g = argc > 1 ? std::atoll(argv[1]) : 32;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const Communicator comm = Communicator::world();
  if (g < 2 || steps < 1) {
    if (comm.rank() == 0) std::fprintf(stderr, "usage: %s [grid>=2] [steps>=1]\n", argv[0]);
    return 2;
  }
  const int P = comm.size(), p = comm.rank();
  const double h = 1.0 / double(g + 1), dt = 0.1 * h, c = dt / (h * h);

  // This rank's slab: z-planes [z0, z1); row id x + g·(y + g·z), global.
  const std::int64_t z0 = g * p / P, z1 = g * (p + 1) / P, plane = g * g;
  std::vector<index_t> row_ptr{0};
  std::vector<std::int64_t> cols;
  std::vector<double> vals, u, phi;
  for (std::int64_t z = z0; z < z1; ++z)
    for (std::int64_t y = 0; y < g; ++y)
      for (std::int64_t x = 0; x < g; ++x) {
        const std::int64_t row = x + g * (y + g * z);
        auto add = [&](std::int64_t col, double v) {
          cols.push_back(col);
          vals.push_back(v);
        };
        if (z > 0) add(row - plane, -c);
        if (y > 0) add(row - g, -c);
        if (x > 0) add(row - 1, -c);
        add(row, 1.0 + 6.0 * c);
        if (x < g - 1) add(row + 1, -c);
        if (y < g - 1) add(row + g, -c);
        if (z < g - 1) add(row + plane, -c);
        row_ptr.push_back(index_t(cols.size()));
        phi.push_back(std::sin(kPi * (x + 1) * h) * std::sin(kPi * (y + 1) * h) * std::sin(kPi * (z + 1) * h));
        u.push_back(phi.back() + (x == g / 3 && y == 2 * g / 3 && z == g / 2 ? 5.0 : 0.0));  // the hot spot
      }
  const DistCsrMatrix A = DistCsrMatrix::from_local_rows(comm, g * g * g, row_ptr, cols, vals);

  SolveOptions opt;
  opt.backend = Backend::Host;
  opt.precond.kind = PrecondKind::Jacobi;
  opt.cg.rtol = 1e-12;
  auto dot = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return comm.sum(s);  // over the ranks, in rank order: the same on every rank
  };
  auto norm = [&](const std::vector<double>& v) { return std::sqrt(dot(v, v)); };
  // μ = 3·(4/h²)·sin²(πh/2): φ's eigenvalue of L; each step divides u's φ-component by 1 + dt·μ.
  const double mu = 12.0 / (h * h) * std::pow(std::sin(kPi * h / 2), 2), factor = 1.0 / (1.0 + dt * mu);
  const double pp = dot(phi, phi), a0 = dot(u, phi) / pp;
  double previous = norm(u);
  const double n0 = previous;
  if (p == 0)
    std::printf("distributed_heat: %lld^3 = %lld rows on %d ranks, dt = %.3e, |u0| = %.6e\n", (long long)g,
                (long long)(g * g * g), P, dt, n0);
  double worst = 0;
  std::vector<double> x = u;  // warm start: the previous step
  for (int k = 1; k <= steps; ++k) {
    const SolveReport rep = solve_distributed(A, u, x, opt);
    u = x;
    const double nk = norm(u), ak = dot(u, phi) / pp, expected = a0 * std::pow(factor, k);
    worst = std::max(worst, std::abs(ak - expected) / expected);
    if (p == 0)
      std::printf("  step %3d  %s after %3d iterations  |u| = %.10e  phi-component %.10e (exact %.10e)\n", k,
                  to_string(rep.status), rep.iterations, nk, ak, expected);
    if (!rep.converged() || !(nk < previous)) return 1;
    previous = nk;
  }
  if (p == 0) std::printf("distributed_heat: largest relative deviation of the phi-component from the exact decay %.2e\n", worst);
  return worst <= 1e-8 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = run(argc, argv);
  } catch (const krysp::Error& e) {
    std::fprintf(stderr, "distributed_heat: error: %s\n", e.what());
    code = 2;
  }
  MPI_Finalize();
  return code;
}
