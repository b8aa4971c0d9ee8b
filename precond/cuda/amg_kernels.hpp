#pragma once
/// \file amg_kernels.hpp
/// The device V-cycle's vector kernels and its coarse solve (internal; CUDA-free header). Blocks
/// are n × N row-major with their own leading dimensions; N = 1 with ld = 1 is a vector. Each
/// runs on the stream it is given (default: the default stream), so a V-cycle can be captured.
#include "krysp/base/stream.hpp"
#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"

namespace krysp::detail {

/// flags[0] = a, flags[1] = b, flags[2..count) = 0, by a one-thread launch on the default stream:
/// the AMG set-up's check flags, set without a copy from the host (which waits for the device).
void amg_init_flags(int* flags, int count, int a, int b);

/// Y = O(X) entry by entry (a copy, or a conversion between precisions).
template <class I, class O>
void amg_copy(index_t n, index_t N, const I* X, index_t ldx, O* Y, index_t ldy, DeviceStream stream = {});
/// Y += X.
template <class T>
void amg_add(index_t n, index_t N, const T* X, index_t ldx, T* Y, index_t ldy, DeviceStream stream = {});
/// G = XᵀY (K × K, column-major, on the host) for n × K row-major blocks X and Y, K ≤
/// kAmgMaxNearNullspace, summed in double: a block an entry, its rows in a fixed order and tree,
/// so the same bits every run. For the adapting V-cycles (amg_adaptive.hpp).
template <class T>
void amg_block_gram(index_t n, int K, const T* X, const T* Y, double* G);
/// X ← X·C in place for an n × K row-major block; C (K × K, column-major) is on the host.
template <class T>
void amg_block_transform(index_t n, int K, const double* C, T* X);

/// The node-block smoother's first Chebyshev iterate X = c0·D_b⁻¹·R (amg_node_smoother.cu): binv
/// holds D_b's inverse blocks, n × b (amg::node_block_inverses' layout), b divides n.
template <class T>
void amg_node_first(index_t n, index_t N, int b, T c0, const T* binv, const T* R, index_t ldr, T* X, index_t ldx,
                    DeviceStream stream = {});
/// Its step Y = X + c1·(X − Xp) + c2·D_b⁻¹·(R − W), W = A·X (Xp null: no c1 term). Xp may be Y;
/// X and W must not overlap Y.
template <class T>
void amg_node_step(index_t n, index_t N, int b, T c1, T c2, const T* binv, const T* R, index_t ldr, const T* W,
                   index_t ldw, const T* X, index_t ldx, const T* Xp, index_t ldxp, T* Y, index_t ldy,
                   DeviceStream stream = {});
/// The same step on vectors with A·X computed inside, never stored: one launch where
/// amg_node_step needs an SpMV before it. mean_row (A's entries a row, rounded up) sets the lanes
/// a row. R and Y at strides ldr and ldy, X and Xp contiguous; Xp may be Y; X must not be Y.
template <class T>
void amg_node_fused_step(const CsrView<T>& A, int mean_row, int b, T c1, T c2, const T* binv, const T* R, index_t ldr,
                         const T* X, const T* Xp, T* Y, index_t ldy, DeviceStream stream = {});

/// Y = X·B (add: Y += X·B) for the coarse solve: X an n × n dense matrix in double (the coarsest
/// matrix's inverse, AmgCoarseSolver::invert, or the coarse correction of the level above it,
/// AmgCoarseSolver::correction), B and Y n × N (B and Y must not overlap), summed in double in a
/// fixed order (a warp a row, a fixed tree across its lanes): bitwise reproducible. One kernel
/// where two triangular solves took 15-40 µs of dependent steps on a 30-200 row level.
template <class T>
void amg_dense_apply(index_t n, const double* X, index_t N, const T* B, index_t ldb, T* Y, index_t ldy, bool add,
                     DeviceStream stream = {});

/// Rows of the level above the coarsest up to which the V-cycle applies its whole coarse
/// correction, P·A_c⁻¹·R, as one dense n_l × n_l product (8 MB at most, read from L2) instead
/// of a restriction, the coarse solve and a prolongation: three dependent launches become one.
inline constexpr index_t kAmgDenseCorrectionRows = 1024;
/// Whether a hierarchy whose coarsest level is factored applies its last correction as one dense
/// product: `levels` levels, the one above the coarsest of `rows_above` rows.
inline bool amg_dense_correction(std::size_t levels, index_t rows_above) {
  return levels >= 2 && rows_above > 0 && rows_above <= kAmgDenseCorrectionRows;
}

/// The coarsest level's direct solve on the GPU: its Cholesky factor and inverse, in one thread
/// block (small_cholesky.hpp) when the matrix fits its shared memory, else by a cuSOLVER handle
/// (the factor) and a cuBLAS handle (the inverse). cuBLAS also forms the dense correction. The
/// handles outlive it: a few are kept per process for the next solver on the same device.
class AmgCoarseSolver {
 public:
  AmgCoarseSolver();
  ~AmgCoarseSolver();
  AmgCoarseSolver(const AmgCoarseSolver&) = delete;
  AmgCoarseSolver& operator=(const AmgCoarseSolver&) = delete;
  /// LX (n·n doubles) = the Cholesky factor of the symmetric n × n matrix A_c given in CSR on the
  /// device (rp, ci, va), in invert's layout: L row-major in the lower triangle, A_c's entries
  /// above it (as amg::cholesky leaves them). small_cholesky where A_c fits one block, else
  /// cuSOLVER's potrf in its deterministic mode: the same input gives the same bits. Returns −1,
  /// or the first row (0-based) whose pivot is not above amg::pivot_zero_level (amg::cholesky
  /// would pin it or refuse it), or not finite; then LX is unusable. One synchronisation (the
  /// pivot flags).
  index_t factor(index_t n, const index_t* rp, const index_t* ci, const double* va, double* LX);
  /// On entry LX holds L, the n × n Cholesky factor of the coarsest matrix A_c stored ROW-MAJOR
  /// in its lower triangle (the host's amg::cholesky layout; read column-major it is Lᵀ, upper);
  /// on return A_c⁻¹ = L⁻ᵀ·L⁻¹, both triangles, exactly symmetric ((X + Xᵀ)/2 of
  /// small_spd_inverse's substitutions where A_c fits one block, else of two cuBLAS triangular
  /// solves on the identity). Deterministic (no atomics). Its forward error is that of the
  /// solves it replaces, about κ(A_c)·ε. A pinned unknown of amg::cholesky's factor (l_jj = +∞,
  /// its row and column zero) gets a zero row and column.
  void invert(index_t n, double* LX) const;
  /// M = P·X·Pᵀ (n × n, ROW-MAJOR, exactly symmetric: (M + Mᵀ)/2 of two cuBLAS products) for P
  /// the n × nc prolongator in CSR on the device (p_rp, p_ci, p_va) and X = A_c⁻¹ (nc × nc,
  /// symmetric, from invert): the coarse correction P·A_c⁻¹·R with R = Pᵀ as one dense matrix.
  /// M must hold n·n doubles.
  template <class T>
  void correction(index_t n, index_t nc, const index_t* p_rp, const index_t* p_ci, const T* p_va, const double* X,
                  double* M) const;

 private:
  /// potrf with factor's pivot test: flags[0] its info, flags[1] the first refused row.
  void potrf(index_t n, double* LX, const double* diag, int* flags);
  int device_ = -1;  ///< the current device when made: its handles belong to it
  void* handle_ = nullptr;
  void* solver_ = nullptr;  ///< cuSOLVER's, made by the first potrf()
};

}  // namespace krysp::detail
