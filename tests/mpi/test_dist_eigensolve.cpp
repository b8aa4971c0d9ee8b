// Distributed LOBPCG (eigensolve_distributed): the one-rank eigensolve()'s eigenvalues on every
// partition, dense LAPACK's eigenvalues, residuals recomputed from the global matrix, bitwise
// reruns, and refusals agreed on every rank.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/solvers/distributed_checks.hpp"
#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/lobpcg_small.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_test_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
// All eigenvalues of A (and B), ascending, by dense LAPACK (as tests/trust_checks.hpp's
// lapack_eigenvalues).
std::vector<double> dense_eigenvalues(const CsrMatrix<double>& A, const CsrMatrix<double>* B = nullptr) {
  const index_t n = A.rows();
  auto dense = [n](const CsrMatrix<double>& M) {
    std::vector<double> D(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0);
    const auto v = M.host_view();
    for (index_t i = 0; i < n; ++i)
      for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k) D[std::size_t(v.col_idx[k]) * n + i] = v.values[k];
    return D;
  };
  std::vector<double> w;
  const std::vector<double> DB = B ? dense(*B) : std::vector<double>();
  REQUIRE(lobpcg_detail::dense_eigenvalues(n, dense(A), B ? &DB : nullptr, w));
  return w;
}

EigOptions options(index_t k, EigWhich which, PrecondKind p, double tol) {
  EigOptions o;
  o.backend = Backend::Host;
  o.precond.kind = p;
  o.lobpcg.k = k;
  o.lobpcg.which = which;
  o.lobpcg.tol = tol;
  o.refine = false;  // not distributed (a direct solver); the one-rank reference runs without it too
  return o;
}

// Each matrix with the ends and preconditioners (none, jacobi: the distributed ones) that the
// one-rank run converges with at tol 1e-8 without refinement. The smallest pairs of 1138_bus
// stagnate there with either (they need inner PCG or Chebyshev), so only its largest are here;
// bcsstk06's smallest need a block of 12 (default 6 or 8 for k = 4, 5 stagnates).
struct Case {
  std::string name;
  CsrMatrix<double> A;
  EigWhich which;
  PrecondKind precond;
  std::vector<index_t> ks;
  index_t block_size = 0;
};

std::vector<Case> cases() {
  const auto S = EigWhich::Smallest, L = EigWhich::Largest;
  const auto J = PrecondKind::Jacobi, N = PrecondKind::None;
  return {{"bcsstk06", load("bcsstk06"), S, J, {4, 8}, 12},  {"bcsstk06", load("bcsstk06"), L, N, {5, 8}},
          {"1138_bus", load("1138_bus"), L, N, {4, 8}},      {"gr_30_30", load("gr_30_30"), S, N, {6}},
          {"gr_30_30", load("gr_30_30"), L, J, {8}},         {"laplacian_3d(9,8,7)", laplacian_3d(9, 8, 7), S, N, {4, 8}},
          {"laplacian_3d(9,8,7)", laplacian_3d(9, 8, 7), L, N, {6}}};
}

void check_against_one_rank(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const EigOptions& o) {
  const auto& comm = world();
  const double tol = o.lobpcg.tol;
  const index_t k = o.lobpcg.k;
  const EigReport one = eigensolve(A, B, o);  // the one-rank reference, on every rank
  REQUIRE(one.converged());
  const auto D = DistCsrMatrix::scatter(comm, A);
  const auto DB = B ? DistCsrMatrix::scatter(comm, *B, 0, D.row_starts()) : D;
  const EigReport rep = eigensolve_distributed(D, B ? &DB : nullptr, o);
  CAPTURE(rep.iterations);
  CAPTURE(rep.verification);
  CHECK(rep.converged());
  REQUIRE(rep.eigenvalues.size() == std::size_t(k));
  REQUIRE(rep.eigenvectors.size() == std::size_t(D.rows()) * k);
  CHECK(rep.verification.rfind("passed", 0) == 0);
  CHECK(rep.n == A.rows());
  // The one-rank answer to 1e-10 relative; on one rank the same iterations.
  for (index_t j = 0; j < k; ++j) {
    CAPTURE(j);
    CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= 1e-10 * std::abs(one.eigenvalues[j]));
  }
  if (comm.size() == 1) {
    CHECK(rep.iterations == one.iterations);
    CHECK(rep.eigenvalues == one.eigenvalues);
  }
  // Dense LAPACK's eigenvalues to 10·tol relative.
  const std::vector<double> all = dense_eigenvalues(A, B);
  for (index_t j = 0; j < k; ++j) {
    const double want = o.lobpcg.which == EigWhich::Smallest ? all[std::size_t(j)] : all[all.size() - 1 - j];
    CAPTURE(j);
    CHECK(std::abs(rep.eigenvalues[j] - want) <= 10 * tol * std::abs(want));
  }
  // The residuals recomputed from the global matrices and the gathered eigenvectors.
  const auto X = gather_rows(comm, rep.eigenvectors, A.rows(), D.first_row(), k);
  CHECK(worst_relative_residual(A, B, X, rep.eigenvalues) <= 1.01 * tol);
  // Every rank holds the same (reduced) numbers.
  for (double e : comm.allgather(rep.eigenvalues[k - 1])) CHECK(e == rep.eigenvalues[k - 1]);
  for (auto it : comm.allgather(rep.iterations)) CHECK(it == rep.iterations);
}
}  // namespace

TEST_CASE("distributed LOBPCG: the one-rank and LAPACK eigenvalues on every partition") {
  for (const auto& c : cases()) {
    for (index_t k : c.ks) {
      CAPTURE(c.name);
      CAPTURE(std::string(to_string(c.which)));
      CAPTURE(k);
      auto o = options(k, c.which, c.precond, 1e-8);
      o.lobpcg.block_size = c.block_size;
      check_against_one_rank(c.A, nullptr, o);
    }
  }
}

TEST_CASE("distributed LOBPCG with block Jacobi of each rank's diagonal block: LAPACK's eigenvalues") {
  // The preconditioner depends on the partition (blocks never straddle ranks), so the answers
  // are checked against LAPACK and by their recomputed residuals, not against one rank's.
  const auto& comm = world();
  for (const char* name : {"bcsstk06", "gr_30_30"}) {
    CAPTURE(name);
    const auto A = load(name);
    auto o = options(4, EigWhich::Smallest, PrecondKind::BlockJacobi, 1e-8);
    o.lobpcg.block_size = 12;
    const auto D = DistCsrMatrix::scatter(comm, A);
    const EigReport rep = eigensolve_distributed(D, nullptr, o);
    CAPTURE(rep.iterations);
    REQUIRE(rep.converged());
    CHECK(rep.preconditioner.find("block-jacobi") != std::string::npos);
    const std::vector<double> all = dense_eigenvalues(A);
    for (index_t j = 0; j < 4; ++j) {
      CAPTURE(j);
      CHECK(std::abs(rep.eigenvalues[j] - all[std::size_t(j)]) <= 10 * o.lobpcg.tol * std::abs(all[std::size_t(j)]));
    }
    const auto X = gather_rows(comm, rep.eigenvectors, A.rows(), D.first_row(), 4);
    CHECK(worst_relative_residual(A, nullptr, X, rep.eigenvalues) <= 1.01 * o.lobpcg.tol);
  }
}

TEST_CASE("distributed LOBPCG with AMG of each rank's diagonal block: LAPACK's eigenvalues") {
  check_against_one_rank(laplacian_3d(9, 8, 7), nullptr, options(4, EigWhich::Smallest, PrecondKind::Amg, 1e-8));
  auto o = options(5, EigWhich::Smallest, PrecondKind::Amg, 1e-8);
  o.lobpcg.block_size = 12;
  check_against_one_rank(load("bcsstk06"), nullptr, o);
}

TEST_CASE("distributed LOBPCG: too small for its basis (3k > n), the dense solve on every partition") {
  // The 1-D Laplacian of 10 rows, k = 4, alone and with a diagonal B: LAPACK's pairs, each rank its
  // rows of the vectors (residuals recomputed from the gathered vectors), as one process gives.
  const auto& comm = world();
  const auto A = laplacian_1d(10);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < 10; ++i) I.push_back(i), J.push_back(i), V.push_back(1.0 + 0.1 * i);
  const auto B = CsrMatrix<double>::from_triplets(10, 10, I, J, V);
  const auto D = DistCsrMatrix::scatter(comm, A);
  const auto DB = DistCsrMatrix::scatter(comm, B, 0, D.row_starts());
  for (bool generalized : {false, true}) {
    CAPTURE(generalized);
    const auto o = options(4, EigWhich::Smallest, PrecondKind::None, 1e-8);
    const EigReport rep = eigensolve_distributed(D, generalized ? &DB : nullptr, o);
    CHECK(rep.converged());
    CHECK(rep.solver.rfind("dense-", 0) == 0);
    REQUIRE(rep.eigenvectors.size() == std::size_t(D.rows()) * 4);
    const std::vector<double> all = dense_eigenvalues(A, generalized ? &B : nullptr);
    for (std::size_t j = 0; j < 4; ++j) CHECK(std::abs(rep.eigenvalues[j] - all[j]) <= 1e-12 * std::abs(all[j]));
    const auto X = gather_rows(comm, rep.eigenvectors, 10, D.first_row(), 4);
    CHECK(worst_relative_residual(A, generalized ? &B : nullptr, X, rep.eigenvalues) <= 1e-12);
  }
}

TEST_CASE("distributed LOBPCG: an indefinite A under the inner CG runs again without it, as one process does") {
  // −(2-D Laplacian 20 x 20): symmetric, negative definite. The inner CG meets pᵀAp < 0 and stalls;
  // with precond_fallback LOBPCG runs again plain and must find dense LAPACK's smallest.
  const auto L = laplacian_2d(20, 20);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < L.rows(); ++i)
    for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k)
      I.push_back(i), J.push_back(L.col_idx()(k)), V.push_back(-L.values()(k));
  const auto A = CsrMatrix<double>::from_triplets(L.rows(), L.rows(), I, J, V);
  auto o = options(4, EigWhich::Smallest, PrecondKind::None, 1e-8);
  o.inner_iters = 8;
  o.precond_fallback = true;
  const auto D = DistCsrMatrix::scatter(world(), A);
  const EigReport rep = eigensolve_distributed(D, nullptr, o);
  CAPTURE(rep.precond_note);
  CHECK(rep.converged());
  CHECK(rep.precond_note.find("met p^T A p <= 0") != std::string::npos);
  CHECK(rep.preconditioner == "none");
  const std::vector<double> all = dense_eigenvalues(A);
  REQUIRE(rep.eigenvalues.size() == 4);
  for (std::size_t j = 0; j < 4; ++j) CHECK(std::abs(rep.eigenvalues[j] - all[j]) <= 1e-7 * std::abs(all[j]));
}

TEST_CASE("distributed LOBPCG: the inner PCG solve reaches the smallest pairs Jacobi alone does not") {
  // 1138_bus's smallest pairs stagnate with Jacobi alone (see cases()); eight inner PCG steps over
  // Jacobi, whose dot products are summed over the ranks like LOBPCG's, converge them.
  for (const char* name : {"1138_bus", "bcsstk06"}) {
    CAPTURE(name);
    auto o = options(8, EigWhich::Smallest, PrecondKind::Jacobi, 1e-8);
    o.inner_iters = kDefaultInnerIters;
    check_against_one_rank(load(name), nullptr, o);
  }
}

TEST_CASE("distributed LOBPCG: A and B far from 1 are rescaled, as one process does") {
  // A = (3-D Laplacian)·2^300, B = diag(1 + 0.5 sin(0.3 i))·2^−401: the pencil's eigenvalues are
  // the plain one's times 2^701 (about 1e211), beyond what the ranks once accepted.
  const auto& comm = world();
  const auto A = laplacian_3d(8, 7, 6);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < A.rows(); ++i) I.push_back(i), J.push_back(i), V.push_back(1.0 + 0.5 * std::sin(0.3 * i));
  const auto B = CsrMatrix<double>::from_triplets(A.rows(), A.rows(), I, J, V);
  const auto D = DistCsrMatrix::scatter(comm, A);
  const auto DB = DistCsrMatrix::scatter(comm, B, 0, D.row_starts());
  const auto o = options(4, EigWhich::Smallest, PrecondKind::Jacobi, 1e-8);
  const EigReport plain = eigensolve_distributed(D, &DB, o);
  const auto Ds = D.scaled(300), DBs = DB.scaled(-401);
  const EigReport scaled = eigensolve_distributed(Ds, &DBs, o);
  CAPTURE(scaled.verification);
  REQUIRE(plain.converged());
  REQUIRE(scaled.converged());
  for (std::size_t j = 0; j < 4; ++j)
    CHECK(std::abs(scaled.eigenvalues[j] / std::ldexp(plain.eigenvalues[j], 701) - 1) <= 1e-7);
  // Eigenvalues near 1e430 are beyond double: out of range.
  const auto Df = D.scaled(700), DBf = DB.scaled(-700);
  CHECK(eigensolve_distributed(Df, &DBf, o).status == EigStatus::OutOfRange);
}

TEST_CASE("distributed LOBPCG: the generalized problem A x = lambda B x") {
  const auto A = laplacian_3d(8, 7, 6);
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (index_t i = 0; i < A.rows(); ++i) I.push_back(i), J.push_back(i), V.push_back(1.0 + 0.5 * std::sin(0.3 * i));
  const auto B = CsrMatrix<double>::from_triplets(A.rows(), A.rows(), I, J, V);
  for (EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(std::string(to_string(which)));
    check_against_one_rank(A, &B, options(5, which, PrecondKind::Jacobi, 1e-8));
  }
}

TEST_CASE("distributed LOBPCG: two runs are bitwise equal, an empty rank changes nothing") {
  const auto& comm = world();
  const auto A = load("bcsstk06");
  auto o = options(6, EigWhich::Smallest, PrecondKind::Jacobi, 1e-8);
  o.lobpcg.block_size = 12;
  const auto D = DistCsrMatrix::scatter(comm, A);
  const EigReport r1 = eigensolve_distributed(D, nullptr, o);
  const EigReport r2 = eigensolve_distributed(D, nullptr, o);
  CHECK(r1.converged());
  CHECK(r1.eigenvalues == r2.eigenvalues);
  CHECK(r1.eigenvectors == r2.eigenvectors);
  CHECK(r1.residual_norms == r2.residual_norms);
  CHECK(r1.iterations == r2.iterations);
  // Rank 0 holds no rows (all go to the others): still the same eigenvalues to 1e-10.
  const int P = comm.size();
  std::vector<std::int64_t> starts(static_cast<std::size_t>(P) + 1, 0);
  for (int p = 1; p <= P; ++p) starts[p] = P == 1 ? 420 : 420 * (p - 1) / (P - 1);
  const auto E = DistCsrMatrix::scatter(comm, A, 0, starts);
  if (P > 1) CHECK(E.row_starts()[1] == 0);
  const EigReport re = eigensolve_distributed(E, nullptr, o);
  CHECK(re.converged());
  for (std::size_t j = 0; j < re.eigenvalues.size(); ++j)
    CHECK(std::abs(re.eigenvalues[j] - r1.eigenvalues[j]) <= 1e-10 * std::abs(r1.eigenvalues[j]));
}

TEST_CASE("distributed LOBPCG: refusals are agreed on every rank") {
  const auto& comm = world();
  const int bad = comm.size() > 1 ? 1 : 0;
  const auto A = laplacian_2d(8, 8);
  const auto D = DistCsrMatrix::scatter(comm, A);
  SUBCASE("AMG with near-nullspace vectors (given for the whole matrix, not a rank's rows)") {
    auto o = options(4, EigWhich::Smallest, PrecondKind::Amg, 1e-6);
    o.precond.amg.near_nullspace.assign(64, 1.0);
    o.precond.amg.near_nullspace_vectors = 1;
    CHECK_THROWS_WITH_AS(eigensolve_distributed(D, nullptr, o), doctest::Contains("are not distributed yet"),
                         InputError);
  }
  SUBCASE("the CUDA backend on ranks without a GPU") {
    auto o = options(4, EigWhich::Smallest, PrecondKind::None, 1e-6);
    o.backend = Backend::Cuda;
    const auto none = comm.allgather<char>(cuda_device_available() ? 0 : 1);
    if (std::count(none.begin(), none.end(), 1) == comm.size())  // CI; test_dist_device_solve runs it on GPUs
      CHECK_THROWS_WITH_AS(eigensolve_distributed(D, nullptr, o), doctest::Contains("needs a GPU on every rank"),
                           InputError);
  }
  SUBCASE("a block size too large for the global order (given, so no dense solve)") {
    const auto S = DistCsrMatrix::scatter(comm, laplacian_1d(10));
    auto o = options(4, EigWhich::Smallest, PrecondKind::None, 1e-6);
    o.lobpcg.block_size = 4;
    CHECK_THROWS_WITH_AS(eigensolve_distributed(S, nullptr, o), doctest::Contains("too large for n = 10"), InputError);
  }
  SUBCASE("a zero diagonal on one rank's rows under Jacobi") {
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (index_t i = 0; i < 8 * comm.size(); ++i) I.push_back(i), J.push_back(i), V.push_back(i == 8 * bad + 3 ? 0.0 : 2.0 + i);
    const auto Z = CsrMatrix<double>::from_triplets(8 * comm.size(), 8 * comm.size(), I, J, V);
    std::vector<std::int64_t> starts(static_cast<std::size_t>(comm.size()) + 1);
    for (int p = 0; p <= comm.size(); ++p) starts[p] = 8 * p;
    const auto DZ = DistCsrMatrix::scatter(comm, Z, 0, starts);
    CHECK_THROWS_WITH_AS(eigensolve_distributed(DZ, nullptr, options(2, EigWhich::Smallest, PrecondKind::Jacobi, 1e-6)),
                         doctest::Contains("Jacobi"), InputError);
  }
  SUBCASE("B with a positive diagonal but indefinite: its Cholesky factor says so, not LOBPCG's pairs") {
    // The 2-D Laplacian 30 x 30 minus 0.05 I (λmin −0.03): LOBPCG's B-Gram matrices stay SPD on its
    // search space, and one process converged to pairs of a pencil whose eigenvalue at −141 it missed.
    const auto L = laplacian_2d(30, 30);
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (index_t i = 0; i < L.rows(); ++i)
      for (index_t k = L.row_ptr()(i); k < L.row_ptr()(i + 1); ++k)
        I.push_back(i), J.push_back(L.col_idx()(k)), V.push_back(L.values()(k) - (L.col_idx()(k) == i ? 0.05 : 0.0));
    const auto DL = DistCsrMatrix::scatter(comm, L);
    const auto DB = DistCsrMatrix::scatter(comm, CsrMatrix<double>::from_triplets(L.rows(), L.rows(), I, J, V), 0,
                                           DL.row_starts());
    const EigReport r = eigensolve_distributed(DL, &DB, options(4, EigWhich::Smallest, PrecondKind::Jacobi, 1e-8));
    CHECK(r.status == EigStatus::NotPositiveDefinite);
    CHECK(r.status_note.find("Cholesky") != std::string::npos);
    CHECK(r.eigenvalues.empty());
    for (auto s : comm.allgather(int(r.status))) CHECK(s == int(EigStatus::NotPositiveDefinite));
    // Too large to gather: each rank factors its diagonal block. 2 x 2 blocks [1 2; 2 1] (eigenvalues
    // 3 and −1) lie within every rank's rows when the ranks start at even rows.
    const index_t n = 16 * comm.size();
    std::vector<index_t> I2, J2;
    std::vector<double> V2, S2;
    for (index_t i = 0; i < n; i += 2)
      for (index_t a = 0; a < 2; ++a)
        for (index_t c = 0; c < 2; ++c)
          I2.push_back(i + a), J2.push_back(i + c), V2.push_back(a == c ? 1.0 : 2.0), S2.push_back(a == c ? 2.0 : 1.0);
    std::vector<std::int64_t> starts(static_cast<std::size_t>(comm.size()) + 1);
    for (int p = 0; p <= comm.size(); ++p) starts[p] = 16 * p;
    const auto P2 = DistCsrMatrix::scatter(comm, CsrMatrix<double>::from_triplets(n, n, I2, J2, V2), 0, starts);
    CHECK(detail::distributed_b_factor_note(P2, 0).find("diagonal block") != std::string::npos);
    CHECK(detail::distributed_b_factor_note(P2).find("its Cholesky factorization") != std::string::npos);
    // [2 1; 1 2] is SPD: nothing to report on either path.
    const auto S = DistCsrMatrix::scatter(comm, CsrMatrix<double>::from_triplets(n, n, I2, J2, S2), 0, starts);
    CHECK(detail::distributed_b_factor_note(S, 0).empty());
    CHECK(detail::distributed_b_factor_note(S).empty());
  }
  SUBCASE("B with a non-positive diagonal entry on one rank, and B on another partition") {
    std::vector<index_t> I, J;
    std::vector<double> V;
    for (index_t i = 0; i < A.rows(); ++i) I.push_back(i), J.push_back(i), V.push_back(1.0);
    const std::int64_t badrow = D.row_starts()[bad];
    if (D.row_starts()[bad + 1] > badrow) V[std::size_t(badrow)] = -1.0;
    const auto B = CsrMatrix<double>::from_triplets(A.rows(), A.rows(), I, J, V);
    const auto DB = DistCsrMatrix::scatter(comm, B, 0, D.row_starts());
    CHECK_THROWS_WITH_AS(eigensolve_distributed(D, &DB, options(4, EigWhich::Smallest, PrecondKind::None, 1e-6)),
                         doctest::Contains("B must be symmetric positive definite"), InputError);
    if (comm.size() > 1) {
      std::vector<std::int64_t> other(D.row_starts());
      other[1] += other[1] < other[2] ? 1 : 0;
      const auto DO = DistCsrMatrix::scatter(comm, B, 0, other);
      CHECK_THROWS_WITH_AS(eigensolve_distributed(D, &DO, options(4, EigWhich::Smallest, PrecondKind::None, 1e-6)),
                           doctest::Contains("another partition"), InputError);
    }
  }
}
