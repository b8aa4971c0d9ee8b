#include "krysp/solvers/distributed_eigensolve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/cuda/device_dist_chebyshev.hpp"
#include "krysp/solvers/dense_eigensolve.hpp"
#include "krysp/solvers/distributed_checks.hpp"
#include "krysp/solvers/envelope_cholesky.hpp"
#include "krysp/solvers/cuda/cuda_eig_ops.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/solvers/inner_solve.hpp"
#include "krysp/solvers/lobpcg.hpp"
#include "krysp/solvers/missed_eigenvalue_check.hpp"
#include "krysp/sparse/dist_csr_device.hpp"

namespace krysp {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Too small for LOBPCG's basis: eigensolve()'s dense solve of the whole spectrum applies.
bool too_small_for_lobpcg(const DistCsrMatrix& A, const EigOptions& o) {
  return A.global_rows() <= kMaxIndex && detail::dense_eigensolve_applies(o, index_t(A.global_rows()), 0);
}

// What the distributed eigensolver refuses up front, agreed over the ranks.
void check_request(const DistCsrMatrix& A, const DistCsrMatrix* B, const EigOptions& o) {
  A.comm().collective([&] {
    const char* who = "eigensolve_distributed";
    detail::check_distributed_backend(o.backend, who);
    KRYSP_REQUIRE(A.global_rows() > 0, who, ": A is empty (0 x 0): no eigenpairs to compute");
    detail::check_distributed_precond(o.precond, who);
    KRYSP_REQUIRE(!o.spectral_flip, who, ": the spectral flip is not distributed yet");
    KRYSP_REQUIRE(!o.precond_from_b || B, who, ": a preconditioner from B needs the generalized problem");
    if (B)
      KRYSP_REQUIRE(B->row_starts() == A.row_starts(), who, ": B is ", B->global_rows(),
                    " rows on another partition than A (", A.global_rows(),
                    " rows): B must have A's order and row_starts");
    if (!too_small_for_lobpcg(A, o)) lobpcg_block_size(o.lobpcg, A.global_rows(), 0, 0);  // InputError naming k, b, n
  });
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

// The whole of M as one CsrMatrix (collective): on rank 0 only, or with `everywhere` on every rank;
// the other ranks get an empty matrix. For matrices small enough to hold whole (n ≤ kMaxIndex).
CsrMatrix<double> gather_whole(const DistCsrMatrix& M, bool everywhere) {
  const Communicator& comm = M.comm();
  struct Entry {
    std::int64_t row, col;
    double value;
  };
  std::vector<Entry> mine;
  const auto add = [&](const CsrMatrix<double>& L, auto column) {
    const auto v = L.host_view();
    for (index_t i = 0; i < L.rows(); ++i)
      for (index_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; ++k)
        mine.push_back({M.first_row() + i, column(v.col_idx[k]), v.values[k]});
  };
  add(M.local_block(), [&](index_t j) { return M.first_row() + j; });
  add(M.off_block(), [&](index_t j) { return M.halo_columns()[std::size_t(j)]; });
  std::vector<std::vector<Entry>> to(static_cast<std::size_t>(comm.size()));
  for (std::size_t r = 0; r < to.size(); ++r)
    if (everywhere || r == 0) to[r] = mine;
  const auto from = comm.all_to_all(to);
  if (!everywhere && comm.rank() != 0) return CsrMatrix<double>();
  std::vector<index_t> I, J;
  std::vector<double> V;
  for (const auto& part : from)
    for (const Entry& e : part) I.push_back(index_t(e.row)), J.push_back(index_t(e.col)), V.push_back(e.value);
  const auto n = index_t(M.global_rows());
  return CsrMatrix<double>::from_triplets(n, n, I, J, V);
}

}  // namespace

namespace detail {

std::string distributed_b_factor_note(const DistCsrMatrix& B, std::int64_t gather_max_entries) {
  const Communicator& comm = B.comm();
  auto fails = [](const CsrMatrix<double>& M) { return EnvelopeCholesky::shows_indefinite(M, kBCheckMaxFlops); };
  if (B.global_nnz() <= gather_max_entries && B.global_rows() <= kMaxIndex) {
    char failed = 0;
    const CsrMatrix<double> whole = gather_whole(B, false);
    comm.collective([&] {
      if (comm.rank() == 0) failed = fails(whole) ? 1 : 0;
    });
    comm.broadcast(&failed, 1, 0);
    return failed ? "its Cholesky factorization met a pivot <= 0" : "";
  }
  bool failed = false;
  comm.collective([&] { failed = fails(B.local_block()); });
  return comm.max(failed ? 1.0 : 0.0) > 0
             ? "the Cholesky factorization of one rank's diagonal block (a principal submatrix) met a pivot <= 0"
             : "";
}

}  // namespace detail

EigReport eigensolve_distributed(const DistCsrMatrix& A, const DistCsrMatrix* B, const EigOptions& o) {
  const auto t0 = Clock::now();
  const Communicator& comm = A.comm();
  check_request(A, B, o);
  // problem_scale.hpp, as eigensolve(): A = 2^ea·A', B = 2^eb·B' (eb even) has the pencil's
  // eigenvalues times 2^(ea−eb), the vectors times 2^(−eb/2), the residuals times 2^(ea−eb/2).
  const int ea = detail::distributed_scale_exponent(A), eb_raw = B ? detail::distributed_scale_exponent(*B) : 0;
  const int eb = eb_raw + eb_raw % 2;
  if (ea != 0 || eb != 0) {
    EigOptions os = o;
    const int er = ea - eb / 2;
    if (o.lobpcg.convergence == EigConvergence::Absolute) os.lobpcg.tol = std::ldexp(o.lobpcg.tol, -er);
    const std::optional<DistCsrMatrix> Bs = B ? std::optional<DistCsrMatrix>(B->scaled(-eb)) : std::nullopt;
    EigReport rep = eigensolve_distributed(ea != 0 ? A.scaled(-ea) : A, Bs ? &*Bs : nullptr, os);
    unscale_eig_report(rep, ea, eb,
                       detail::survives_scaling_everywhere(comm, rep.eigenvalues, ea - eb) &&
                           detail::survives_scaling_everywhere(comm, rep.eigenvectors, -eb / 2));
    return rep;
  }
  LobpcgStart st;
  // Too small for LOBPCG's basis (3k > n): as one process does, the whole spectrum by LAPACK, here
  // on every rank from the gathered matrices (a few hundred rows); each keeps its rows of the vectors.
  if (too_small_for_lobpcg(A, o)) {
    if (B) check_b_diagonal(*B);
    const CsrMatrix<double> Aw = gather_whole(A, true);
    std::optional<CsrMatrix<double>> Bw;
    if (B) Bw = gather_whole(*B, true);
    EigReport rep = detail::dense_eigensolve(Aw, Bw ? &*Bw : nullptr, o);
    const auto k = std::ptrdiff_t(rep.eigenvalues.size()), first = std::ptrdiff_t(A.first_row());
    if (!rep.eigenvectors.empty())
      rep.eigenvectors = std::vector<double>(rep.eigenvectors.begin() + first * k,
                                             rep.eigenvectors.begin() + (first + std::ptrdiff_t(A.rows())) * k);
    rep.setup_seconds = since(t0) - rep.solve_seconds;
    return rep;
  }
  st.a_norm_floor = comm.max(detail::max_abs_diagonal(A.local_block()));  // the local block holds the diagonal
  st.b_norm_floor = B ? check_b_diagonal(*B) : 1.0;

  EigReport rep;
  rep.which = to_string(o.lobpcg.which);
  rep.k = o.lobpcg.k;
  if (const std::string note = B ? detail::distributed_b_factor_note(*B) : std::string(); !note.empty()) {
    rep.status = EigStatus::NotPositiveDefinite;
    rep.status_note = note;
    rep.n = index_t(std::min<std::int64_t>(A.global_rows(), kMaxIndex));
    rep.preconditioner = "none (not run)";
    rep.backend = o.backend == Backend::Cuda ? "cuda" : "host";
    rep.setup_seconds = since(t0);
    return rep;
  }
  // Jacobi of this rank's diagonal block: the diagonal is all on it. A zero diagonal on any rank
  // is agreed; with precond_fallback it runs without a preconditioner instead, on every rank.
  const DistCsrMatrix& P = o.precond_from_b ? *B : A;
  const bool cuda = o.backend == Backend::Cuda;
  // On the GPU: A and B on each rank's current GPU (one rank per GPU), halos and sums through
  // the communicator's device transport.
  std::unique_ptr<DeviceDistCsr> dA, dB;
  if (cuda) {
    dA = std::make_unique<DeviceDistCsr>(A, SpmvPlanOptions{}, o.spmm);
    if (B) dB = std::make_unique<DeviceDistCsr>(*B, SpmvPlanOptions{}, o.spmm);
  }
  std::unique_ptr<Preconditioner<double>> M;
  try {
    const bool cheb = o.precond.kind == PrecondKind::Chebyshev;
    const DeviceDistCsr* dP = cuda ? (&P == &A ? dA : dB).get() : nullptr;
    comm.collective([&] {
      if (cheb) return;
      // Jacobi and block Jacobi (of this rank's diagonal block, as for CG) need no plan of P's;
      // make_device_preconditioner takes one all the same.
      if (cuda) M = make_device_preconditioner(P.local_block(), dP->local_plan(), o.precond);
      else M = make_host_preconditioner(P.local_block(), o.precond);
    });
    // Chebyshev works on the whole distributed P; its set-up is collective and agrees its errors.
    if (cheb && cuda) M = std::make_unique<DeviceDistChebyshev>(*dP, o.precond);
    else if (cheb) M = std::make_unique<DistChebyshev>(P, o.precond);
  } catch (const InputError& e) {
    if (!o.precond_fallback || o.precond.kind == PrecondKind::None) throw;
    rep.precond_note = detail::concat(to_string(o.precond.kind), " could not be set up (", e.what(), ")");
    M.reset();
  }
  std::unique_ptr<HostEigOps> host_ops;
  std::unique_ptr<CudaEigOps> cuda_ops;
  auto make_ops = [&](const Preconditioner<double>* m) {
    host_ops.reset();
    cuda_ops.reset();
    comm.collective([&] {
      if (cuda) {
        const index_t b = lobpcg_block_size(o.lobpcg, A.global_rows(), 0, 0);
        cuda_ops = std::make_unique<CudaEigOps>(*dA, dB.get(), m, std::max<index_t>(3 * b, o.verify ? o.lobpcg.k : 0),
                                                comm, o.spmm, A.first_row());  // the start by global row, as the host's
        cuda_ops->prepare(b);
      }
    });
    if (!cuda) host_ops = std::make_unique<HostEigOps>(A, B, m, comm, A.first_row());
  };
  make_ops(M.get());
  rep.setup_seconds = since(t0);
  rep.preconditioner = (!M                                    ? std::string("none")
                        : o.precond.kind == PrecondKind::Amg ? detail::distributed_amg_name(*M)
                                                             : M->summary()) +
                       (o.precond_from_b && M ? "(B)" : "");
  if (o.inner_iters > 0) rep.preconditioner = detail::concat("inner-cg(", o.inner_iters, " steps, ", rep.preconditioner, ")");

  const auto t1 = Clock::now();
  // The inner solve (EigOptions::inner_iters) is written over the same ops, so its dot products
  // are summed over the ranks too.
  auto run = [&](auto& eig_ops) {
    static_cast<EigResult&>(rep) = lobpcg(eig_ops, o.lobpcg, st);
    if (o.verify)
      check_missed_eigenvalues(eig_ops, A.global_rows(), o, st, rep,
                               [&](const LobpcgStart& rs) { return lobpcg(eig_ops, o.lobpcg, rs); });
  };
  // Returns whether the inner CG met pᵀA·p ≤ 0 (a global sum: the same on every rank).
  auto run_with_inner = [&](auto& ops, bool inner_solve) {
    if (!inner_solve) {
      run(ops);
      return false;
    }
    InnerSolveOps<std::decay_t<decltype(ops)>> inner(ops, o.inner_iters, o.inner_rtol);
    run(inner);
    return inner.met_nonpositive_curvature();
  };
  const bool inner_solve = o.inner_iters > 0;
  const EigReport before = rep;
  const bool indefinite = cuda ? run_with_inner(*cuda_ops, inner_solve) : run_with_inner(*host_ops, inner_solve);
  if (indefinite && !rep.converged() && o.precond_fallback) {
    // As eigensolve(): a symmetric but indefinite A needs only LOBPCG, not the inner CG or a
    // preconditioner made for an SPD A. The failed run is replaced by one without them.
    const std::string failed = rep.preconditioner;
    rep = before;
    rep.precond_note = detail::concat(failed, " met p^T A p <= 0 (A is not positive definite)");
    rep.preconditioner = "none";
    make_ops(nullptr);
    if (cuda) run_with_inner(*cuda_ops, false);
    else run_with_inner(*host_ops, false);
  }
  rep.solve_seconds = since(t1);
  rep.n = index_t(std::min<std::int64_t>(A.global_rows(), kMaxIndex));
  rep.backend = cuda ? "cuda" : "host";
  rep.device = cuda ? cuda_device_name() : "host";
  rep.spmm_kernel = (cuda ? cuda_ops->spmm_kernel(lobpcg_block_size(o.lobpcg, A.global_rows(), 0, 0))
                          : std::string("host-reference")) +
                    ", " + std::to_string(comm.size()) + " ranks" +
                    (cuda && comm.size() > 1 ? ", " + comm.device_kind() : std::string());
  rep.accuracy_floor = eig_accuracy_floor(rep);
  return rep;
}

}  // namespace krysp
