#pragma once
/// \file cg_solver.hpp
/// A CG solver bound to one matrix, for codes that solve with the same structure many times (a
/// time-stepping loop): the SpMV plan, the preconditioner and the device buffers are made once
/// in the constructor; each solve() reuses them, warm-started from the x it is given.
#include <memory>
#include <vector>

#include "krysp/solvers/solve.hpp"

namespace krysp {

/// CG bound to one matrix: set up once, solve many times (see the file comment).
class CgSolver {
 public:
  /// Sets up for A on the backend `options.backend` resolves to (see resolve_backend): the SpMV
  /// plan (CUDA), the preconditioner, the workspace. A's storage is shared, not copied (a
  /// device-borrowed A stays the caller's memory), except where A's entries lie beyond
  /// 2^±kScaleExponentLimit (problem_scale.hpp): then the solver holds a copy times a power of two,
  /// and values change through update_values() only. Throws InputError for a non-square A or a
  /// preconditioner A does not allow.
  explicit CgSolver(const CsrMatrix<double>& A, const SolveOptions& options = {});
  ~CgSolver();
  /// Moves the solver (plan, preconditioner and buffers move with it).
  CgSolver(CgSolver&&) noexcept;
  /// Moves the solver (plan, preconditioner and buffers move with it).
  CgSolver& operator=(CgSolver&&) noexcept;

  /// Solves A·x = b with x as the initial guess (resized and zeroed if empty). When A's values
  /// changed since the preconditioner was set up (A.values_version() moved on: set_values or
  /// notify_values_changed on any copy of A), the preconditioner is set up again first; the plan
  /// stays. A b (or an A) whose entries lie beyond 2^±kScaleExponentLimit is solved as b·2^−e
  /// (problem_scale.hpp), exactly, and x and the residual norms reported are scaled back.
  SolveReport solve(const std::vector<double>& b, std::vector<double>& x);

  /// Solves A·x = b for vectors in device memory, for codes whose data live on the GPU: d_b and
  /// d_x hold n = A.rows() doubles each (cudaMalloc'd or managed memory on the current device;
  /// InputError for a null, host or wrong-size argument, naming it). x0 is d_x's content, or
  /// zero with zero_x0 (d_x is then not read). On the CUDA backend nothing crosses the bus but
  /// the loop's scalars; on the host backend, or where A was rescaled, b and x go through the
  /// host. Where ‖b‖ (from bᵀb on the device) is 0 or beyond 2^±400, so that its squares may have
  /// left double's range, the solve is done again through the host, where solve() rescales b.
  SolveReport solve_device(const double* d_b, double* d_x, index_t n, bool zero_x0 = false);

  /// Replaces A's values, keeping its structure (values.size() == nnz; InputError otherwise). The
  /// SpMV plan stays; the preconditioner is set up again, since it depends on the values. A matrix
  /// with another structure needs a new CgSolver (a plan refuses it with an InputError).
  void update_values(const std::vector<double>& values);

  /// The options in force (backend resolved to Cuda or Host).
  const SolveOptions& options() const;
  /// The SpMV plan (null on the host backend).
  const SpmvPlan<double>* plan() const;
  /// The matrix this solver is bound to (shares storage with the one given to the constructor,
  /// unless it was rescaled: see the constructor).
  const CsrMatrix<double>& matrix() const;
  /// How many times the preconditioner was set up: 1 after construction, one more per values
  /// change seen (update_values, or a solve() after A.values_version() moved on). A preconditioner
  /// that can (host AMG) redoes only its numbers then (Preconditioner::update_values).
  int preconditioner_setups() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  /// solve() on the numbers as they are, with `cg` (its atol on that scale).
  SolveReport solve_as_given(const std::vector<double>& b, std::vector<double>& x, const CgOptions& cg);
};

}  // namespace krysp
