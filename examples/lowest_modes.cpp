// The lowest vibration modes of a structure: the k smallest eigenpairs of K·x = λ·M·x (stiffness
// K, mass M) with LOBPCG through the public API, on the GPU if there is one. Without files, the
// lowest modes of a 2-D Laplacian (a membrane), checked against the analytic eigenvalues.
//   lowest_modes [k]                 2-D Laplacian, 40 × 30 grid
//   lowest_modes K.mtx M.mtx [k]     e.g. tests/data/bcsstk07.mtx tests/data/bcsstm07.mtx
// Prints eigenvalues, residuals and iterations; exits 0 only when every pair converged and
// checks out (residuals recomputed here on the host; eigenvalues against the exact ones).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/matrix_market.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/sparse/generators.hpp"

namespace {
/// max_i Σ_j |A_ij| (bounds ‖A‖₂ from above).
double inf_norm(const krysp::CsrMatrix<double>& A) {
  const auto& rp = A.row_ptr();
  const auto& va = A.values();
  double m = 0;
  for (krysp::index_t i = 0; i < A.rows(); ++i) {
    double s = 0;
    for (krysp::index_t p = rp(i); p < rp(i + 1); ++p) s += std::abs(va(p));
    m = std::max(m, s);
  }
  return m;
}

/// ‖K·x − λ·M·x‖ / ((‖K‖∞ + |λ|·‖M‖∞)·‖x‖) for column j of the row-major n × k eigenvector block,
/// recomputed here: the check does not trust the solver's own residuals.
double relative_residual(const krysp::CsrMatrix<double>& K, const krysp::CsrMatrix<double>* M,
                         const krysp::EigReport& r, int j) {
  const std::size_t n = std::size_t(K.rows());
  std::vector<double> x(n), kx(n), mx(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = r.eigenvectors[i * r.k + j];
  K.multiply_host(x.data(), kx.data());
  if (M) M->multiply_host(x.data(), mx.data()); else mx = x;
  const double lambda = r.eigenvalues[j];
  double res = 0, xx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    res += (kx[i] - lambda * mx[i]) * (kx[i] - lambda * mx[i]);
    xx += x[i] * x[i];
  }
  return std::sqrt(res / xx) / (inf_norm(K) + std::abs(lambda) * (M ? inf_norm(*M) : 1.0));
}

/// The k smallest eigenvalues of the 5-point Dirichlet Laplacian on an nx × ny grid.
std::vector<double> laplacian_eigenvalues(int nx, int ny, int k) {
  std::vector<double> w;
  for (int i = 1; i <= nx; ++i)
    for (int j = 1; j <= ny; ++j)
      w.push_back(4 - 2 * std::cos(i * M_PI / (nx + 1)) - 2 * std::cos(j * M_PI / (ny + 1)));
  std::sort(w.begin(), w.end());
  w.resize(std::size_t(k));
  return w;
}
}  // namespace

int main(int argc, char** argv) {
  const bool files = argc >= 3;
  if (argc > 4 || argc == 2 && !std::atoi(argv[1]))
    return std::fprintf(stderr, "usage: %s [k] | %s K.mtx M.mtx [k]\n", argv[0], argv[0]), 2;
  const int k = files ? (argc == 4 ? std::atoi(argv[3]) : 6) : (argc == 2 ? std::atoi(argv[1]) : 6);
  try {
    const int nx = 40, ny = 30;
    const krysp::CsrMatrix<double> K =
        files ? krysp::io::read_matrix_market<double>(argv[1]) : krysp::laplacian_2d(nx, ny);
    const krysp::CsrMatrix<double> M = files ? krysp::io::read_matrix_market<double>(argv[2]) : krysp::CsrMatrix<double>();
    krysp::EigOptions opt;                 // backend Auto: the GPU when present, else the host
    opt.lobpcg.k = k;
    opt.lobpcg.which = krysp::EigWhich::Smallest;
    opt.lobpcg.tol = 1e-8;
    opt.precond.kind = krysp::PrecondKind::Chebyshev;  // approximates K⁻¹: pays for the smallest pairs
    opt.precond_fallback = true;                      // Jacobi (or none) if Chebyshev cannot be set up
    const krysp::EigReport r = krysp::eigensolve(K, files ? &M : nullptr, opt);

    std::printf("%s: n = %d, k = %d, %s, %d iterations, block %d, preconditioner %s, on %s\n",
                files ? "K x = lambda M x" : "2-D Laplacian 40x30", K.rows(), k, krysp::to_string(r.status),
                int(r.iterations), int(r.block_size), r.preconditioner.c_str(), r.device.c_str());
    const std::vector<double> exact = files ? std::vector<double>() : laplacian_eigenvalues(nx, ny, k);
    bool ok = r.converged() && int(r.eigenvalues.size()) == k;
    std::printf("%4s %22s %14s %14s%s\n", "i", "eigenvalue", "solver resid", "check resid", files ? "" : "   |l - exact|/l");
    for (int j = 0; ok && j < k; ++j) {
      const double check = relative_residual(K, files ? &M : nullptr, r, j);
      ok = ok && r.relative_residuals[j] <= opt.lobpcg.tol && check <= 10 * opt.lobpcg.tol;
      std::printf("%4d %22.14e %14.3e %14.3e", j, r.eigenvalues[j], r.relative_residuals[j], check);
      if (!files) {
        const double err = std::abs(r.eigenvalues[j] - exact[j]) / exact[j];
        ok = ok && err <= 1e-7;
        std::printf("   %.2e", err);
      }
      std::printf("\n");
    }
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
  } catch (const krysp::Error& e) {
    return std::fprintf(stderr, "error: %s\n", e.what()), 2;
  }
}
