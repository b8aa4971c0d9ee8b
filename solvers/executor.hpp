#pragma once
/// \file executor.hpp
/// One small struct per backend that makes what a driver needs (internal): the matrix as the
/// backend's LinearOperator, a preconditioner, and the type of each algorithm's ops. The drivers
/// (cg_solver.cpp, solve.cpp, eigensolve.cpp) write their flow once as a template over it; what
/// stays per backend is moving the caller's arrays in and out (host copies, or uploads, device
/// transposes and a zero-fill that overlaps the solve).
#include <memory>
#include <string>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/cuda/cuda_block_cg_ops.hpp"
#include "krysp/solvers/cuda/cuda_cg_ops.hpp"
#include "krysp/solvers/cuda/cuda_eig_ops.hpp"
#include "krysp/solvers/host/host_block_cg_ops.hpp"
#include "krysp/solvers/host/host_cg_ops.hpp"
#include "krysp/solvers/host/host_eig_ops.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

/// The host backend: plain loops, the reference and the no-GPU path.
struct HostExecutor {
  /// The Backend value it serves.
  static constexpr Backend backend = Backend::Host;
  using CgOps = HostCgOps<double>;            ///< cg()'s ops
  using BlockCgOps = HostBlockCgOps<double>;  ///< block_cg()'s ops
  using EigOps = HostEigOps;                  ///< lobpcg()'s ops
  /// A as a host operator (A's storage shared, not copied).
  std::shared_ptr<const MatrixOperator<double>> matrix(const CsrMatrix<double>& A) const {
    return std::make_shared<const MatrixOperator<double>>(MatrixOperator<double>::host(A));
  }
  /// M set up for P's matrix; null for PrecondKind::None.
  std::unique_ptr<Preconditioner<double>> preconditioner(const MatrixOperator<double>& P,
                                                         const PrecondOptions& o) const {
    return make_host_preconditioner(P.matrix(), o);
  }
  /// The report's device name.
  std::string device() const { return "host"; }
  /// Nothing to wait for.
  void synchronize() const {}
};

/// The CUDA backend: the matrix with its plans and fused passes (MatrixOperator::device), device
/// preconditioners, fused vector kernels.
struct CudaExecutor {
  /// The Backend value it serves.
  static constexpr Backend backend = Backend::Cuda;
  using CgOps = CudaCgOps<double>;            ///< cg()'s ops
  using BlockCgOps = CudaBlockCgOps<double>;  ///< block_cg()'s ops
  using EigOps = CudaEigOps;                  ///< lobpcg()'s ops
  SpmvPlanOptions spmv;  ///< A's SpMV plan, made by matrix() when spmv_now
  SpmmPlanOptions spmm;  ///< every SpMM plan
  bool spmv_now = true;  ///< false: the SpMV plan is made when first needed (LOBPCG needs none)
  /// A on the current GPU with its plans.
  std::shared_ptr<const MatrixOperator<double>> matrix(const CsrMatrix<double>& A) const {
    return std::make_shared<const MatrixOperator<double>>(
        spmv_now ? MatrixOperator<double>::device(A, spmv, spmm) : MatrixOperator<double>::device(A, nullptr, spmm));
  }
  /// M set up for P's matrix from P's SpMV plan (shared with the solver); null for
  /// PrecondKind::None (no plan made then).
  std::unique_ptr<Preconditioner<double>> preconditioner(const MatrixOperator<double>& P,
                                                         const PrecondOptions& o) const {
    if (o.kind == PrecondKind::None) return nullptr;
    return make_device_preconditioner(P.matrix(), *P.spmv_plan(), o);
  }
  /// The report's device name.
  std::string device() const { return cuda_device_name(); }
  /// Waits for the device (setup times include the uploads and plans).
  void synchronize() const { cuda_synchronize(); }
};

}  // namespace krysp
