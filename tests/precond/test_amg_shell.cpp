// Shells: six unknowns a node, the rotations beside the displacements (shell_cylinder, the
// held-out s3rmt3m3's kind). Checked: the generator (symmetric, positive definite by a dense
// Cholesky, rigid motions strain-free away from the clamp), coordinates that give rigid-body
// modes to nodes with rotation unknowns, and AMG-PCG with them against the default near-nullspace
// and Jacobi-CG (true residuals recomputed outside the solver).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/precond/amg_padding.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

std::vector<double> dense_of(const CsrMatrix<double>& A) {
  const index_t n = A.rows();
  std::vector<double> D(std::size_t(n) * std::size_t(n), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = A.row_ptr()(i); k < A.row_ptr()(i + 1); ++k)
      D[std::size_t(i) * std::size_t(n) + std::size_t(A.col_idx()(k))] = A.values()(k);
  return D;
}

// The smallest pivot of a dense Cholesky over the largest diagonal entry (≤ 0: not SPD).
double cholesky_min_pivot(std::vector<double> D, index_t n) {
  double smallest = 1e300, largest = 0;
  for (index_t j = 0; j < n; ++j) largest = std::max(largest, D[std::size_t(j) * std::size_t(n) + std::size_t(j)]);
  for (index_t j = 0; j < n; ++j) {
    double& d = D[std::size_t(j) * std::size_t(n) + std::size_t(j)];
    for (index_t k = 0; k < j; ++k) d -= D[std::size_t(j) * std::size_t(n) + std::size_t(k)] *
                                         D[std::size_t(j) * std::size_t(n) + std::size_t(k)];
    smallest = std::min(smallest, d);
    if (d <= 0) return d / largest;
    const double r = std::sqrt(d);
    d = r;
    for (index_t i = j + 1; i < n; ++i) {
      double& e = D[std::size_t(i) * std::size_t(n) + std::size_t(j)];
      for (index_t k = 0; k < j; ++k)
        e -= D[std::size_t(i) * std::size_t(n) + std::size_t(k)] * D[std::size_t(j) * std::size_t(n) + std::size_t(k)];
      e /= r;
    }
  }
  return smallest / largest;
}

}  // namespace

TEST_CASE("shell_cylinder: symmetric positive definite, rigid motions strain-free away from the clamp") {
  const index_t around = 6, along = 4, nodes = (around + 1) * along;
  std::vector<double> xyz;
  const auto A = shell_cylinder(around, along, 1e-2, 0.3, &xyz);
  const index_t n = A.rows();
  REQUIRE(n == 6 * nodes);
  REQUIRE(xyz.size() == std::size_t(3 * nodes));
  const std::vector<double> D = dense_of(A);
  double scale = 0, asymmetry = 0;
  for (double v : D) scale = std::max(scale, std::abs(v));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < i; ++j)
      asymmetry = std::max(asymmetry, std::abs(D[std::size_t(i) * std::size_t(n) + std::size_t(j)] -
                                               D[std::size_t(j) * std::size_t(n) + std::size_t(i)]));
  CHECK(asymmetry <= 1e-15 * scale);  // the rotated element matrices' rounding, summed in any order
  const double pivot = cholesky_min_pivot(D, n);
  MESSAGE("shell_cylinder 6x4, t 1e-2: smallest Cholesky pivot / largest diagonal ", pivot);
  CHECK(pivot > 0);

  // Rigid motions (amg::rigid_body_modes, which turns the rotation unknowns too) strain no element,
  // so A·v vanishes on every node not tied to the clamped edge z = 0 (node row j ≥ 2). The drilling
  // springs resist the rotations about x and y a little (their axes are not the normals'); the
  // rotation about the cylinder's axis z is tangent to the shell everywhere, so it is exact.
  const std::vector<double> B = amg::rigid_body_modes(xyz, 3, n);
  for (int mode = 0; mode < 6; ++mode) {
    CAPTURE(mode);
    std::vector<double> v(static_cast<std::size_t>(n)), Av(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) v[std::size_t(i)] = B[std::size_t(i) * 6 + std::size_t(mode)];
    A.multiply_host(v.data(), Av.data());
    double interior = 0, next_to_clamp = 0;
    for (index_t i = 0; i < n; ++i) {
      double& worst = i / 6 / (around + 1) >= 1 ? interior : next_to_clamp;
      worst = std::max(worst, std::abs(Av[std::size_t(i)]));
    }
    const bool drilled = mode == 3 || mode == 4;
    CHECK(interior <= (drilled ? 1e-4 : 1e-12) * scale);
    CHECK(next_to_clamp > 1e-3 * scale);  // the clamp resists it
  }
  CHECK_THROWS_AS(shell_cylinder(0, 4, 1e-2, 0.3), InputError);
  CHECK_THROWS_AS(shell_cylinder(4, 4, 0.0, 0.3), InputError);
  CHECK_THROWS_AS(shell_cylinder(4, 4, 1e-2, 0.5), InputError);
}

TEST_CASE("AMG: coordinates of nodes with rotation unknowns give their rigid-body modes") {
  const std::vector<double> xyz{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3};  // 4 nodes
  CHECK(amg::coordinate_unknowns(xyz, 3, 12) == 3);
  CHECK(amg::coordinate_unknowns(xyz, 3, 24) == 6);
  CHECK_THROWS_WITH_AS(amg::coordinate_unknowns(xyz, 3, 18), doctest::Contains("24 with rotations"), InputError);
  CHECK(amg::coordinate_unknowns(std::vector<double>(8, 0.0), 2, 8) == 2);
  CHECK(amg::coordinate_unknowns(std::vector<double>(8, 0.0), 2, 12) == 3);
  // Six unknowns a node: the displacement rows as for three, and each rotation unknown turns with
  // its axis' rotation only.
  const std::vector<double> B6 = amg::rigid_body_modes(xyz, 3, 24), B3 = amg::rigid_body_modes(xyz, 3, 12);
  for (int p = 0; p < 4; ++p)
    for (int c = 0; c < 6; ++c)
      for (int k = 0; k < 6; ++k) {
        const double v = B6[std::size_t(p * 6 + c) * 6 + std::size_t(k)];
        CHECK(v == (c < 3 ? B3[std::size_t(p * 3 + c) * 6 + std::size_t(k)] : (c == k ? 1.0 : 0.0)));
      }
  const std::vector<double> B2 = amg::rigid_body_modes({0, 0, 1, 0}, 2, 6);  // 2-D frame: u, v, θ
  CHECK(B2 == std::vector<double>{1, 0, 0, 0, 1, -0.5, 0, 0, 1, 1, 0, 0, 0, 1, 0.5, 0, 0, 1});
}

TEST_CASE("AMG on a thin shell: rigid-body modes with rotations beat the default (true residuals checked)") {
  std::vector<double> xyz;
  const auto A = shell_cylinder(16, 16, 1e-3, 0.3, &xyz);
  AmgOptions rigid;
  rigid.coordinates = xyz;
  rigid.coordinate_dim = 3;
  const index_t jacobi = test::cg_iterations(A, test::precond(PrecondKind::Jacobi));
  const test::AmgSolved d = test::amg_pcg(A, AmgOptions{}), r = test::amg_pcg(A, rigid);
  MESSAGE("shell_cylinder 16x16, t 1e-3 (", A.rows(), " rows): Jacobi-CG ", jacobi, ", AMG default ", d.iterations,
          " (", d.preconditioner, "), rigid-body modes ", r.iterations, " (", r.preconditioner, ")");
  CHECK(d.true_residual <= 1e-8);
  CHECK(r.true_residual <= 1e-8);
  CHECK(d.preconditioner.find("b 6") != std::string::npos);
  CHECK(r.preconditioner.find("rigid-body modes") != std::string::npos);
  // The rotations the unit vectors miss (measured 328 against 606, Jacobi-CG 8,181).
  CHECK(double(r.iterations) <= 0.6 * double(d.iterations));
  CHECK(double(r.iterations) <= 0.05 * double(jacobi));
  const HostAmg<double> M(A, rigid);
  REQUIRE(M.levels().size() >= 2);
  CHECK(M.levels()[0].block_size == 6);
  CHECK(M.levels()[1].block_size == 6);  // six coarse unknowns an aggregate
  const test::ApplyFn f = [&](const double* x, double* z) { M.apply(x, z); };
  test::check_symmetric_positive_random(A.rows(), f, 1e-12);

  // A block size that contradicts the coordinates is an InputError naming both.
  AmgOptions wrong = rigid;
  wrong.block_size = 3;
  CHECK_THROWS_WITH_AS(HostAmg<double>(A, wrong), doctest::Contains("coordinates give 6"), InputError);
  wrong.block_size = 6;
  CHECK_NOTHROW(HostAmg<double>(A, wrong));
}

TEST_CASE("AMG pads nodes with removed unknowns: a shell with a supported edge (true residuals checked)") {
  const index_t m = 13;
  const auto S = test::constrained_shell(m);
  REQUIRE(S.rows() == 6 * (m + 1) * m - m);
  REQUIRE(amg::detected_block_size(S) == 1);
  const amg::NodePadding p = amg::node_padding(S);
  CHECK(p.b == 6);
  CHECK(p.short_nodes == m);
  CHECK(p.padded_rows == 6 * (m + 1) * m);
  for (std::size_t i = 1; i < p.position.size(); ++i) REQUIRE(p.position[i - 1] < p.position[i]);
  // The padded matrix: S's entries at the rows and columns `position`, a lone 1 on each unit row.
  const auto P = amg::padded_matrix(S, p);
  REQUIRE(P.rows() == p.padded_rows);
  CHECK(P.nnz() == S.nnz() + (p.padded_rows - S.rows()));
  std::vector<char> unit(std::size_t(P.rows()), 1);
  for (index_t i = 0; i < S.rows(); ++i) {
    const index_t r = p.position[std::size_t(i)];
    unit[std::size_t(r)] = 0;
    REQUIRE(P.row_ptr()(r + 1) - P.row_ptr()(r) == S.row_ptr()(i + 1) - S.row_ptr()(i));
    for (index_t k = 0; k < S.row_ptr()(i + 1) - S.row_ptr()(i); ++k) {
      REQUIRE(P.col_idx()(P.row_ptr()(r) + k) == p.position[std::size_t(S.col_idx()(S.row_ptr()(i) + k))]);
      REQUIRE(P.values()(P.row_ptr()(r) + k) == S.values()(S.row_ptr()(i) + k));
    }
  }
  for (index_t r = 0; r < P.rows(); ++r)
    if (unit[std::size_t(r)]) {
      REQUIRE(P.row_ptr()(r + 1) - P.row_ptr()(r) == 1);
      CHECK(P.col_idx()(P.row_ptr()(r)) == r);
      CHECK(P.values()(P.row_ptr()(r)) == 1.0);
    }

  // AMG by default pads; --amg-block-size 1 does not.
  AmgOptions points;
  points.block_size = 1;
  const test::AmgSolved padded = test::amg_pcg(S, AmgOptions{}), unpadded = test::amg_pcg(S, points);
  MESSAGE("shell 13x13 with a supported edge (", S.rows(), " rows): padded ", padded.iterations, " iterations (",
          padded.preconditioner, "), b 1 ", unpadded.iterations);
  CHECK(padded.true_residual <= 1e-8);
  CHECK(unpadded.true_residual <= 1e-8);
  CHECK(padded.preconditioner.find("b 6") != std::string::npos);
  CHECK(padded.preconditioner.find("on nodes padded to 6 unknowns (13 short nodes, 13 unit rows)") !=
        std::string::npos);
  CHECK(unpadded.preconditioner.find("padded") == std::string::npos);
  // b = 1 is slow enough to take degree 6 (kAmgSlowFactor): 616 iterations, 898 at degree 3; padded 454.
  CHECK(double(padded.iterations) <= 0.8 * double(unpadded.iterations));

  // M = G·M_pad⁻¹·Gᵀ is symmetric positive definite; a block applies each column as a single apply.
  PrecondOptions o;
  o.kind = PrecondKind::Amg;
  const auto M = make_host_preconditioner(S, o);
  REQUIRE(M != nullptr);
  const test::ApplyFn f = [&](const double* x, double* z) { M->apply(x, z); };
  test::check_symmetric_positive_random(S.rows(), f, 1e-12);
  const std::vector<double> R = test::random_vector(std::size_t(S.rows()) * 5);
  const test::BlockColumns bc = test::apply_block_columns(*M, *M, 3, R, 5, 4);
  CHECK(bc.same);
  CHECK(bc.padding);
  // New values of the same structure: updated in place, and still SPD.
  std::vector<double> v(S.values().data(), S.values().data() + S.nnz());
  for (double& e : v) e *= 1.5;
  const auto S2 = CsrMatrix<double>::from_arrays(
      S.rows(), S.cols(), std::vector<index_t>(S.row_ptr().data(), S.row_ptr().data() + S.rows() + 1),
      std::vector<index_t>(S.col_idx().data(), S.col_idx().data() + S.nnz()), v);
  CHECK(M->update_values(S2));
  test::check_symmetric_positive_random(S.rows(), f, 1e-12);

  // Equal nodes, or none: no padding.
  CHECK(amg::node_padding(laplacian_3d(6, 6, 6)).b == 1);
  CHECK(amg::node_padding(shell_cylinder(4, 4, 1e-2, 0.3)).b == 1);
}

TEST_CASE("AMG padding: the bundled SuiteSparse matrices are left as they are") {
  // Their rows do not come in runs of equal patterns often enough (bcsstk10: runs of 1, 2 and 3
  // rows, none of which holds 3/4 of them), or their nodes are equal already.
  for (const std::string name : {"bcsstk01", "bcsstk02", "bcsstk03", "bcsstk04", "bcsstk05", "bcsstk06", "bcsstk07",
                                 "bcsstk08", "bcsstk19", "bcsstk20", "bcsstm07", "bcsstm12", "lund_a", "1138_bus",
                                 "gr_30_30"}) {
    CAPTURE(name);
    CHECK(amg::node_padding(test::load(name)).b == 1);
  }
}
