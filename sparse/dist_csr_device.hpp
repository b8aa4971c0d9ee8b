#pragma once
/// \file dist_csr_device.hpp
/// A DistCsrMatrix's rows on this rank's GPU, as a device LinearOperator (docs/distributed.md;
/// internal, CUDA-free header). The local block and the off-rank block each get their own
/// adaptive plan (an SpmvPlan for apply(), an SpmmPlan per block width for apply_block()). A
/// product packs the entries the neighbours need on the device, starts the halo exchange through
/// the communicator's device transport (NCCL, or MPI staged through pinned host memory), runs the
/// local block while the halo travels, then, once it has arrived, adds the off-rank block times
/// the halo. The off-rank block is kept on its non-empty rows only (a slab's boundary), its
/// product scattered into y, so that it costs what its entries cost, not a pass over all of y.
/// Everything is queued on the default stream, as the other device operators.
#include <cstdint>
#include <memory>
#include <string>

#include "krysp/base/linear_operator.hpp"
#include "krysp/sparse/dist_csr.hpp"
#include "krysp/sparse/spmm_plan.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

/// The device operator of a DistCsrMatrix (see the file comment).
class DeviceDistCsr final : public LinearOperator<double> {
 public:
  /// Uploads A's blocks to the current GPU and makes their SpMV plans. Collective: it makes the
  /// communicator's device transport if none exists yet. A must outlive the operator.
  explicit DeviceDistCsr(const DistCsrMatrix& A, const SpmvPlanOptions& spmv = {},
                         const SpmmPlanOptions& spmm = {});
  ~DeviceDistCsr() override;
  DeviceDistCsr(const DeviceDistCsr&) = delete;
  DeviceDistCsr& operator=(const DeviceDistCsr&) = delete;

  /// m, this rank's rows.
  index_t rows() const override { return A_.rows(); }
  /// m, as rows().
  index_t cols() const override { return A_.rows(); }
  /// Device memory of the current GPU.
  MemorySpace space() const override { return MemorySpace::Device; }
  /// y = A·x on this rank's rows (device pointers; collective: exchanges x's halo).
  void apply(const double* x, double* y) const override;
  /// Y = A·X for N columns of row-major device blocks (collective, as apply()). The SpMM plans
  /// of a width are made at its first use.
  void apply_block(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const override;

  /// The distributed matrix on the host.
  const DistCsrMatrix& matrix() const { return A_; }
  /// The device transport carrying the halos ("nccl", "mpi-staged" or "serial").
  std::string transport() const;
  /// The local block's SpMV plan (invalid when the block has no entries).
  const SpmvPlan<double>& local_plan() const;

  /// Halo timing, for benchmarks: while on, every product with a halo records a pair of CUDA
  /// events around the default stream's wait for it (no synchronisation: the overlap stays). On
  /// or off, the count restarts.
  void set_timing(bool on) const;
  /// Milliseconds the default stream stood waiting for halos, after the local block was done,
  /// over the products timed since set_timing(true) (waits for the last of them).
  double halo_wait_ms() const;
  /// Products timed since timing was switched on.
  std::int64_t timed_products() const;

 private:
  void product(index_t N, const double* X, index_t ldx, double* Y, index_t ldy) const;
  struct State;
  const DistCsrMatrix& A_;
  std::unique_ptr<State> s_;
};

}  // namespace krysp
