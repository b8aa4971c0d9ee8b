#pragma once
/// \file host_block_cg_ops.hpp
/// Block CG's operations on the host (see solvers/block_cg.hpp).
#include <Kokkos_Core.hpp>

#include <vector>

#include "precond/preconditioner.hpp"
#include "solvers/host/host_block_ops.hpp"
#include "sparse/csr.hpp"

namespace krysp {

/// The host backend of block_cg() (solvers/block_cg.hpp): each operation as that file lists it.
template <class T>
class HostBlockCgOps {
 public:
  using Block = Kokkos::View<T*, Kokkos::HostSpace>;  ///< n × s, row-major, ld = s
  /// M (null for none) must have been set up for A; both must outlive the ops.
  HostBlockCgOps(const CsrMatrix<T>& A, index_t s, const HostPreconditioner<T>* M);

  /// n, the order of A.
  index_t size() const { return A_.rows(); }
  /// s, the number of right-hand sides.
  index_t cols() const { return s_; }
  /// A new zeroed n × s block.
  Block block() const { return Block("block", std::size_t(size()) * s_); }
  /// Q = A·P for the first w columns.
  void spmm(const Block& P, index_t w, Block& Q) const;
  void residual(const Block& B, const Block& X, Block& R) const;  ///< R = B − A·X
  bool precondition(const Block& R, Block& Z) const;             ///< Z = M⁻¹·R; false without M
  /// Xᵀ·Y of the first bx and by columns, bx × by column-major.
  std::vector<double> gram(const Block& X, index_t bx, const Block& Y, index_t by) const;
  /// Y = alpha·X·C + beta·Y (first bx columns of X, by of Y; C bx × by column-major).
  void combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta, Block& Y,
               index_t by) const;
  /// The first b columns of Y = those of X.
  void copy(const Block& X, Block& Y, index_t b) const;

 private:
  const CsrMatrix<T>& A_;
  index_t s_;
  const HostPreconditioner<T>* M_;
  HostBlockOps<T> dense_;
};

extern template class HostBlockCgOps<double>;

}  // namespace krysp
