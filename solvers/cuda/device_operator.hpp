#pragma once
/// \file device_operator.hpp
/// What the GPU ops share about their operator (internal, CUDA-free): the checks on a device
/// LinearOperator and its communicator, and the lookup of its fused passes (FusedOperator).
#include <memory>

#include "krysp/base/communicator.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/fused_operator.hpp"

namespace krysp::detail {

/// A's fused passes when it offers them on the device (a device MatrixOperator), else null: the
/// ops then apply A and reduce on their own.
template <class T>
const FusedOperator<T>* fused_passes(const LinearOperator<T>& A) {
  return A.space() == MemorySpace::Device ? dynamic_cast<const FusedOperator<T>*>(&A) : nullptr;
}

/// InputError unless A is a square device operator, and, unless `ranks` (the ops sum their
/// reductions over comm), unless comm has one rank.
template <class T>
void require_device_operator(const char* who, const LinearOperator<T>& A, const Communicator& comm, bool ranks) {
  KRYSP_REQUIRE(A.rows() == A.cols(), who, ": matrix is ", A.rows(), "x", A.cols(), ", not square");
  KRYSP_REQUIRE(A.space() == MemorySpace::Device, who, ": a ", to_string(A.space()),
                " operator given to the GPU backend");
  KRYSP_REQUIRE(ranks || comm.size() == 1, who, ": the GPU backend runs on one rank for now (", comm.size(),
                " ranks in a ", comm.kind(), " communicator)");
}

/// Whether the ops may fuse M as its inverse diagonal (M->inverse_diagonal()) into their vector
/// kernels. On one rank: when M has one. On several: only when every rank with rows has one, so
/// that every rank runs the same launches and device sums (a rank without rows has no entries to
/// point at, and block Jacobi may detect b = 1 on one rank's block and b > 1 on another's).
/// Collective on several ranks: call it at the same point on every rank, outside a failing
/// constructor's reach (the ops decide at first use).
template <class T>
bool diagonal_on_every_rank(const Preconditioner<T>* M, const Communicator& comm) {
  if (comm.size() == 1) return M && M->inverse_diagonal() != nullptr;
  const char mine = M && (M->rows() == 0 || M->inverse_diagonal() != nullptr) ? 1 : 0;
  for (char ok : comm.allgather(mine))
    if (!ok) return false;
  return true;
}

/// A shared_ptr that does not own x (the caller keeps it alive).
template <class T>
std::shared_ptr<const T> borrowed(const T& x) {
  return std::shared_ptr<const T>(std::shared_ptr<void>(), &x);
}

}  // namespace krysp::detail
