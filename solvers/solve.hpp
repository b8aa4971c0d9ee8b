#pragma once
/// \file solve.hpp
/// Solve A·x = b with preconditioned CG on the chosen backend: the entry point the command line
/// and simulation codes use.
#include <string>
#include <vector>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/solve_result.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// Where a solver runs: Auto picks the GPU when there is one (resolve_backend).
enum class Backend { Auto, Cuda, Host };
/// "auto", "cuda" or "host".
const char* to_string(Backend b);
/// Parses "auto", "cuda" or "host"; InputError naming the value otherwise.
Backend parse_backend(const std::string& name);
/// Auto becomes Cuda when a CUDA device is present and Host otherwise; Cuda without a device
/// throws DeviceError.
Backend resolve_backend(Backend requested);

/// Default SolveOptions::block_group (see there).
inline constexpr index_t kDefaultBlockGroup = 0;

/// Everything solve(), solve_block() and CgSolver take.
struct SolveOptions {
  Backend backend = Backend::Auto;
  PrecondOptions precond;  ///< Jacobi by default
  CgOptions cg;
  SpmvPlanOptions plan;  ///< how the CUDA backend plans its SpMV
  /// Refuse a non-symmetric A up front (InputError naming an entry and its mirror; see
  /// sparse/symmetry.hpp). O(nnz log(row length)) once per CgSolver / solve_block(); values set
  /// later by CgSolver::update_values() are not checked again.
  bool check_symmetry = true;
  /// solve_block() solves s > block_group right-hand sides as consecutive block CG solves of at
  /// most block_group columns (0, the default: all s at once). A trade-off that depends on the
  /// matrix: the CUDA backend's kernels for up to 8 columns move far more of the copy bandwidth
  /// than the wider ones, while a wider block needs fewer iterations, on ill-conditioned matrices
  /// far fewer (docs/block_cg.md, "Block width", has the measurements).
  /// Each group is an independent block CG; columns keep their own results.
  index_t block_group = kDefaultBlockGroup;
};

/// A CG solve's result plus where and how it ran.
struct SolveReport : SolveResult {
  std::string solver = "cg";
  std::string preconditioner;
  std::string backend;         ///< "cuda" or "host"
  std::string device;          ///< GPU name, or "host"
  std::string spmv_kernel;     ///< the plan's choice (CUDA), or "host-reference"
  double setup_seconds = 0;    ///< preconditioner setup, upload and planning
};

/// ε·‖|A|·|x|‖₂/‖b‖₂: the size of the rounding in A·x relative to b, about the smallest relative
/// residual ‖b − A·x‖/‖b‖ that double precision can show for this x (CG stagnates near it). x is
/// n entries from x[0]; 0 when b_norm is 0.
double residual_rounding_floor(const CsrMatrix<double>& A, const double* x, double b_norm);

/// Solves A·x = b. On entry x is the initial guess (resized to n and zeroed if empty).
/// Throws InputError for sizes that do not match, a non-square or non-symmetric A (see
/// SolveOptions::check_symmetry), or a Jacobi preconditioner on a bad diagonal; DeviceError for GPU failures. Non-convergence is a status in the report.
SolveReport solve(const CsrMatrix<double>& A, const std::vector<double>& b, std::vector<double>& x,
                  const SolveOptions& options = {});

/// solve() for vectors in device memory: d_b and d_x hold n = A.rows() doubles each (see
/// CgSolver::solve_device); x0 is d_x's content, or zero with zero_x0.
SolveReport solve_device(const CsrMatrix<double>& A, const double* d_b, double* d_x, index_t n,
                         const SolveOptions& options = {}, bool zero_x0 = false);

/// A block CG solve's results plus where and how it ran.
struct BlockSolveReport : BlockSolveResult {
  std::string solver = "block-cg";
  std::string preconditioner;
  std::string backend;
  std::string device;
  std::string spmm_kernel;   ///< the SpMM plan's choice for s columns (CUDA), or "host-reference"
  double setup_seconds = 0;
};

/// Solves A·X = B for s right-hand sides at once with block PCG (DR-BCG, docs/block_cg.md), no
/// column needing more iterations than CG alone would. B and X are n × s, column-major (column j
/// is right-hand side j, as Matrix Market arrays store them); on entry X is the initial guess
/// (zero-filled if empty). Each column gets its own status and residuals.
BlockSolveReport solve_block(const CsrMatrix<double>& A, const std::vector<double>& B, index_t s,
                             std::vector<double>& X, const SolveOptions& options = {});

}  // namespace krysp
