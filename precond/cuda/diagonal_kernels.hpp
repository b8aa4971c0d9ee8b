#pragma once
/// \file diagonal_kernels.hpp
/// Launchers of the kernels that read A's diagonal on the GPU for Jacobi and Chebyshev setup
/// (internal; CUDA-free header). The host wrappers are in device_diagonal.hpp.
#include <cstddef>

#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"

namespace krysp::detail {

/// What a diagonal pass found (device memory; diagonal_pass's caller sets it to {rows, 0} first).
struct DiagonalStatus {
  /// The smallest row whose diagonal entry is missing, zero, negative or not finite (rows if none).
  int first_bad;
  int unused;
  /// Chebyshev: max_i Σ_j |a_ij| / a_ii over the rows with a positive diagonal, as the bits of the
  /// double. Every candidate is ≥ 0 or NaN, so integer order is value order (and NaN wins).
  unsigned long long gershgorin_bits;
};

/// How a diagonal pass rounds and what it adds.
enum class DiagonalMode {
  Jacobi,     ///< inv_i = T(1)/a_ii (as jacobi_inverse_diagonal)
  Chebyshev,  ///< inv_i = T(1.0/double(a_ii)) (as chebyshev_scaling), the Gershgorin bound, and
              ///< inv_sqrt_i = T(sqrt(double(inv_i))) when inv_sqrt is not null (the Lanczos scaling)
};

/// One pass over A (device view), one thread per row, in each row's stored order (so the
/// Gershgorin sums round as the host's): writes inv (and inv_sqrt) for the rows whose diagonal
/// entry is finite and positive, and records the others in *status. Asynchronous.
template <class T>
void diagonal_pass(CsrView<T> A, DiagonalMode mode, T* inv, T* inv_sqrt, DiagonalStatus* status);

/// dst[k] = S(src[k]) for k < count (round to nearest, as the host's static_cast). Asynchronous.
template <class T, class S>
void convert_values(std::size_t count, const T* src, S* dst);

}  // namespace krysp::detail
