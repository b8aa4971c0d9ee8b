#pragma once
/// \file csr.hpp
/// The CSR matrix: host storage in Kokkos views, plus a device mirror made on first use.
///
/// Invariants, checked when a matrix is made (InputError otherwise): row_ptr has rows+1
/// non-decreasing entries from 0 to nnz; column indices lie in [0, cols) and are strictly
/// increasing within each row (no duplicates); nnz fits in int32 (see types.hpp).
/// Copies share storage, like Kokkos views do: the host arrays, the device mirror and the
/// values version (a value update through one copy is seen by all).
///
/// Two kinds of matrix:
///  - host-built (constructor, from_arrays, from_triplets, the Matrix Market reader): the host
///    arrays are the master copy; device_view() uploads a mirror on first use.
///  - device-borrowed (from_device_pointers): the caller owns CSR arrays in device memory and
///    device_view() returns exactly those pointers (no device copy). The structure is copied to
///    the host once, at creation, to check it and to compute the fingerprint and the row
///    statistics plans need. The values stay on the device: host-side uses (values(),
///    host_view(), multiply_host(), the host backend, preconditioner setup, symmetry checks)
///    download them once per values version into a host snapshot (nnz values).
///  Internally krysp also wraps CSR arrays it built on the device itself (the GPU AMG set-up's
///  level matrices and prolongators): their fingerprint is hashed on the device
///  (StructureHashKind::Device) and their host structure is downloaded only when a host-side use
///  asks for it (row_ptr(), col_idx(), host_view(), multiply_host()); row_stats() is then
///  computed on the device.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/types.hpp"
#include "krysp/sparse/csr_view.hpp"
#include "krysp/sparse/row_stats.hpp"

namespace krysp {

namespace detail {
struct CsrTrustedBorrow;  // internal (sparse/csr_trusted.hpp, not installed)
}  // namespace detail

/// How a StructureFingerprint's hash was computed.
enum class StructureHashKind : std::uint8_t {
  Fnv1a,   ///< FNV-1a over the host arrays: every matrix made through the public API
  Device,  ///< an order-free hash computed on the device, for arrays krysp built there itself
};

/// Identifies a sparsity structure: plans and tuning entries are keyed by it.
struct StructureFingerprint {
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;
  std::uint64_t hash = 0;  ///< FNV-1a over row_ptr and col_idx (or the device hash, see kind)
  /// Which hash `hash` is: fingerprints of different kinds never compare equal, so a plan or
  /// preconditioner never takes a matrix whose hash of the other kind happens to match.
  StructureHashKind kind = StructureHashKind::Fnv1a;
  /// Same size, same nnz, same hash of the same kind: treated as the same structure.
  bool operator==(const StructureFingerprint& o) const {
    return rows == o.rows && cols == o.cols && nnz == o.nnz && hash == o.hash && kind == o.kind;
  }
  /// Not the same structure.
  bool operator!=(const StructureFingerprint& o) const { return !(*this == o); }
  /// "rows x cols : nnz : hash" (hash in hex), as the tuning caches key it; ":device" follows
  /// a device hash.
  std::string to_string() const;
};

/// A sparse matrix in compressed sparse row form, T = double or float (see the file comment).
template <class T>
class CsrMatrix {
 public:
  /// Host array of row offsets or column indices.
  using IndexView = Kokkos::View<index_t*, Kokkos::HostSpace>;
  /// Host array of values.
  using ValueView = Kokkos::View<T*, Kokkos::HostSpace>;

  /// An empty 0×0 matrix.
  CsrMatrix();
  /// Adopts the given views (no copy) after checking the invariants above.
  CsrMatrix(index_t rows, index_t cols, IndexView row_ptr, IndexView col_idx, ValueView values);
  /// Copies CSR arrays given as std::vector; same checks.
  static CsrMatrix from_arrays(index_t rows, index_t cols, const std::vector<index_t>& row_ptr,
                               const std::vector<index_t>& col_idx, const std::vector<T>& values);
  /// Builds from coordinate triplets in any order; duplicate (i, j) entries are summed.
  static CsrMatrix from_triplets(index_t rows, index_t cols, const std::vector<index_t>& i,
                                 const std::vector<index_t>& j, const std::vector<T>& v);
  /// Wraps CSR arrays the caller already holds in device memory, without copying them on the
  /// device: device_view() (and so every GPU solver, plan and preconditioner) reads d_row_ptr,
  /// d_col_idx and d_values themselves. d_row_ptr holds rows+1 offsets, d_col_idx and d_values
  /// nnz entries each, all on the current CUDA device (cudaMalloc'd or managed memory).
  ///
  /// The structure is downloaded once and checked like any matrix (InputError naming the row and
  /// value); null pointers, host pointers and memory of another device are refused (InputError),
  /// and so is every call without a CUDA device (DeviceError). The caller keeps the arrays alive
  /// as long as this matrix, its copies, or a plan or solver made from it is used, and must not
  /// change the structure. After writing new values into d_values, call
  /// notify_values_changed() before the next solve: preconditioners and the host snapshot are
  /// derived from the values and are made again only then. Products stay right without it: krysp
  /// cannot see writes into d_values, so its plans never read such a matrix before the kernel
  /// ahead on the stream has finished (no early loads, base/overlapped_launch.hpp) unless the
  /// caller promises to notify every change (promise_notify). set_values() copies into d_values.
  static CsrMatrix from_device_pointers(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                        const index_t* d_col_idx, T* d_values);
  /// A device-borrowed matrix (as from_device_pointers) with A's structure and the nnz values at
  /// d_values, device memory the caller owns and keeps alive: for a copy of A in another precision
  /// whose values the caller converted on the device. Shares A's host index arrays, A's device
  /// index arrays (uploaded now if A has none; the new matrix keeps them alive) and A's
  /// fingerprint: nothing is downloaded or checked again, so it costs no pass over the matrix.
  /// Early loads as for from_device_pointers: none unless promise_notify() is called.
  template <class U>
  static CsrMatrix with_structure_of(const CsrMatrix<U>& A, T* d_values);

  /// Number of rows.
  index_t rows() const { return rows_; }
  /// Number of columns.
  index_t cols() const { return cols_; }
  /// Number of stored entries.
  index_t nnz() const { return fingerprint_.nnz; }
  /// Host row offsets (rows + 1 entries). Downloaded on first call for a matrix krysp built on
  /// the device (see the file comment; DeviceError on a failed copy).
  const IndexView& row_ptr() const { return lazy_structure_ ? lazy_row_ptr() : row_ptr_; }
  /// Host column indices (nnz entries, strictly increasing within each row); downloaded on first
  /// call as row_ptr().
  const IndexView& col_idx() const { return lazy_structure_ ? lazy_col_idx() : col_idx_; }
  /// Host values (nnz entries). For a device-borrowed matrix, the host snapshot, downloaded first
  /// when the values changed since the last download (DeviceError on a failed copy). Take it once
  /// before a loop rather than per entry (each call checks the snapshot).
  const ValueView& values() const;
  /// A non-owning view of the host arrays (values as in values()).
  CsrView<T> host_view() const;
  /// The structure's identity (plans, preconditioners and tuning entries are keyed by it).
  const StructureFingerprint& fingerprint() const { return fingerprint_; }
  /// Row-length statistics of the structure, computed on first use and shared by copies: every
  /// plan needs them, and block solvers make SpMM plans for narrower widths while they iterate
  /// (an O(rows) pass each time cost block CG 0.1 ms an iteration on 4 M rows).
  RowStats row_stats() const;

  /// Replaces the values, keeping the structure: plans made for this matrix stay valid. The device
  /// mirror, if any, is updated too; for a device-borrowed matrix the values are copied into the
  /// caller's device array. `values.size()` must equal nnz(). Counts as a values change.
  void set_values(const std::vector<T>& values);
  /// Replaces the values with nnz values read from device memory `d_src` (current device;
  /// InputError for a null or host pointer): copied on the device into the device arrays (the
  /// caller's own for a device-borrowed matrix, where d_src == d_values only declares the change),
  /// and for a host-built matrix downloaded into the host arrays too (they stay the master copy).
  /// Plans stay valid. Counts as a values change.
  void set_values_device(const T* d_src);
  /// Declares that the values were changed in place: through the caller's device array
  /// (device-borrowed matrix; the host snapshot is dropped) or through the host view values()
  /// (host-built matrix; the device mirror, if any, is uploaded again). Plans stay valid;
  /// CgSolver sets its preconditioner up again at its next solve().
  void notify_values_changed();
  /// Number of values changes (set_values, notify_values_changed) so far, over all copies: lets
  /// holders of derived data (a CgSolver's preconditioner) notice an update.
  std::uint64_t values_version() const;
  /// Names the current values: unique in the process (another matrix, or these values after a
  /// change, get another stamp; copies share it). A plan that sees the stamp of its last product
  /// again, on a matrix whose values krysp tracks (values_tracked()), loads the matrix before the
  /// kernel ahead of it on the stream has finished (base/overlapped_launch.hpp).
  std::uint64_t values_stamp() const;
  /// The opt-in to early matrix loads for a device-borrowed matrix (from_device_pointers,
  /// with_structure_of): the caller promises that every write into the device values is followed,
  /// before the next product on any stream, by notify_values_changed() (or is made through
  /// set_values / set_values_device). Then a plan that sees the values of its last product again
  /// reads the matrix before the kernel ahead of it has finished, as for a host-built matrix; a
  /// write left undeclared may then be read half-done or not at all. Without the promise (the
  /// default) a borrowed matrix gets no early loads, and a panel-split plan gathers its values
  /// before every product: its products are right whether or not a change was notified, and
  /// only small back-to-back products lose the early loads' gain. Shared by copies; `false`
  /// withdraws it. No effect on a host-built matrix, whose device mirror only krysp writes.
  void promise_notify(bool promised = true);
  /// True when krysp knows of every change of the device values, so that an unchanged
  /// values_stamp() means unchanged device values: a host-built matrix (its device mirror is
  /// written only by set_values, set_values_device and notify_values_changed), or a
  /// device-borrowed one whose caller called promise_notify(). SpMM plans load early only then.
  bool values_tracked() const;
  /// A check derived from the structure and current values (such as the symmetry check), computed
  /// once per values version and shared by copies: `compute` runs only when no result for `tag`
  /// exists at the current values_version(). Solvers call this on every solve; the matrix is the
  /// same each time step, so the O(nnz) host check is paid once, not per solve.
  std::string memo(const std::string& tag, const std::function<std::string()>& compute) const;

  /// The device arrays: the mirror, uploaded on first call (throws DeviceError without a device
  /// or memory), or the caller's own pointers for a device-borrowed matrix.
  CsrView<T> device_view() const;
  /// True when device arrays exist (a mirror was uploaded, or the matrix is device-borrowed).
  bool has_device_copy() const;
  /// True for a matrix made by from_device_pointers (the caller owns the device arrays).
  bool is_device_borrowed() const;

  /// y = A x on the host (reference kernel; x has cols(), y rows() entries, none shared:
  /// InputError). A device-borrowed matrix uses its host snapshot of the values (see values()).
  void multiply_host(const T* x, T* y) const;

 private:
  template <class>
  friend class CsrMatrix;  // with_structure_of reads the other precision's shared state
  friend struct detail::CsrTrustedBorrow;  // krysp's own device arrays, without the row checks
  struct Shared;  // what all copies share: device arrays, values version, snapshot state
  void check_and_fingerprint();
  // check_rows false: krysp's own arrays, hashed on the device and not downloaded (lazy structure).
  static CsrMatrix borrow_device(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                 const index_t* d_col_idx, T* d_values, bool check_rows);
  const T* host_values() const;  // values_.data(), refreshed first for a device-borrowed matrix
  // Trusted device arrays (lazy_structure_): the host structure in the shared state, downloaded
  // by the first call of either.
  const IndexView& lazy_row_ptr() const;
  const IndexView& lazy_col_idx() const;
  bool host_structure_ready() const;
  index_t rows_ = 0, cols_ = 0;
  bool lazy_structure_ = false;  // row_ptr_, col_idx_ empty: the structure stays on the device
  IndexView row_ptr_;
  IndexView col_idx_;
  ValueView values_;
  StructureFingerprint fingerprint_;
  std::shared_ptr<Shared> shared_;
};

extern template class CsrMatrix<double>;
extern template class CsrMatrix<float>;

}  // namespace krysp
