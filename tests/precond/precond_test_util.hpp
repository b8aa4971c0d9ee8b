#pragma once
// Helpers shared by the preconditioner tests (host and GPU): test matrices with a known block
// structure, dense M⁻¹ for SPD checks, and iteration counts through solve().
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

namespace krysp::test {

/// kron(L, B): L the 5-point Laplacian on an nx × ny grid (SPD), B a dense SPD b×b block
/// (b+1 on the diagonal, 1/(1+|i−j|) off it, strictly diagonally dominant). SPD; every node's b
/// rows share one node-level pattern, and every diagonal block is full.
inline CsrMatrix<double> kron_laplacian_block(index_t nx, index_t ny, int b) {
  const auto L = laplacian_2d(nx, ny);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t r = 0; r < L.rows(); ++r)
    for (index_t p = L.row_ptr()(r); p < L.row_ptr()(r + 1); ++p)
      for (int i = 0; i < b; ++i)
        for (int j = 0; j < b; ++j) {
          I.push_back(r * b + i);
          J.push_back(L.col_idx()(p) * b + j);
          V.push_back(L.values()(p) * (i == j ? b + 1.0 : 1.0 / (1 + std::abs(i - j))));
        }
  return CsrMatrix<double>::from_triplets(L.rows() * b, L.rows() * b, I, J, V);
}

/// tridiag(off, diag, off) of order n.
inline CsrMatrix<double> tridiagonal(index_t n, double diag, double off) {
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < n; ++i) {
    I.push_back(i), J.push_back(i), V.push_back(diag);
    if (i > 0) I.push_back(i), J.push_back(i - 1), V.push_back(off);
    if (i + 1 < n) I.push_back(i), J.push_back(i + 1), V.push_back(off);
  }
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}

/// The 1-D Laplacian tridiag(−1, 2, −1) of order n.
inline CsrMatrix<double> laplacian_1d(index_t n) { return tridiagonal(n, 2.0, -1.0); }

using ApplyFn = std::function<void(const double*, double*)>;

/// M⁻¹ as a dense n×n matrix (column j = M⁻¹·e_j), stored column-major.
inline std::vector<double> dense_operator(index_t n, const ApplyFn& apply) {
  std::vector<double> M(std::size_t(n) * n), e(n, 0.0);
  for (index_t j = 0; j < n; ++j) {
    e[j] = 1;
    apply(e.data(), M.data() + std::size_t(j) * n);
    e[j] = 0;
  }
  return M;
}

/// max |M(i,j) − M(j,i)| / max |M(i,j)|
inline double asymmetry(const std::vector<double>& M, index_t n) {
  double d = 0, s = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      d = std::max(d, std::abs(M[std::size_t(i) * n + j] - M[std::size_t(j) * n + i]));
      s = std::max(s, std::abs(M[std::size_t(i) * n + j]));
    }
  return d / s;
}

/// Does the Cholesky factorisation of the symmetric part of M succeed (M positive definite)?
inline bool positive_definite(std::vector<double> M, index_t n) {
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < i; ++j) {
      const double s = 0.5 * (M[std::size_t(i) * n + j] + M[std::size_t(j) * n + i]);
      M[std::size_t(i) * n + j] = M[std::size_t(j) * n + i] = s;
    }
  for (index_t j = 0; j < n; ++j) {
    double d = M[std::size_t(j) * n + j];
    for (index_t k = 0; k < j; ++k) d -= M[std::size_t(j) * n + k] * M[std::size_t(j) * n + k];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    M[std::size_t(j) * n + j] = d;
    for (index_t i = j + 1; i < n; ++i) {
      double t = M[std::size_t(i) * n + j];
      for (index_t k = 0; k < j; ++k) t -= M[std::size_t(i) * n + k] * M[std::size_t(j) * n + k];
      M[std::size_t(i) * n + j] = t / d;
    }
  }
  return true;
}

/// For `trials` random pairs: |xᵀM⁻¹y − yᵀM⁻¹x| ≤ tol·(|x||M⁻¹y| + |y||M⁻¹x|) and xᵀM⁻¹x > 0.
inline void check_symmetric_positive_random(index_t n, const ApplyFn& apply, double tol, int trials = 10) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(n), y(n), mx(n), my(n);
  auto dot = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (index_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
  };
  for (int t = 0; t < trials; ++t) {
    for (index_t i = 0; i < n; ++i) x[i] = u(rng), y[i] = u(rng);
    apply(x.data(), mx.data());
    apply(y.data(), my.data());
    const double xy = dot(x, my), yx = dot(y, mx);
    const double scale = std::sqrt(dot(x, x) * dot(my, my)) + std::sqrt(dot(y, y) * dot(mx, mx));
    CHECK(std::abs(xy - yx) <= tol * scale);
    CHECK(dot(x, mx) > 0);
  }
}

/// CG iterations to rtol 1e-8 on `backend` with preconditioner options `pc`; checks convergence
/// and the true residual.
inline index_t cg_iterations(const CsrMatrix<double>& A, const PrecondOptions& pc, Backend backend = Backend::Host,
                             double rtol = 1e-8) {
  std::vector<double> b(A.rows()), x;
  for (index_t i = 0; i < A.rows(); ++i) b[i] = 1.0 + 0.5 * std::sin(0.37 * i);
  SolveOptions o;
  o.backend = backend;
  o.precond = pc;
  o.cg.rtol = rtol;
  const auto rep = solve(A, b, x, o);
  CHECK(rep.status == SolveStatus::Converged);
  CHECK(rep.true_relative_residual <= 10 * rtol);
  return rep.iterations;
}

/// An AMG-PCG solve through solve() to rtol 1e-8 from b_i = 1 + 0.5 sin(0.37 i), checked converged.
struct AmgSolved {
  index_t iterations = 0;
  double true_residual = 0;    ///< ‖b − A·x‖/‖b‖ recomputed here, outside the solver
  std::string preconditioner;  ///< the report's summary of the hierarchy
};
inline AmgSolved amg_pcg(const CsrMatrix<double>& A, const AmgOptions& amg, Backend backend = Backend::Host) {
  std::vector<double> b(std::size_t(A.rows())), x;
  for (index_t i = 0; i < A.rows(); ++i) b[std::size_t(i)] = 1.0 + 0.5 * std::sin(0.37 * double(i));
  SolveOptions o;
  o.backend = backend;
  o.precond.kind = PrecondKind::Amg;
  o.precond.amg = amg;
  o.cg.rtol = 1e-8;
  const SolveReport r = solve(A, b, x, o);
  CHECK(r.status == SolveStatus::Converged);
  return {r.iterations, true_relative_residual(A, b, x), r.preconditioner};
}

/// AMG-PCG (on `backend`) against Jacobi-PCG (host) from b = A·1 to rtol 1e-8, both checked
/// converged by the true residual recomputed here: {AMG's iterations, Jacobi's}.
inline std::pair<index_t, index_t> amg_and_jacobi_iterations(const CsrMatrix<double>& A, Backend backend) {
  const std::vector<double> ones(std::size_t(A.rows()), 1.0);
  std::vector<double> b(ones.size()), xa, xj;
  A.multiply_host(ones.data(), b.data());
  SolveOptions o;
  o.backend = Backend::Host;
  o.cg.rtol = 1e-8;
  o.precond.kind = PrecondKind::Jacobi;
  const SolveReport jacobi = solve(A, b, xj, o);
  o.backend = backend;
  o.precond.kind = PrecondKind::Amg;
  const SolveReport amg = solve(A, b, xa, o);
  CHECK(jacobi.converged());
  CHECK(amg.converged());
  CHECK(true_relative_residual(A, b, xj) <= 1e-8);
  CHECK(true_relative_residual(A, b, xa) <= 1e-8);
  return {amg.iterations, jacobi.iterations};
}

/// The cell-centred 5-point diffusion operator on an m × m grid with no-flux (Neumann) boundaries:
/// symmetric positive semidefinite, A·1 = 0. Coefficient 1, and `contrast` in the square
/// [m/3, m/3 + m/4)²; a face takes the harmonic mean of its two cells' coefficients, so the
/// island is weakly tied to the rest (as in a real high-contrast inclusion).
inline CsrMatrix<double> neumann_diffusion_2d(index_t m, double contrast) {
  const index_t lo = m / 3, hi = m / 3 + m / 4;
  auto coef = [&](index_t i, index_t j) { return lo <= i && i < hi && lo <= j && j < hi ? contrast : 1.0; };
  std::vector<index_t> I, J;
  std::vector<double> V, diag(std::size_t(m * m), 0.0);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < m; ++j)
      for (const auto& [a, c] : {std::pair<index_t, index_t>{i + 1, j}, std::pair<index_t, index_t>{i, j + 1}}) {
        if (a >= m || c >= m) continue;
        const double c1 = coef(i, j), c2 = coef(a, c), w = 2 * c1 * c2 / (c1 + c2);
        const index_t p = i * m + j, q = a * m + c;
        I.insert(I.end(), {p, q}), J.insert(J.end(), {q, p}), V.insert(V.end(), {-w, -w});
        diag[std::size_t(p)] += w, diag[std::size_t(q)] += w;
      }
  for (index_t p = 0; p < m * m; ++p) I.push_back(p), J.push_back(p), V.push_back(diag[std::size_t(p)]);
  return CsrMatrix<double>::from_triplets(m * m, m * m, I, J, V);
}

/// y = X·b for the factor L of amg::cholesky (pinned unknowns: l_jj = ∞), by the substitutions
/// HostAmg's coarse solve runs.
inline std::vector<double> pinned_solve(index_t n, const std::vector<double>& L, const std::vector<double>& b) {
  const std::size_t N = std::size_t(n);
  std::vector<double> y(b);
  for (std::size_t i = 0; i < N; ++i) {
    for (std::size_t k = 0; k < i; ++k) y[i] -= L[i * N + k] * y[k];
    y[i] /= L[i * N + i];
  }
  for (std::size_t i = N; i-- > 0;) {
    y[i] /= L[i * N + i];
    for (std::size_t k = 0; k < i; ++k) y[k] -= L[i * N + k] * y[i];
  }
  return y;
}

/// M·Mᵀ for a random n × (n − 1) M, scaled D·(M·Mᵀ)·D: singular (rank n − 1), its null vector
/// D⁻¹·v with Mᵀ·v = 0 nonzero everywhere (almost surely).
inline std::vector<double> singular_gram(index_t n, unsigned seed, const std::vector<double>& d) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const std::size_t N = std::size_t(n);
  std::vector<double> M(N * (N - 1)), A(N * N, 0.0);
  for (double& e : M) e = u(rng);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      for (std::size_t k = 0; k + 1 < N; ++k) A[i * N + j] += M[i * (N - 1) + k] * M[j * (N - 1) + k];
      A[i * N + j] *= d[i] * d[j];
    }
  return A;
}

/// A right-hand side in A's range: x* uniform in [−1, 1) (reproducible from `seed`), b = A·x*.
struct ConsistentRhs {
  std::vector<double> xs, b;
};
inline ConsistentRhs consistent_rhs(const CsrMatrix<double>& A, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  ConsistentRhs r{std::vector<double>(std::size_t(A.rows())), std::vector<double>(std::size_t(A.rows()))};
  for (double& v : r.xs) v = u(rng);
  A.multiply_host(r.xs.data(), r.b.data());
  return r;
}

/// M⁻¹ applied to the fixed vector r_i = cos(0.3·i), returned on the host: two preconditioners
/// compared bit for bit. A device one (space() is Device) gets r uploaded and z downloaded.
inline std::vector<double> applied_to_cosine(const Preconditioner<double>& M) {
  const std::size_t n = std::size_t(M.rows());
  std::vector<double> r(n), z(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = std::cos(0.3 * double(i));
  if (M.space() == MemorySpace::Host) {
    M.apply(r.data(), z.data());
    return z;
  }
  DeviceArray<double> dr(n), dz(n);
  dr.upload(r.data(), n);
  M.apply(dr.data(), dz.data());
  dz.download(z.data(), n);
  return z;
}

/// What apply_block_columns found: whether every column had the bits of a single apply, and
/// whether the padding of Z (columns N .. ldz − 1) was left as it was.
struct BlockColumns {
  bool same = true, padding = true;
};

/// `block`.apply_block on R's first N columns (n rows, leading dimension ldr) into Z (leading
/// dimension ldz, filled with −7 first), each column compared bit for bit with `single`.apply on
/// that column (host preconditioners; `single` may be `block` or a second set-up of it).
template <class T>
BlockColumns apply_block_columns(const Preconditioner<T>& block, const Preconditioner<T>& single, index_t N,
                                 const std::vector<T>& R, index_t ldr, index_t ldz) {
  const std::size_t n = std::size_t(block.rows());
  std::vector<T> Z(n * std::size_t(ldz), T(-7)), r(n), z(n);
  block.apply_block(N, R.data(), ldr, Z.data(), ldz);
  BlockColumns out;
  for (index_t c = 0; c < N; ++c) {
    for (std::size_t i = 0; i < n; ++i) r[i] = R[i * std::size_t(ldr) + std::size_t(c)];
    single.apply(r.data(), z.data());
    for (std::size_t i = 0; i < n; ++i) out.same = out.same && Z[i * std::size_t(ldz) + std::size_t(c)] == z[i];
  }
  for (std::size_t i = 0; i < n; ++i)
    for (index_t c = N; c < ldz; ++c) out.padding = out.padding && Z[i * std::size_t(ldz) + std::size_t(c)] == T(-7);
  return out;
}

/// ‖e‖/‖x*‖ for e = x − x* without its least-squares fit by the k columns of N (n × k,
/// row-major): the error of a singular system's solution, unique only up to A's null space N.
inline double error_modulo(const std::vector<double>& x, const std::vector<double>& xs, const std::vector<double>& N,
                           int k) {
  const std::size_t n = xs.size();
  std::vector<double> e(n);
  for (std::size_t i = 0; i < n; ++i) e[i] = x[i] - xs[i];
  std::vector<std::vector<double>> q;  // N's columns, orthonormalised (Gram–Schmidt)
  for (int c = 0; c < k; ++c) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = N[i * std::size_t(k) + std::size_t(c)];
    for (const auto& w : q) {
      double d = 0;
      for (std::size_t i = 0; i < n; ++i) d += v[i] * w[i];
      for (std::size_t i = 0; i < n; ++i) v[i] -= d * w[i];
    }
    double nv = 0;
    for (double t : v) nv += t * t;
    for (double& t : v) t /= std::sqrt(nv);
    q.push_back(std::move(v));
  }
  for (const auto& w : q) {
    double d = 0;
    for (std::size_t i = 0; i < n; ++i) d += e[i] * w[i];
    for (std::size_t i = 0; i < n; ++i) e[i] -= d * w[i];
  }
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) err += e[i] * e[i], norm += xs[i] * xs[i];
  return std::sqrt(err / norm);
}

/// AMG-CG to rtol 1e-8 on `backend` for the consistent singular system A·x = A·x* (x* from
/// consistent_rhs(A, seed)), whose null space N (n × k, row-major) makes the coarsest matrix
/// singular: converged, the summary naming the pinned pivots (`pinned`, e.g. "with 3 pivots zero
/// to rounding pinned"), the true residual, and x − x* without its part in N. On the GPU, also
/// set up there, and within 2 iterations of the host.
inline void check_singular_amg(const CsrMatrix<double>& A, const AmgOptions& amg, const std::vector<double>& N, int k,
                               const std::string& pinned, unsigned seed, Backend backend) {
  const auto [xs, b] = consistent_rhs(A, seed);
  SolveOptions o;
  o.precond.kind = PrecondKind::Amg;
  o.precond.amg = amg;
  o.cg.rtol = 1e-8;
  o.backend = backend;
  std::vector<double> x;
  const SolveReport r = solve(A, b, x, o);
  CAPTURE(r.preconditioner);
  REQUIRE(r.status == SolveStatus::Converged);
  CHECK(r.preconditioner.find(pinned) != std::string::npos);
  CHECK(true_relative_residual(A, b, x) <= 1e-8);
  const double err = error_modulo(x, xs, N, k);
  MESSAGE(std::string(to_string(backend)), ": ", r.iterations, " iterations, error outside the null space ", err,
          "; ", r.preconditioner);
  CHECK(err <= 1e-5);
  if (backend == Backend::Cuda) {
    CHECK(r.preconditioner.find("set up on the GPU") != std::string::npos);
    std::vector<double> xh;
    o.backend = Backend::Host;
    const SolveReport h = solve(A, b, xh, o);
    CHECK(std::abs(r.iterations - h.iterations) <= 2);
  }
}

/// check_singular_amg on no-flux diffusion (A·1 = 0), 30 × 30 and 60 × 60, and 60 × 60 with an
/// island of contrast 1e6: the zero pivot lies in a row of coefficient 1 there, but the rounding
/// of the island's entries reaches it, so only the matrix-wide noise level n·ε·max a_ii pins it.
inline void check_neumann_amg(Backend backend) {
  for (const auto& [m, contrast] : {std::pair<index_t, double>{30, 1.0}, {60, 1.0}, {60, 1e6}}) {
    CAPTURE(m);
    CAPTURE(contrast);
    const CsrMatrix<double> A = neumann_diffusion_2d(m, contrast);
    check_singular_amg(A, AmgOptions{}, std::vector<double>(std::size_t(A.rows()), 1.0), 1,
                       "with 1 pivot zero to rounding pinned", 11, backend);
  }
}

/// check_singular_amg on a floating elastic body (elasticity_3d(6, 6, 6) with no face clamped),
/// its null space the six rigid-body modes R: the coarse space holds the translations exactly
/// (unit vectors, b = 3) or all six modes (the coordinates), so as many pivots are pinned.
inline void check_floating_body_amg(const CsrMatrix<double>& A, const std::vector<double>& xyz,
                                    const std::vector<double>& R, Backend backend) {
  check_singular_amg(A, AmgOptions{}, R, 6, "with 3 pivots zero to rounding pinned", 3, backend);
  AmgOptions rigid;
  rigid.coordinates = xyz;
  rigid.coordinate_dim = 3;
  check_singular_amg(A, rigid, R, 6, "with 6 pivots zero to rounding pinned", 3, backend);
}

/// LOBPCG k = 4 smallest with AMG on the 60 × 60 no-flux Laplacian (neumann_diffusion_2d, contrast
/// 1) on `backend`, against its analytic spectrum λ = 4 sin²(πi/2m) + 4 sin²(πj/2m), i, j =
/// 0..m−1: 0, a double one, then λ(1,1). The zero pair needs the norm test (a relative residual
/// has no scale at λ = 0); the coarsest matrix's zero pivot is pinned.
inline void check_neumann_smallest_pairs(Backend backend) {
  const index_t m = 60;
  const CsrMatrix<double> A = neumann_diffusion_2d(m, 1.0);
  const double pi = std::acos(-1.0);
  std::vector<double> exact;
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < m; ++j) {
      const double si = std::sin(pi * double(i) / (2.0 * double(m))), sj = std::sin(pi * double(j) / (2.0 * double(m)));
      exact.push_back(4 * si * si + 4 * sj * sj);
    }
  std::sort(exact.begin(), exact.end());
  EigOptions o;
  o.lobpcg.k = 4;
  o.lobpcg.which = EigWhich::Smallest;
  o.lobpcg.tol = 1e-8;
  o.lobpcg.convergence = EigConvergence::Norm;
  o.precond.kind = PrecondKind::Amg;
  o.backend = backend;
  const auto r = eigensolve(A, nullptr, o);
  CAPTURE(r.preconditioner);
  REQUIRE(r.status == EigStatus::Converged);
  CHECK(r.preconditioner.find("pivot zero to rounding pinned") != std::string::npos);
  CHECK(std::abs(r.eigenvalues[0]) <= 1e-10 * exact[4]);
  for (std::size_t j = 1; j < 4; ++j) CHECK(r.eigenvalues[j] == doctest::Approx(exact[j]).epsilon(1e-8));
  MESSAGE(std::string(to_string(backend)), ": eigenvalues ", r.eigenvalues[0], ", ", r.eigenvalues[1], ", ",
          r.eigenvalues[2], ", ", r.eigenvalues[3], " after ", r.iterations, " iterations");
}

inline PrecondOptions precond(PrecondKind kind) {
  PrecondOptions o;
  o.kind = kind;
  return o;
}

/// shell_cylinder(m, m, 1e-3, 0.3) as SuiteSparse's shells come (s3rmt3m3): every node block that
/// holds an entry stored whole, explicit zeros kept (codes that assemble full element matrices
/// store them so), then the x displacement of the m nodes on the edge θ = 0 removed (a support).
/// m·(6m + 5) rows: for m = 13, 1,079 = 13 · 83, which no block size from 2 to 8 divides.
inline CsrMatrix<double> constrained_shell(index_t m) {
  const auto A = shell_cylinder(m, m, 1e-3, 0.3);
  const index_t n = A.rows(), around = m + 1;
  std::vector<index_t> keep(std::size_t(n), -1);  // A's unknown → its row after the removal
  index_t kept = 0;
  for (index_t i = 0; i < n; ++i) {
    const index_t node = i / 6, c = i % 6;
    if (!(node % around == 0 && c == 0)) keep[std::size_t(i)] = kept++;
  }
  std::vector<index_t> rp(1, 0), ci;
  std::vector<double> va;
  std::vector<double> row(std::size_t(n), 0.0);
  for (index_t i = 0; i < n; ++i) {
    if (keep[std::size_t(i)] < 0) continue;
    std::vector<index_t> blocks;  // the column nodes row i touches
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) {
      row[std::size_t(A.col_idx()(k))] = A.values()(k);
      if (blocks.empty() || blocks.back() != A.col_idx()(k) / 6) blocks.push_back(A.col_idx()(k) / 6);
    }
    for (index_t J : blocks)
      for (index_t j = 6 * J; j < 6 * J + 6; ++j)
        if (keep[std::size_t(j)] >= 0) ci.push_back(keep[std::size_t(j)]), va.push_back(row[std::size_t(j)]);
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k) row[std::size_t(A.col_idx()(k))] = 0.0;
    rp.push_back(index_t(ci.size()));
  }
  return CsrMatrix<double>::from_arrays(kept, kept, rp, ci, va);
}

}  // namespace krysp::test
