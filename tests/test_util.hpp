#pragma once
// Helpers shared by the test suites.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "krysp/io/matrix_market.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/generators.hpp"

namespace krysp::test {

/// A bundled SuiteSparse matrix (tests/data/<name>.mtx).
inline CsrMatrix<double> load(const std::string& name) {
  return io::read_matrix_market<double>(std::string(KRYSP_TEST_DATA) + "/" + name + ".mtx");
}

/// The SPD matrices bundled for the solver tests (SuiteSparse lists them SPD; Cholesky confirmed).
inline const std::vector<std::string>& spd_matrices() {
  static const std::vector<std::string> names = {"bcsstk01", "bcsstk02", "bcsstk03", "bcsstk04", "bcsstk05",
                                                 "bcsstk06", "bcsstk07", "bcsstm07", "494_bus", "662_bus",
                                                 "1138_bus", "gr_30_30", "lund_a", "Trefethen_2000"};
  return names;
}

/// The seed of random_vector: $KRYSP_TEST_SEED, or one from the random device. The test drivers
/// print it, so that a failure on random inputs can be run again with the same ones.
inline std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* e = std::getenv("KRYSP_TEST_SEED");
    if (e && *e) return std::uint64_t(std::strtoull(e, nullptr, 10));
    std::random_device rd;
    return (std::uint64_t(rd()) << 32) ^ std::uint64_t(rd());
  }();
  return seed;
}

/// Uniform random values in [lo, hi), fresh per call (the stream of test_seed()).
template <class T = double>
std::vector<T> random_vector(std::size_t n, double lo = -1.0, double hi = 1.0) {
  static std::mt19937_64 rng{test_seed()};
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = T(d(rng));
  return v;
}

inline double norm2(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

/// max_i |a_i − b_i| / max_i |b_i|: two results of one computation (GPU against host), compared
/// entry by entry relative to the reference's scale (not finite where b is zero).
inline double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i])), s = std::max(s, std::abs(b[i]));
  return d / s;
}

/// ‖b − A·x‖ / ‖b‖ computed independently of any solver.
inline double true_relative_residual(const CsrMatrix<double>& A, const std::vector<double>& b,
                                     const std::vector<double>& x) {
  std::vector<double> ax(b.size());
  A.multiply_host(x.data(), ax.data());
  for (std::size_t i = 0; i < b.size(); ++i) ax[i] = b[i] - ax[i];
  return norm2(ax) / norm2(b);
}

/// s·A: A's structure with every value times s.
inline CsrMatrix<double> scaled(const CsrMatrix<double>& A, double s) {
  std::vector<double> v(A.values().data(), A.values().data() + A.nnz());
  for (double& e : v) e *= s;
  return CsrMatrix<double>::from_arrays(A.rows(), A.cols(),
                                        std::vector<index_t>(A.row_ptr().data(), A.row_ptr().data() + A.rows() + 1),
                                        std::vector<index_t>(A.col_idx().data(), A.col_idx().data() + A.nnz()), v);
}

/// S·L·S for the m³ Laplacian L (laplacian_3d) and the checkerboard S = diag((−1)^(x+y+z)): every
/// off-diagonal entry positive, the near-nullspace the checkerboard, and the constant the top
/// mode of D⁻¹A (AMG's adaptive near-nullspace is tested on it).
inline CsrMatrix<double> signed_laplacian(index_t m) {
  const CsrMatrix<double> L = laplacian_3d(m, m, m);
  auto sign = [m](index_t i) { return ((i % m) + (i / m % m) + (i / (m * m))) % 2 == 0 ? 1.0 : -1.0; };
  std::vector<index_t> rp(L.row_ptr().data(), L.row_ptr().data() + L.rows() + 1);
  std::vector<index_t> ci(L.col_idx().data(), L.col_idx().data() + L.nnz());
  std::vector<double> va(std::size_t(L.nnz()));
  for (index_t i = 0; i < L.rows(); ++i)
    for (index_t k = rp[std::size_t(i)]; k < rp[std::size_t(i) + 1]; ++k)
      va[std::size_t(k)] = sign(i) * L.values()(k) * sign(ci[std::size_t(k)]);
  return CsrMatrix<double>::from_arrays(L.rows(), L.cols(), std::move(rp), std::move(ci), std::move(va));
}

/// P + Pᵀ + D with D making it strictly diagonally dominant: SPD, with P's skewed row lengths.
inline CsrMatrix<double> spd_from(const CsrMatrix<double>& P) {
  std::vector<index_t> I, J;
  std::vector<double> V, diag(P.rows(), 1.0);
  for (index_t i = 0; i < P.rows(); ++i)
    for (index_t k = P.row_ptr()(i); k < P.row_ptr()(i + 1); ++k) {
      const index_t j = P.col_idx()(k);
      const double v = P.values()(k);
      if (j == i) continue;
      I.push_back(i), J.push_back(j), V.push_back(v);
      I.push_back(j), J.push_back(i), V.push_back(v);
      diag[i] += std::abs(v);
      diag[j] += std::abs(v);
    }
  for (index_t i = 0; i < P.rows(); ++i) I.push_back(i), J.push_back(i), V.push_back(diag[i]);
  return CsrMatrix<double>::from_triplets(P.rows(), P.cols(), I, J, V);
}

}  // namespace krysp::test
