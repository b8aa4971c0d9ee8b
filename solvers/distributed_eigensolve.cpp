#include "krysp/solvers/distributed_eigensolve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/solvers/lobpcg.hpp"

namespace krysp {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the distributed eigensolver refuses up front, agreed over the ranks.
void check_request(const DistCsrMatrix& A, const DistCsrMatrix* B, const EigOptions& o) {
  A.comm().collective([&] {
    const char* who = "eigensolve_distributed";
    KRYSP_REQUIRE(o.backend != Backend::Cuda, who,
                  ": the CUDA backend of the distributed eigensolver is not built yet (use the host backend)");
    KRYSP_REQUIRE(A.global_rows() > 0, who, ": A is empty (0 x 0): no eigenpairs to compute");
    const PrecondKind k = o.precond.kind;
    KRYSP_REQUIRE(k == PrecondKind::None || k == PrecondKind::Jacobi, who, ": preconditioner ", to_string(k),
                  " is not distributed yet (none or jacobi)");
    KRYSP_REQUIRE(o.inner_iters == 0, who, ": inner PCG steps (inner_iters = ", o.inner_iters,
                  ") are not distributed yet (0: the preconditioner itself)");
    KRYSP_REQUIRE(!o.spectral_flip, who, ": the spectral flip is not distributed yet");
    KRYSP_REQUIRE(!o.precond_from_b || B, who, ": a preconditioner from B needs the generalized problem");
    if (B)
      KRYSP_REQUIRE(B->row_starts() == A.row_starts(), who, ": B is ", B->global_rows(),
                    " rows on another partition than A (", A.global_rows(),
                    " rows): B must have A's order and row_starts");
    lobpcg_block_size(o.lobpcg, A.global_rows(), 0, 0);  // InputError naming k, b, n
  });
}

// max |a_ii| over this rank's rows (the local block holds the diagonal).
double max_abs_diagonal(const CsrMatrix<double>& L) {
  const auto v = L.host_view();
  double m = 0;
  for (index_t i = 0; i < L.rows(); ++i)
    for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k)
      if (v.col_idx[k] == i) m = std::max(m, std::abs(v.values[k]));
  return m;
}

// max b_ii over the ranks; a non-positive diagonal entry (it proves B not positive definite) is an
// InputError on every rank.
double check_b_diagonal(const DistCsrMatrix& B) {
  double m = 0;
  B.comm().collective([&] {
    const CsrMatrix<double>& L = B.local_block();
    const auto v = L.host_view();
    for (index_t i = 0; i < L.rows(); ++i) {
      double d = 0;
      for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k)
        if (v.col_idx[k] == i) d = v.values[k];
      KRYSP_REQUIRE(d > 0, "eigs: B(", B.first_row() + i + 1, ",", B.first_row() + i + 1, ") = ", d,
                    d == 0 ? " (zero or not stored)" : "", "; B must be symmetric positive definite");
      m = std::max(m, d);
    }
  });
  return B.comm().max(m);
}

// Row-major m × (ca + cb): the columns of a (m × ca) then those of b (m × cb).
std::vector<double> side_by_side(index_t m, const double* a, index_t ca, const double* b, index_t cb) {
  std::vector<double> out(static_cast<std::size_t>(m) * static_cast<std::size_t>(ca + cb));
  for (index_t i = 0; i < m; ++i) {
    double* row = out.data() + std::size_t(i) * (ca + cb);
    if (ca > 0) std::copy(a + std::size_t(i) * ca, a + std::size_t(i + 1) * ca, row);
    std::copy(b + std::size_t(i) * cb, b + std::size_t(i + 1) * cb, row + ca);
  }
  return out;
}

// The check for missed eigenvalues (EigOptions::verify) after a converged run, as eigensolve()
// does it: LOBPCG for one pair on the B-complement of the returned vectors, through the same
// (distributed) ops; a Rayleigh quotient beyond λ_k restarts the main run from the vector found.
// The constraint block and the restart's start are this rank's rows; the room for the check's
// basis is counted in the global order n.
void verify_extreme(HostEigOps& ops, std::int64_t n, const EigOptions& o, const LobpcgStart& st, EigReport& rep) {
  const index_t m = ops.size(), k = rep.k;
  const bool largest = o.lobpcg.which == EigWhich::Largest;
  for (int round = 0; rep.converged(); ++round) {
    const std::int64_t room = (n - k) / 3;  // the check's basis: 3·block + k ≤ n
    if (room < 1) {
      rep.verification = detail::concat("skipped: n = ", n, " leaves no room beside the ", k, " returned vectors");
      return;
    }
    const double lk = rep.eigenvalues[k - 1], tol = o.lobpcg.tol;
    const double margin = 10 * tol *
                          (o.lobpcg.convergence == EigConvergence::Relative ? std::abs(lk)
                           : o.lobpcg.convergence == EigConvergence::Norm
                               ? rep.a_norm_estimate + std::abs(lk) * rep.b_norm_estimate
                               : 1.0);
    const double threshold = largest ? lk + margin : lk - margin;
    const std::vector<double> Y = side_by_side(m, nullptr, 0, rep.eigenvectors.data(), k);
    LobpcgOptions co = o.lobpcg;
    co.k = 1;
    co.block_size = index_t(std::min<std::int64_t>(rep.block_size, room));
    co.tol = kVerifyTol;
    co.convergence = EigConvergence::Relative;
    co.max_iters = std::max(kVerifyMinIters, rep.iterations);
    co.seed = o.lobpcg.seed + 0x9e3779b97f4a7c15ull * std::uint64_t(round + 1);
    co.progress = nullptr;
    LobpcgStart cs = st;
    cs.constraints = Y.data();
    cs.constraint_cols = k;
    cs.stop_beyond = threshold;
    const EigResult cr = lobpcg(ops, co, cs);
    rep.verify_iterations += cr.iterations;
    const double theta = cr.eigenvalues.empty() ? std::numeric_limits<double>::quiet_NaN() : cr.eigenvalues[0];
    rep.complement_bound = theta;
    const bool beyond = cr.stopped_beyond || (largest ? theta > threshold : theta < threshold);
    if (!beyond) {
      if (cr.status == EigStatus::NonFinite || cr.status == EigStatus::NotPositiveDefinite) {
        rep.status = EigStatus::Unverified;
        rep.verification = detail::concat("inconclusive: the check broke down (", to_string(cr.status), ")");
      } else {
        rep.verification = detail::concat(
            "passed: in ", cr.iterations, " iterations on the complement of the returned vectors the ",
            largest ? "largest" : "smallest", " Rayleigh quotient came to ", theta,
            cr.converged() ? " (settled)" : " (still moving)", ", not beyond lambda_k = ", lk);
      }
      return;
    }
    if (round == kVerifyRestarts) {
      rep.status = EigStatus::Unverified;
      rep.verification = detail::concat("failed: an eigenvalue near ", theta, " lies beyond lambda_k = ", lk,
                                        " after ", round, " restarts");
      return;
    }
    // Restart from the vector the check found, then as many returned ones as the block holds.
    const index_t cols = std::min(rep.block_size, k + 1);
    std::vector<double> x0(static_cast<std::size_t>(m) * static_cast<std::size_t>(cols));
    for (index_t i = 0; i < m; ++i) {
      x0[std::size_t(i) * cols] = cr.eigenvectors[i];
      const auto row = rep.eigenvectors.begin() + std::size_t(i) * k;
      std::copy(row, row + (cols - 1), x0.begin() + std::size_t(i) * cols + 1);
    }
    LobpcgStart rs = st;
    rs.x0 = x0.data();
    rs.x0_cols = cols;
    const index_t before = rep.iterations;
    const double seconds_before = rep.seconds;
    static_cast<EigResult&>(rep) = lobpcg(ops, o.lobpcg, rs);
    rep.iterations += before;
    rep.seconds += seconds_before;
    ++rep.verify_restarts;
  }
}
}  // namespace

EigReport eigensolve_distributed(const DistCsrMatrix& A, const DistCsrMatrix* B, const EigOptions& o) {
  const auto t0 = Clock::now();
  const Communicator& comm = A.comm();
  check_request(A, B, o);
  LobpcgStart st;
  st.a_norm_floor = comm.max(max_abs_diagonal(A.local_block()));
  st.b_norm_floor = B ? check_b_diagonal(*B) : 1.0;

  EigReport rep;
  rep.which = to_string(o.lobpcg.which);
  // Jacobi of this rank's diagonal block: the diagonal is all on it. A zero diagonal on any rank
  // is agreed; with precond_fallback it runs without a preconditioner instead, on every rank.
  const DistCsrMatrix& P = o.precond_from_b ? *B : A;
  std::unique_ptr<Preconditioner<double>> M;
  try {
    comm.collective([&] { M = make_host_preconditioner(P.local_block(), o.precond); });
  } catch (const InputError& e) {
    if (!o.precond_fallback || o.precond.kind == PrecondKind::None) throw;
    rep.precond_note = detail::concat(to_string(o.precond.kind), " could not be set up (", e.what(), ")");
    M.reset();
  }
  HostEigOps ops(A, B, M.get(), comm, A.first_row());
  rep.setup_seconds = since(t0);
  rep.preconditioner = (M ? M->summary() : std::string("none")) + (o.precond_from_b && M ? "(B)" : "");

  const auto t1 = Clock::now();
  static_cast<EigResult&>(rep) = lobpcg(ops, o.lobpcg, st);
  if (o.verify) verify_extreme(ops, A.global_rows(), o, st, rep);
  rep.solve_seconds = since(t1);
  rep.n = index_t(std::min<std::int64_t>(A.global_rows(), kMaxIndex));
  rep.backend = "host";
  rep.device = "host";
  rep.spmm_kernel = "host-reference, " + std::to_string(comm.size()) + " ranks";
  double least = std::numeric_limits<double>::infinity();
  for (double l : rep.eigenvalues) least = std::min(least, std::abs(l));
  rep.accuracy_floor = least > 0 ? std::numeric_limits<double>::epsilon() * rep.a_norm_estimate / least
                                 : std::numeric_limits<double>::infinity();
  return rep;
}

}  // namespace krysp
