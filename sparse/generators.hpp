#pragma once
/// \file generators.hpp
/// Generated test and benchmark matrices (the shared SuiteSparse set is small; the bandwidth-bound
/// regime needs tens of millions of nonzeros).
#include <cstdint>
#include <vector>

#include "krysp/sparse/csr.hpp"

namespace krysp {

/// 5-point Laplacian on an nx × ny grid (Dirichlet): SPD, 4 on the diagonal, −1 off it.
CsrMatrix<double> laplacian_2d(index_t nx, index_t ny);
/// 7-point Laplacian on an nx × ny × nz grid (Dirichlet): SPD, 6 on the diagonal, −1 off it.
CsrMatrix<double> laplacian_3d(index_t nx, index_t ny, index_t nz);
/// Tridiagonal (−1, 2, −1) of order n (1-D Laplacian, Dirichlet): eigenvalues 2 − 2cos(jπ/(n+1)),
/// so the smallest are tiny and close together (λ₁ ≈ (π/(n+1))², κ ≈ 0.4·n²): a hard case for
/// the smallest eigenpairs with an analytic answer.
CsrMatrix<double> laplacian_1d(index_t n);
/// Anisotropic 3-D diffusion −∇·(k c(x) ∇u) on an n³ grid of cells, k = (kx, ky, kz), c = `jump`
/// inside the box [n/4, 3n/4) × [n/4, 3n/4) × [n/2, 3n/4) and 1 outside; 7-point cell-centred
/// finite volumes, face coefficient k_d·2c_Pc_Q/(c_P+c_Q) (harmonic mean), Dirichlet faces k_d·c_P.
/// Symmetric, weakly diagonally dominant and strictly so on the boundary: SPD. With jump 1e4 and
/// anisotropy 100 it is the held-out kind of problem on which Jacobi-CG needs thousands of steps.
CsrMatrix<double> diffusion_3d(index_t n, double kx, double ky, double kz, double jump);
/// The same operator with random media: each cell independently has c = `jump` with probability
/// `fraction`, else 1 (reproducible from `seed`). Below the percolation threshold (fraction ≈
/// 0.2) the stiff cells form many floating islands, each a near-null mode of D⁻¹A: Jacobi-CG needs
/// about ten times the steps of one inclusion (40³, jump 1e4, kx = 100: ~4,900 against ~470).
CsrMatrix<double> diffusion_3d_random(index_t n, double kx, double ky, double kz, double jump, double fraction,
                                      std::uint64_t seed);
/// Linear elasticity (E = 1, Poisson ratio nu) on a box of nx × ny × nz unit trilinear hexahedra,
/// 2×2×2 Gauss quadrature, clamped on the face x = 0: SPD, 3 unknowns per node (x, y, z
/// displacement, node-major), the node order x fastest. When `coordinates` is not null it receives
/// the free nodes' positions (nodes × 3, row-major): what AMG needs for its rigid-body modes.
/// Not `clamped`, the body floats: symmetric positive semidefinite, its null space the six
/// rigid-body modes.
CsrMatrix<double> elasticity_3d(index_t nx, index_t ny, index_t nz, double nu,
                                std::vector<double>* coordinates = nullptr, bool clamped = true);
/// A thin cylindrical shell panel (radius 1, a quarter of the circumference by length 1, E = 1,
/// the given thickness and Poisson ratio) of n_around × n_along flat four-node shell elements
/// (plane-stress membrane, MITC4 Mindlin plate, a small drilling spring), clamped on the edge z = 0:
/// SPD, 6 unknowns per node (x, y, z displacement, then the rotations about x, y and z; node-major,
/// around fastest). Thin shells (thickness 1e-3) have condition numbers near 1e10: the held-out
/// structural kind (SuiteSparse's s3rmt3m3). When `coordinates` is not null it receives the free
/// nodes' positions (nodes × 3, row-major).
CsrMatrix<double> shell_cylinder(index_t n_around, index_t n_along, double thickness, double nu,
                                 std::vector<double>* coordinates = nullptr);
/// D·A·D with d_i = 10^u, u uniform in [−decades/2, decades/2] (reproducible from `seed`): SPD
/// when A is, with the same sparsity, and badly scaled (Jacobi undoes it; nothing else does).
CsrMatrix<double> scaled_symmetric(const CsrMatrix<double>& A, double decades, std::uint64_t seed);
/// Random matrix whose row lengths follow a power law (Zipf-like, exponent ~2, capped at
/// max_row); columns uniform; values uniform in [−1, 1). Reproducible from `seed`.
CsrMatrix<double> random_power_law(index_t n, double mean_row, index_t max_row, std::uint64_t seed);
/// Random banded matrix: row i has between 1 and 2·mean_row−1 entries (uniform), drawn within
/// |i − j| ≤ half_band. Values uniform in [−1, 1). Reproducible from `seed`.
CsrMatrix<double> random_banded(index_t n, index_t mean_row, index_t half_band, std::uint64_t seed);

}  // namespace krysp
