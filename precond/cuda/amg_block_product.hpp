#pragma once
/// \file amg_block_product.hpp
/// The AMG set-up's products A·P and R·(A·P) in dense blocks, for levels with b > 1 unknowns a node
/// and K > 1 near-nullspace vectors: A in b×b blocks, P in b×K, R in K×b. A scalar product's cost
/// there is its index work (a position found, a column loaded, for each of the terms: hundreds of
/// millions on the first level of 3-D elasticity with rigid-body modes); in blocks it is paid once
/// a block pair, for up to 8·8·8 terms, and the positions are found once, at the set-up.
///
/// Each scalar CSR is read through a block pattern (the blocks that hold an entry; for a product,
/// the block product's blocks, which hold them) and a map from its entries into a dense array of
/// those blocks, zeros elsewhere. The set-up builds the patterns, maps and pair lists once; a
/// numeric pass is gathers, products and a scatter. C's block (I, J) is summed as
/// Σ_K A_IK·B_KJ over the pairs (K ascending) that the pattern builder listed for it, each entry
/// term by term with separate rounded multiply and add, K then the column within K ascending: the
/// order of spgemm_numeric (amg_galerkin.hpp), which adds a_ik·b_kj over A's row in column order.
/// The block form adds terms the scalar one lacks, but each has a zero factor: a sum that starts
/// at +0 never becomes −0 and x + (±0) = x, so the values are bitwise spgemm_numeric's (finite
/// inputs, A's rows sorted). CUDA-free header; internal (device pointers, the default stream; the
/// builders synchronise for sizes).
#include <cstddef>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/types.hpp"

namespace krysp::detail {

/// Largest block dimension the block products take (kBlockSetupMaxK).
constexpr int kBlockProductMaxDim = 8;

/// The block pattern of a scalar CSR (rows in strips of br, columns in runs of bc) and where each
/// scalar entry lies in the dense array of its blocks (block p's entry (r, c) at p·br·bc + r·bc + c).
struct BlockPattern {
  int br = 1, bc = 1;
  index_t block_rows = 0, block_cols = 0, blocks = 0;
  DeviceArray<index_t> rp, ci;  ///< blocks of each strip, block columns sorted ascending
  DeviceArray<index_t> map;     ///< scalar entry e → its offset in the dense array
  bool fits = true;             ///< the dense array's offsets fit index_t (else no map was made)
  std::size_t values() const { return std::size_t(blocks) * std::size_t(br) * std::size_t(bc); }
  std::size_t bytes() const { return (rp.size() + ci.size() + map.size()) * sizeof(index_t); }
};

/// The block pattern of M (rows × cols, nnz entries, each row's columns sorted and unique); the
/// map where `with_map` and `fits` (else `map` is empty). InputError unless 1 ≤ br, bc ≤
/// kBlockProductMaxDim and they divide rows and cols.
BlockPattern block_pattern(index_t rows, index_t cols, index_t nnz, const index_t* rp, const index_t* ci, int br,
                           int bc, bool with_map = true);

/// The block pattern of A·B from A's and B's (the structural product of the blocks; no map): it
/// holds every block of the scalar product's pattern, and perhaps more (zeros then). Not `fits`,
/// and empty, when it has more blocks than index_t holds. InputError unless A and B fit.
BlockPattern block_product_pattern(const BlockPattern& A, const BlockPattern& B);
/// The scalar structure of P's blocks taken whole (rows = P's strips · br; row r of strip I holds
/// every column of each of I's blocks, ascending) into rp and ci, and P's map into it; returns its
/// entries, P.values(). It is the scalar pattern of a product whose right factor's blocks are full
/// (each holds all its entries): R·(A·P) with P's b×K blocks full and R = Pᵀ, whatever holes A's
/// blocks have, since every block pair R_IK·A_KL·P_LJ then reaches every entry of block (I, J)
/// through any one entry of A_KL. InputError when P does not fit.
index_t block_expand(BlockPattern& P, DeviceArray<index_t>& rp, DeviceArray<index_t>& ci);
/// P's map for a scalar structure (rows = P's strips · br; rows' columns sorted and unique) whose
/// entries lie in P's blocks; none where P does not fit. An entry whose block P lacks sets the
/// device int *missing; without `missing`, InputError then (one synchronisation, for the check).
void add_block_map(BlockPattern& P, index_t rows, index_t nnz, const index_t* rp, const index_t* ci,
                   int* missing = nullptr);

/// For C = A·B in blocks (A's pattern br×bk, B's bk×bc, C's br×bc): for each block of C, the
/// pairs (A's block, B's block) of its sum, K ascending. C's pattern must hold every block of the
/// block product (block_product_pattern's, or the blocks of A·B's scalar product where A's and
/// B's blocks are full); otherwise the device int *missing is set, or without `missing` an
/// InputError (one synchronisation more, for the check).
struct BlockPairs {
  int br = 1, bk = 1, bc = 1;
  index_t c_blocks = 0, pairs = 0;
  bool fits = true;           ///< false (and no pairs) when they would be more than index_t holds
  DeviceArray<index_t> rp;    ///< c_blocks + 1 offsets
  DeviceArray<index_t> a, b;  ///< per pair: the block of A, the block of B
  std::size_t bytes() const { return (rp.size() + a.size() + b.size()) * sizeof(index_t); }
};
/// InputError when the patterns' block sizes or shapes do not chain.
BlockPairs block_pairs(const BlockPattern& A, const BlockPattern& B, const BlockPattern& C, int* missing = nullptr);

/// dense (pattern.values() entries) = the scalar values va (pattern's matrix) in blocks, zeros
/// elsewhere. InputError when the pattern does not fit.
void block_gather(const BlockPattern& pattern, index_t nnz, const double* va, double* dense);
/// va (pattern's matrix, nnz entries) = its entries' values in dense.
void block_scatter(const BlockPattern& pattern, index_t nnz, const double* dense, double* va);
/// r's dense blocks (r: the pattern of Pᵀ, K×b blocks) from P's (b×K), block q of r being block
/// perm[q] of P transposed.
void block_transpose(const BlockPattern& r, const index_t* perm, const double* p, double* out);
/// C's dense blocks = A·B from A's and B's dense blocks (block_gather's, or an earlier product's).
void block_multiply(const BlockPairs& pairs, const double* a, const double* b, double* c);

}  // namespace krysp::detail
