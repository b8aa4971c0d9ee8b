#pragma once
/// \file device_dist_chebyshev.hpp
/// Chebyshev on a distributed matrix on the GPUs (docs/distributed.md; the method: chebyshev.hpp).
/// The device twin of DistCsrMatrix's host DistChebyshev, with the same interval rule: D⁻¹ from
/// each rank's rows, the Gershgorin bound as the max over ranks, λmax of D⁻¹A by Lanczos from the
/// start vector indexed by global row with every dot product summed over the communicator in rank
/// order (Communicator::sum_device: deterministic, every rank takes the same steps), so 1, 2 or 4
/// ranks give the one-rank interval up to rounding.
///
/// Set-up stays on the GPU but for the boundary: D⁻¹, D^{-1/2} and the Gershgorin sums of the
/// local block come from its device arrays (device_diagonal.hpp); only the rows with off-rank
/// entries (a slab's boundary planes) are read on the host, to add their off-rank sums to the
/// bound. Lanczos runs on the device operator (halo exchange included), its scalars in device
/// memory, one download per batch of steps. Memory: D⁻¹ and three work vectors (m entries),
/// three m × ⌈N⌉₄ work blocks for the widest N applied; Lanczos' five m-vectors during set-up only.
///
/// apply / apply_block run the polynomial with the distributed product (DeviceDistCsr::apply,
/// apply_block: collective) and the fused vector kernels of chebyshev_kernels.hpp; the polynomial
/// is fp64 (PrecondOptions::cheb_single is not used, as on the host). Not thread-safe. CUDA-free
/// header (internal).
#include <cstdint>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/chebyshev.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/dist_csr_device.hpp"

namespace krysp {

/// Chebyshev of a DeviceDistCsr on this rank's GPU (see the file comment).
class DeviceDistChebyshev final : public Preconditioner<double> {
 public:
  /// Sets up from A's device operator (collective; a bad diagonal on any rank is the same
  /// InputError on every rank, naming the global row; λmax that does not settle is an Error on
  /// every rank, as chebyshev_interval). A must outlive it.
  DeviceDistChebyshev(const DeviceDistCsr& A, const PrecondOptions& o);
  /// PrecondKind::Chebyshev.
  PrecondKind kind() const override { return PrecondKind::Chebyshev; }
  /// z = M⁻¹·r on this rank's rows (device pointers; collective: the products exchange halos).
  void apply(const double* r, double* z) const override;
  /// Z = M⁻¹·R for N columns of row-major device blocks (collective, as apply()).
  void apply_block(index_t N, const double* R, index_t ldr, double* Z, index_t ldz) const override;
  /// Never: it is made from a distributed matrix, not a CsrMatrix.
  bool matches(const CsrMatrix<double>&) const override { return false; }
  /// The interval and degree in use (the same on every rank).
  const ChebyshevInfo& info() const { return info_; }

 private:
  template <class Mul>
  void run(index_t N, const double* R, index_t ldr, double* Z, index_t ldz, double* u, double* v, double* w,
           index_t ld, Mul product) const;

  const DeviceDistCsr& A_;
  ChebyshevInfo info_;
  ChebyshevCoefficients coef_;
  DeviceArray<double> dinv_;
  mutable DeviceArray<double> u_, v_, w_;     ///< work vectors of apply()
  mutable index_t block_ld_ = 0;              ///< the work blocks hold m × block_ld_ entries
  mutable DeviceArray<double> bu_, bv_, bw_;  ///< work blocks of apply_block
};

namespace detail {
/// This rank's Gershgorin bound of D⁻¹A: max(local, the bound over the rows with off-rank
/// entries, local then off-rank entries summed as DistChebyshev does), where `local` is the bound
/// over the local block alone (device_chebyshev_scaling's). Reads only those rows on the host. A
/// non-finite row sum makes it that sum (NaN or Inf, as chebyshev_scaling).
double dist_gershgorin(const DistCsrMatrix& A, double local);
/// The global bound from each rank's: the max over the ranks, the first non-finite one if any
/// (as DistChebyshev). Collective.
double dist_gershgorin_max(const Communicator& comm, double mine);
/// Throws DistChebyshev's InputError for this rank's first diagonal entry that is not positive and
/// finite (naming its global row); returns if there is none. Host pass over the local block.
void check_dist_chebyshev_diagonal(const DistCsrMatrix& A);
}  // namespace detail

}  // namespace krysp
