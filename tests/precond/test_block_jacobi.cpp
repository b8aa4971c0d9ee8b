// Block Jacobi on the host: block-size detection from the pattern (SuiteSparse and generated
// matrices), the inverted blocks, SPD-ness, fewer CG iterations than Jacobi, and the errors for
// blocks that are not SPD.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/block_jacobi.hpp"
#include "krysp/precond/jacobi.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {
PrecondOptions bj(int b = 0) {
  PrecondOptions o = test::precond(PrecondKind::BlockJacobi);
  o.block_size = b;
  return o;
}
}  // namespace

TEST_CASE("Block Jacobi: block size detected from the node pattern of SuiteSparse matrices") {
  // bcsstk01: 48 rows = 8 nodes x 6 dof. Its 6x6 diagonal blocks are only partly stored (40% of
  // the off-diagonal entries), but all 8 nodes' rows share their node-level pattern at b = 6 and
  // none does at b = 2, 3, 4 or 8.
  const auto k01 = test::load("bcsstk01");
  CHECK(node_pattern_fraction(k01, 6) == 1.0);
  for (int b : {2, 3, 4, 8}) CHECK(node_pattern_fraction(k01, b) == 0.0);
  CHECK(detect_block_size(k01) == 6);
  CHECK(detect_block_size(test::load("bcsstk02")) == 6);
  CHECK(detect_block_size(test::load("bcsstk04")) == 6);
  const auto m12 = test::load("bcsstm12");  // 491 nodes x 3 dof; 80% of the nodes agree
  CHECK(node_pattern_fraction(m12, 3) == doctest::Approx(0.796).epsilon(0.01));
  CHECK(detect_block_size(m12) == 3);
  // Scalar problems: no block structure.
  for (const std::string name : {"bcsstk06", "gr_30_30", "494_bus", "1138_bus"}) {
    CAPTURE(name);
    CHECK(detect_block_size(test::load(name)) == 1);
  }
  CHECK(detect_block_size(laplacian_3d(10, 10, 10)) == 1);
  CHECK(detect_block_size(laplacian_2d(16, 16)) == 1);
}

TEST_CASE("Block Jacobi: no block size where the would-be nodes do not couple their own unknowns") {
  // 840 rows: every b of 2..8 divides n. A diagonal matrix: each row's node-level pattern is its
  // own node, so all nodes "agree" at every b, but none couples two of its unknowns.
  const index_t n = 840;
  std::vector<index_t> I(static_cast<std::size_t>(n));
  std::vector<double> V(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    I[std::size_t(i)] = i;
    V[std::size_t(i)] = 1.0 + double(i % 7);
  }
  const auto D = CsrMatrix<double>::from_triplets(n, n, I, I, V);
  for (int b : {2, 3, 4, 5, 6, 7, 8}) CHECK(node_pattern_fraction(D, b) == 0.0);
  CHECK(detect_block_size(D) == 1);
  // Two 2-D Laplacians interleaved (u_k at 2k, v_k at 2k + 1), not coupled to each other: both
  // rows of a "node" touch the same neighbouring nodes, but the node's two unknowns never meet.
  const auto L = laplacian_2d(12, 10);
  std::vector<index_t> R, C;
  std::vector<double> W;
  for (index_t r = 0; r < L.rows(); ++r)
    for (index_t p = L.row_ptr()(r); p < L.row_ptr()(r + 1); ++p)
      for (int c = 0; c < 2; ++c) {
        R.push_back(2 * r + c);
        C.push_back(2 * L.col_idx()(p) + c);
        W.push_back(L.values()(p));
      }
  const auto U = CsrMatrix<double>::from_triplets(2 * L.rows(), 2 * L.rows(), R, C, W);
  CHECK(node_pattern_fraction(U, 2) == 0.0);
  CHECK(detect_block_size(U) == 1);
}

TEST_CASE("Block Jacobi: block size detected on generated block matrices") {
  for (int b : {2, 3, 4, 5, 6, 7, 8}) {
    CAPTURE(b);
    const auto A = test::kron_laplacian_block(6, 7, b);  // 42 nodes
    CHECK(node_pattern_fraction(A, b) == 1.0);
    CHECK(detect_block_size(A) == b);
    const HostBlockJacobi<double> M(A);
    CHECK(M.block_size() == b);
  }
  // An explicit size is used as given, and must divide n.
  const auto A = test::kron_laplacian_block(6, 7, 3);
  CHECK(HostBlockJacobi<double>(A, 2).block_size() == 2);
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(A, 4), doctest::Contains("block size 4 does not divide n = 126"),
                       InputError);
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(A, 9), doctest::Contains("block size 9 is out of range"), InputError);
}

TEST_CASE("Block Jacobi: the stored blocks are the inverses of A's diagonal blocks") {
  for (auto [name, b] : {std::pair{std::string("bcsstk06"), 3}, std::pair{std::string("bcsstm12"), 0}, std::pair{std::string("bcsstk01"), 0}}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const HostBlockJacobi<double> M(A, b);
    const int bs = M.block_size();
    double err = 0;
    std::vector<double> blk(bs * bs);
    for (index_t k = 0; k < A.rows() / bs; ++k) {
      extract_diagonal_block(A, bs, k, blk.data());
      const double* inv = M.inverses().data() + std::size_t(k) * bs * bs;
      for (int i = 0; i < bs; ++i)
        for (int j = 0; j < bs; ++j) {
          double s = 0;
          for (int l = 0; l < bs; ++l) s += inv[i * bs + l] * blk[l * bs + j];
          err = std::max(err, std::abs(s - (i == j)));
          CHECK(inv[i * bs + j] == inv[j * bs + i]);  // exactly symmetric
        }
    }
    CHECK(err <= 1e-9);
  }
}

TEST_CASE("Block Jacobi: b = 1 is point Jacobi, fused like it") {
  const auto A = test::load("gr_30_30");
  const HostBlockJacobi<double> M(A);
  REQUIRE(M.block_size() == 1);
  REQUIRE(M.inverse_diagonal() != nullptr);
  const auto inv = jacobi_inverse_diagonal(A);
  for (index_t i = 0; i < A.rows(); ++i) CHECK(M.inverse_diagonal()[i] == doctest::Approx(inv[i]).epsilon(1e-15));
  CHECK(test::cg_iterations(A, bj()) == test::cg_iterations(A, test::precond(PrecondKind::Jacobi)));
  const HostBlockJacobi<double> M2(test::load("bcsstk01"));
  CHECK(M2.inverse_diagonal() == nullptr);  // b = 6
}

TEST_CASE("Block Jacobi: M^-1 is symmetric and positive definite") {
  for (auto [name, b] : {std::pair{std::string("bcsstk01"), 0}, std::pair{std::string("bcsstk06"), 3}, std::pair{std::string("lund_a"), 3}}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const HostBlockJacobi<double> M(A, b);
    const test::ApplyFn f = [&](const double* r, double* z) { M.apply(r, z); };
    const auto D = test::dense_operator(A.rows(), f);
    CHECK(test::asymmetry(D, A.rows()) == 0.0);
    CHECK(test::positive_definite(D, A.rows()));
    test::check_symmetric_positive_random(A.rows(), f, 1e-13);
  }
}

TEST_CASE("Block Jacobi: fewer CG iterations than Jacobi where the matrix has node blocks") {
  struct Case {
    const char* name;
    int b;          // 0: detected
    double bound;   // iterations ≤ bound × Jacobi's (host study: 0.07, 0.76, 0.77, 0.91)
  };
  for (const Case& c : {Case{"bcsstm12", 0, 0.2}, Case{"bcsstk03", 0, 0.85}, Case{"bcsstk06", 3, 0.85},
                        Case{"bcsstk04", 0, 0.95}}) {
    const std::string name = c.name;
    CAPTURE(name);
    const auto A = test::load(c.name);
    const index_t jac = test::cg_iterations(A, test::precond(PrecondKind::Jacobi));
    const index_t blk = test::cg_iterations(A, bj(c.b));
    INFO(name, ": jacobi ", jac, " block-jacobi ", blk);
    CHECK(blk <= c.bound * jac);
  }
}

TEST_CASE("Block Jacobi: CG through solve() reaches rtol 1e-8 on every bundled SPD matrix (true residual)") {
  auto names = test::spd_matrices();
  names.push_back("bcsstm12");
  for (const auto& name : names) {
    CAPTURE(name);
    const auto A = test::load(name);
    const auto b = test::random_vector(A.rows(), 0.5, 1.5);
    std::vector<double> x;
    SolveOptions o;
    o.backend = Backend::Host;
    o.precond = bj();
    const auto rep = solve(A, b, x, o);
    CHECK(rep.status == SolveStatus::Converged);
    CHECK(rep.preconditioner == "block-jacobi");
    CHECK(rep.true_relative_residual <= 1e-7);
  }
}

TEST_CASE("Block Jacobi: apply_block equals apply column by column; padding is untouched") {
  const auto A = test::load("bcsstk01");
  const index_t n = A.rows();
  const HostBlockJacobi<double> M(A);
  for (index_t N : {1, 2, 5}) {
    CAPTURE(N);
    const index_t ldr = N + 1, ldz = N + 4;
    const test::BlockColumns b =
        test::apply_block_columns<double>(M, M, N, test::random_vector(std::size_t(n) * ldr), ldr, ldz);
    CHECK(b.same);
    CHECK(b.padding);
  }
}

TEST_CASE("Block Jacobi: a diagonal block that is not SPD is an error naming the block and the pivot") {
  // Blocks of 2: block 1 = [4 1; 1 4] (SPD), block 2 = [1 1; 1 1] (singular: pivot 2 is 0).
  const std::vector<index_t> I = {0, 0, 1, 1, 2, 2, 3, 3}, J = {0, 1, 0, 1, 2, 3, 2, 3};
  const auto S = CsrMatrix<double>::from_triplets(4, 4, I, J, {4, 1, 1, 4, 1, 1, 1, 1});
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(S, 2),
                       doctest::Contains("diagonal block 2 (rows 3..4) is not positive definite: Cholesky pivot 2 "
                                         "(row 4) = 0 (zero to rounding: the block is singular)"),
                       InputError);
  // Indefinite: [1 2; 2 1] has pivot 2 = 1 − 4 = −3.
  const auto N = CsrMatrix<double>::from_triplets(4, 4, I, J, {4, 1, 1, 4, 1, 2, 2, 1});
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(N, 2), doctest::Contains("Cholesky pivot 2 (row 4) = -3 (negative: the block is indefinite)"),
                       InputError);
  // Singular to rounding: [1 1; 1 1+1e-15] leaves pivot 1.1e-15 <= 16 eps.
  const auto R = CsrMatrix<double>::from_triplets(4, 4, I, J, {4, 1, 1, 4, 1, 1, 1, 1 + 1e-15});
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(R, 2), doctest::Contains("zero to rounding"), InputError);
  // A zero first pivot, and b = 1.
  const auto Z = CsrMatrix<double>::from_triplets(4, 4, I, J, {0, 1, 1, 4, 1, 0, 0, 1});
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(Z, 2), doctest::Contains("diagonal block 1 (rows 1..2)"), InputError);
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(Z, 1), doctest::Contains("diagonal block 1 (row 1)"), InputError);
  // NaN
  const auto X = CsrMatrix<double>::from_triplets(4, 4, I, J, {4, 1, 1, 4, 1, 0, 0, std::nan("")});
  CHECK_THROWS_WITH_AS(HostBlockJacobi<double>(X, 2), doctest::Contains("(not finite)"), InputError);
  // Through the factory and solve(): the same InputError.
  std::vector<double> b(4, 1.0), x;
  SolveOptions o;
  o.backend = Backend::Host;
  o.precond = bj(2);
  CHECK_THROWS_WITH_AS(solve(S, b, x, o), doctest::Contains("diagonal block 2"), InputError);
}
