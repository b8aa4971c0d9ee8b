#include "krysp/sparse/generators.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "krysp/base/error.hpp"

namespace krysp {

namespace {
/// Builds CSR row by row; `row(i, cols, vals)` fills row i (columns in any order, no duplicates).
template <class RowFn>
CsrMatrix<double> build(index_t rows, index_t cols, std::int64_t nnz_hint, RowFn row) {
  std::vector<index_t> rp(std::size_t(rows) + 1, 0), ci;
  std::vector<double> va;
  ci.reserve(std::size_t(nnz_hint));
  va.reserve(std::size_t(nnz_hint));
  std::vector<std::pair<index_t, double>> r;
  for (index_t i = 0; i < rows; ++i) {
    r.clear();
    row(i, r);
    std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.first < b.first; });
    r.erase(std::unique(r.begin(), r.end(), [](auto& a, auto& b) { return a.first == b.first; }), r.end());
    KRYSP_REQUIRE(std::int64_t(ci.size()) + std::int64_t(r.size()) <= kMaxNnz, "generator: more than ", kMaxNnz,
                  " nonzeros");
    for (auto& e : r) {
      ci.push_back(e.first);
      va.push_back(e.second);
    }
    rp[std::size_t(i) + 1] = index_t(ci.size());
  }
  return CsrMatrix<double>::from_arrays(rows, cols, rp, ci, va);
}
}  // namespace

CsrMatrix<double> laplacian_2d(index_t nx, index_t ny) {
  KRYSP_REQUIRE(nx > 0 && ny > 0 && std::int64_t(nx) * ny <= kMaxIndex, "laplacian_2d: bad grid ", nx, "x", ny);
  const index_t n = nx * ny;
  return build(n, n, std::int64_t(n) * 5, [&](index_t i, auto& r) {
    const index_t x = i % nx, y = i / nx;
    r.push_back({i, 4.0});
    if (x > 0) r.push_back({i - 1, -1.0});
    if (x + 1 < nx) r.push_back({i + 1, -1.0});
    if (y > 0) r.push_back({i - nx, -1.0});
    if (y + 1 < ny) r.push_back({i + nx, -1.0});
  });
}

CsrMatrix<double> laplacian_3d(index_t nx, index_t ny, index_t nz) {
  KRYSP_REQUIRE(nx > 0 && ny > 0 && nz > 0 && std::int64_t(nx) * ny * nz <= kMaxIndex, "laplacian_3d: bad grid ",
                nx, "x", ny, "x", nz);
  const index_t n = nx * ny * nz, plane = nx * ny;
  return build(n, n, std::int64_t(n) * 7, [&](index_t i, auto& r) {
    const index_t x = i % nx, y = (i / nx) % ny, z = i / plane;
    r.push_back({i, 6.0});
    if (x > 0) r.push_back({i - 1, -1.0});
    if (x + 1 < nx) r.push_back({i + 1, -1.0});
    if (y > 0) r.push_back({i - nx, -1.0});
    if (y + 1 < ny) r.push_back({i + nx, -1.0});
    if (z > 0) r.push_back({i - plane, -1.0});
    if (z + 1 < nz) r.push_back({i + plane, -1.0});
  });
}

CsrMatrix<double> laplacian_1d(index_t n) {
  KRYSP_REQUIRE(n > 0, "laplacian_1d: bad order ", n);
  return build(n, n, std::int64_t(n) * 3, [&](index_t i, auto& r) {
    r.push_back({i, 2.0});
    if (i > 0) r.push_back({i - 1, -1.0});
    if (i + 1 < n) r.push_back({i + 1, -1.0});
  });
}

namespace {
// −∇·(k c ∇u) on n³ cells, c(x, y, z) per cell: 7-point finite volumes, harmonic face means.
template <class Coef>
CsrMatrix<double> diffusion_cells(index_t n, double kx, double ky, double kz, Coef c) {
  const index_t plane = n * n;
  return build(plane * n, plane * n, std::int64_t(plane) * n * 7, [&](index_t i, auto& r) {
    const index_t x = i % n, y = (i / n) % n, z = i / plane;
    const double cp = c(x, y, z);
    double diag = 0;
    auto face = [&](index_t xx, index_t yy, index_t zz, double k, index_t j) {
      if (xx < 0 || yy < 0 || zz < 0 || xx >= n || yy >= n || zz >= n) {
        diag += k * cp;  // Dirichlet boundary face
        return;
      }
      const double cq = c(xx, yy, zz), w = k * 2 * cp * cq / (cp + cq);
      diag += w;
      r.push_back({j, -w});
    };
    face(x, y, z - 1, kz, i - plane);
    face(x, y - 1, z, ky, i - n);
    face(x - 1, y, z, kx, i - 1);
    face(x + 1, y, z, kx, i + 1);
    face(x, y + 1, z, ky, i + n);
    face(x, y, z + 1, kz, i + plane);
    r.push_back({i, diag});
  });
}

void check_diffusion(const char* who, index_t n, double kx, double ky, double kz, double jump) {
  KRYSP_REQUIRE(n > 0 && std::int64_t(n) * n * n <= kMaxIndex, who, ": bad grid ", n, "^3");
  KRYSP_REQUIRE(kx > 0 && ky > 0 && kz > 0 && jump > 0 && std::isfinite(kx * ky * kz * jump), who,
                ": coefficients must be positive and finite (", kx, ", ", ky, ", ", kz, ", jump ", jump, ")");
}
}  // namespace

CsrMatrix<double> diffusion_3d(index_t n, double kx, double ky, double kz, double jump) {
  check_diffusion("diffusion_3d", n, kx, ky, kz, jump);
  return diffusion_cells(n, kx, ky, kz, [&](index_t x, index_t y, index_t z) {
    const bool in = x >= n / 4 && x < 3 * n / 4 && y >= n / 4 && y < 3 * n / 4 && z >= n / 2 && z < 3 * n / 4;
    return in ? jump : 1.0;
  });
}

CsrMatrix<double> diffusion_3d_random(index_t n, double kx, double ky, double kz, double jump, double fraction,
                                      std::uint64_t seed) {
  check_diffusion("diffusion_3d_random", n, kx, ky, kz, jump);
  KRYSP_REQUIRE(fraction >= 0 && fraction <= 1, "diffusion_3d_random: fraction ", fraction, " is not in [0, 1]");
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> in(std::size_t(n) * std::size_t(n) * std::size_t(n));
  for (auto& v : in) v = (double(rng() >> 11) * 0x1.0p-53) < fraction;  // the same on every platform
  const std::size_t plane = std::size_t(n) * std::size_t(n);
  return diffusion_cells(n, kx, ky, kz, [&](index_t x, index_t y, index_t z) {
    return in[std::size_t(z) * plane + std::size_t(y) * std::size_t(n) + std::size_t(x)] ? jump : 1.0;
  });
}

CsrMatrix<double> scaled_symmetric(const CsrMatrix<double>& A, double decades, std::uint64_t seed) {
  KRYSP_REQUIRE(A.rows() == A.cols(), "scaled_symmetric: A is ", A.rows(), "x", A.cols(), ", not square");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-decades / 2, decades / 2);
  std::vector<double> d(std::size_t(A.rows()));
  for (double& v : d) v = std::pow(10.0, u(rng));
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const auto& va = A.values();
  std::vector<index_t> row(std::size_t(A.rows()) + 1), col(std::size_t(A.nnz()));
  std::vector<double> val(std::size_t(A.nnz()));
  for (index_t i = 0; i <= A.rows(); ++i) row[i] = rp(i);
  for (index_t i = 0; i < A.rows(); ++i)
    for (index_t k = rp(i); k < rp(i + 1); ++k) {
      col[k] = ci(k);
      val[k] = d[i] * va(k) * d[ci(k)];
    }
  return CsrMatrix<double>::from_arrays(A.rows(), A.cols(), row, col, val);
}

CsrMatrix<double> random_power_law(index_t n, double mean_row, index_t max_row, std::uint64_t seed) {
  KRYSP_REQUIRE(n > 0 && mean_row >= 1 && max_row >= 1, "random_power_law: bad arguments n=", n,
                " mean_row=", mean_row, " max_row=", max_row);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0), val(-1.0, 1.0);
  std::uniform_int_distribution<index_t> col(0, n - 1);
  // Pareto with shape 2 has mean 2·xmin: scale so the mean row length is about mean_row.
  const double xmin = mean_row / 2.0;
  return build(n, n, std::int64_t(n * mean_row * 1.1), [&](index_t, auto& r) {
    const double len = xmin / std::sqrt(1.0 - u(rng));
    const index_t k = index_t(std::min<double>(std::min<double>(max_row, n), std::max(1.0, std::round(len))));
    for (index_t j = 0; j < k; ++j) r.push_back({col(rng), val(rng)});
  });
}

CsrMatrix<double> random_banded(index_t n, index_t mean_row, index_t half_band, std::uint64_t seed) {
  KRYSP_REQUIRE(n > 0 && mean_row >= 1 && half_band >= 0, "random_banded: bad arguments n=", n,
                " mean_row=", mean_row, " half_band=", half_band);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  std::uniform_int_distribution<index_t> len(1, 2 * mean_row - 1);
  return build(n, n, std::int64_t(n) * mean_row, [&](index_t i, auto& r) {
    const index_t lo = std::max<index_t>(0, i - half_band), hi = std::min<index_t>(n - 1, i + half_band);
    std::uniform_int_distribution<index_t> col(lo, hi);
    const index_t k = std::min<index_t>(len(rng), hi - lo + 1);
    for (index_t j = 0; j < k; ++j) r.push_back({col(rng), val(rng)});
  });
}

}  // namespace krysp

namespace krysp {

CsrMatrix<double> elasticity_3d(index_t nx, index_t ny, index_t nz, double nu, std::vector<double>* coordinates,
                                bool clamped) {
  KRYSP_REQUIRE(nx > 0 && ny > 0 && nz > 0 && 3 * std::int64_t(nx + 1) * (ny + 1) * (nz + 1) <= kMaxIndex,
                "elasticity_3d: bad grid ", nx, "x", ny, "x", nz);
  KRYSP_REQUIRE(nu > -1 && nu < 0.5, "elasticity_3d: Poisson ratio ", nu, " is outside (-1, 0.5)");
  // Isotropic D (Voigt: xx, yy, zz, xy, yz, xz) for E = 1.
  const double lam = nu / ((1 + nu) * (1 - 2 * nu)), mu = 1 / (2 * (1 + nu));
  double D[6][6] = {};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) D[i][j] = lam;
    D[i][i] = lam + 2 * mu;
    D[3 + i][3 + i] = mu;
  }
  // The element stiffness of a unit cube (the same for every element): Σ_gauss Bᵀ·D·B·det J.
  double Ke[24][24] = {};
  const double g = 1 / std::sqrt(3.0);
  for (int gp = 0; gp < 8; ++gp) {
    const double xi[3] = {(gp & 1) ? g : -g, (gp & 2) ? g : -g, (gp & 4) ? g : -g};
    double dN[8][3];  // ∂N_a/∂x = 2·∂N_a/∂ξ on the unit cube (x = (ξ + 1)/2)
    for (int a = 0; a < 8; ++a) {
      const double s[3] = {(a & 1) ? 1.0 : -1.0, (a & 2) ? 1.0 : -1.0, (a & 4) ? 1.0 : -1.0};
      for (int d = 0; d < 3; ++d) {
        double v = s[d] / 8;
        for (int e = 0; e < 3; ++e)
          if (e != d) v *= 1 + s[e] * xi[e];
        dN[a][d] = 2 * v;
      }
    }
    double B[6][24] = {};
    for (int a = 0; a < 8; ++a) {
      const double x = dN[a][0], y = dN[a][1], z = dN[a][2];
      B[0][3 * a] = x, B[1][3 * a + 1] = y, B[2][3 * a + 2] = z;
      B[3][3 * a] = y, B[3][3 * a + 1] = x;
      B[4][3 * a + 1] = z, B[4][3 * a + 2] = y;
      B[5][3 * a] = z, B[5][3 * a + 2] = x;
    }
    const double detJ = 1.0 / 8;  // (h/2)³
    for (int i = 0; i < 24; ++i)
      for (int j = 0; j < 24; ++j) {
        double v = 0;
        for (int p = 0; p < 6; ++p)
          for (int q = 0; q < 6; ++q) v += B[p][i] * D[p][q] * B[q][j];
        Ke[i][j] += v * detJ;
      }
  }
  for (int i = 0; i < 24; ++i)  // exactly symmetric (the sums above ran in different orders)
    for (int j = 0; j < i; ++j) Ke[i][j] = Ke[j][i] = 0.5 * (Ke[i][j] + Ke[j][i]);
  // Free nodes: every node (x index ≥ 1 when clamped), numbered x fastest.
  const index_t x0 = clamped ? 1 : 0;                      // the first free x index
  const index_t px = nx + 1 - x0, py = ny + 1, pz = nz + 1;  // free nodes per direction
  auto free_node = [&](index_t i, index_t j, index_t k) { return (k * py + j) * px + (i - x0); };
  const index_t nodes = px * py * pz, n = 3 * nodes;
  std::vector<index_t> I, J;
  std::vector<double> V;
  I.reserve(std::size_t(nx) * ny * nz * 576);
  J.reserve(I.capacity());
  V.reserve(I.capacity());
  for (index_t k = 0; k < nz; ++k)
    for (index_t j = 0; j < ny; ++j)
      for (index_t i = 0; i < nx; ++i) {
        index_t dof[24];
        for (int a = 0; a < 8; ++a) {
          const index_t ii = i + (a & 1), jj = j + ((a >> 1) & 1), kk = k + ((a >> 2) & 1);
          for (int c = 0; c < 3; ++c) dof[3 * a + c] = ii < x0 ? -1 : 3 * free_node(ii, jj, kk) + c;
        }
        for (int r = 0; r < 24; ++r)
          for (int c = 0; c < 24; ++c)
            if (dof[r] >= 0 && dof[c] >= 0 && Ke[r][c] != 0) {
              I.push_back(dof[r]);
              J.push_back(dof[c]);
              V.push_back(Ke[r][c]);
            }
      }
  if (coordinates) {
    coordinates->assign(std::size_t(nodes) * 3, 0.0);
    for (index_t k = 0; k < pz; ++k)
      for (index_t j = 0; j < py; ++j)
        for (index_t i = x0; i <= nx; ++i) {
          double* c = coordinates->data() + std::size_t(free_node(i, j, k)) * 3;
          c[0] = double(i), c[1] = double(j), c[2] = double(k);
        }
  }
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}

}  // namespace krysp
