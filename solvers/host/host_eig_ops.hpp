#pragma once
/// \file host_eig_ops.hpp
/// LOBPCG's operations on the host (see solvers/lobpcg.hpp for the contract): blocks are
/// std::vector<double>, tall products by HostBlockOps, A·X and B·X through host LinearOperators
/// (a CsrMatrix through MatrixOperator: the host SpMM). The reference the GPU backend is tested
/// against, and the no-GPU path. With a communicator, blocks hold one rank's rows (the first
/// being global row first_row), and Gram matrices and column norms are summed over the ranks
/// (docs/distributed.md; a no-op on one rank).
#include <cstdint>
#include <memory>
#include <vector>

#include "krysp/base/communicator.hpp"
#include "krysp/base/error.hpp"
#include "krysp/base/linear_operator.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/host/host_block_ops.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The host backend of lobpcg() (solvers/lobpcg.hpp): each operation as that file lists it.
class HostEigOps {
 public:
  /// An owning host block.
  struct Block {
    std::vector<double> v;
    /// The first entry.
    double* data() { return v.data(); }
    /// The first entry.
    const double* data() const { return v.data(); }
  };
  /// B null: the standard problem (B = I). M null: no preconditioner. A, B and M must outlive the ops.
  HostEigOps(const CsrMatrix<double>& A, const CsrMatrix<double>* B, const Preconditioner<double>* M);
  /// A and B (null: B = I) as host operators on this rank's rows, whose first is global row
  /// first_row; sums over comm. A, B and M must outlive the ops. Collective (sums the rows).
  HostEigOps(const LinearOperator<double>& A, const LinearOperator<double>* B, const Preconditioner<double>* M,
             const Communicator& comm, std::int64_t first_row = 0);

  /// n, the order of A (this rank's rows when distributed).
  index_t size() const { return A_->rows(); }
  /// The order of the problem: all ranks' rows (size() on one rank). LOBPCG takes its block size
  /// and iteration cap from it.
  std::int64_t global_size() const { return global_rows_; }
  /// True for A·x = λ·B·x (a B was given).
  bool generalized() const { return B_ != nullptr; }
  /// True when a preconditioner was given.
  bool has_preconditioner() const { return M_ != nullptr; }
  /// A new zeroed block of `count` entries.
  Block block(std::size_t count) const { return Block{std::vector<double>(count, 0.0)}; }
  /// dst = host (count entries; a plain copy on this backend).
  void upload(const double* host, double* dst, std::size_t count) const { std::copy(host, host + count, dst); }
  /// host = src (count entries; a plain copy on this backend).
  void download(const double* src, double* host, std::size_t count) const { std::copy(src, src + count, host); }

  /// C = Xᵀ·Y (HostBlockOps' contract; loops ordered so the compiler vectorises them).
  void gram(const double* X, index_t ldx, index_t bx, const double* Y, index_t ldy, index_t by, double* C) const;
  /// C1 = Xᵀ·Y1, C2 = Xᵀ·Y2 (two gram()s; the GPU backend makes them one download).
  void gram2(const double* X, index_t ldx, index_t bx, const double* Y1, index_t ldy1, const double* Y2,
             index_t ldy2, index_t by, double* C1, double* C2) const {
    gram(X, ldx, bx, Y1, ldy1, by, C1);
    gram(X, ldx, bx, Y2, ldy2, by, C2);
  }
  /// Y = alpha·X·C + beta·Y (HostBlockOps' contract, same loop-ordering remark).
  void combine(const double* X, index_t ldx, index_t bx, const double* C, double alpha, double beta, double* Y,
               index_t ldy, index_t by) const;
  /// Y = X (n × cols).
  void copy(index_t cols, const double* X, index_t ldx, double* Y, index_t ldy) const {
    blk_.copy(size(), cols, X, ldx, Y, ldy);
  }
  /// Y = A·X (N columns).
  void apply_a(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const;
  /// Y = B·X (N columns; Y = X for the standard problem).
  void apply_b(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const;
  /// Z = M⁻¹·R (N columns; Z = R without M).
  void precondition(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const;
  /// r_j = AX_j − λ_j·BX_j into column dest[j] of R (−1: not written); rr_j = ‖r_j‖², xx_j = ‖X_j‖².
  void residuals(index_t b, const double* AX, index_t ldax, const double* BX, index_t ldbx, const double* X,
                 index_t ldx, const double* lambda, const index_t* dest, double* R, index_t ldr, double* rr,
                 double* xx) const;
  /// X(i, j) = random_block_entry(seed, i, first_col + j) for cols columns.
  void fill_random(index_t cols, double* X, index_t ldx, std::uint64_t seed, index_t first_col) const;

 private:
  std::shared_ptr<const LinearOperator<double>> A_, B_;  ///< own the MatrixOperators made for CsrMatrices
  const Preconditioner<double>* M_;
  Communicator comm_;
  std::int64_t first_row_ = 0;
  std::int64_t global_rows_ = 0;
  HostBlockOps<double> blk_;
};

}  // namespace krysp
