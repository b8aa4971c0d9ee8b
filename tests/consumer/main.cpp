// Consumer of an installed krysp: builds a 2-D Laplacian from std containers, solves, updates values.
#include <cstdio>
#include <vector>

#include <krysp/krysp.hpp>

int main() {
  krysp::CsrMatrix<double> A = krysp::laplacian_2d(30, 30);
  std::vector<double> b(A.rows(), 1.0), x;
  krysp::CgSolver solver(A);
  const auto r = solver.solve(b, x);
  std::printf("consumer: %s in %d iterations on %s\n", krysp::to_string(r.status), r.iterations, r.backend.c_str());
  return r.converged() && r.true_relative_residual < 1e-7 ? 0 : 1;
}
