#pragma once
// Block CG checks shared by the host suite and the GPU suite (the same assertions on each backend).
#include <doctest/doctest.h>

#include <cmath>
#include <utility>

#include "krysp/base/error.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "test_util.hpp"

namespace krysp::test {

/// ‖b_j − A·x_j‖/‖b_j‖ for column j of column-major n × s blocks.
inline double column_residual(const CsrMatrix<double>& A, const std::vector<double>& B, const std::vector<double>& X,
                              index_t j) {
  const index_t n = A.rows();
  std::vector<double> b(B.begin() + std::size_t(j) * n, B.begin() + std::size_t(j + 1) * n);
  std::vector<double> x(X.begin() + std::size_t(j) * n, X.begin() + std::size_t(j + 1) * n);
  return true_relative_residual(A, b, x);
}

inline SolveOptions block_options(Backend backend) {
  SolveOptions o;
  o.backend = backend;
  o.precond.kind = PrecondKind::Jacobi;
  o.cg.rtol = 1e-8;
  return o;
}

/// s random right-hand sides on SPD SuiteSparse matrices, in one block or in groups: every column
/// converges (true residual checked independently), and iterations do not exceed single-vector CG's.
inline void check_block_cg_converges(Backend backend) {
  for (const std::string name : {"bcsstk04", "bcsstk05", "662_bus", "gr_30_30", "Trefethen_2000"}) {
    const auto A = load(name);
    const index_t n = A.rows();
    // (s, block_group): all at once (0, the default) up to 16 columns; 12 and 16 in groups of 8
    for (const auto [s, group] : {std::pair<index_t, index_t>{1, 0}, {2, 0}, {4, 0}, {8, 0}, {16, 0}, {12, 8}, {16, 8}}) {
      CAPTURE(name);
      CAPTURE(s);
      CAPTURE(group);
      const auto B = random_vector(std::size_t(n) * s);
      std::vector<double> X;
      SolveOptions o = block_options(backend);
      o.block_group = group;
      const auto rep = solve_block(A, B, s, X, o);
      REQUIRE(rep.columns.size() == std::size_t(s));
      CHECK(rep.converged());
      index_t max_cg = 0;
      for (index_t j = 0; j < s; ++j) {
        CHECK(column_residual(A, B, X, j) <= 1e-7);
        CHECK(rep.columns[j].true_relative_residual == doctest::Approx(column_residual(A, B, X, j)).epsilon(1e-3));
        if (j < 2) {  // single-vector CG on the same right-hand side
          std::vector<double> b(B.begin() + std::size_t(j) * n, B.begin() + std::size_t(j + 1) * n), x;
          const auto single = solve(A, b, x, block_options(backend));
          max_cg = std::max(max_cg, single.iterations);
          double diff = 0, scale = 0;
          for (index_t i = 0; i < n; ++i) {
            diff = std::max(diff, std::abs(x[i] - X[std::size_t(j) * n + i]));
            scale = std::max(scale, std::abs(x[i]));
          }
          CHECK(diff <= 1e-5 * scale);  // both solved to rtol 1e-8 on a moderately conditioned matrix
        }
      }
      CHECK(rep.iterations <= max_cg + 2);
    }
  }
}

/// Identical columns (a rank-1 block), a zero column, and columns converging at different rates.
inline void check_block_cg_rank_deficient(Backend backend) {
  const auto A = load("bcsstk05");
  const index_t n = A.rows(), s = 4;
  const auto b = random_vector(n);
  std::vector<double> B(std::size_t(n) * s);
  for (index_t j = 0; j < s; ++j) std::copy(b.begin(), b.end(), B.begin() + std::size_t(j) * n);
  std::vector<double> X;
  auto rep = solve_block(A, B, s, X, block_options(backend));
  CHECK(rep.converged());
  for (index_t j = 0; j < s; ++j) CHECK(column_residual(A, B, X, j) <= 1e-7);

  // column 1 zero, column 2 an eigen-like easy vector (A·1 scaled), column 3 random
  B = random_vector(std::size_t(n) * s);
  std::fill(B.begin() + n, B.begin() + 2 * n, 0.0);
  X = random_vector(std::size_t(n) * s);  // a nonzero initial guess: the zero column must still give x = 0
  rep = solve_block(A, B, s, X, block_options(backend));
  CHECK(rep.converged());
  CHECK(rep.columns[1].iterations == 0);
  for (index_t i = 0; i < n; ++i) CHECK(X[std::size_t(n) + i] == 0.0);
  for (index_t j : {0, 2, 3}) CHECK(column_residual(A, B, X, j) <= 1e-7);
}

/// Columns with very different difficulty: one right-hand side is A·x for smooth x (fast), the
/// other random; converged columns stop changing, each keeps its own count.
inline void check_block_cg_different_rates(Backend backend) {
  const auto A = load("bcsstk04");
  const index_t n = A.rows(), s = 2;
  std::vector<double> B(std::size_t(n) * s), ones(n, 1.0);
  auto o = block_options(backend);
  A.multiply_host(ones.data(), B.data());
  const auto r = random_vector(n);
  std::copy(r.begin(), r.end(), B.begin() + n);
  // column 0 asks for far less accuracy through a large atol relative to its norm
  o.cg.rtol = 1e-10;
  std::vector<double> X;
  const auto rep = solve_block(A, B, s, X, o);
  CHECK(rep.converged());
  CHECK(rep.columns[0].iterations != rep.columns[1].iterations);
  for (index_t j = 0; j < s; ++j) CHECK(column_residual(A, B, X, j) <= 1e-9);
}

/// The loop's exits leave X with its last step (X moves in the rotation that follows each
/// iteration's step): the recursive residual, which the step moved, and the true residual of the
/// returned X agree, whether the solve ran out of iterations or converged. A missed step would
/// leave the true residual at the previous iteration's, 10% or more away.
inline void check_block_cg_exits(Backend backend) {
  const auto A = laplacian_2d(30, 30);  // well conditioned: the two residuals drift apart by ~1e-14
  const index_t n = A.rows();
  for (const index_t s : {1, 3, 5, 8, 12}) {
    const auto B = random_vector(std::size_t(n) * s);
    for (const index_t cap : {1, 2, 5, 0}) {  // 0: to convergence
      CAPTURE(s);
      CAPTURE(cap);
      auto o = block_options(backend);
      o.cg.max_iters = cap;
      std::vector<double> X;
      const auto rep = solve_block(A, B, s, X, o);
      if (cap > 0) {
        CHECK(rep.iterations == cap);
        for (const auto& c : rep.columns) CHECK(c.status == SolveStatus::MaxIterations);
      } else {
        CHECK(rep.converged());
      }
      for (index_t j = 0; j < s; ++j) {
        const auto& c = rep.columns[j];
        CAPTURE(j);
        CHECK(std::abs(c.true_relative_residual - c.relative_residual) <= 1e-4 * c.relative_residual + 1e-11);
        CHECK(column_residual(A, B, X, j) == doctest::Approx(c.true_relative_residual).epsilon(1e-6));
      }
    }
  }
}

/// An indefinite matrix is reported per column, not looped on.
inline void check_block_cg_not_spd(Backend backend) {
  const auto A = CsrMatrix<double>::from_triplets(4, 4, {0, 1, 2, 3}, {0, 1, 2, 3}, {1.0, -1.0, 2.0, 3.0});
  std::vector<double> B = {0, 1, 0, 0, 0, 1, 1, 0}, X;
  auto o = block_options(backend);
  o.precond.kind = PrecondKind::None;
  const auto rep = solve_block(A, B, 2, X, o);
  CHECK_FALSE(rep.converged());
  CHECK(rep.columns[0].status == SolveStatus::NotSpd);
  CHECK(rep.iterations <= 2);
}

}  // namespace krysp::test
