#pragma once
/// \file jacobi.hpp
/// Jacobi (diagonal) preconditioning: M = diag(A), applied as z = D⁻¹·r.
#include <vector>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/csr.hpp"

namespace krysp {

/// The inverse diagonal of A. Throws InputError naming the row and value when a diagonal entry
/// is missing, zero, negative or not finite: CG needs an SPD preconditioner.
template <class T>
std::vector<T> jacobi_inverse_diagonal(const CsrMatrix<T>& A);

/// Why Jacobi refuses a diagonal entry that is not positive (see throw_bad_diagonal).
inline constexpr const char* kJacobiNeeds = "Jacobi needs a positive diagonal";
/// Throws the InputError for diagonal entry A(row+1,row+1) = d that is missing (d = 0), zero,
/// negative or not finite, e.g. "Jacobi: diagonal entry A(3,3) = 0 is zero (or missing); Jacobi
/// needs a positive diagonal (1-based row)". `who` starts the message, `needs` says why it matters.
/// One text for the host and the GPU setups (precond/cuda/device_diagonal.hpp).
[[noreturn]] void throw_bad_diagonal(const char* who, const char* needs, index_t row, double d);

/// Jacobi on the host: M⁻¹ = D⁻¹ (diagonal, so CG fuses it).
template <class T>
class HostJacobi final : public Preconditioner<T> {
 public:
  /// Sets up from A's diagonal (InputError as jacobi_inverse_diagonal).
  explicit HostJacobi(const CsrMatrix<T>& A)
      : Preconditioner<T>(A.rows(), MemorySpace::Host), fingerprint_(A.fingerprint()), inv_(jacobi_inverse_diagonal(A)) {}
  PrecondKind kind() const override { return PrecondKind::Jacobi; }
  void apply(const T* r, T* z) const override;
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  const T* inverse_diagonal() const override { return inv_.data(); }
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }

 private:
  StructureFingerprint fingerprint_;
  std::vector<T> inv_;
};

}  // namespace krysp
