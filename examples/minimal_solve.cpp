// Minimal krysp: solve A x = b for a Matrix Market file, b = A·1, on the GPU if there is one.
//   minimal_solve A.mtx
#include <cstdio>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/solvers/solve.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s A.mtx\n", argv[0]), 2;
  try {
    const auto A = krysp::io::read_matrix_market<double>(argv[1]);
    std::vector<double> ones(A.rows(), 1.0), b(A.rows()), x;
    A.multiply_host(ones.data(), b.data());
    const krysp::SolveReport r = krysp::solve(A, b, x);  // Jacobi-preconditioned CG, rtol 1e-8
    std::printf("%s in %d iterations, |b-Ax|/|b| = %.2e on %s\n", krysp::to_string(r.status), r.iterations,
                r.true_relative_residual, r.device.c_str());
    return r.converged() ? 0 : 1;
  } catch (const krysp::Error& e) {
    return std::fprintf(stderr, "error: %s\n", e.what()), 2;
  }
}
