#pragma once
/// \file distributed_checks.hpp
/// What both distributed drivers (distributed_solve.cpp, distributed_eigensolve.cpp) refuse up
/// front about the backend and the preconditioner, and the scale of their numbers (internal, not
/// installed). The checks go inside A.comm().collective() so that a refusal on one rank is the
/// same InputError on every rank; the scale exponents are collective themselves.
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

/// The ranks rescale problems far from 1 as one process does (problem_scale.hpp), by exponents
/// agreed over the ranks (collective): scale_exponent of the largest |entry| of A on any rank.
inline int distributed_scale_exponent(const DistCsrMatrix& A) {
  auto largest = [](const CsrMatrix<double>& M) { return max_abs(M.values().data(), std::size_t(M.nnz())); };
  const double m = A.comm().max(std::max(largest(A.local_block()), largest(A.off_block())));
  return scale_exponent(&m, 1);
}
/// The same for vectors: `v` is this rank's part (possibly empty).
inline int distributed_scale_exponent(const Communicator& comm, const std::vector<double>& v) {
  const double m = comm.max(max_abs(v.data(), v.size()));
  return scale_exponent(&m, 1);
}
/// survives_scaling on every rank's part (collective).
inline bool survives_scaling_everywhere(const Communicator& comm, const std::vector<double>& v, int e) {
  return comm.max(survives_scaling(v, e) ? 0.0 : 1.0) == 0;
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
