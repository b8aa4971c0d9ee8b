// A thin cylindrical shell panel of flat four-node shell elements (membrane + MITC4 plate): the
// kind of structural matrix (six unknowns a node, rotations beside translations, condition numbers
// near 1e10) that SuiteSparse's shells are and that AMG must handle.
#include <cmath>
#include <cstdint>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/sparse/generators.hpp"

namespace krysp {
namespace {

constexpr int kDofs = 6;  // u, v, w, θx, θy, θz at each node
constexpr int kElementDofs = 4 * kDofs;
using ElementMatrix = double[kElementDofs][kElementDofs];

// Bilinear shape functions on [-1, 1]² and their derivatives in the rectangle's x = hx·ξ, y = hy·η.
struct Shape {
  double N[4], dx[4], dy[4];
};
constexpr double kXi[4] = {-1, 1, 1, -1}, kEta[4] = {-1, -1, 1, 1};  // nodes counter-clockwise

Shape shape_at(double xi, double eta, double hx, double hy) {
  Shape s;
  for (int a = 0; a < 4; ++a) {
    s.N[a] = 0.25 * (1 + xi * kXi[a]) * (1 + eta * kEta[a]);
    s.dx[a] = 0.25 * kXi[a] * (1 + eta * kEta[a]) / hx;
    s.dy[a] = 0.25 * kEta[a] * (1 + xi * kXi[a]) / hy;
  }
  return s;
}

// K += w · Bᵀ·D·B for a 3-row strain operator B (rows over the element's local dofs).
void add_btdb(ElementMatrix& K, const double (&B)[3][kElementDofs], const double (&D)[3][3], double w) {
  for (int i = 0; i < kElementDofs; ++i)
    for (int j = 0; j < kElementDofs; ++j) {
      double v = 0;
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) v += B[p][i] * D[p][q] * B[q][j];
      K[i][j] += w * v;
    }
}

// The transverse shear strains at (ξ, η) as rows over the dofs: γxz = ∂w/∂x + θy, γyz = ∂w/∂y − θx
// (β_x = θy, β_y = −θx).
void shear_rows(const Shape& s, double (&gxz)[kElementDofs], double (&gyz)[kElementDofs]) {
  for (int i = 0; i < kElementDofs; ++i) gxz[i] = gyz[i] = 0;
  for (int a = 0; a < 4; ++a) {
    gxz[kDofs * a + 2] = s.dx[a], gxz[kDofs * a + 4] = s.N[a];
    gyz[kDofs * a + 2] = s.dy[a], gyz[kDofs * a + 3] = -s.N[a];
  }
}

// The local stiffness of a 2hx × 2hy rectangle, thickness t, E = 1. Membrane: plane stress, 2×2
// Gauss. Bending: Mindlin curvatures, 2×2 Gauss. Shear: MITC4 (γxz tied at the midpoints of the
// edges η = ±1, γyz at ξ = ±1), free of shear locking as t → 0. Drilling (θz): a small spring a
// node, without which the flat elements leave θz with no stiffness.
void local_stiffness(double hx, double hy, double t, double nu, ElementMatrix& K) {
  for (auto& row : K)
    for (double& v : row) v = 0;
  const double plane[3][3] = {{1, nu, 0}, {nu, 1, 0}, {0, 0, (1 - nu) / 2}};
  const double m = t / (1 - nu * nu), b = t * t * t / (12 * (1 - nu * nu)), shear = 5.0 / 6.0 * t / (2 * (1 + nu));
  double Dm[3][3], Db[3][3];
  for (int p = 0; p < 3; ++p)
    for (int q = 0; q < 3; ++q) Dm[p][q] = m * plane[p][q], Db[p][q] = b * plane[p][q];
  const double Ds[3][3] = {{shear, 0, 0}, {0, shear, 0}, {0, 0, 0}};
  const double g = 1 / std::sqrt(3.0), detJ = hx * hy;
  // The tying points' shear rows: γxz at (0, ∓1), γyz at (∓1, 0).
  double gxz_low[kElementDofs], gxz_high[kElementDofs], gyz_left[kElementDofs], gyz_right[kElementDofs];
  double unused[kElementDofs];
  shear_rows(shape_at(0, -1, hx, hy), gxz_low, unused);
  shear_rows(shape_at(0, 1, hx, hy), gxz_high, unused);
  shear_rows(shape_at(-1, 0, hx, hy), unused, gyz_left);
  shear_rows(shape_at(1, 0, hx, hy), unused, gyz_right);
  for (int gp = 0; gp < 4; ++gp) {
    const double xi = (gp & 1) ? g : -g, eta = (gp & 2) ? g : -g;
    const Shape s = shape_at(xi, eta, hx, hy);
    double Bm[3][kElementDofs] = {}, Bb[3][kElementDofs] = {}, Bs[3][kElementDofs] = {};
    for (int a = 0; a < 4; ++a) {
      const int u = kDofs * a;
      Bm[0][u] = s.dx[a], Bm[1][u + 1] = s.dy[a], Bm[2][u] = s.dy[a], Bm[2][u + 1] = s.dx[a];
      // κx = ∂θy/∂x, κy = −∂θx/∂y, κxy = ∂θy/∂y − ∂θx/∂x.
      Bb[0][u + 4] = s.dx[a], Bb[1][u + 3] = -s.dy[a], Bb[2][u + 4] = s.dy[a], Bb[2][u + 3] = -s.dx[a];
    }
    for (int i = 0; i < kElementDofs; ++i) {
      Bs[0][i] = 0.5 * (1 - eta) * gxz_low[i] + 0.5 * (1 + eta) * gxz_high[i];
      Bs[1][i] = 0.5 * (1 - xi) * gyz_left[i] + 0.5 * (1 + xi) * gyz_right[i];
    }
    add_btdb(K, Bm, Dm, detJ);
    add_btdb(K, Bb, Db, detJ);
    add_btdb(K, Bs, Ds, detJ);
  }
  for (int a = 0; a < 4; ++a) {
    const int r = kDofs * a;
    K[r + 5][r + 5] += 1e-3 * 0.5 * (K[r + 3][r + 3] + K[r + 4][r + 4]);
  }
}

}  // namespace

CsrMatrix<double> shell_cylinder(index_t n_around, index_t n_along, double thickness, double nu,
                                 std::vector<double>* coordinates) {
  KRYSP_REQUIRE(n_around > 0 && n_along > 0 && kDofs * (std::int64_t(n_around) + 1) * n_along <= kMaxIndex,
                "shell_cylinder: bad mesh ", n_around, "x", n_along);
  KRYSP_REQUIRE(thickness > 0 && thickness <= 0.1, "shell_cylinder: thickness ", thickness, " is outside (0, 0.1]");
  KRYSP_REQUIRE(nu >= 0 && nu < 0.5, "shell_cylinder: Poisson ratio ", nu, " is outside [0, 0.5)");
  const double pi = std::acos(-1.0), arc = pi / 2, length = 1.0;  // radius 1
  const double dtheta = arc / double(n_around), dz = length / double(n_along);
  ElementMatrix Kl;  // every element is the same rectangle: a chord of dθ by dz
  local_stiffness(std::sin(dtheta / 2), dz / 2, thickness, nu, Kl);
  // Free nodes: j ≥ 1 (the edge z = 0 is clamped), numbered around fastest.
  const index_t around = n_around + 1, nodes = around * n_along, n = kDofs * nodes;
  auto node = [&](index_t i, index_t j) { return (j - 1) * around + i; };
  std::vector<index_t> I, J;
  std::vector<double> V;
  I.reserve(std::size_t(n_around) * std::size_t(n_along) * kElementDofs * kElementDofs);
  J.reserve(I.capacity());
  V.reserve(I.capacity());
  for (index_t i = 0; i < n_around; ++i) {
    // Local axes: x along the chord, y along the cylinder's axis, z the outward normal; local =
    // R·global for displacements and rotations alike, so K = Tᵀ·Kl·T with T = diag(R, ..., R).
    const double mid = (double(i) + 0.5) * dtheta;
    const double R[3][3] = {{-std::sin(mid), std::cos(mid), 0}, {0, 0, 1}, {std::cos(mid), std::sin(mid), 0}};
    double Kg[kElementDofs][kElementDofs];
    for (int r = 0; r < kElementDofs; ++r)
      for (int c = 0; c < kElementDofs; ++c) {
        double v = 0;  // Σ T[p][r]·Kl[p][q]·T[q][c]: only the 3 × 3 blocks of T are nonzero
        for (int p = r / 3 * 3; p < r / 3 * 3 + 3; ++p)
          for (int q = c / 3 * 3; q < c / 3 * 3 + 3; ++q) v += R[p % 3][r % 3] * Kl[p][q] * R[q % 3][c % 3];
        Kg[r][c] = v;
      }
    for (int r = 0; r < kElementDofs; ++r)  // exactly symmetric
      for (int c = 0; c < r; ++c) Kg[r][c] = Kg[c][r] = 0.5 * (Kg[r][c] + Kg[c][r]);
    for (index_t j = 0; j < n_along; ++j) {
      index_t dof[kElementDofs];
      for (int a = 0; a < 4; ++a) {
        const index_t ii = i + (kXi[a] > 0 ? 1 : 0), jj = j + (kEta[a] > 0 ? 1 : 0);
        for (int d = 0; d < kDofs; ++d) dof[kDofs * a + d] = jj == 0 ? -1 : kDofs * node(ii, jj) + d;
      }
      for (int r = 0; r < kElementDofs; ++r)
        for (int c = 0; c < kElementDofs; ++c)
          if (dof[r] >= 0 && dof[c] >= 0 && Kg[r][c] != 0) {
            I.push_back(dof[r]);
            J.push_back(dof[c]);
            V.push_back(Kg[r][c]);
          }
    }
  }
  if (coordinates) {
    coordinates->assign(std::size_t(nodes) * 3, 0.0);
    for (index_t j = 1; j <= n_along; ++j)
      for (index_t i = 0; i < around; ++i) {
        double* x = coordinates->data() + std::size_t(node(i, j)) * 3;
        x[0] = std::cos(double(i) * dtheta), x[1] = std::sin(double(i) * dtheta), x[2] = double(j) * dz;
      }
  }
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}

}  // namespace krysp
