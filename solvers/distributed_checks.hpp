#pragma once
/// \file distributed_checks.hpp
/// What both distributed drivers (distributed_solve.cpp, distributed_eigensolve.cpp) refuse up
/// front about the backend (internal, not installed). Call inside
/// A.comm().collective() so that a refusal on one rank is the same InputError on every rank.
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/solve.hpp"

namespace krysp::detail {

/// The CUDA backend needs a GPU on every rank (a rank without rows too: it takes part in every
/// device sum).
inline void check_distributed_backend(Backend backend, const char* who) {
  KRYSP_REQUIRE(backend != Backend::Cuda || cuda_device_available(), who,
                ": the CUDA backend needs a GPU on every rank, and this one has none");
}

}  // namespace krysp::detail
