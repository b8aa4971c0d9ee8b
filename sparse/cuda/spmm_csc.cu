// Launchers of the CSC SpMM kernels (sequential reduction, coalesced caching of the sparse row).
#include <type_traits>

#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_kernels.cuh"

namespace krysp::detail {

namespace {

/// The geometry of one CSC launch: sub-warp 2^log2s, 2^log2k sub-warps a row.
struct CscGeometry {
  bool nnz_balanced;
  int log2s, log2k;
};

template <class T, int NC, int B, bool PV>
void launch(const SpmmConfig& c, const SpmmArgs<T>& a, CscGeometry g, cudaStream_t st) {
  const int log2s = g.log2s, log2k = g.log2k;
  const SpmmWorkspaceView& ws = a.ws;
  const index_t chunk = spmm_chunk_columns(false, 1 << log2s, 0, NC, 0);  // as the plan sizes the tickets
  const unsigned tiles = static_cast<unsigned>(spmm_column_tiles(a.N, chunk));
  if (g.nnz_balanced) {
    if (ws.units == 0) return;
    const std::int64_t grid = (std::int64_t(ws.units) + kSpmmWarpsPerBlock - 1) / kSpmmWarpsPerBlock;
    launch_overlapped("spmm_csc_nnz_kernel", spmm_csc_nnz_kernel<T, NC, B, PV>,
                      dim3(static_cast<unsigned>(grid), tiles), kSpmmBlock, st, a.A, a.N, log2s, ws, a.alpha, a.X,
                      a.ldx, a.beta, a.Y, a.ldy);
  } else if (log2k > 0) {
    const std::int64_t rows_per_block = std::int64_t(kSpmmBlock >> log2s) >> log2k;
    const std::int64_t grid = (std::int64_t(a.A.rows) + rows_per_block - 1) / rows_per_block;
    launch_overlapped("spmm_csc_split_kernel", spmm_csc_split_kernel<T, NC, B, PV>,
                      dim3(static_cast<unsigned>(grid), tiles), kSpmmBlock, st, a.A, a.N, log2s, log2k, a.alpha, a.X,
                      a.ldx, a.beta, a.Y, a.ldy);
  } else {
    const int R = spmm_csc_row_rounds(a.A.rows, log2s, a.device, c.launch);
    const std::int64_t rows_per_block = std::int64_t(kSpmmBlock >> log2s) * R;
    const std::int64_t grid = (std::int64_t(a.A.rows) + rows_per_block - 1) / rows_per_block;
    // early loads in the batched walk only
    const bool e = B > 1 && spmm_early_launch((grid + ws.num_pieces) * tiles, a.early, a.device, c.launch);
    auto go = [&](auto kernel, std::int64_t blocks) {
      launch_overlapped("spmm_csc_row_kernel", kernel, dim3(static_cast<unsigned>(blocks), tiles), kSpmmBlock, st, a.A,
                        a.N, log2s, R, a.alpha, a.X, a.ldx, a.beta, a.Y, a.ldy, ws);
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
      spmm_require_long_launch(grid + ws.num_pieces, tiles, chunk, a.N);
      go_long(std::true_type{});
    } else {
      go_long(std::false_type{});
    }
  }
}

/// B, the pairs walked per step (csc_accumulate): 8 loads in flight where spmm_csc_batched says so,
/// the plain loop otherwise.
template <class T, int NC, bool PV>
void launch_b(const SpmmConfig& c, const SpmmArgs<T>& a, CscGeometry g, cudaStream_t st) {
  if (spmm_csc_batched({g.nnz_balanced, g.log2s, g.log2k, a.A.rows, a.A.nnz, a.ws.units, a.ws.num_pieces}, a.device,
                       c.launch))
    launch<T, NC, 8, PV>(c, a, g, st);
  else
    launch<T, NC, 1, PV>(c, a, g, st);
}

}  // namespace

template <class T>
void spmm_csc_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st) {
  const bool nnz_balanced = is_nnz_balanced(c.algorithm);
  const int S = c.subwarp, KS = c.split_count();
  KRYSP_REQUIRE(S >= 2 && S <= 32 && (S & (S - 1)) == 0, "SpMM CSC: sub-warp width ", S,
                " is not 2, 4, 8, 16 or 32");
  // 8 sub-warps of 32 fill the block: every S <= 32 fits 8 slices
  KRYSP_REQUIRE(KS <= 8 && (KS & (KS - 1)) == 0 && (KS == 1 || !nnz_balanced), "SpMM CSC: ksplit ", KS,
                " is not 1, 2, 4 or 8 on the row-balanced kernel");
  KRYSP_REQUIRE(a.ws.num_pieces == 0 || (KS == 1 && !nnz_balanced), "SpMM CSC: long-row pieces (", a.ws.num_pieces,
                ") need the row kernel without ksplit, not ", c.to_string());
  const CscGeometry g{nnz_balanced, spmm_log2(S), spmm_log2(KS)};
  switch (c.per_lane) {
    case 1: return launch_b<T, 1, false>(c, a, g, st);
    case 2:
      if (csc_paired(2, a.x_vec, a.N)) return launch_b<T, 2, true>(c, a, g, st);
      return launch_b<T, 2, false>(c, a, g, st);
    default: KRYSP_THROW(InputError, "SpMM CSC: columns per lane ", c.per_lane, " is not 1 or 2");
  }
}

template void spmm_csc_launch(const SpmmConfig&, const SpmmArgs<double>&, cudaStream_t);
template void spmm_csc_launch(const SpmmConfig&, const SpmmArgs<float>&, cudaStream_t);

}  // namespace krysp::detail
