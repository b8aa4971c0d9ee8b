#pragma once
/// \file host_block_cg_ops.hpp
/// Block CG's operations on the host (see solvers/block_cg.hpp): the reference for the CUDA ops,
/// the no-GPU path and the distributed one (docs/distributed.md). Plain loops, sums in double. A is
/// any host LinearOperator (a CsrMatrix through MatrixOperator, a DistCsrMatrix); blocks hold
/// this rank's rows, and every Gram matrix is summed over the communicator's ranks (a no-op on
/// one rank, so a serial solve is bitwise what it was).
#include <Kokkos_Core.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/block_ops.hpp"
#include "krysp/solvers/host/host_block_ops.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The host backend of block_cg() (solvers/block_cg.hpp): each operation as that file lists it.
template <class T>
class HostBlockCgOps {
 public:
  using Block = Kokkos::View<T*, Kokkos::HostSpace>;  ///< n × s, row-major, ld = s
  /// M (null for none) must have been set up for A; both must outlive the ops.
  HostBlockCgOps(const CsrMatrix<T>& A, index_t s, const Preconditioner<T>* M);
  /// A as a host operator (this rank's rows), M (null for none) of A's order, Gram matrices summed
  /// over comm; A and M must outlive the ops.
  HostBlockCgOps(const LinearOperator<T>& A, index_t s, const Preconditioner<T>* M, const Communicator& comm = {});

  /// n, the order of A (this rank's rows when distributed).
  index_t size() const { return A_->rows(); }
  /// s, the number of right-hand sides.
  index_t cols() const { return s_; }
  /// A new zeroed n × s block.
  Block block() const { return Block("block", std::size_t(size()) * s_); }
  void zero_columns(Block& X, const std::vector<char>& zero) const;  ///< X[:, j] = 0 where zero[j]
  void residual(const Block& B, const Block& X, Block& R) const;  ///< R = B − A·X
  /// Q = A·P for the first w columns; returns PᵀQ (w × w, column-major).
  std::vector<double> spmm_gram(const Block& P, index_t w, Block& Q) const;
  /// Z = M⁻¹·R for the first w columns (Z = R without M).
  void precondition(const Block& R, index_t w, Block& Z) const;
  /// Xᵀ·Y of the first bx and by columns, bx × by column-major.
  std::vector<double> gram(const Block& X, index_t bx, const Block& Y, index_t by) const;
  /// {Xᵀ·Y1, Xᵀ·Y2} of the first b columns of each.
  std::pair<std::vector<double>, std::vector<double>> gram2(const Block& X, index_t b, const Block& Y1,
                                                            const Block& Y2) const {
    return {gram(X, b, Y1, b), gram(X, b, Y2, b)};
  }
  /// W = Q·Cq − AP·ξ (Cq: wq × w, ξ: w × w) into the first w columns of Q, from its first wq, and
  /// Z = M⁻¹·W; returns {WᵀZ, WᵀW}.
  std::pair<std::vector<double>, std::vector<double>> step(const Block& AP, index_t w, const std::vector<double>& xi,
                                                           Block& Q, index_t wq, const std::vector<double>& Cq,
                                                           Block& Z) const;
  /// X += P·Cx (Cx: w × s), then P = Z·Cw + P·Tt (Cw, Tt: w × w2, w2 ≤ w; w2 = 0: X only), from
  /// the rows as they were; Z is step()'s (Q, its W, is not changed).
  void rotate(const Block& Q, const Block& Z, Block& P, Block& X, index_t w, index_t w2,
              const std::vector<double>& Cw, const std::vector<double>& Tt, const std::vector<double>& Cx) const;
  /// Y = alpha·X·C + beta·Y for the first bx columns of X and by of Y (C bx × by, column-major).
  void combine(const Block& X, index_t bx, const std::vector<double>& C, double alpha, double beta, Block& Y,
               index_t by) const;

 private:
  HostBlockCgOps(std::shared_ptr<const LinearOperator<T>> A, index_t s, const Preconditioner<T>* M,
                 const Communicator& comm);
  std::shared_ptr<const LinearOperator<T>> A_;  ///< owns the MatrixOperator made for a CsrMatrix
  index_t s_;
  const Preconditioner<T>* M_;
  Communicator comm_;
  HostBlockOps<T> blk_;
};

extern template class HostBlockCgOps<double>;

}  // namespace krysp
