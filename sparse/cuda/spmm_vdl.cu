// Launchers of the VDL SpMM kernels (parallel reduction, vector loads of X).
#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/spmm_kernels.cuh"

namespace krysp::detail {

namespace {

/// The lean row kernel spmm_vdl1_row_kernel<T, NV, S, x_vec, LONG, LOG2Q, early> on `grid` blocks.
template <class T, int NV, int S, bool LONG, int LOG2Q>
void launch_vdl1_row(unsigned grid, const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st) {
  auto go = [&](auto kernel) {
    launch_overlapped("spmm_vdl1_row_kernel", kernel, grid, kSpmmBlock, st, a.A, a.N, a.alpha, a.X, a.ldx, a.beta,
                      a.Y, a.ldy, a.ws);
  };
  const bool e = spmm_early_launch(grid, a.early, a.device, c.launch);
  if (a.x_vec)
    e ? go(spmm_vdl1_row_kernel<T, NV, S, true, LONG, LOG2Q, true>)
      : go(spmm_vdl1_row_kernel<T, NV, S, true, LONG, LOG2Q, false>);
  else
    e ? go(spmm_vdl1_row_kernel<T, NV, S, false, LONG, LOG2Q, true>)
      : go(spmm_vdl1_row_kernel<T, NV, S, false, LONG, LOG2Q, false>);
}

template <class T, int NV, int S>
void launch(const SpmmConfig& c, const SpmmArgs<T>& a, int log2q, cudaStream_t st) {
  const bool nnz_balanced = is_nnz_balanced(c.algorithm);
  const index_t N = a.N;
  // The lean path: one column lane, all N columns in one chunk of NV vectors.
  const bool lean = log2q == 0 && N <= NV * kSpmmVecWidth<T>;
  // Column tiles (blockIdx.y) for the general kernels; the lean one has a single chunk.
  const index_t chunk = spmm_chunk_columns(true, S, 1 << log2q, NV, kSpmmVecWidth<T>);  // as the plan sizes tickets
  const unsigned tiles = static_cast<unsigned>(spmm_column_tiles(N, chunk));
  if constexpr (NV > 2) {  // four vectors a lane: only the lean row kernel (spmm_runs_at)
    KRYSP_REQUIRE(!nnz_balanced && lean, "SpMM VDL: ", NV,
                  " vectors a lane need vdl-row, one column lane and N <= ", NV * kSpmmVecWidth<T>, " (N = ", N,
                  ", column lanes ", 1 << log2q, ")");
  }
  if (nnz_balanced) {
    if constexpr (NV <= 2) {
      if (a.ws.units == 0) return;
      const std::int64_t grid = (std::int64_t(a.ws.units) + kSpmmWarpsPerBlock - 1) / kSpmmWarpsPerBlock;
      if (lean)
        launch_overlapped("spmm_vdl_nnz_kernel", spmm_vdl_nnz_kernel<T, NV, S, true>, static_cast<unsigned>(grid),
                          kSpmmBlock, st, a.A, N, log2q, a.ws, a.alpha, a.X, a.ldx, a.beta, a.Y, a.ldy, a.x_vec);
      else
        launch_overlapped("spmm_vdl_nnz_kernel", spmm_vdl_nnz_kernel<T, NV, S, false>,
                          dim3(static_cast<unsigned>(grid), tiles), kSpmmBlock, st, a.A, N, log2q, a.ws, a.alpha, a.X,
                          a.ldx, a.beta, a.Y, a.ldy, a.x_vec);
    }
  } else {
    const std::int64_t threads = std::int64_t(a.A.rows) * S;
    const auto grid = static_cast<unsigned>((threads + kSpmmBlock - 1) / kSpmmBlock);
    KRYSP_REQUIRE(a.ws.num_pieces == 0 || lean, "SpMM VDL: long-row pieces need one column lane and N <= ",
                  NV * kSpmmVecWidth<T>, " (N = ", N, ", column lanes ", 1 << log2q, ")");
    if (a.ws.num_pieces > 0) {  // long rows: their pieces' blocks first
      const std::int64_t with_pieces = std::int64_t(grid) + a.ws.num_pieces;
      spmm_require_long_launch(with_pieces, 1, chunk, N);
      return launch_vdl1_row<T, NV, S, true, 0>(static_cast<unsigned>(with_pieces), c, a, st);
    }
    if (lean) return launch_vdl1_row<T, NV, S, false, 0>(grid, c, a, st);
    if constexpr (NV <= 2) {
      // The lean kernel with two or four column lanes where N fits one chunk (Q·NV vectors).
      const bool one_chunk = N <= chunk;
      if (log2q == 1 && one_chunk) return launch_vdl1_row<T, NV, S, false, 1>(grid, c, a, st);
      if constexpr (S >= 4) {
        if (log2q == 2 && one_chunk) return launch_vdl1_row<T, NV, S, false, 2>(grid, c, a, st);
      }
      launch_overlapped("spmm_vdl_row_kernel", spmm_vdl_row_kernel<T, NV, S>, dim3(grid, tiles), kSpmmBlock, st, a.A,
                        N, log2q, a.alpha, a.X, a.ldx, a.beta, a.Y, a.ldy, a.x_vec);
    }
  }
}

template <class T, int NV>
void launch_s(const SpmmConfig& c, const SpmmArgs<T>& a, int log2q, cudaStream_t st) {
  switch (c.subwarp) {
    case 2: return launch<T, NV, 2>(c, a, log2q, st);
    case 4: return launch<T, NV, 4>(c, a, log2q, st);
    case 8: return launch<T, NV, 8>(c, a, log2q, st);
    case 16: return launch<T, NV, 16>(c, a, log2q, st);
    case 32: return launch<T, NV, 32>(c, a, log2q, st);
    default: KRYSP_THROW(InputError, "SpMM VDL: sub-warp width ", c.subwarp, " is not 2, 4, 8, 16 or 32");
  }
}

}  // namespace

template <class T>
void spmm_vdl_launch(const SpmmConfig& c, const SpmmArgs<T>& a, cudaStream_t st) {
  KRYSP_REQUIRE(c.col_lanes >= 1 && c.col_lanes <= c.subwarp && (c.col_lanes & (c.col_lanes - 1)) == 0,
                "SpMM VDL: column lanes ", c.col_lanes, " is not a power of two <= the sub-warp ", c.subwarp);
  const int log2q = spmm_log2(c.col_lanes);
  switch (c.per_lane) {
    case 1: return launch_s<T, 1>(c, a, log2q, st);
    case 2: return launch_s<T, 2>(c, a, log2q, st);
    case 4: return launch_s<T, 4>(c, a, log2q, st);
    default: KRYSP_THROW(InputError, "SpMM VDL: vectors per lane ", c.per_lane, " is not 1, 2 or 4");
  }
}

template void spmm_vdl_launch(const SpmmConfig&, const SpmmArgs<double>&, cudaStream_t);
template void spmm_vdl_launch(const SpmmConfig&, const SpmmArgs<float>&, cudaStream_t);

}  // namespace krysp::detail
