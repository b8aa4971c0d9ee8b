#pragma once
/// \file amg_galerkin.hpp
/// The AMG set-up's sparse products on the GPU: the symbolic phase of C = A·B (P = S·P_tent from
/// A's pattern and P_tent, A·P and R·(A·P): each row's sorted column set), the numeric phase into
/// a known structure (A·P, R·(A·P): a full set-up fills the structures the symbolic phase made, a
/// numeric re-set-up the kept ones), and the smoothed prolongator's values as a column
/// aggregation. Deterministic: the structures
/// are sets, sorted; C(i, j) = Σ_k A(i,k)·B(k,j) adds its terms in the order of A's row i
/// (positions ascending), starting from 0, with separate rounded multiply and add (no
/// contraction). Which lanes do the work changes nothing, so the values are bitwise equal run to
/// run and for every launch shape: a re-set-up fills exactly what a fresh set-up of the same
/// values fills. CUDA-free header; internal (device pointers, the default stream, asynchronous).
#include <cstdint>

#include "krysp/sparse/csr.hpp"

namespace krysp::detail {

/// The symbolic phase of C = A·B: C's pattern is the structural product, each row i the distinct
/// columns of B's rows k over A's row i, whatever the values (an entry that sums to zero stays).
/// Two passes: counts[i] = the length of C's row i (an exclusive scan gives c_rp), then the
/// columns, sorted ascending, into c_ci. With A's pattern and B = P_tent (one entry a row at
/// most) this is P = S·P_tent's structure: each row's distinct aggregates among A's columns,
/// sorted; a row whose columns all lack a P_tent entry is empty. A: `rows` rows, a_nnz entries
/// (chooses the lanes), any column order; B: b_cols columns, each row's columns sorted ascending,
/// unique and below b_cols (P_tent, P and A·P are). Each row is a merge of B's rows with a cursor
/// per entry of A's row, in registers for rows of A up to 4·lanes entries (8·lanes = 256 with 32
/// lanes), a binary search a step for the entries past that: no scratch memory, no row length it
/// cannot take. When b_cols is at most 262,144, rows of A longer than the cursors hold (and than
/// 64 entries) take a block each instead, which marks C's columns in a bitmap in shared memory
/// (spgemm_symbolic_bitmap_above says which rows). lanes: threads a row of C on the merge (1, 2,
/// 4, 8, 16 or 32; 0 chooses from A's mean row); the result does not depend on it, nor on which
/// rows take the bitmap. InputError for other lanes or b_cols < 0; DeviceError when the launch
/// fails.
void spgemm_symbolic_count(index_t rows, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* b_rp,
                           const index_t* b_ci, index_t b_cols, index_t* counts, int lanes = 0);
/// The second pass of spgemm_symbolic_count: C's sorted columns into c_ci (c_rp from the counts).
void spgemm_symbolic_fill(index_t rows, const index_t* a_rp, const index_t* a_ci, index_t a_nnz, const index_t* b_rp,
                          const index_t* b_ci, index_t b_cols, const index_t* c_rp, index_t* c_ci, int lanes = 0);
/// The rows of A the symbolic passes with these arguments give to the bitmap: those with more
/// entries than the result (the largest index_t: none). For the tests; InputError for bad lanes.
index_t spgemm_symbolic_bitmap_above(index_t rows, index_t a_nnz, index_t b_cols, int lanes = 0);

/// Fills c_va (C's c_nnz values) with A·B for C's structure (c_rp, c_ci: `rows` rows, columns
/// sorted ascending and unique in each row, covering every column the product produces; A: rows
/// × b_rows, any column order; B: b_rows rows, b_nnz entries, unique columns in each row).
/// lanes: threads per row of C (1, 2, 4, 8, 16 or 32; 0 chooses from the mean row lengths, and
/// more where that gives every multiprocessor a block of the lanes' groups); the values do not
/// depend on it. Rows of C longer than the lanes' shared slots (8 a lane, and more
/// than 64 entries; more than 16 where the lanes' groups would not give every multiprocessor a
/// block) take a block of threads each, the same sums in the same order
/// (spgemm_numeric_block_above says which rows). missing: when not null, a device int set to 1
/// if a product term has no position in C's row (a wrong structure; the term is dropped).
/// InputError for other lanes; DeviceError when the launch fails.
void spgemm_numeric(index_t rows, const index_t* a_rp, const index_t* a_ci, const double* a_va, index_t b_rows,
                    index_t b_nnz, const index_t* b_rp, const index_t* b_ci, const double* b_va, const index_t* c_rp,
                    const index_t* c_ci, index_t c_nnz, double* c_va, int lanes = 0, int* missing = nullptr);

/// The rows of C that spgemm_numeric with these arguments gives to a block each: those with more
/// entries than the result (the largest index_t: none). For the tests.
index_t spgemm_numeric_block_above(index_t rows, index_t b_rows, index_t b_nnz, index_t c_nnz, int lanes = 0);

/// The smoothed prolongator P = (I − ω·D⁻¹A)·P_tent's values for a P_tent with at most one entry
/// a row (the scalar set-up's): a column aggregation of A, so no general product is needed. Into
/// P's structure (p_rp, p_ci: the symbolic product of A's pattern and P_tent): P(i, J) = Σ_k
/// s_ik·t_k over A's row i in order, s_ik = δ_ik − (ω·dinv_i)·a_ik rounded as the host forms S
/// (amg.cpp), t_k P_tent's entry of row k in column J: bitwise reproducible (a fixed order,
/// whatever the lanes a row or the row's length). a_nnz: A's entries (chooses the lanes a row).
/// Device pointers, asynchronous; DeviceError when the launch fails.
void prolongator_values(index_t n, const index_t* a_rp, const index_t* a_ci, const double* a_va, const double* dinv,
                        double omega, const index_t* t_rp, const index_t* t_ci, const double* t_va,
                        const index_t* p_rp, const index_t* p_ci, double* p_va, index_t a_nnz);

}  // namespace krysp::detail
