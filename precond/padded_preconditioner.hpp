#pragma once
/// \file padded_preconditioner.hpp
/// A preconditioner set up on the padded matrix of amg_padding.hpp and applied to A's vectors:
/// each apply places r in the padded space (zero on the unit rows), applies the inner
/// preconditioner there and takes back A's rows. The placing and taking are SpMVs with 0/1
/// matrices of one entry a row (exact), on the host or on the GPU as the inner one runs.
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/precond/amg_padding.hpp"
#include "krysp/precond/preconditioner.hpp"
#include "krysp/sparse/matrix_operator.hpp"

namespace krysp {

/// M⁻¹ = G·M_pad⁻¹·Gᵀ, with G the n × padded_rows selection of A's rows and M_pad set up on
/// amg::padded_matrix(A, padding) by make_host_preconditioner or make_device_preconditioner, with
/// AMG's block size fixed to padding.b.
template <class T>
class PaddedPreconditioner final : public Preconditioner<T> {
 public:
  /// M for A on `space`: the inner preconditioner of kind o.kind set up on the padded matrix.
  PaddedPreconditioner(const CsrMatrix<T>& A, amg::NodePadding padding, const PrecondOptions& o, MemorySpace space);
  /// The inner preconditioner's kind.
  PrecondKind kind() const override { return inner_->kind(); }
  /// z = G·M_pad⁻¹·Gᵀ·r.
  void apply(const T* r, T* z) const override;
  /// Z = G·M_pad⁻¹·Gᵀ·R for N row-major columns.
  void apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const override;
  /// True for the structure it was set up for (A's fingerprint).
  bool matches(const CsrMatrix<T>& A) const override { return A.fingerprint() == fingerprint_; }
  /// The inner preconditioner's summary, and what was padded.
  std::string summary() const override;
  /// New values of A: the padded matrix's values, then the inner preconditioner's update.
  bool update_values(const CsrMatrix<T>& A) override;
  /// The padding.
  const amg::NodePadding& padding() const { return padding_; }

 private:
  T* work(std::vector<T>& host, DeviceArray<T>& device, std::size_t n) const;

  amg::NodePadding padding_;
  StructureFingerprint fingerprint_;
  CsrMatrix<T> padded_;  ///< the matrix the inner preconditioner was set up for (held: it may share its arrays)
  std::unique_ptr<Preconditioner<T>> inner_;
  std::unique_ptr<MatrixOperator<T>> place_, take_;  ///< Gᵀ (padded_rows × n) and G (n × padded_rows)
  CsrMatrix<T> place_matrix_, take_matrix_;         ///< the operators' matrices (they share, not copy)
  mutable std::vector<T> host_r_, host_z_;
  mutable DeviceArray<T> device_r_, device_z_;
};

extern template class PaddedPreconditioner<double>;
extern template class PaddedPreconditioner<float>;

}  // namespace krysp
