#pragma once
/// \file distributed_checks.hpp
/// What both distributed drivers (distributed_solve.cpp, distributed_eigensolve.cpp) refuse up
/// front about the backend and the scale of the numbers (internal, not installed). The backend
/// check goes inside A.comm().collective() so that a refusal on one rank is the same InputError
/// on every rank; the scale check is collective itself.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/solvers/problem_scale.hpp"
#include "krysp/solvers/solve.hpp"
#include "krysp/sparse/dist_csr.hpp"

namespace krysp::detail {

/// The CUDA backend needs a GPU on every rank (a rank without rows too: it takes part in every
/// device sum).
inline void check_distributed_backend(Backend backend, const char* who) {
  KRYSP_REQUIRE(backend != Backend::Cuda || cuda_device_available(), who,
                ": the CUDA backend needs a GPU on every rank, and this one has none");
}

/// The preconditioners the distributed solvers take: Chebyshev on the whole distributed matrix;
/// Jacobi, block Jacobi and AMG of each rank's diagonal block (AMG then has no coarse level across
/// ranks, so its iterations grow with the ranks; coordinates and near-nullspace vectors are given
/// for the whole matrix, not a rank's rows, and are refused). Goes inside collective().
inline void check_distributed_precond(const PrecondOptions& o, const char* who) {
  const PrecondKind k = o.kind;
  KRYSP_REQUIRE(k == PrecondKind::None || k == PrecondKind::Jacobi || k == PrecondKind::BlockJacobi ||
                    k == PrecondKind::Chebyshev || k == PrecondKind::Amg,
                who, ": preconditioner ", to_string(k), " is not distributed yet");
  KRYSP_REQUIRE(k != PrecondKind::Amg || (o.amg.coordinates.empty() && o.amg.near_nullspace.empty()), who,
                ": AMG's coordinates and near-nullspace vectors are not distributed yet (AMG runs on each rank's "
                "diagonal block, and they are given for the whole matrix)");
}

/// What a report names for AMG: rank 0's hierarchy, and that each rank has its own.
inline std::string distributed_amg_name(const Preconditioner<double>& M) {
  return "amg of each rank's diagonal block, rank 0's: " + M.summary();
}

/// One process rescales problems far from 1 (problem_scale.hpp); the ranks refuse them beyond
/// kRefuseExponentLimit instead, agreed over the ranks (collective): their squares would leave
/// double's range, and CG could read ‖b‖² = 0 as b = 0. `v`: this rank's part of b (or of start
/// vectors), possibly empty.
inline void check_distributed_scale(const DistCsrMatrix& A, const std::vector<double>& v, const char* who) {
  auto largest = [](const CsrMatrix<double>& M) { return max_abs(M.values().data(), std::size_t(M.nnz())); };
  const double am = A.comm().max(std::max(largest(A.local_block()), largest(A.off_block())));
  const double vm = A.comm().max(max_abs(v.data(), v.size()));
  A.comm().collective([&] {
    for (const auto& [name, m] : {std::pair<const char*, double>{"the matrix", am}, {"the vectors", vm}})
      KRYSP_REQUIRE(scale_exponent(&m, 1, kRefuseExponentLimit) == 0, who, ": the largest entry of ", name, " is ",
                    m, ", beyond 2^+-", kRefuseExponentLimit, ", where the distributed solvers' squares leave the "
                    "range of double: scale the problem by a power of two first (one process does so itself)");
  });
}

/// Entries of B that rank 0 gathers to factor it whole (24 bytes each there).
inline constexpr std::int64_t kBGatherMaxEntries = 4'000'000;

/// "" when B's Cholesky factor shows nothing wrong (or would cost too much), else what showed B
/// not positive definite; agreed over the ranks (collective; distributed_eigensolve.cpp). A
/// positive diagonal does not make B positive definite, and LOBPCG may then converge to pairs of
/// the wrong pencil. As eigensolve() does, B is factored where that costs at most kBCheckMaxFlops:
/// whole on rank 0 where it has at most `gather_max_entries`, else each rank's diagonal block, a
/// principal submatrix and so positive definite when B is (weaker: it cannot see an indefinite
/// direction that spans ranks).
std::string distributed_b_factor_note(const DistCsrMatrix& B, std::int64_t gather_max_entries = kBGatherMaxEntries);

}  // namespace krysp::detail
