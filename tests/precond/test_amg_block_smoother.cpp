// The AMG smoother on node blocks (AmgOptions::block_smoother): Chebyshev in D_b⁻¹A where a level
// has b > 1 unknowns a node. Its pieces against dense references (the blocks' inverses against
// the blocks, λmax(D_b⁻¹A) against LAPACK's pencil (A, D_b)), and what it is for: PCG iterations
// on a mass matrix whose node unknowns are strongly coupled, true residuals recomputed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/precond/amg.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/sparse/generators.hpp"
#include "precond/precond_test_util.hpp"
#include "test_util.hpp"

using namespace krysp;

namespace {

AmgOptions with_blocks(bool on, int b = 0) {
  AmgOptions o;
  o.block_smoother = on;
  o.block_size = b;
  return o;
}

// Node I's b×b diagonal block of A, row-major.
std::vector<double> node_block(const amg::Csr<double>& A, int b, index_t I) {
  std::vector<double> D(std::size_t(b) * b, 0.0);
  for (int r = 0; r < b; ++r)
    for (index_t k = A.row_ptr[std::size_t(I * b + r)]; k < A.row_ptr[std::size_t(I * b + r) + 1]; ++k) {
      const index_t j = A.col_idx[std::size_t(k)];
      if (j / b == I) D[std::size_t(r * b + j % b)] = A.values[std::size_t(k)];
    }
  return D;
}

}  // namespace

TEST_CASE("AMG node-block smoother: the blocks' inverses against the blocks, lambda_max(D_b^-1 A) against LAPACK") {
  const auto A = test::load("bcsstm12");  // b = 3 detected
  const amg::Csr<double> C = amg::to_csr(A);
  const int b = 3;
  std::vector<double> inv, linv;
  CHECK(amg::node_block_inverses(0, C, b, inv, linv));  // its blocks couple their unknowns
  REQUIRE(inv.size() == std::size_t(C.rows) * b);
  double worst = 0, worst_factor = 0;
  for (index_t I = 0; I < C.rows / b; ++I) {
    const std::vector<double> D = node_block(C, b, I);
    const double* M = inv.data() + std::size_t(I) * b * b;
    const double* Li = linv.data() + std::size_t(I) * b * b;
    for (int r = 0; r < b; ++r)
      for (int c = 0; c < b; ++c) {
        double dm = 0, ll = 0;
        for (int k = 0; k < b; ++k) {
          dm += D[std::size_t(r * b + k)] * M[k * b + c];
          ll += Li[k * b + r] * Li[k * b + c];  // (L⁻ᵀ·L⁻¹)(r, c) = D⁻¹(r, c)
        }
        worst = std::max(worst, std::abs(dm - (r == c ? 1.0 : 0.0)));
        worst_factor = std::max(worst_factor, std::abs(ll - M[r * b + c]) / std::abs(M[r * b + r]));
        if (c > r) CHECK(Li[r * b + c] == 0.0);  // lower triangular
      }
  }
  CHECK(worst <= 1e-12);
  CHECK(worst_factor <= 1e-12);

  // The set-up's estimate of λmax(D_b⁻¹A) on level 0 against the pencil (A, D_b) densely.
  const HostAmg<double> H(A, with_blocks(true));
  REQUIRE(H.levels().size() >= 2);
  const AmgLevelInfo& li = H.levels()[0];
  CHECK(li.smoother_block == b);
  const std::size_t n = std::size_t(C.rows);
  std::vector<double> Ad(n * n, 0.0), Db(n * n, 0.0), w;
  for (index_t i = 0; i < C.rows; ++i)
    for (index_t k = C.row_ptr[std::size_t(i)]; k < C.row_ptr[std::size_t(i) + 1]; ++k) {
      const index_t j = C.col_idx[std::size_t(k)];
      Ad[std::size_t(j) * n + std::size_t(i)] = C.values[std::size_t(k)];
      if (j / b == i / b) Db[std::size_t(j) * n + std::size_t(i)] = C.values[std::size_t(k)];
    }
  REQUIRE(lobpcg_detail::dense_eigenvalues(index_t(n), Ad, &Db, w));
  const double lmax = w.back();
  MESSAGE("lambda_max(D_b^-1 A): LAPACK ", lmax, ", Lanczos ", li.block_lambda_estimate, " in ", li.block_lanczos_steps,
          " steps; lambda_max(D^-1 A) ", li.lambda_estimate);
  CHECK(li.block_lambda_estimate <= lmax * (1 + 1e-10));  // a Ritz value: never above
  CHECK(1.1 * li.block_lambda_estimate >= lmax);          // the smoother's boosted interval covers the top
  const std::string sum = H.summary();
  CHECK(sum.find("smoother on 3x3 node blocks") != std::string::npos);

  // Off: point smoothing on every level, and the summary does not name blocks.
  const HostAmg<double> P(A, with_blocks(false));
  for (const auto& l : P.levels()) CHECK(l.smoother_block == 1);
  CHECK(P.summary().find("node blocks") == std::string::npos);

  // Diagonal blocks (kron(L, I₃): no unknown of a node touches another): D_b⁻¹ is D⁻¹, so the
  // level smooths by points and pays for no second Lanczos run.
  const auto L = laplacian_2d(12, 12);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t r = 0; r < L.rows(); ++r)
    for (index_t k = L.row_ptr()(r); k < L.row_ptr()(r + 1); ++k)
      for (int q = 0; q < b; ++q) {
        I.push_back(r * b + q);
        J.push_back(L.col_idx()(k) * b + q);
        V.push_back(L.values()(k) * (1 + q));
      }
  const auto K = CsrMatrix<double>::from_triplets(L.rows() * b, L.rows() * b, I, J, V);
  CHECK_FALSE(amg::node_block_inverses(0, amg::to_csr(K), b, inv, linv));
  AmgOptions o = with_blocks(true, b);
  o.coarse_size = 20;
  const HostAmg<double> Kd(K, o);
  REQUIRE(Kd.levels().size() >= 2);
  CHECK(Kd.levels()[0].smoother_block == 1);
  CHECK(Kd.levels()[0].block_lanczos_steps == 0);
}

TEST_CASE("AMG node-block smoother: PCG iterations on strongly coupled nodes (true residuals checked)") {
  // bcsstm12, a mass matrix of 3 unknowns a node: point-Jacobi-CG 429 iterations from b = ones,
  // block Jacobi 31, AMG with point smoothing 124 (docs/amg.md, "Node-block smoothing").
  const auto A = test::load("bcsstm12");
  const index_t jacobi = test::cg_iterations(A, test::precond(PrecondKind::Jacobi));
  const test::AmgSolved blocks = test::amg_pcg(A, with_blocks(true));
  const test::AmgSolved point = test::amg_pcg(A, with_blocks(false));
  MESSAGE("bcsstm12: Jacobi-CG ", jacobi, ", AMG point smoother ", point.iterations, ", node blocks ",
          blocks.iterations, " iterations (true relres ", blocks.true_residual, ")");
  CHECK(blocks.true_residual <= 1e-8);
  CHECK(point.true_residual <= 1e-8);
  CHECK(double(blocks.iterations) <= 0.15 * double(jacobi));  // the target
  CHECK(4 * blocks.iterations < point.iterations);

  // Elasticity with 3 unknowns a node: no worse than point smoothing (a tenth at most).
  const auto E = elasticity_3d(8, 7, 7, 0.3);
  const test::AmgSolved eb = test::amg_pcg(E, with_blocks(true, 3)), ep = test::amg_pcg(E, with_blocks(false, 3));
  MESSAGE("elasticity_3d 8x7x7 b 3: point ", ep.iterations, ", node blocks ", eb.iterations);
  CHECK(eb.true_residual <= 1e-8);
  CHECK(double(eb.iterations) <= 1.1 * double(ep.iterations));
}

TEST_CASE("AMG node-block smoother: M^-1 symmetric positive definite; re-set-ups reproducible") {
  for (const char* name : {"bcsstm12", "bcsstk06"}) {
    CAPTURE(name);
    const auto A = test::load(name);
    const HostAmg<double> M(A, with_blocks(true, 3));
    REQUIRE(M.levels()[0].smoother_block == 3);
    const test::ApplyFn f = [&](const double* r, double* z) { M.apply(r, z); };
    test::check_symmetric_positive_random(A.rows(), f, 1e-12);
    if (A.rows() <= 500) {
      const auto D = test::dense_operator(A.rows(), f);
      CHECK(test::asymmetry(D, A.rows()) <= 1e-12);
      CHECK(test::positive_definite(D, A.rows()));
    }
    // Numeric re-set-ups: the same calls give the same bits (the block Lanczos starts from the
    // fixed vector on every set-up; the point one from the full set-up's Ritz vector), and the
    // fresh set-up's V-cycle to the settling tolerance of the λ estimates.
    HostAmg<double> R1(A, with_blocks(true, 3)), R2(A, with_blocks(true, 3));
    REQUIRE(R1.update_values(A));
    REQUIRE(R2.update_values(A));
    CHECK(R1.levels()[0].smoother_block == 3);
    std::vector<double> r(std::size_t(A.rows())), z0(r.size()), z1(r.size()), z2(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::sin(0.3 * double(i)) + 0.1;
    M.apply(r.data(), z0.data());
    R1.apply(r.data(), z1.data());
    R2.apply(r.data(), z2.data());
    CHECK(z1 == z2);
    double d = 0, s = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      d = std::max(d, std::abs(z1[i] - z0[i]));
      s = std::max(s, std::abs(z0[i]));
    }
    CHECK(d <= 1e-2 * s);
  }
}

TEST_CASE("AMG node-block smoother: a node block that is not positive definite is an InputError naming it") {
  // kron(Laplacian, B) with b = 2, then one node's block made indefinite while its diagonal stays
  // positive: [[12, 20], [20, 12]].
  const auto K = test::kron_laplacian_block(12, 12, 2);
  std::vector<index_t> rp(K.row_ptr().data(), K.row_ptr().data() + K.rows() + 1);
  std::vector<index_t> ci(K.col_idx().data(), K.col_idx().data() + K.nnz());
  std::vector<double> va(K.values().data(), K.values().data() + K.nnz());
  const index_t node = 40;
  for (index_t r : {2 * node, 2 * node + 1})
    for (index_t k = rp[std::size_t(r)]; k < rp[std::size_t(r) + 1]; ++k)
      if (ci[std::size_t(k)] / 2 == node && ci[std::size_t(k)] != r) va[std::size_t(k)] = 20;
  const auto A = CsrMatrix<double>::from_arrays(K.rows(), K.cols(), rp, ci, va);
  AmgOptions o = with_blocks(true, 2);
  o.coarse_size = 20;
  try {
    HostAmg<double> H(A, o);
    FAIL("an indefinite node block was accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("2x2 diagonal block of node 41") != std::string::npos);
    CHECK(what.find("level-0") != std::string::npos);
    CHECK(what.find("not positive definite") != std::string::npos);
  }
}
