// The trust suite (tests/trust_checks.hpp) on the CUDA backend.
#include <doctest/doctest.h>

#include "trust_checks.hpp"

using namespace krysp;
using namespace krysp::test;

TEST_CASE("Trust GPU: LOBPCG (auto options) on the bundled SuiteSparse SPD matrices matches LAPACK, both ends") {
  trust_bundled(Backend::Cuda);
}

TEST_CASE("Trust GPU: ill-conditioned and clustered: the 1-D Laplacian's smallest pairs (analytic eigenvalues)") {
  trust_laplacian_1d(Backend::Cuda);
}

TEST_CASE("Trust GPU: repeated eigenvalues (2-D Laplacian 30 x 30, analytic), both ends") {
  trust_repeated(Backend::Cuda);
}

TEST_CASE("Trust GPU: coefficient jumps (1e4) with anisotropy (100), and a badly scaled D*A*D, against LAPACK") {
  trust_jumps_and_scaling(Backend::Cuda);
}

TEST_CASE("Trust GPU: a run started on the wrong pairs is caught by the check for missed eigenvalues") {
  trust_missed_eigenvalue(Backend::Cuda);
}

TEST_CASE("Trust GPU: CG and block CG report converged only when b - A*x meets rtol") {
  trust_cg(Backend::Cuda);
}

TEST_CASE("Trust GPU: CG restarts from the true residual where the recursive one drifted, and converges") {
  trust_cg_replacement(Backend::Cuda);
}

TEST_CASE("Trust GPU: an rtol below what double precision allows ends stagnated or not converged, never converged") {
  trust_cg_unattainable(Backend::Cuda);
}

TEST_CASE("Trust GPU: block CG: no column needs more iterations than CG alone, s = 4, 8, 16") {
  trust_block_cg_columns(Backend::Cuda);
}

TEST_CASE("Trust GPU: every SPD matrix of ../shared/matrices up to 20k rows, k = 8 smallest and largest, vs LAPACK") {
  trust_shared_set(Backend::Cuda);
}
