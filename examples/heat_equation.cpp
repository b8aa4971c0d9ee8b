// Heat equation u_t = Δu on the unit cube (Dirichlet, u = 0 on the boundary), implicit Euler:
//   (I + dt·L) u_{k+1} = u_k,  L = the 7-point Laplacian / h².
// The matrix is built once and a CgSolver set up once; each step is a warm-started CG solve. The
// SpMV plan counter shows the plan was made once, not per step.
//   heat_equation [grid=64] [steps=20] [--backend auto|cuda|host]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/cg_solver.hpp"
#include "krysp/sparse/generators.hpp"

int main(int argc, char** argv) {
  using namespace krysp;
  int g = 64, steps = 20;
  std::string backend = "auto";
  for (int i = 1, pos = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
    else if (pos++ == 0) g = std::atoi(argv[i]);
    else steps = std::atoi(argv[i]);
  }
  if (g < 2 || steps < 1) return std::fprintf(stderr, "usage: %s [grid>=2] [steps>=1] [--backend B]\n", argv[0]), 2;
  try {
    const double h = 1.0 / (g + 1), dt = 0.1 * h;  // a step of order h: a real, not a trivial, solve
    // I + dt·L: scale the Laplacian's values by dt/h² and add 1 on the diagonal (same structure).
    CsrMatrix<double> A = laplacian_3d(g, g, g);
    std::vector<double> vals(A.values().data(), A.values().data() + A.nnz());
    for (index_t i = 0; i < A.rows(); ++i)
      for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
        vals[k] = (A.col_idx()(k) == i ? 1.0 : 0.0) + dt / (h * h) * vals[k];
    A.set_values(vals);

    SolveOptions opt;
    opt.backend = parse_backend(backend);
    opt.cg.rtol = 1e-10;
    const auto plans_before = SpmvPlan<double>::plans_created();
    CgSolver solver(A, opt);

    // u_0: an off-centre Gaussian hot spot (not an eigenvector, so every step is a real solve).
    std::vector<double> u(A.rows());
    for (int z = 0; z < g; ++z)
      for (int y = 0; y < g; ++y)
        for (int x = 0; x < g; ++x) {
          const double dx = (x + 1) * h - 0.3, dy = (y + 1) * h - 0.6, dz = (z + 1) * h - 0.5;
          u[(std::size_t(z) * g + y) * g + x] = std::exp(-60 * (dx * dx + dy * dy + dz * dz));
        }
    std::printf("heat: %d^3 grid, %d unknowns, dt = %.3e, backend %s\n", g, A.rows(), dt,
                to_string(solver.options().backend));
    std::vector<double> next = u;  // warm start: last step's solution
    for (int k = 1; k <= steps; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      const SolveReport r = solver.solve(u, next);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!r.converged()) return std::fprintf(stderr, "step %d: %s\n", k, to_string(r.status)), 1;
      u = next;
      double peak = 0, heat = 0;
      for (double v : u) {
        peak = std::max(peak, v);
        heat += v * h * h * h;
      }
      std::printf("step %3d  t = %.4f  max u = %.5f  heat = %.6f  %3d iterations  %.2f ms\n", k, k * dt, peak, heat,
                  r.iterations, ms);
    }
    const auto plans = SpmvPlan<double>::plans_created() - plans_before;
    std::printf("SpMV plans made during the run: %llu (%s)\n", static_cast<unsigned long long>(plans),
                solver.plan() ? "made once, in the CgSolver constructor" : "the host backend needs none");
    return plans <= 1 ? 0 : 1;
  } catch (const Error& e) {
    return std::fprintf(stderr, "error: %s\n", e.what()), 2;
  }
}
