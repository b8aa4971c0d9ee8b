#pragma once
/// \file block_cg_kernels.hpp
/// Block CG's tall-skinny kernels (block_cg_kernels.cu, block_cg_steps.cu, block_cg_spmm_gram.cu;
/// CUDA-free header).
/// Blocks are n × s, row-major with ld = s. Each kernel streams its blocks once and accumulates
/// the small products the next host step needs: up to s = 8 a thread per row, wider blocks
/// through chunks of rows staged in shared memory. The products are summed in a fixed order
/// (per-block partials, then one block per output), so results are bitwise reproducible. The
/// small outputs go to `ws.out`, which the device writes and the host reads (block CG gives
/// mapped host memory: no download to wait for).
#include <cstddef>
#include <vector>

#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"

namespace krysp::detail {

/// Workspace of the tall-skinny reductions: partials (grid × outputs) and the output buffer.
struct TallWorkspace {
  double* partials = nullptr;
  double* out = nullptr;
  int grid = 0;             ///< blocks of every launch (fixed: the summation order depends on it)
  std::size_t partials_room = 0;  ///< doubles at `partials`
};
/// Grid size for n rows and s columns on the current device, and the partials it needs.
int tall_grid(index_t n, index_t s);
std::size_t tall_partials(int grid, index_t s);

/// out = Xᵀ·Y (bx × by, column-major), X and Y n × ld row-major.
void tall_gram(index_t n, index_t ld, const double* X, index_t bx, const double* Y, index_t by,
               const TallWorkspace& ws);

/// How Z = M⁻¹·W is obtained inside the row-wise steps: W itself (no M), D⁻¹·W on the fly (a
/// diagonal M: Z is never stored), or read from a block M filled beforehand.
enum class ZSource { Residual, InverseDiagonal, Given };
/// Widest block the fused row-wise steps take (coefficients travel as kernel parameters).
inline constexpr index_t kMaxStepCols = 16;
/// Whether tall_step and tall_rotate take s columns.
bool tall_steps_fit(index_t s);
/// Whether tall_step makes the Gram products in its pass (up to 8 columns); wider blocks write Z
/// (unless zsrc is Given) and leave the products to tall_gram.
bool tall_step_grams_fused(index_t s);
/// With `update`: Q = Q·Cq − AP·ξ into the first w columns, from Q's first wq (Cq: wq × w, ξ:
/// w × w, column-major, host). With `grams` (fused widths only): out = [WᵀZ, WᵀW] (w × w each,
/// column-major), W = Q after the update and Z per zsrc. Wider blocks write Z = D⁻¹·Q (or Q)
/// there unless zsrc is Given. s ≤ kMaxStepCols.
void tall_step(index_t n, index_t s, index_t w, const double* AP, const double* xi, double* Q, index_t wq,
               const double* Cq, ZSource zsrc, const double* inv_diag, double* Z, bool update, bool grams,
               const TallWorkspace& ws);
/// In place, from the rows as they were: X += P·Cx (Cx: w × s), then for the first w2 ≤ w columns
/// P = Z·Cw + P·Tt (Cw, Tt: w × w2), Z = M⁻¹·W per zsrc from W in Q's first w columns (wider
/// blocks: Given only). Coefficients column-major on the host; s ≤ kMaxStepCols.
void tall_rotate(index_t n, index_t s, index_t w, index_t w2, const double* Q, ZSource zsrc, const double* inv_diag,
                 const double* Z, double* P, double* X, const double* Cw, const double* Tt, const double* Cx,
                 const TallWorkspace& ws);

/// out = Σ of the grid partials of nout outputs (ws.grid blocks' partials, in block order).
void tall_reduce(int nout, const TallWorkspace& ws);

/// A kernel of tall_spmm_gram: `lanes` lanes per matrix row, each owning `cols` consecutive
/// columns (lanes·cols: the least power of two ≥ the width, at most 8).
struct SpmmGramVariant {
  int lanes = 8;
  int cols = 1;
  int min_blocks = 0;  ///< blocks per SM the kernel's register budget must allow (0: no cap)
  bool prefetch = false;  ///< load the next tile's row bounds and first (column, value) pairs ahead
  /// Every field equal.
  bool operator==(const SpmmGramVariant& o) const {
    return lanes == o.lanes && cols == o.cols && min_blocks == o.min_blocks && prefetch == o.prefetch;
  }
};
/// The variants that serve width w (1 to 8) with leading dimension ld.
std::vector<SpmmGramVariant> spmm_gram_variants(index_t w, index_t ld);
/// Doubles of partials tall_spmm_gram may need for widths up to s on the current device.
std::size_t tall_spmm_gram_partials(index_t s);
/// Qn = A·Pn (first w columns; A a device view, square) and out = PnᵀQn (w × w, column-major) in
/// one pass over Pn, Qn and A; blocks n × ld row-major. Same sums as tall_gram, other order.
void tall_spmm_gram(const CsrView<double>& A, index_t w, const double* Pn, index_t ld, double* Qn,
                    SpmmGramVariant variant, const TallWorkspace& ws);

/// out (cols × rows, row-major) = inᵀ, in being rows × cols row-major: a column-major n × s
/// block is a row-major s × n one, so transpose(in, s, n, out) makes it row-major n × s.
void transpose(const double* in, index_t rows, index_t cols, double* out);

/// X[:, j] = 0 for an n × s row-major block (one strided memset).
void zero_column(double* X, index_t n, index_t s, index_t j);

}  // namespace krysp::detail
