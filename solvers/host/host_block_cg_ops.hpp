#pragma once
/// \file host_block_cg_ops.hpp
/// Block CG's operations on the host (see solvers/block_cg.hpp): the reference for the CUDA ops,
/// and the no-GPU path. Same fused steps, plain loops, sums in double.
#include <Kokkos_Core.hpp>

#include <vector>

#include "precond/preconditioner.hpp"
#include "solvers/block_ops.hpp"
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
  void zero_columns(Block& X, const std::vector<char>& zero) const;  ///< X[:, j] = 0 where zero[j]
  /// Q = A·P for the first w columns.
  void spmm(const Block& P, index_t w, Block& Q) const;
  void residual(const Block& B, const Block& X, Block& R) const;  ///< R = B − A·X
  void precondition(const Block& R);                              ///< Z = M⁻¹·R (kept inside)
  /// Xᵀ·Y of the first bx and by columns, bx × by column-major.
  std::vector<double> gram(const Block& X, index_t bx, const Block& Y, index_t by) const;
  /// Q = A·P for the first w columns; returns PᵀQ (w × w, column-major).
  std::vector<double> spmm_gram(const Block& P, index_t w, Block& Q) const {
    spmm(P, w, Q);
    return gram(P, w, Q, w);
  }
  /// R −= Qn·Ca (Ca: a × s), Z = M⁻¹·R; returns diag(RᵀR) and QnᵀZ.
  BlockUpdateGrams update(const Block& Qn, index_t a, const std::vector<double>& Ca, Block& R);
  /// X += Pnext·Cp (Cp: ap × s, the previous direction's step, from Pnext as it was on entry),
  /// then X += Pn·Ca (Ca: a × s, or empty: X unchanged and Cp must be empty), then Pnext[:, j] =
  /// Z[:, active[j]] − Pn·Cb[:, j] (Cb: a × |active|); returns PnextᵀPnext, PnextᵀR.
  BlockDirectionGrams direction(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                                const std::vector<double>& Cb, const std::vector<index_t>& active, const Block& R,
                                Block& Pnext, index_t ap = 0, const std::vector<double>& Cp = {}) const;
  /// direction(), then Qnext = A·Pnext and PnextᵀQnext (aqa): the next iteration's product.
  BlockDirectionGrams direction_spmm_gram(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X,
                                          const std::vector<double>& Cb, const std::vector<index_t>& active,
                                          const Block& R, Block& Pnext, Block& Qnext, index_t ap = 0,
                                          const std::vector<double>& Cp = {}) const {
    auto d = direction(Pn, a, Ca, X, Cb, active, R, Pnext, ap, Cp);
    d.aqa = spmm_gram(Pnext, index_t(active.size()), Qnext);
    return d;
  }
  /// As the CUDA backend (the same sequence of steps on both): up to 8 columns.
  bool pairs_x_steps() const { return s_ <= 8; }
  /// X += Pn·Ca (Ca: a × s).
  void update_x(const Block& Pn, index_t a, const std::vector<double>& Ca, Block& X) const;

 private:
  const T* z(const Block& R) const { return M_ ? Z_.data() : R.data(); }
  const CsrMatrix<T>& A_;
  index_t s_;
  const HostPreconditioner<T>* M_;
  Block Z_;  ///< M⁻¹·R (with M)
};

extern template class HostBlockCgOps<double>;

}  // namespace krysp
