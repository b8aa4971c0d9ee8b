#pragma once
/// \file symmetry.hpp
/// A cheap symmetry check, so that CG and LOBPCG refuse a non-symmetric matrix up front instead of
/// iterating on it (CG on a non-symmetric matrix may even "converge" to a wrong answer).
#include <string>

#include "krysp/sparse/csr.hpp"

namespace krysp {

/// First entry (1-based) where A differs from Aᵀ by more than 1e-12·max|A|, as a message naming
/// `name`, both entries and their values ("A is not symmetric: A(1,2) = 3 but A(2,1) = 0"); a
/// message for a non-square A; empty when A is symmetric. NaN entries are not reported (the
/// solvers report them as a breakdown). O(nnz log(row length)), no allocation.
std::string symmetry_violation(const CsrMatrix<double>& A, const char* name);
/// symmetry_violation(), computed once per values version of A (CsrMatrix::memo): what the
/// solvers call, so that repeated solves with one matrix pay the check once.
std::string symmetry_violation_cached(const CsrMatrix<double>& A, const char* name);

}  // namespace krysp
