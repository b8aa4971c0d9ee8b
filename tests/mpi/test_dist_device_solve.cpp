// Distributed CG, block CG and LOBPCG with Backend::Cuda: the one-rank host answer, the true residual
// recomputed from the global matrix, bitwise reruns, and bitwise the same answer whichever device
// transport carries the halos and sums (both add the partials in rank order); with Jacobi,
// Chebyshev (DeviceDistChebyshev) and AMG of each rank's diagonal block, and on partitions with
// empty ranks, a one-row rank and ranks without off-rank columns (Jacobi, block Jacobi,
// Chebyshev). Rank r uses GPU r mod the device count; without a GPU on every rank the cases check
// nothing (CI).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "krysp/solvers/distributed_eigensolve.hpp"
#include "krysp/solvers/distributed_solve.hpp"
#include "krysp/solvers/eigensolve.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/generators.hpp"
#include "mpi/mpi_device_util.hpp"

using namespace krysp;
using namespace krysp::test;

namespace {
SolveOptions device_options(PrecondKind k, double rtol, int block_size = 0) {
  SolveOptions o;
  o.backend = Backend::Cuda;
  o.precond.kind = k;
  o.precond.block_size = block_size;
  o.cg.rtol = rtol;
  return o;
}

SolveOptions on_host(SolveOptions o) {
  o.backend = Backend::Host;
  return o;
}

// s fixed right-hand sides of n rows, column-major.
std::vector<double> fixed_block(std::int64_t n, index_t s) {
  std::vector<double> B;
  for (index_t j = 0; j < s; ++j) {
    const auto bj = fixed_vector(n, j + 1);
    B.insert(B.end(), bj.begin(), bj.end());
  }
  return B;
}

// Rows [first, first + m) of each of s global columns (column-major), concatenated.
std::vector<double> local_columns(const std::vector<double>& B, std::int64_t n, index_t s, std::int64_t first,
                                  std::int64_t m) {
  std::vector<double> out;
  for (index_t j = 0; j < s; ++j) {
    const auto part = slice(B, j * n + first, j * n + first + m);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// The solution of CG on D, gathered on every rank, after the checks every GPU CG run must pass:
// converged, on the GPU, the true residual of the gathered x (global matrix) within rtol, and the
// same iteration count on every rank.
std::vector<double> checked_cg(const Communicator& comm, const CsrMatrix<double>& A, const DistCsrMatrix& D,
                               const std::vector<double>& b, const SolveOptions& o, SolveReport* report = nullptr) {
  const std::int64_t first = D.first_row();
  std::vector<double> x;
  const SolveReport rep = solve_distributed(D, slice(b, first, first + D.rows()), x, o);
  CHECK(rep.converged());
  CHECK(rep.backend == "cuda");
  CHECK(rep.preconditioner.rfind(to_string(o.precond.kind), 0) == 0);
  CHECK(global_true_residual(comm, A, b, x, first) <= 1.01 * o.cg.rtol);
  for (auto it : comm.allgather(rep.iterations)) CHECK(it == rep.iterations);
  if (report) *report = rep;
  return gather_rows(comm, x, A.rows(), first, 1);
}

// Block CG on D for the s columns of B: converged, each column's true residual within rtol and
// within `close` of the one-rank host answer X1 (both gathered, column-major n × s).
void check_block_cg(const Communicator& comm, const CsrMatrix<double>& A, const DistCsrMatrix& D,
                    const std::vector<double>& B, index_t s, const std::vector<double>& X1, const SolveOptions& o,
                    double close) {
  const std::int64_t n = A.rows(), first = D.first_row(), m = D.rows();
  std::vector<double> X;
  const BlockSolveReport rep = solve_block_distributed(D, local_columns(B, n, s, first, m), s, X, o);
  CHECK(rep.converged());
  CHECK(rep.backend == "cuda");
  for (index_t j = 0; j < s; ++j) {
    CAPTURE(j);
    const std::vector<double> xj(X.begin() + j * m, X.begin() + (j + 1) * m);
    CHECK(global_true_residual(comm, A, slice(B, j * n, (j + 1) * n), xj, first) <= 1.01 * o.cg.rtol);
    CHECK(relative_difference(gather_rows(comm, xj, n, first, 1), slice(X1, j * n, (j + 1) * n)) <= close);
  }
}

DistCsrMatrix on(const Communicator& comm, const CsrMatrix<double>& A, const std::vector<std::int64_t>& starts = {}) {
  return DistCsrMatrix::scatter(comm, comm.rank() == 0 ? A : CsrMatrix<double>(), 0, starts);
}

// k blocks, each the 2-D Laplacian 8 × 6 plus 0.3·(its index)·I: SPD, no entry between blocks,
// and spectra that do not coincide.
CsrMatrix<double> block_diagonal(int k) {
  const auto L = laplacian_2d(8, 6);
  const auto v = L.host_view();
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (int p = 0; p < k; ++p)
    for (index_t i = 0; i < L.rows(); ++i)
      for (index_t e = v.row_ptr[i]; e < v.row_ptr[i + 1]; ++e) {
        I.push_back(p * L.rows() + i);
        J.push_back(p * L.rows() + v.col_idx[e]);
        V.push_back(v.values[e] + (v.col_idx[e] == i ? 0.3 * p : 0.0));
      }
  return CsrMatrix<double>::from_triplets(k * L.rows(), k * L.rows(), I, J, V);
}
}  // namespace

TEST_CASE("distributed CG on the GPUs: the one-rank answer, on each transport, bitwise across them") {
  if (!gpus_everywhere()) return;
  struct Case {
    std::string name;
    CsrMatrix<double> A;
    PrecondKind precond;
  };
  // rtol 1e-12: both answers are then within 2κ·rtol of A⁻¹b on the Laplacian (κ ≈ 57), and
  // bcsstk06 follows the one-rank path closely enough.
  const std::vector<Case> cases{{"bcsstk06", load("bcsstk06"), PrecondKind::Jacobi},
                                {"gr_30_30", load("gr_30_30"), PrecondKind::Jacobi},
                                {"laplacian_3d(12,11,10)", laplacian_3d(12, 11, 10), PrecondKind::Jacobi},
                                {"bcsstk06", load("bcsstk06"), PrecondKind::Chebyshev},
                                {"laplacian_3d(12,11,10)", laplacian_3d(12, 11, 10), PrecondKind::Chebyshev}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    CAPTURE(std::string(to_string(c.precond)));
    const std::int64_t n = c.A.rows();
    const auto b = fixed_vector(n);
    const auto o = device_options(c.precond, 1e-12);
    std::vector<double> x1;
    const SolveReport one = solve(c.A, b, x1, on_host(o));  // the one-rank host reference
    REQUIRE(one.converged());
    std::vector<std::vector<double>> answers;
    for (const auto& t : device_transports()) {
      CAPTURE(t);
      const Communicator comm = communicator_on(t);
      const auto D = on(comm, c.A);
      SolveReport rep, rep2;
      const auto x = checked_cg(comm, c.A, D, b, o, &rep);
      CHECK(relative_difference(x, x1) <= 1e-10);
      if (c.precond == PrecondKind::Chebyshev) {  // the one-rank interval: the one-rank iterations
        CAPTURE(one.iterations);
        CHECK(std::abs(rep.iterations - one.iterations) <= std::max<index_t>(1, one.iterations / 20));
      }
      const auto again = checked_cg(comm, c.A, D, b, o, &rep2);
      CHECK(again == x);  // bitwise reruns
      CHECK(rep2.iterations == rep.iterations);
      answers.push_back(x);
    }
    for (std::size_t k = 1; k < answers.size(); ++k) CHECK(answers[k] == answers[0]);
  }
}

TEST_CASE("distributed block CG on the GPUs: the one-rank answers, on each transport") {
  if (!gpus_everywhere()) return;
  const auto A = laplacian_3d(12, 11, 10);
  struct Case {
    PrecondKind precond;
    index_t s;
    double rtol, close;
  };
  for (const Case c : {Case{PrecondKind::Jacobi, 4, 1e-11, 1e-9}, Case{PrecondKind::Chebyshev, 3, 1e-12, 1e-10}}) {
    CAPTURE(std::string(to_string(c.precond)));
    const auto B = fixed_block(A.rows(), c.s);
    const auto o = device_options(c.precond, c.rtol);
    std::vector<double> X1;
    REQUIRE(solve_block(A, B, c.s, X1, on_host(o)).converged());
    for (const auto& t : device_transports()) {
      CAPTURE(t);
      const Communicator comm = communicator_on(t);
      check_block_cg(comm, A, on(comm, A), B, c.s, X1, o, c.close);
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
      const auto D = on(comm, A);
      const EigReport rep = eigensolve_distributed(D, nullptr, o);
      CHECK(rep.converged());
      CHECK(rep.backend == "cuda");
      REQUIRE(rep.eigenvalues.size() == one.eigenvalues.size());
      for (std::size_t j = 0; j < rep.eigenvalues.size(); ++j)
        CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= 1e-7 * std::abs(one.eigenvalues[j]));
    }
  }
}

TEST_CASE("distributed LOBPCG on the GPUs with block Jacobi or AMG of each rank's diagonal block") {
  if (!gpus_everywhere()) return;
  // The blocks depend on the partition, so the reference is the one-rank host run's eigenvalues
  // to the accuracy both converged to, and the residuals recomputed from the global matrix.
  const auto A = load("bcsstk06");
  for (const auto& [kind, name] : {std::pair<PrecondKind, std::string>{PrecondKind::BlockJacobi, "block-jacobi"},
                                   {PrecondKind::Amg, "amg of each rank's diagonal block"}}) {
    CAPTURE(name);
    EigOptions o;
    o.backend = Backend::Host;
    o.precond.kind = kind;
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
      const auto D = on(comm, A);
      const EigReport rep = eigensolve_distributed(D, nullptr, o);
      CHECK(rep.converged());
      CHECK(rep.preconditioner.find(name) != std::string::npos);
      REQUIRE(rep.eigenvalues.size() == one.eigenvalues.size());
      for (std::size_t j = 0; j < rep.eigenvalues.size(); ++j)
        CHECK(std::abs(rep.eigenvalues[j] - one.eigenvalues[j]) <= 1e-7 * std::abs(one.eigenvalues[j]));
      const auto X = gather_rows(comm, rep.eigenvectors, A.rows(), D.first_row(), 4);
      CHECK(worst_relative_residual(A, nullptr, X, rep.eigenvalues) <= 1.01 * o.lobpcg.tol);
    }
  }
}

TEST_CASE("distributed CG and block CG on the GPUs with AMG of each rank's diagonal block") {
  if (!gpus_everywhere()) return;
  // Random media (jumps 1e4, anisotropy 100): the hierarchies depend on the partition, so the
  // checks are the true residuals from the global matrix, bitwise reruns, and a third of Jacobi's
  // iterations at most (LOBPCG with AMG: the block Jacobi case above).
  const auto A = diffusion_3d_random(16, 100.0, 1.0, 1.0, 1e4, 0.2, 1);
  const std::int64_t n = A.rows();
  const auto b = fixed_vector(n);
  for (const auto& t : device_transports()) {
    CAPTURE(t);
    const Communicator comm = communicator_on(t);
    const auto D = on(comm, A);
    const auto o = device_options(PrecondKind::Amg, 1e-10);
    SolveReport rep, jac;
    const auto x1 = checked_cg(comm, A, D, b, o, &rep);
    CHECK(rep.preconditioner.find("amg of each rank's diagonal block") == 0);
    CHECK(checked_cg(comm, A, D, b, o) == x1);
    checked_cg(comm, A, D, b, device_options(PrecondKind::Jacobi, 1e-10), &jac);
    CAPTURE(rep.iterations);
    CAPTURE(jac.iterations);
    CHECK(3 * rep.iterations <= jac.iterations);
    const index_t s = 3;
    const auto B = fixed_block(n, s);
    std::vector<double> X;
    const auto bo = device_options(PrecondKind::Amg, 1e-9);
    const BlockSolveReport brep =
        solve_block_distributed(D, local_columns(B, n, s, D.first_row(), D.rows()), s, X, bo);
    CHECK(brep.converged());
    for (index_t j = 0; j < s; ++j) {
      const std::vector<double> xj(X.begin() + j * D.rows(), X.begin() + (j + 1) * D.rows());
      CHECK(global_true_residual(comm, A, slice(B, j * n, (j + 1) * n), xj, D.first_row()) <= 1.01 * bo.cg.rtol);
    }
  }
}

TEST_CASE("distributed CG, block CG and LOBPCG on the GPUs: empty ranks, a one-row rank, no off-rank columns") {
  if (!gpus_everywhere()) return;
  const Communicator& w = world();
  const int P = w.size();
  struct Problem {
    std::string name;
    CsrMatrix<double> A;
    std::vector<Partition> parts;
    std::vector<std::pair<PrecondKind, int>> preconds;  // kind, block size (0: detected per rank)
    bool block_cg;
  };
  const std::vector<std::pair<PrecondKind, int>> three{
      {PrecondKind::Jacobi, 0}, {PrecondKind::BlockJacobi, 0}, {PrecondKind::Chebyshev, 0}};
  std::vector<Problem> problems;
  // A slab split anywhere: an empty rank 0 or last rank, a rank of one row between two empty
  // ones (4 ranks). Block Jacobi detects its block size per rank (b = 8 on no rows, 1 on one).
  const auto L = laplacian_3d(8, 7, 6);
  problems.push_back({"laplacian_3d(8,7,6)", L, partitions_with_empty_ranks(P, L.rows()), three, true});
  // Real 3 × 3 blocks: cuts at multiples of 3, so each rank's blocks are the one-rank run's.
  const auto K = load("bcsstk06");
  problems.push_back({"bcsstk06", K, partitions_with_empty_ranks(P, K.rows(), 3), {{PrecondKind::BlockJacobi, 3}},
                      false});
  // Each rank its own block (no halo at all), rank 0 empty on several ranks.
  const int blocks = std::max(1, P - 1);
  const auto Bd = block_diagonal(blocks);
  std::vector<std::int64_t> starts{0};
  for (int p = 0; p < P; ++p) starts.push_back(Bd.rows() / blocks * std::max(0, p + 1 - (P - blocks)));
  problems.push_back({"block-diagonal", Bd, {{P > 1 ? "rank 0 empty, no off-rank columns" : "one rank", starts}},
                      three, true});

  const index_t s = 3;
  for (const auto& pb : problems) {
    CAPTURE(pb.name);
    const std::int64_t n = pb.A.rows();
    const auto b = fixed_vector(n);
    const auto B = fixed_block(n, s);
    for (const auto& [kind, bs] : pb.preconds) {
      CAPTURE(std::string(to_string(kind)));
      CAPTURE(bs);
      // The one-rank host references: x, X and the eigenpairs.
      const auto o = device_options(kind, 1e-12, bs);
      std::vector<double> x1, X1;
      REQUIRE(solve(pb.A, b, x1, on_host(o)).converged());
      if (pb.block_cg) REQUIRE(solve_block(pb.A, B, s, X1, on_host(o)).converged());
      EigOptions eo;
      eo.backend = Backend::Host;
      eo.precond = o.precond;
      eo.lobpcg.k = 4;
      eo.lobpcg.tol = 1e-8;
      if (pb.name == "bcsstk06") eo.lobpcg.block_size = 12;  // as in the block Jacobi case above
      eo.refine = false;  // not distributed; the reference runs without it too
      const EigReport one = eigensolve(pb.A, nullptr, eo);
      REQUIRE(one.converged());
      eo.backend = Backend::Cuda;
      for (const auto& part : pb.parts) {
        CAPTURE(part.name);
        std::vector<std::vector<double>> answers;
        for (const auto& t : device_transports()) {
          CAPTURE(t);
          const Communicator comm = communicator_on(t);
          const auto D = on(comm, pb.A, part.starts);
          CHECK(D.rows() == part.starts[comm.rank() + 1] - part.starts[comm.rank()]);
          const auto x = checked_cg(comm, pb.A, D, b, o);
          CHECK(relative_difference(x, x1) <= 1e-10);
          answers.push_back(x);
          if (pb.block_cg) check_block_cg(comm, pb.A, D, B, s, X1, o, 1e-10);
          check_lobpcg(comm, pb.A, D, eo, one, 1e-10);
        }
        for (std::size_t k = 1; k < answers.size(); ++k) CHECK(answers[k] == answers[0]);
      }
    }
  }
}
