// The diffusion generators: symmetric, weakly diagonally dominant with positive diagonals (so SPD
// with the Dirichlet faces), reproducible, and the random media's stiff share near `fraction`.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/generators.hpp"

using namespace krysp;

namespace {
template <class V>
std::vector<typename V::value_type> vec(const V& v) {
  return std::vector<typename V::value_type>(v.data(), v.data() + v.size());
}

// Largest |a_ij − a_ji| over the entries, and whether every row has d_i ≥ Σ|a_ij| (j ≠ i), d_i > 0.
void check_symmetric_dominant(const CsrMatrix<double>& A) {
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  auto at = [&](index_t i, index_t j) {
    for (index_t e = rp[i]; e < rp[i + 1]; ++e)
      if (ci[e] == j) return va[e];
    return 0.0;
  };
  for (index_t i = 0; i < A.rows(); ++i) {
    double d = 0, off = 0;
    for (index_t e = rp[i]; e < rp[i + 1]; ++e) {
      if (ci[e] == i) d = va[e];
      else {
        off += std::abs(va[e]);
        REQUIRE(va[e] < 0);
        REQUIRE(at(ci[e], i) == va[e]);  // the harmonic mean is symmetric in its two cells
      }
    }
    REQUIRE(d > 0);
    REQUIRE(d >= off * (1 - 1e-15));
  }
}
}  // namespace

TEST_CASE("diffusion_3d_random: symmetric M-matrix, reproducible, stiff share near the fraction") {
  const index_t n = 12;
  const auto A = diffusion_3d_random(n, 100, 1, 1, 1e4, 0.2, 7);
  CHECK(A.rows() == n * n * n);
  check_symmetric_dominant(A);
  const auto B = diffusion_3d_random(n, 100, 1, 1, 1e4, 0.2, 7);
  CHECK(vec(A.values()) == vec(B.values()));
  CHECK(vec(A.col_idx()) == vec(B.col_idx()));
  CHECK(vec(diffusion_3d_random(n, 100, 1, 1, 1e4, 0.2, 8).values()) != vec(A.values()));

  // Stiff cells: the diagonal of a cell with c = jump is at least jump·(2·ky + 2·kz) in the interior.
  index_t stiff = 0;
  const auto& rp = A.row_ptr();
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t e = rp[i]; e < rp[i + 1]; ++e)
      if (A.col_idx()[e] == i && A.values()[e] > 1e3) ++stiff;
  const double share = double(stiff) / double(A.rows());
  CHECK(share > 0.15);
  CHECK(share < 0.25);
}

TEST_CASE("diffusion_3d_random: fraction 0 is the uniform medium, fraction 1 the scaled one") {
  const auto U = diffusion_3d(8, 1, 1, 0.01, 1.0);  // c = 1 everywhere
  const auto R0 = diffusion_3d_random(8, 1, 1, 0.01, 1e4, 0.0, 1);
  CHECK(vec(R0.values()) == vec(U.values()));
  CHECK(vec(R0.col_idx()) == vec(U.col_idx()));
  const auto R1 = diffusion_3d_random(8, 1, 1, 0.01, 1e4, 1.0, 1);
  REQUIRE(R1.nnz() == U.nnz());
  for (std::size_t e = 0; e < U.values().size(); ++e)
    CHECK(R1.values()[e] == doctest::Approx(1e4 * U.values()[e]).epsilon(1e-14));
}

TEST_CASE("diffusion generators: bad input is an InputError") {
  CHECK_THROWS_AS(diffusion_3d_random(0, 1, 1, 1, 1e4, 0.2, 1), InputError);
  CHECK_THROWS_AS(diffusion_3d_random(4, -1, 1, 1, 1e4, 0.2, 1), InputError);
  CHECK_THROWS_AS(diffusion_3d_random(4, 1, 1, 1, 1e4, 1.5, 1), InputError);
  CHECK_THROWS_AS(diffusion_3d_random(4, 1, 1, 1, NAN, 0.2, 1), InputError);
  CHECK_THROWS_AS(diffusion_3d(4, 1, 1, 0, 1e4), InputError);
}
