// Launchers of the CSC SpMM kernels (sequential reduction, coalesced caching of the sparse row).
#include <type_traits>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_kernels.cuh"

namespace krysp::detail {

namespace {

template <class T, int NC, int B, bool PV>
void launch(bool nnz_balanced, int log2s, int log2k, const CsrView<T>& A, index_t N, const SpmmWorkspaceView& ws,
            T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy, bool early, const DevicePolicy& dev,
            cudaStream_t st) {
  const index_t chunk = spmm_chunk_columns(false, 1 << log2s, 0, NC, 0);  // as the plan sizes the tickets
  const unsigned tiles = static_cast<unsigned>(spmm_column_tiles(N, chunk));
  if (nnz_balanced) {
    if (ws.units == 0) return;
    const std::int64_t grid = (std::int64_t(ws.units) + kSpmmWarpsPerBlock - 1) / kSpmmWarpsPerBlock;
    launch_overlapped("spmm_csc_nnz_kernel", spmm_csc_nnz_kernel<T, NC, B, PV>,
                      dim3(static_cast<unsigned>(grid), tiles), kSpmmBlock, st, A, N, log2s, ws, alpha, X, ldx, beta, Y,
                      ldy);
  } else if (log2k > 0) {
    const std::int64_t rows_per_block = std::int64_t(kSpmmBlock >> log2s) >> log2k;
    const std::int64_t grid = (std::int64_t(A.rows) + rows_per_block - 1) / rows_per_block;
    launch_overlapped("spmm_csc_split_kernel", spmm_csc_split_kernel<T, NC, B, PV>,
                      dim3(static_cast<unsigned>(grid), tiles), kSpmmBlock, st, A, N, log2s, log2k, alpha, X, ldx, beta,
                      Y, ldy);
  } else {
    const int R = (std::int64_t(A.rows) << log2s) >= spmm_csc_rounds_min_threads(dev) ? kSpmmCscRowRounds : 1;
    const std::int64_t rows_per_block = std::int64_t(kSpmmBlock >> log2s) * R;
    const std::int64_t grid = (std::int64_t(A.rows) + rows_per_block - 1) / rows_per_block;
    const bool e = B > 1 && spmm_early_launch((grid + ws.num_pieces) * tiles, early, dev);  // the batched walk only
    auto go = [&](auto kernel, std::int64_t blocks) {
      launch_overlapped("spmm_csc_row_kernel", kernel, dim3(static_cast<unsigned>(blocks), tiles), kSpmmBlock, st, A, N,
                        log2s, R, alpha, X, ldx, beta, Y, ldy, ws);
    };
    auto go_long = [&](auto long_rows) {
      constexpr bool LONG = decltype(long_rows)::value;
      const std::int64_t blocks = grid + (LONG ? ws.num_pieces : 0);
      if constexpr (B > 1) {
        if (e) return go(spmm_csc_row_kernel<T, NC, B, PV, LONG, true>, blocks);
      }
      go(spmm_csc_row_kernel<T, NC, B, PV, LONG, false>, blocks);
    };
    if (ws.num_pieces > 0) {  // long rows: their pieces' blocks first
      spmm_require_long_launch(grid + ws.num_pieces, tiles, chunk, N);
      go_long(std::true_type{});
    } else {
      go_long(std::false_type{});
    }
  }
}

/// B, the pairs walked per step (csc_accumulate): 8 loads in flight for sub-warps of at least 8
/// (fewer pairs per round would waste most of a batch) in small launches, split rows, long-row
/// pieces, the merge path, and rows of at least S nonzeros on average (spmm_csc_batch_max_threads);
/// the plain loop otherwise.
template <class T, int NC, bool PV>
void launch_b(bool nnz_balanced, int log2s, int log2k, const CsrView<T>& A, index_t N, const SpmmWorkspaceView& ws,
              T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy, bool early, const DevicePolicy& dev,
              cudaStream_t st) {
  const std::int64_t threads =
      nnz_balanced ? std::int64_t(ws.units) * 32 : (std::int64_t(A.rows) << log2s) << log2k;
  const bool long_rows = std::int64_t(A.nnz) >= (std::int64_t(A.rows) << log2s);
  if (log2s >= 3 &&
      (log2k > 0 || nnz_balanced || ws.num_pieces > 0 || long_rows || threads < spmm_csc_batch_max_threads(dev)))
    launch<T, NC, 8, PV>(nnz_balanced, log2s, log2k, A, N, ws, alpha, X, ldx, beta, Y, ldy, early, dev, st);
  else
    launch<T, NC, 1, PV>(nnz_balanced, log2s, log2k, A, N, ws, alpha, X, ldx, beta, Y, ldy, early, dev, st);
}

}  // namespace

template <class T>
void spmm_csc_launch(bool nnz_balanced, const SpmmConfig& c, const CsrView<T>& A, index_t N,
                     const SpmmWorkspaceView& ws, T alpha, const T* X, index_t ldx, T beta, T* Y, index_t ldy,
                     bool x_vec, bool early, const DevicePolicy& dev, cudaStream_t st) {
  const int S = c.subwarp, KS = c.split_count();
  KRYSP_REQUIRE(S >= 2 && S <= 32 && (S & (S - 1)) == 0, "SpMM CSC: sub-warp width ", S,
                " is not 2, 4, 8, 16 or 32");
  // 8 sub-warps of 32 fill the block: every S <= 32 fits 8 slices
  KRYSP_REQUIRE(KS <= 8 && (KS & (KS - 1)) == 0 && (KS == 1 || !nnz_balanced), "SpMM CSC: ksplit ", KS,
                " is not 1, 2, 4 or 8 on the row-balanced kernel");
  KRYSP_REQUIRE(ws.num_pieces == 0 || (KS == 1 && !nnz_balanced), "SpMM CSC: long-row pieces (", ws.num_pieces,
                ") need the row kernel without ksplit, not ", c.to_string());
  const int log2s = spmm_log2(S), log2k = spmm_log2(KS);
  switch (c.per_lane) {
    case 1:
      return launch_b<T, 1, false>(nnz_balanced, log2s, log2k, A, N, ws, alpha, X, ldx, beta, Y, ldy, early, dev, st);
    case 2:
      if (csc_paired(2, x_vec, N))
        return launch_b<T, 2, true>(nnz_balanced, log2s, log2k, A, N, ws, alpha, X, ldx, beta, Y, ldy, early, dev, st);
      return launch_b<T, 2, false>(nnz_balanced, log2s, log2k, A, N, ws, alpha, X, ldx, beta, Y, ldy, early, dev, st);
    default: KRYSP_THROW(InputError, "SpMM CSC: columns per lane ", c.per_lane, " is not 1 or 2");
  }
}

template void spmm_csc_launch(bool, const SpmmConfig&, const CsrView<double>&, index_t, const SpmmWorkspaceView&,
                              double, const double*, index_t, double, double*, index_t, bool, bool, const DevicePolicy&,
                              cudaStream_t);
template void spmm_csc_launch(bool, const SpmmConfig&, const CsrView<float>&, index_t, const SpmmWorkspaceView&, float,
                              const float*, index_t, float, float*, index_t, bool, bool, const DevicePolicy&,
                              cudaStream_t);

}  // namespace krysp::detail
