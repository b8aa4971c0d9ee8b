// Distributed CG, block CG and LOBPCG with Backend::Cuda: the one-rank host answer, the true residual
// recomputed from the global matrix, bitwise reruns, and bitwise the same answer whichever device
// transport carries the halos and sums (both add the partials in rank order). Rank r uses GPU
// r mod the device count; without a GPU on every rank the cases check nothing (CI).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_device_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
SolveOptions device_options(PrecondKind k, double rtol) {
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.precond.kind = k;
  o.cg.rtol = rtol;
  return o;
}

struct Case {
  std::string name;
  CsrMatrix<double> A;
  double rtol;
};
std::vector<Case> cases() {
  return {{"bcsstk06", load("bcsstk06"), 1e-12}, {"gr_30_30", load("gr_30_30"), 1e-12},
          {"laplacian_3d(12,11,10)", laplacian_3d(12, 11, 10), 1e-12}};
}
}  // namespace

TEST_CASE("distributed CG on the GPUs: the one-rank answer, on each transport, bitwise across them") {
  if (!gpus_everywhere()) return;
  for (const auto& c : cases()) {
    CAPTURE(c.name);
    const std::int64_t n = c.A.rows();
    const auto b = fixed_vector(n);
    SolveOptions host = device_options(PrecondKind::Jacobi, c.rtol);
    host.backend = Backend::Host;
    std::vector<double> x1;
    REQUIRE(solve(c.A, b, x1, host).converged());  // the one-rank host reference
    std::vector<std::vector<double>> answers;
    for (const auto& t : device_transports()) {
      CAPTURE(t);
      const Communicator comm = communicator_on(t);
      const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? c.A : CsrMatrix<double>());
      const std::int64_t first = D.first_row(), last = first + D.rows();
      const auto o = device_options(PrecondKind::Jacobi, c.rtol);
      std::vector<double> x;
      const SolveReport rep = solve_distributed(D, slice(b, first, last), x, o);
      CHECK(rep.converged());
      CHECK(rep.backend == "cuda");
      CHECK(global_true_residual(comm, c.A, b, x, first) <= 1.01 * o.cg.rtol);
      CHECK(relative_difference(x, slice(x1, first, last)) <= 1e-10);
      std::vector<double> again;
      const SolveReport rep2 = solve_distributed(D, slice(b, first, last), again, o);
      CHECK(rep2.iterations == rep.iterations);
      CHECK(again == x);
      answers.push_back(x);
    }
    for (std::size_t k = 1; k < answers.size(); ++k) CHECK(answers[k] == answers[0]);
  }
}

TEST_CASE("distributed block CG on the GPUs: the one-rank answers, on each transport") {
  if (!gpus_everywhere()) return;
  const auto A = laplacian_3d(12, 11, 10);
  const index_t s = 4;
  const std::int64_t n = A.rows();
  std::vector<double> B;
  for (index_t j = 0; j < s; ++j) {
    const auto bj = fixed_vector(n, j + 1);
    B.insert(B.end(), bj.begin(), bj.end());
  }
  SolveOptions host = device_options(PrecondKind::Jacobi, 1e-11);
  host.backend = Backend::Host;
  std::vector<double> X1;
  REQUIRE(solve_block(A, B, s, X1, host).converged());
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>());
    const std::int64_t first = D.first_row(), m = D.rows();
    std::vector<double> Bl, X;
    for (index_t j = 0; j < s; ++j) {
      const auto part = slice(B, j * n + first, j * n + first + m);
      Bl.insert(Bl.end(), part.begin(), part.end());
    }
    const auto o = device_options(PrecondKind::Jacobi, 1e-11);
    const BlockSolveReport rep = solve_block_distributed(D, Bl, s, X, o);
    CHECK(rep.converged());
    for (index_t j = 0; j < s; ++j) {
      CAPTURE(j);
      const std::vector<double> xj(X.begin() + j * m, X.begin() + (j + 1) * m);
      CHECK(global_true_residual(comm, A, fixed_vector(n, j + 1), xj, first) <= 1.01 * o.cg.rtol);
      CHECK(relative_difference(xj, slice(X1, j * n + first, j * n + first + m)) <= 1e-9);
    }
  }
}

TEST_CASE("distributed LOBPCG on the GPUs: the one-rank host eigenvalues, on each transport") {
  if (!gpus_everywhere()) return;
  const auto A = laplacian_3d(12, 11, 10);
  for (const EigWhich which : {EigWhich::Smallest, EigWhich::Largest}) {
    CAPTURE(to_string(which));
    EigOptions o;
    o.backend = Backend::Host;
    o.precond.kind = PrecondKind::Jacobi;
    o.lobpcg.k = 4;
    o.lobpcg.which = which;
    o.lobpcg.tol = 1e-8;
    o.refine = false;  // not distributed; the reference runs without it too
    const EigReport one = eigensolve(A, nullptr, o);
    REQUIRE(one.converged());
    o.backend = Backend::Cuda;
    for (const auto& t : device_transports()) {
      CAPTURE(t);
      const Communicator comm = communicator_on(t);
      const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>());
      const EigReport rep = eigensolve_distributed(D, nullptr, o);
      CHECK(rep.converged());
      CHECK(rep.backend == "cuda");
      REQUIRE(rep.eigenvalues.size() == one.eigenvalues.size());
      for (std::size_t j = 0; j < rep.eigenvalues.size(); ++j)
        CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= 1e-7 * std::abs(one.eigenvalues[j]));
    }
  }
}

TEST_CASE("distributed LOBPCG on the GPUs with block Jacobi of each rank's diagonal block") {
  if (!gpus_everywhere()) return;
  // The blocks depend on the partition, so the reference is the one-rank host run's eigenvalues
  // to the accuracy both converged to, and the residuals recomputed from the global matrix.
  const auto A = load("bcsstk06");
  EigOptions o;
  o.backend = Backend::Host;
  o.precond.kind = PrecondKind::BlockJacobi;
  o.lobpcg.k = 4;
  o.lobpcg.block_size = 12;
  o.lobpcg.tol = 1e-8;
  o.refine = false;  // not distributed; the reference runs without it too
  const EigReport one = eigensolve(A, nullptr, o);
  REQUIRE(one.converged());
  o.backend = Backend::Cuda;
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    const auto D = DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>());
    const EigReport rep = eigensolve_distributed(D, nullptr, o);
    CHECK(rep.converged());
    CHECK(rep.preconditioner.find("block-jacobi") != std::string::npos);
    REQUIRE(rep.eigenvalues.size() == one.eigenvalues.size());
    for (std::size_t j = 0; j < rep.eigenvalues.size(); ++j)
      CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= 1e-7 * std::abs(one.eigenvalues[j]));
    const auto X = gather_rows(comm, rep.eigenvectors, A.rows(), D.first_row(), 4);
    CHECK(worst_relative_residual(A, nullptr, X, rep.eigenvalues) <= 1.01 * o.lobpcg.tol);
  }
}
