#pragma once
/// \file distributed_checks.hpp
/// What both distributed drivers (distributed_solve.cpp, distributed_eigensolve.cpp) refuse up
/// front about the backend (internal, not installed). Call inside
/// A.comm().collective() so that a refusal on one rank is the same InputError on every rank.
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp::detail {

/// The CUDA backend needs a GPU and rows on every rank.
inline void check_distributed_backend(const DistCsrMatrix& A, Backend backend, const char* who) {
  const bool cuda = backend == Backend::Cuda;
  KRYSP_REQUIRE(!cuda || cuda_device_available(), who,
                ": the CUDA backend needs a GPU on every rank, and this one has none");
  // The GPU ops' kernels are not made for empty launches; the host path takes such partitions.
  KRYSP_REQUIRE(!cuda || A.rows() > 0, who,
                ": the CUDA backend needs rows on every rank, and this one has none (use fewer ranks, or the "
                "host backend)");
}

}  // namespace krysp::detail
