#pragma once
/// \file linear_operator.hpp
/// The linear-operator interface: y = Op·x on a vector and on a block, in the memory space the
/// operator works in. Preconditioners implement it (precond/preconditioner.hpp); it is the seam
/// where further operators (a matrix with its plan, an AMG hierarchy, a distributed matrix) plug
/// into the solvers (docs/architecture.md).
#include "krysp/base/types.hpp"

namespace krysp {

/// Where an operator's vectors live: host memory, or device memory of the current GPU.
enum class MemorySpace { Host, Device };
/// "host" or "device".
inline const char* to_string(MemorySpace s) { return s == MemorySpace::Host ? "host" : "device"; }

/// y = Op·x for vectors, Y = Op·X for row-major blocks; pointers in space()'s memory.
template <class T>
class LinearOperator {
 public:
  virtual ~LinearOperator() = default;
  /// Rows of the operator (entries of y).
  virtual index_t rows() const = 0;
  /// Columns of the operator (entries of x).
  virtual index_t cols() const = 0;
  /// Where apply()'s pointers must live.
  virtual MemorySpace space() const = 0;
  /// y = Op·x (cols() and rows() entries; x and y do not alias).
  virtual void apply(const T* x, T* y) const = 0;
  /// Y = Op·X for N columns of row-major blocks with leading dimensions ldx, ldy ≥ N.
  virtual void apply_block(index_t N, const T* X, index_t ldx, T* Y, index_t ldy) const = 0;
};

}  // namespace krysp
