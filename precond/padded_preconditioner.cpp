#include "krysp/precond/padded_preconditioner.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "krysp/base/error.hpp"
#include "krysp/sparse/spmv_plan.hpp"

namespace krysp {

namespace {

// The n × m selection matrix of `position` (row i: a 1 at column position[i]) or, transposed,
// m × n (row position[i]: a 1 at column i; the unit rows empty, so they receive zero).
template <class T>
CsrMatrix<T> selection(const std::vector<index_t>& position, index_t m, bool transposed) {
  const index_t n = index_t(position.size());
  std::vector<index_t> rp, ci;
  std::vector<T> va(position.size(), T(1));
  if (!transposed) {
    rp.resize(std::size_t(n) + 1);
    for (index_t i = 0; i <= n; ++i) rp[std::size_t(i)] = i;
    ci = position;
    return CsrMatrix<T>::from_arrays(n, m, rp, ci, va);
  }
  rp.assign(std::size_t(m) + 1, 0);
  for (index_t i = 0; i < n; ++i) rp[std::size_t(position[std::size_t(i)]) + 1] = 1;
  for (index_t r = 0; r < m; ++r) rp[std::size_t(r) + 1] += rp[std::size_t(r)];
  ci.resize(position.size());
  for (index_t i = 0; i < n; ++i) ci[std::size_t(i)] = i;  // position increases: row order is i's order
  return CsrMatrix<T>::from_arrays(m, n, rp, ci, va);
}

}  // namespace

template <class T>
PaddedPreconditioner<T>::PaddedPreconditioner(const CsrMatrix<T>& A, amg::NodePadding padding,
                                              const PrecondOptions& o, MemorySpace space)
    : Preconditioner<T>(A.rows(), space), padding_(std::move(padding)), fingerprint_(A.fingerprint()) {
  KRYSP_REQUIRE(padding_.b > 1 && padding_.position.size() == std::size_t(A.rows()),
                "padded preconditioner: a padding for ", padding_.position.size(), " rows, the matrix has ", A.rows());
  padded_ = amg::padded_matrix(A, padding_);
  PrecondOptions inner = o;
  inner.amg.block_size = padding_.b;  // the padded nodes (and no second padding)
  place_matrix_ = selection<T>(padding_.position, padding_.padded_rows, true);
  take_matrix_ = selection<T>(padding_.position, padding_.padded_rows, false);
  if (space == MemorySpace::Host) {
    inner_ = make_host_preconditioner(padded_, inner);
    place_ = std::make_unique<MatrixOperator<T>>(MatrixOperator<T>::host(place_matrix_));
    take_ = std::make_unique<MatrixOperator<T>>(MatrixOperator<T>::host(take_matrix_));
  } else {
    inner_ = make_device_preconditioner(padded_, SpmvPlan<T>(padded_), inner);
    place_ = std::make_unique<MatrixOperator<T>>(MatrixOperator<T>::device(place_matrix_));
    take_ = std::make_unique<MatrixOperator<T>>(MatrixOperator<T>::device(take_matrix_));
  }
  KRYSP_REQUIRE(inner_ != nullptr, "padded preconditioner: no preconditioner of kind ", to_string(o.kind));
}

template <class T>
T* PaddedPreconditioner<T>::work(std::vector<T>& host, DeviceArray<T>& device, std::size_t n) const {
  if (this->space() == MemorySpace::Host) {
    if (host.size() < n) host.resize(n);
    return host.data();
  }
  if (device.size() < n) device = DeviceArray<T>(n);
  return device.data();
}

template <class T>
void PaddedPreconditioner<T>::apply(const T* r, T* z) const {
  const std::size_t m = std::size_t(padding_.padded_rows);
  T* rp = work(host_r_, device_r_, m);
  T* zp = work(host_z_, device_z_, m);
  place_->apply(r, rp);  // Gᵀ·r: r's rows in place, zero on the unit rows
  inner_->apply(rp, zp);
  take_->apply(zp, z);  // G·z_pad
}

template <class T>
void PaddedPreconditioner<T>::apply_block(index_t N, const T* R, index_t ldr, T* Z, index_t ldz) const {
  const std::size_t m = std::size_t(padding_.padded_rows) * std::size_t(std::max<index_t>(N, 1));
  T* rp = work(host_r_, device_r_, m);
  T* zp = work(host_z_, device_z_, m);
  place_->apply_block(N, R, ldr, rp, N);
  inner_->apply_block(N, rp, N, zp, N);
  take_->apply_block(N, zp, N, Z, ldz);
}

template <class T>
std::string PaddedPreconditioner<T>::summary() const {
  std::ostringstream s;
  s << inner_->summary() << " on nodes padded to " << padding_.b << " unknowns (" << padding_.short_nodes
    << " short nodes, " << padding_.padded_rows - index_t(padding_.position.size()) << " unit rows)";
  return s.str();
}

template <class T>
bool PaddedPreconditioner<T>::update_values(const CsrMatrix<T>& A) {
  if (!matches(A)) return false;
  padded_ = amg::padded_matrix(A, padding_);
  return inner_->update_values(padded_);
}

template class PaddedPreconditioner<double>;
template class PaddedPreconditioner<float>;

}  // namespace krysp
