// Nonzero-balanced SpMV: every warp takes a fixed tile of 32·K consecutive nonzeros.
//
// Two reductions share one kernel template, differing only in which nonzeros a lane holds:
//  - NnzSegmented (VSR): in each of S = K/E steps the warp reads 32·E consecutive nonzeros, lane l
//    the E entries at l·E (E = 16 bytes of values: 2 doubles or 4 floats), so every load
//    instruction of the warp is one contiguous, fully coalesced 16-byte-per-lane access (int2/int4
//    for the column indices). Rows are summed by a segmented inclusive scan: sequentially over the
//    lane's E entries, then across lanes with warp shuffles, where a lane adds its neighbour's value
//    only while both lie in the same row; the running value of the row open at the end of a step is
//    carried into the next step.
//  - NnzSequential: E = K, one step: lane l reads its own K consecutive nonzeros (K/E_vec vector
//    loads) and sums them sequentially; one segmented warp scan per tile joins the pieces of rows
//    that cross lane boundaries.
//
// Row boundaries come from the plan's partition (spmv_partition.hpp), never from a search per
// nonzero: the warp reads row_ptr[part[w]+1 .. part[w+1]] and marks the tile positions where rows
// start in a shared bit mask. The value of the scan at the last entry of each row (and at the last
// entry of the tile) goes to shared memory; then the lanes walk the rows the tile writes,
// [part[w], part[w+1]), and write y = alpha·sum + beta·y (beta = 0 never reads y). A row that
// started in an earlier warp of the block adds those warps' carries (shared memory, warp order).
// A row still open at the end of a block leaves a block carry (its partial sum over that block).
// The carries of the blocks before the one holding the row's end are added to the row in block
// order, in one of two ways chosen when the plan is made (SpmvPlanOptions::carry):
//  - look-back (small matrices, one launch): each block takes its index from an atomic ticket, so
//    that every block it may wait for has already started; it publishes its own carry (value,
//    fence, flag = this launch's epoch) before it waits, then sums the carries it needs. The
//    epoch lives on the device, beside the ticket (the block taking the last index starts the
//    next one), so a launch replayed from a CUDA graph gets a new epoch as a fresh one does;
//  - fix-up (large matrices): blocks only store their carries, and a second tiny kernel adds them
//    (waiting blocks would hold their SM slots and cost bandwidth).
// No floating-point atomics anywhere: results are bitwise reproducible, in either mode.
//
// Latency: a tile's loads are ordered so that only two memory round trips are exposed: the
// column indices and values (then the gathers of x), in parallel with part[] (then row_ptr).

#include <cstdint>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/cuda/grid_reduce.cuh"
#include "krysp/base/cuda/launch.cuh"
#include "krysp/sparse/cuda/load.cuh"
#include "krysp/sparse/cuda/spmv_kernels.cuh"

namespace krysp::detail {
namespace {

constexpr unsigned kFull = 0xffffffffu;

template <class T>
struct NnzArgs {
  CsrView<T> A;
  const index_t* part;
  index_t num_tiles;
  T alpha;
  T beta;
  const T* x;
  T* y;
  // Rows split between blocks (only when carry != 0): 1 = look-back, 2 = fix-up kernel after.
  int carry;
  T* block_carry;
  unsigned* flags;
  const index_t* carry_in;
  unsigned long long* ticket;
  SpmvDot dot;  // fused xᵀy (DOT kernels only)
};

/// Shared-memory slot of tile position p, padded so that the lanes of a warp, whose chunks are E
/// apart, write to (nearly) distinct banks: one padding entry every E positions for runs of 8 or
/// more, one every 32 for short runs (a few-way conflicts on those sparse row-end stores, for a
/// third less shared memory than padding every E).
template <int E>
__device__ __forceinline__ int slot(int p) {
  return E >= 8 ? p + p / E : p + (p >> 5);
}
template <int E, int TILE>
inline constexpr int kSlots = E >= 8 ? TILE + TILE / E : TILE + TILE / 32;

template <class T, int K, int E, int kWarps, bool DOT>
__global__ void __launch_bounds__(32 * kWarps) spmv_nnz_kernel(const NnzArgs<T> a) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  static_assert(K % E == 0 && (E & (E - 1)) == 0 && E <= 16, "E must be a power of two dividing K");
  constexpr int TILE = 32 * K;
  constexpr int S = K / E;
  constexpr int SLOTS = kSlots<E, TILE>;
  constexpr unsigned kLow = (1u << E) - 1u;
  __shared__ T s_val[kWarps][SLOTS];    // scan value at the last entry of each row piece
  __shared__ unsigned s_head[kWarps][K];  // bit p: a row starts at tile position p (TILE/32 = K words)
  __shared__ index_t s_crow[kWarps];    // the row each warp carries into the next tile, or -1
  __shared__ T s_cval[kWarps];          // ... and its partial sum
  __shared__ index_t s_block;           // this block's index (from the ticket with look-back)
  __shared__ unsigned s_epoch;          // this launch's epoch (look-back), never 0
  __shared__ T s_carry_in;              // sum of earlier blocks' carries for the block's first row

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  index_t block = index_t(blockIdx.x);
  if (a.carry == 1) {  // look-back; uniform over the grid
    if (threadIdx.x == 0) {
      // Indices in start order: a block only ever waits for blocks that started before it. The
      // ticket word holds the launch's epoch count (high half) and the next index (low half); the
      // block that takes the last index starts the next epoch at index 0 (every block of this
      // launch has its ticket by then). Epochs run 1 .. 2^32 − 1: the flags start at 0.
      const unsigned long long t = atomicAdd(a.ticket, 1ull);
      const unsigned id = unsigned(t), count = unsigned(t >> 32);
      if (id == gridDim.x - 1) *a.ticket = static_cast<unsigned long long>(count == 0xfffffffeu ? 0u : count + 1u) << 32;
      s_block = index_t(id);
      s_epoch = count + 1u;
      s_carry_in = T(0);
    }
    __syncthreads();
    block = s_block;
  }
  const index_t tile = block * kWarps + warp;
  const bool active = tile < a.num_tiles;
  const index_t* __restrict__ row_ptr = a.A.row_ptr;
  const index_t nnz = a.A.nnz;

  index_t r0 = 0, r1 = 0, s = 0;
  int len = 0;
  if (active) {
    r0 = __ldg(a.part + tile);
    r1 = __ldg(a.part + tile + 1);
    s = tile * TILE;  // tile < ceil(nnz / TILE): no overflow
    len = nnz - s < TILE ? int(nnz - s) : TILE;

    // 1. Stream the tile's column indices and values (vector loads; the partial last tile entry by entry).
    index_t col[S][E];
    T val[S][E];
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const int q0 = j * 32 * E + lane * E;
      if (q0 + E <= len) {
        load_stream_n<E>(a.A.col_idx + s + q0, col[j]);
        load_stream_n<E>(a.A.values + s + q0, val[j]);
      } else {
#pragma unroll
        for (int i = 0; i < E; ++i) {
          const bool ok = q0 + i < len;
          col[j][i] = ok ? load_stream(a.A.col_idx + s + q0 + i) : 0;
          val[j][i] = ok ? load_stream(a.A.values + s + q0 + i) : T(0);
        }
      }
    }

    // 2. Loads that are in flight together: the first row_ptr entries of the tile (they wait only
    //    for part[]) and the gathers of x (read-only path; they wait only for the column indices).
    //    Nothing consumes them before step 4, so a tile costs about two memory round trips.
    const std::int64_t r_first = std::int64_t(r0) + 1 + lane;
    const index_t rp_first = r_first <= r1 ? __ldg(row_ptr + r_first) : 0;
    T xv[S][E];
#pragma unroll
    for (int j = 0; j < S; ++j)
#pragma unroll
      for (int i = 0; i < E; ++i) xv[j][i] = (j * 32 * E + lane * E + i < len) ? load_cached(a.x + col[j][i]) : T(0);

    // 3. Mark the positions where rows start (rows part[w]+1 .. part[w+1]); position 0 needs no mark.
    if (lane < K) s_head[warp][lane] = 0u;
    __syncwarp();
    if (r_first <= r1) {
      const index_t p = rp_first - s;
      if (p > 0 && p < TILE) atomicOr(&s_head[warp][p >> 5], 1u << (p & 31));
    }
    for (std::int64_t r = r_first + 32; r <= r1; r += 32) {
      const index_t p = __ldg(row_ptr + r) - s;
      if (p > 0 && p < TILE) atomicOr(&s_head[warp][p >> 5], 1u << (p & 31));
    }
    __syncwarp();

    // 4. Segmented scan, step by step; the row open at the end of a step carries into the next.
    T carry = T(0);
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const int q0 = j * 32 * E + lane * E;
      const unsigned bits = (s_head[warp][q0 >> 5] >> (q0 & 31)) & kLow;  // E bits, same word
      const int qn = q0 + E;
      const unsigned next = qn < TILE ? (s_head[warp][qn >> 5] >> (qn & 31)) & 1u : 1u;
      // Sequential inclusive scan over the lane's E entries.
      T prod[E];
#pragma unroll
      for (int i = 0; i < E; ++i) prod[i] = val[j][i] * xv[j][i];  // padding: 0 * 0
      T acc[E];
      acc[0] = prod[0];
#pragma unroll
      for (int i = 1; i < E; ++i) acc[i] = ((bits >> i) & 1u) ? prod[i] : acc[i - 1] + prod[i];
      // Across lanes: v = sum of the lane's last row piece, extended over earlier lanes of that row.
      T v = acc[E - 1];
      if (lane == 0 && bits == 0u) v = carry + v;
      const unsigned heads = __ballot_sync(kFull, bits != 0u);
      const unsigned upto = heads & (kFull >> (31 - lane));  // lanes 0..lane that start a row
      const int seg = upto ? 31 - __clz(upto) : 0;           // first lane of this lane's last row piece
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const T u = __shfl_up_sync(kFull, v, off);
        if (lane - off >= seg) v = u + v;
      }
      T prefix = __shfl_up_sync(kFull, v, 1);
      if (lane == 0) prefix = carry;
      const int first = bits ? __ffs(bits) - 1 : E;            // entries before it continue the row
      const unsigned ends = (bits >> 1) | (next << (E - 1));  // entry i is the last of its row piece
#pragma unroll
      for (int i = 0; i < E; ++i)
        if ((ends >> i) & 1u) s_val[warp][slot<E>(q0 + i)] = i < first ? prefix + acc[i] : acc[i];
      carry = __shfl_sync(kFull, v, 31);
    }
    __syncwarp();

    // 5. The row this tile leaves open (it holds nonzero s + len, the next tile's first).
    if (lane == 0) {
      const bool open = r1 < a.A.rows && __ldg(row_ptr + r1) < s + len;
      s_crow[warp] = open ? r1 : -1;
      s_cval[warp] = open ? s_val[warp][slot<E>(len - 1)] : T(0);
    }
  } else if (lane == 0) {
    s_crow[warp] = -1;
    s_cval[warp] = T(0);
  }
  __syncthreads();

  // 6. Publish this block's carry: the row open at its end, summed over the warps holding a piece
  //    of it. Look-back: then collect the carries of the blocks before this one that hold pieces of
  //    its first row (carry_in[block] of them, 0 for most blocks). Fix-up: a second kernel does.
  if (a.carry != 0 && warp == 0) {
    if (lane == 0) {
      const index_t left = a.num_tiles - block * kWarps;
      const int last = (left < kWarps ? int(left) : kWarps) - 1;
      const index_t row = s_crow[last];
      if (row >= 0) {
        T total = s_cval[last];
        for (int j = last - 1; j >= 0 && s_crow[j] == row; --j) total += s_cval[j];
        a.block_carry[block] = total;
        if (a.carry == 1) {
          __threadfence();  // the value is visible before the flag
          *reinterpret_cast<volatile unsigned*>(a.flags + block) = s_epoch;
        }
      }
    }
    if (a.carry == 1) {
      const index_t count = __ldg(a.carry_in + block);
      if (count > 0) {  // warp-uniform
        T g = T(0);
        for (index_t i = lane; i < count; i += 32) {  // fixed assignment of blocks to lanes
          const index_t p = block - count + i;
          while (*reinterpret_cast<volatile unsigned*>(a.flags + p) != s_epoch) __nanosleep(64);
          __threadfence();
          g += __ldcg(a.block_carry + p);
        }
#pragma unroll
        for (int off = 16; off > 0; off /= 2) g += __shfl_xor_sync(kFull, g, off);  // fixed tree
        if (lane == 0) s_carry_in = g;
      }
    }
  }
  if (a.carry == 1) __syncthreads();

  // 7. Write the rows that end in this tile: [part[w], part[w+1]). The fused dot takes every row
  //    but, in fix-up mode, the one begun in an earlier block: the fix-up kernel adds that one.
  double d[1] = {0.0};
  if (active) {
    const index_t block_start = block * (kWarps * TILE);
    for (std::int64_t r = std::int64_t(r0) + lane; r < r1; r += 32) {
      const index_t b = __ldg(row_ptr + r), e = __ldg(row_ptr + r + 1);
      T sum = e > b ? s_val[warp][slot<E>(e - 1 - s)] : T(0);
      if (b < s) {  // started before this tile (only r == part[w]): add earlier warps' carries, in order
        for (int j = warp - 1; j >= 0 && s_crow[j] == r; --j) sum += s_cval[j];
        if (a.carry == 1 && b < block_start) sum += s_carry_in;  // ... and earlier blocks' (look-back)
      }
      const T yv = store_axpby(a.y + r, a.alpha, sum, a.beta);
      if constexpr (DOT)
        if (!(a.carry == 2 && b < block_start)) d[0] += double(load_cached(a.x + r)) * double(yv);
    }
  }
  if constexpr (DOT) {
    if (a.carry == 2)
      block_partial<1, 32 * kWarps>(d, a.dot.partials, unsigned(block));
    else
      grid_sum<1, 32 * kWarps>(d, {a.dot.partials, a.dot.ticket}, unsigned(block), gridDim.x, a.dot.out, {{0}});
  }
}

/// Fix-up mode: y[R] += alpha·Σ carry[b - carry_in[b] .. b) for every block b that writes a row R
/// begun in earlier blocks (R = part[b·warps], the row holding the block's first nonzero). One
/// warp per block; lanes strided over the carries, then a fixed shuffle tree (deterministic).
/// DOT: adds x[R]·y[R] to block b's partial of the fused dot, then sums all partials.
constexpr int kFixupBlock = 256;
template <class T, bool DOT>
__global__ void __launch_bounds__(kFixupBlock) spmv_carry_fixup_kernel(const index_t* __restrict__ carry_in,
                                                                       const index_t* __restrict__ part,
                                                                       index_t num_blocks, int warps,
                                                                       const T* __restrict__ carry, T alpha, T* y,
                                                                       const T* __restrict__ x, SpmvDot dot) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t b = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  double d[1] = {0.0};
  if (b < num_blocks) {  // whole warps agree
    const index_t count = carry_in[b];
    if (count > 0) {
      T sum = T(0);
      for (index_t i = lane; i < count; i += 32) sum += carry[b - count + i];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(kFull, sum, off);
      if (lane == 0) {
        const index_t row = part[b * warps];
        const T yv = y[row] + alpha * sum;
        y[row] = yv;
        if constexpr (DOT) d[0] = double(x[row]) * double(yv);
      }
    }
    if constexpr (DOT)
      if (lane == 0) d[0] += dot.partials[b];
  }
  if constexpr (DOT)
    grid_sum<1, kFixupBlock>(d, {dot.partials + num_blocks, dot.ticket}, blockIdx.x, gridDim.x, dot.out, {{0}});
}

index_t fixup_blocks(index_t num_blocks) {
  return index_t((std::int64_t(num_blocks) * 32 + kFixupBlock - 1) / kFixupBlock);
}

/// The fused dot alone, in one block: *out = xᵀy (where no SpMV kernel runs).
template <class T>
__global__ void __launch_bounds__(kReduceBlock) dot_only_kernel(index_t n, const T* __restrict__ x,
                                                                const T* __restrict__ y, double* out) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  __shared__ double shared[1][kReduceBlock / 32];
  double d[1] = {0.0};
  for (index_t i = threadIdx.x; i < n; i += kReduceBlock) d[0] += double(x[i]) * double(y[i]);
  block_sum<1, kReduceBlock>(d, shared);
  if (threadIdx.x == 0) *out = d[0];
}

/// nnz = 0: y = beta·y (0 when beta = 0, never reading y).
template <class T>
__global__ void __launch_bounds__(256) spmv_scale_kernel(index_t n, T beta, T* y) {
  wait_for_previous_kernel();  // launched overlapped: no memory access before this
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = beta == T(0) ? T(0) : beta * y[i];
}

template <class T, int K, int E, int NW>
void launch_nnz(const CsrView<T>& A, const SpmvWorkspaceView& ws, T alpha, const T* x, T beta, T* y,
                const SpmvDot& dot, cudaStream_t st) {
  using Carry = SpmvWorkspaceView::Carry;
  const int mode = ws.carry == Carry::LookBack ? 1 : ws.carry == Carry::FixUp ? 2 : 0;
  NnzArgs<T> args{A, ws.partition, ws.geometry.num_tiles, alpha, beta, x, y, mode,
                  static_cast<T*>(ws.block_carry), ws.flags, ws.carry_in, ws.ticket, dot};
  const auto grid = static_cast<unsigned>(ws.geometry.num_blocks);
  if (dot.out)
    launch_overlapped("spmv_nnz_kernel", spmv_nnz_kernel<T, K, E, NW, true>, grid, 32 * NW, st, args);
  else
    launch_overlapped("spmv_nnz_kernel", spmv_nnz_kernel<T, K, E, NW, false>, grid, 32 * NW, st, args);
  if (mode == 2) {
    const auto fgrid = static_cast<unsigned>(fixup_blocks(ws.geometry.num_blocks));
    const auto* carry = static_cast<const T*>(ws.block_carry);
    if (dot.out)
      launch_overlapped("spmv_carry_fixup_kernel", spmv_carry_fixup_kernel<T, true>, fgrid, kFixupBlock, st,
                        ws.carry_in, ws.partition, ws.geometry.num_blocks, NW, carry, alpha, y, x, dot);
    else
      launch_overlapped("spmv_carry_fixup_kernel", spmv_carry_fixup_kernel<T, false>, fgrid, kFixupBlock, st,
                        ws.carry_in, ws.partition, ws.geometry.num_blocks, NW, carry, alpha, y, x, dot);
  }
}

}  // namespace

template <class T>
void spmv_scale(index_t n, T beta, T* y, DeviceStream stream) {
  if (n == 0) return;
  launch_overlapped("spmv_scale_kernel", spmv_scale_kernel<T>, static_cast<unsigned>((std::int64_t(n) + 255) / 256),
                    256, cuda_stream(stream), n, beta, y);
}

template <class T>
void spmv_dot_only(index_t n, const T* x, const T* y, const SpmvDot& dot, DeviceStream stream) {
  launch_overlapped("dot_only_kernel", dot_only_kernel<T>, 1, kReduceBlock, cuda_stream(stream), n, x, y, dot.out);
}

std::size_t spmv_nnz_dot_partials(const NnzGeometry& g, bool fixup) {
  return std::size_t(g.num_blocks) + (fixup ? std::size_t(fixup_blocks(g.num_blocks)) : 0);
}

template <class T, int NW>
void spmv_nnz_nw(const CsrView<T>& A, const SpmvWorkspaceView& ws, bool segmented, int k, T alpha, const T* x, T beta,
                 T* y, const SpmvDot& dot, cudaStream_t st) {
  constexpr int V = 16 / int(sizeof(T));  // entries in 16 bytes of values
  if (segmented) {
    switch (k) {
      case 4: return launch_nnz<T, 4, V, NW>(A, ws, alpha, x, beta, y, dot, st);
      case 8: return launch_nnz<T, 8, V, NW>(A, ws, alpha, x, beta, y, dot, st);
      case 16: return launch_nnz<T, 16, V, NW>(A, ws, alpha, x, beta, y, dot, st);
    }
  } else {
    switch (k) {
      case 4: return launch_nnz<T, 4, 4, NW>(A, ws, alpha, x, beta, y, dot, st);
      case 8: return launch_nnz<T, 8, 8, NW>(A, ws, alpha, x, beta, y, dot, st);
      case 16: return launch_nnz<T, 16, 16, NW>(A, ws, alpha, x, beta, y, dot, st);
    }
  }
  KRYSP_THROW(InputError, "spmv_nnz: nnz_per_thread ", k, " is not 4, 8 or 16");
}

template <class T>
void spmv_nnz(const SpmvArgs<T>& args, bool segmented, int k, int block_warps) {
  const CsrView<T>& A = args.A;
  const SpmvWorkspaceView& ws = args.ws;
  const T alpha = args.alpha, beta = args.beta;
  const T* const x = args.x;
  T* const y = args.y;
  const SpmvDot& dot = args.dot;
  if (A.rows == 0) return;
  if (A.nnz == 0) return spmv_scale(A.rows, beta, y, args.stream);
  if (ws.partition == nullptr || ws.geometry.nnz_per_lane != k || ws.geometry.tile != 32 * k ||
      ws.geometry.warps_per_block != block_warps ||
      (ws.carry != SpmvWorkspaceView::Carry::None &&
       (ws.block_carry == nullptr || ws.flags == nullptr || ws.carry_in == nullptr || ws.ticket == nullptr)))
    KRYSP_THROW(InputError, "spmv_nnz: the workspace does not match nnz_per_thread=", k, " block_warps=", block_warps);
  if (block_warps == 4) return spmv_nnz_nw<T, 4>(A, ws, segmented, k, alpha, x, beta, y, dot, cuda_stream(args.stream));
  if (block_warps == 8) return spmv_nnz_nw<T, 8>(A, ws, segmented, k, alpha, x, beta, y, dot, cuda_stream(args.stream));
  KRYSP_THROW(InputError, "spmv_nnz: block_warps ", block_warps, " is not 4 or 8");
}

template <class T, int NW>
void preload_nw(bool segmented, int k) {
  constexpr int V = 16 / int(sizeof(T));
  cudaFuncAttributes attr;
  if (segmented) {
    if (k == 4) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 4, V, NW, false>));
    if (k == 8) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 8, V, NW, false>));
    if (k == 16) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 16, V, NW, false>));
  } else {
    if (k == 4) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 4, 4, NW, false>));
    if (k == 8) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 8, 8, NW, false>));
    if (k == 16) KRYSP_CUDA_CHECK(cudaFuncGetAttributes(&attr, spmv_nnz_kernel<T, 16, 16, NW, false>));
  }
}

template <class T>
void spmv_nnz_preload(bool segmented, int k, int block_warps) {
  if (block_warps == 4) preload_nw<T, 4>(segmented, k);
  if (block_warps == 8) preload_nw<T, 8>(segmented, k);
}

template void spmv_nnz_preload<double>(bool, int, int);
template void spmv_nnz_preload<float>(bool, int, int);
template void spmv_scale(index_t, double, double*, DeviceStream);
template void spmv_scale(index_t, float, float*, DeviceStream);
template void spmv_dot_only(index_t, const double*, const double*, const SpmvDot&, DeviceStream);
template void spmv_dot_only(index_t, const float*, const float*, const SpmvDot&, DeviceStream);
template void spmv_nnz(const SpmvArgs<double>&, bool, int, int);
template void spmv_nnz(const SpmvArgs<float>&, bool, int, int);

}  // namespace krysp::detail
