#pragma once
/// \file device_operator.hpp
/// What the GPU ops share about their operator (internal, CUDA-free): the checks on a device
/// LinearOperator and its communicator, and the lookup of its fused passes (FusedOperator).
#include <memory>

#include "krysp/base/communicator.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/fused_operator.hpp"

namespace krysp::detail {

/// A's fused passes when it offers them on the device (a device MatrixOperator), else null: the
/// ops then apply A and reduce on their own.
template <class T>
const FusedOperator<T>* fused_passes(const LinearOperator<T>& A) {
  return A.space() == MemorySpace::Device ? dynamic_cast<const FusedOperator<T>*>(&A) : nullptr;
}

/// InputError unless A is a square device operator and comm has one rank. The GPU ops' reductions
/// end in device slots that their kernels test in place (CG's convergence flag); summing them over
/// ranks needs a communicator that reduces device memory, which is still to come.
template <class T>
void require_device_operator(const char* who, const LinearOperator<T>& A, const Communicator& comm) {
  KRYSP_REQUIRE(A.rows() == A.cols(), who, ": matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(A.space() == MemorySpace::Device, who, ": a ", to_string(A.space()),
                " operator given to the GPU backend");
  KRYSP_REQUIRE(comm.size() == 1, who, ": the GPU backend runs on one rank for now (", comm.size(), " ranks in a ",
                comm.kind(), " communicator; a device communicator is still to come)");
}

/// A shared_ptr that does not own x (the caller keeps it alive).
template <class T>
std::shared_ptr<const T> borrowed(const T& x) {
  return std::shared_ptr<const T>(std::shared_ptr<void>(), &x);
}

}  // namespace krysp::detail
