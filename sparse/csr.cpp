#include "krysp/sparse/csr.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>

#include "krysp/base/error.hpp"
#include "krysp/base/kokkos_runtime.hpp"
#include "krysp/base/overlap.hpp"
#include "krysp/sparse/cuda/spmv_launch.hpp"
#include "krysp/sparse/cuda/structure_hash.hpp"
#include "krysp/sparse/early_loads.hpp"

namespace krysp {

std::string StructureFingerprint::to_string() const {
  std::ostringstream os;
  os << rows << "x" << cols << ":" << nnz << ":" << std::hex << hash;
  if (kind == StructureHashKind::Device) os << ":device";
  return os.str();
}

namespace {
/// FNV-1a over 64-bit words (then the tail bytes): a structure hash for fingerprints, 8x faster
/// than byte-wise FNV on large matrices.
std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t k = 0;
  for (; k + 8 <= bytes; k += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + k, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; k < bytes; ++k) h = (h ^ p[k]) * 1099511628211ull;
  return h;
}

/// values_stamp(): one counter for the whole process, so that no two values states share a stamp.
std::uint64_t next_values_stamp() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

/// The values' identity: a version counted over all copies, and a process-unique stamp.
struct CsrValuesState {
  std::uint64_t version = 0;
  std::uint64_t stamp = next_values_stamp();
  /// A values change.
  void changed() {
    ++version;
    stamp = next_values_stamp();
  }
};

/// The device side of a matrix: its mirror of the host arrays, or the caller's own arrays
/// (borrowed), and what krysp knows of their values.
template <class T>
struct CsrDeviceMirror {
  // Device arrays: pointers into the mirror below, or the caller's own (borrowed).
  bool borrowed = false;
  // Borrowed only: the caller promised to notify every change of the values (promise_notify).
  std::atomic<bool> notify_promised{false};
  const index_t* d_row_ptr = nullptr;
  const index_t* d_col_idx = nullptr;
  T* d_values = nullptr;
  DeviceArray<index_t> mirror_row_ptr, mirror_col_idx;
  DeviceArray<T> mirror_values;
  bool on_device = false;
  // with_structure_of: the shared state of the matrix whose device index arrays this one borrows.
  std::shared_ptr<const void> structure_owner;
  // Borrowed only: the values version the host snapshot holds (none yet: ~0).
  std::uint64_t snapshot_version = ~std::uint64_t(0);
};

/// The host copy of a trusted device structure (CsrTrustedBorrow), made on the first host use:
/// the GPU AMG set-up's prolongators hold ~10^8 indices whose download cost more than the set-up
/// itself, and the V-cycle never reads them on the host.
struct CsrHostStructure {
  std::atomic<bool> ready{false};  // set (release) once the views below are filled, never reset
  Kokkos::View<index_t*, Kokkos::HostSpace> row_ptr, col_idx;
};

/// Data derived from the matrix and kept with it: the structure's row statistics and memo()'s
/// results per values version.
struct CsrDerivedData {
  // memo(): tag → (values version, result)
  std::map<std::string, std::pair<std::uint64_t, std::string>> memo;
  std::optional<RowStats> row_stats;  // of the structure, which never changes
};

}  // namespace

/// Shared by all copies of one matrix, so that an update through any copy reaches every holder:
/// the values' state, the device mirror and the derived data (the host storage is the matrix's own
/// views), under one mutex.
template <class T>
struct CsrMatrix<T>::Shared {
  std::mutex mu;  // guards the mirror upload, the snapshot download, the values state and the derived data
  CsrValuesState values;
  CsrDeviceMirror<T> device;
  CsrDerivedData derived;
  CsrHostStructure structure;  // lazy_structure_ matrices only
};

template <class T>
CsrMatrix<T>::CsrMatrix() : shared_(std::make_shared<Shared>()) {
  ensure_kokkos();
  row_ptr_ = IndexView("row_ptr", 1);
  col_idx_ = IndexView("col_idx", 0);
  values_ = ValueView("values", 0);
  check_and_fingerprint();
}

template <class T>
CsrMatrix<T>::CsrMatrix(index_t rows, index_t cols, IndexView row_ptr, IndexView col_idx, ValueView values)
    : rows_(rows), cols_(cols), row_ptr_(row_ptr), col_idx_(col_idx), values_(values),
      shared_(std::make_shared<Shared>()) {
  ensure_kokkos();
  check_and_fingerprint();
}

template <class T>
void CsrMatrix<T>::check_and_fingerprint() {
  KRYSP_REQUIRE(rows_ >= 0 && cols_ >= 0, "CSR: negative dimensions ", rows_, "x", cols_);
  KRYSP_REQUIRE(row_ptr_.extent(0) == static_cast<std::size_t>(rows_) + 1, "CSR: row_ptr has ",
                row_ptr_.extent(0), " entries, expected rows+1 = ", std::int64_t(rows_) + 1);
  KRYSP_REQUIRE(col_idx_.extent(0) == values_.extent(0), "CSR: ", col_idx_.extent(0),
                " column indices but ", values_.extent(0), " values");
  KRYSP_REQUIRE(col_idx_.extent(0) <= static_cast<std::size_t>(kMaxNnz), "CSR: nnz = ",
                col_idx_.extent(0), " exceeds the int32 offset limit ", kMaxNnz);
  const index_t nnz = static_cast<index_t>(col_idx_.extent(0));
  KRYSP_REQUIRE(row_ptr_(0) == 0, "CSR: row_ptr[0] = ", row_ptr_(0), ", expected 0");
  KRYSP_REQUIRE(row_ptr_(rows_) == nnz, "CSR: row_ptr[rows] = ", row_ptr_(rows_), ", expected nnz = ", nnz);
  // All offsets first: with row_ptr[0] = 0 and row_ptr[rows] = nnz, monotone offsets keep the
  // column loop below inside col_idx even when a middle offset is corrupt.
  for (index_t i = 0; i < rows_; ++i)
    KRYSP_REQUIRE(row_ptr_(i) <= row_ptr_(i + 1), "CSR: row_ptr decreases at row ", i, " (", row_ptr_(i), " > ",
                  row_ptr_(i + 1), ")");
  for (index_t i = 0; i < rows_; ++i) {
    const index_t b = row_ptr_(i), e = row_ptr_(i + 1);
    for (index_t k = b; k < e; ++k) {
      const index_t c = col_idx_(k);
      KRYSP_REQUIRE(c >= 0 && c < cols_, "CSR: column index ", c, " in row ", i, " is outside [0, ", cols_, ")");
      KRYSP_REQUIRE(k == b || col_idx_(k - 1) < c, "CSR: columns of row ", i,
                    " are not strictly increasing (", col_idx_(k - 1), " then ", c, ")");
    }
  }
  std::uint64_t h = 1469598103934665603ull;
  h = fnv1a(h, row_ptr_.data(), row_ptr_.extent(0) * sizeof(index_t));
  h = fnv1a(h, col_idx_.data(), col_idx_.extent(0) * sizeof(index_t));
  fingerprint_ = {rows_, cols_, nnz, h};
}

template <class T>
CsrMatrix<T> CsrMatrix<T>::from_arrays(index_t rows, index_t cols, const std::vector<index_t>& row_ptr,
                                       const std::vector<index_t>& col_idx, const std::vector<T>& values) {
  ensure_kokkos();
  KRYSP_REQUIRE(col_idx.size() == values.size(), "CSR: ", col_idx.size(), " column indices but ",
                values.size(), " values");
  IndexView rp("row_ptr", row_ptr.size()), ci("col_idx", col_idx.size());
  ValueView va("values", values.size());
  std::copy(row_ptr.begin(), row_ptr.end(), rp.data());
  std::copy(col_idx.begin(), col_idx.end(), ci.data());
  std::copy(values.begin(), values.end(), va.data());
  return CsrMatrix(rows, cols, rp, ci, va);
}

template <class T>
CsrMatrix<T> CsrMatrix<T>::from_triplets(index_t rows, index_t cols, const std::vector<index_t>& ti,
                                         const std::vector<index_t>& tj, const std::vector<T>& tv) {
  ensure_kokkos();
  KRYSP_REQUIRE(ti.size() == tj.size() && tj.size() == tv.size(), "triplets: sizes differ (", ti.size(),
                ", ", tj.size(), ", ", tv.size(), ")");
  KRYSP_REQUIRE(rows >= 0 && cols >= 0, "triplets: negative dimensions ", rows, "x", cols);
  for (std::size_t k = 0; k < ti.size(); ++k)
    KRYSP_REQUIRE(ti[k] >= 0 && ti[k] < rows && tj[k] >= 0 && tj[k] < cols, "triplets: entry ", k, " at (",
                  ti[k], ", ", tj[k], ") is outside the ", rows, "x", cols, " matrix");
  // Counting sort by row, then sort each row by column and sum duplicates in place.
  std::vector<std::int64_t> start(static_cast<std::size_t>(rows) + 1, 0);
  for (index_t i : ti) ++start[static_cast<std::size_t>(i) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::pair<index_t, T>> entries(ti.size());
  {
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < ti.size(); ++k) entries[static_cast<std::size_t>(next[ti[k]]++)] = {tj[k], tv[k]};
  }
  std::vector<index_t> rp(static_cast<std::size_t>(rows) + 1, 0);
  std::size_t out = 0;
  for (index_t i = 0; i < rows; ++i) {
    auto b = entries.begin() + start[i], e = entries.begin() + start[i + 1];
    std::sort(b, e, [](const auto& a, const auto& c) { return a.first < c.first; });
    for (auto it = b; it != e; ++it) {
      if (out > static_cast<std::size_t>(rp[i]) && entries[out - 1].first == it->first)
        entries[out - 1].second += it->second;  // duplicate (i, j): summed
      else
        entries[out++] = *it;
    }
    KRYSP_REQUIRE(out <= static_cast<std::size_t>(kMaxNnz), "triplets: more than ", kMaxNnz,
                  " distinct entries (int32 row offsets)");
    rp[i + 1] = static_cast<index_t>(out);
  }
  IndexView rpv("row_ptr", rp.size()), civ("col_idx", out);
  ValueView vav("values", out);
  std::copy(rp.begin(), rp.end(), rpv.data());
  for (std::size_t k = 0; k < out; ++k) {
    civ(k) = entries[k].first;
    vav(k) = entries[k].second;
  }
  return CsrMatrix(rows, cols, rpv, civ, vav);
}

namespace {
/// InputError unless p is device (or managed) memory of the current device.
void require_device_pointer(const void* p, const char* where, const char* name) {
  require_device_memory(p, detail::concat("CsrMatrix::", where, ": ", name));
}
}  // namespace

template <class T>
CsrMatrix<T> CsrMatrix<T>::from_device_pointers(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                                const index_t* d_col_idx, T* d_values) {
  return borrow_device(rows, cols, nnz, d_row_ptr, d_col_idx, d_values, true);
}

template <class T>
CsrMatrix<T> CsrMatrix<T>::borrow_device(index_t rows, index_t cols, index_t nnz, const index_t* d_row_ptr,
                                         const index_t* d_col_idx, T* d_values, bool check_rows) {
  ensure_kokkos();
  KRYSP_REQUIRE(rows >= 0 && cols >= 0, "CsrMatrix::from_device_pointers: negative dimensions ", rows, "x", cols);
  KRYSP_REQUIRE(nnz >= 0, "CsrMatrix::from_device_pointers: nnz = ", nnz, " is negative");
  KRYSP_REQUIRE(d_row_ptr, "CsrMatrix::from_device_pointers: d_row_ptr is null (", rows + std::int64_t(1),
                " row offsets expected)");
  KRYSP_REQUIRE(nnz == 0 || d_col_idx, "CsrMatrix::from_device_pointers: d_col_idx is null (nnz = ", nnz, ")");
  KRYSP_REQUIRE(nnz == 0 || d_values, "CsrMatrix::from_device_pointers: d_values is null (nnz = ", nnz, ")");
  if (!cuda_device_available())
    KRYSP_THROW(DeviceError, "CsrMatrix::from_device_pointers: no CUDA device is available, so the ", rows, "x",
                cols, " matrix's arrays cannot be device memory (build it on the host: from_arrays)");
  require_device_pointer(d_row_ptr, "from_device_pointers", "d_row_ptr");
  if (nnz > 0) {
    require_device_pointer(d_col_idx, "from_device_pointers", "d_col_idx");
    require_device_pointer(d_values, "from_device_pointers", "d_values");
  }
  CsrMatrix A;
  if (check_rows) {
    // The structure comes to the host once: checks, fingerprint, row statistics. The values do
    // not (the snapshot is filled on first host use; WithoutInitializing: no pages touched).
    IndexView rp(Kokkos::view_alloc(Kokkos::WithoutInitializing, "row_ptr"), std::size_t(rows) + 1);
    IndexView ci(Kokkos::view_alloc(Kokkos::WithoutInitializing, "col_idx"), std::size_t(nnz));
    ValueView va(Kokkos::view_alloc(Kokkos::WithoutInitializing, "values (host snapshot)"), std::size_t(nnz));
    detail::copy_to_host(rp.data(), d_row_ptr, rp.extent(0) * sizeof(index_t));
    detail::copy_to_host(ci.data(), d_col_idx, ci.extent(0) * sizeof(index_t));
    try {
      A = CsrMatrix(rows, cols, rp, ci, va);  // checks the structure (InputError naming row and value)
    } catch (const InputError& e) {
      KRYSP_THROW(InputError, "CsrMatrix::from_device_pointers: the device arrays are not valid CSR: ", e.what());
    }
  } else {
    // krysp's own arrays: hashed on the device, the end offsets checked from the same pass; the
    // host structure is downloaded only if a host-side use asks for it.
    const detail::DeviceStructureSummary sum = detail::structure_hash_device(rows, cols, nnz, d_row_ptr, d_col_idx);
    KRYSP_REQUIRE(sum.first_offset == 0 && sum.last_offset == nnz, "CsrMatrix::from_device_pointers: the device "
                  "arrays are not valid CSR: row_ptr[0] = ", sum.first_offset, ", row_ptr[rows] = ", sum.last_offset,
                  ", expected 0 and nnz = ", nnz);
    A.rows_ = rows;
    A.cols_ = cols;
    A.row_ptr_ = IndexView();
    A.col_idx_ = IndexView();
    A.values_ = ValueView(Kokkos::view_alloc(Kokkos::WithoutInitializing, "values (host snapshot)"), std::size_t(nnz));
    A.lazy_structure_ = true;
    A.fingerprint_ = {rows, cols, nnz, sum.hash, StructureHashKind::Device};
  }
  Shared& sh = *A.shared_;
  sh.device.borrowed = true;
  sh.device.on_device = true;
  sh.device.d_row_ptr = d_row_ptr;
  sh.device.d_col_idx = d_col_idx;
  sh.device.d_values = d_values;
  return A;
}

template <class T>
template <class U>
CsrMatrix<T> CsrMatrix<T>::with_structure_of(const CsrMatrix<U>& A, T* d_values) {
  KRYSP_REQUIRE(d_values || A.nnz() == 0, "CsrMatrix::with_structure_of: d_values is null (nnz = ", A.nnz(), ")");
  const CsrView<U> dA = A.device_view();  // A's device index arrays (uploaded now if needed)
  CsrMatrix M;
  M.rows_ = A.rows();
  M.cols_ = A.cols();
  if (A.lazy_structure_ && !A.host_structure_ready()) {
    M.lazy_structure_ = true;  // downloaded from the same device arrays if M's host use asks
  } else {
    M.row_ptr_ = A.row_ptr();  // Kokkos views: shared, not copied
    M.col_idx_ = A.col_idx();
  }
  // The host snapshot of the values, filled on first host use (WithoutInitializing: no pages touched).
  M.values_ = ValueView(Kokkos::view_alloc(Kokkos::WithoutInitializing, "values (host snapshot)"), std::size_t(A.nnz()));
  M.fingerprint_ = A.fingerprint();  // the same structure: checked when A was made
  Shared& sh = *M.shared_;
  sh.device.borrowed = true;
  sh.device.on_device = true;
  sh.device.d_row_ptr = dA.row_ptr;
  sh.device.d_col_idx = dA.col_idx;
  sh.device.d_values = d_values;
  sh.device.structure_owner = A.shared_;
  return M;
}

template <class T>
const T* CsrMatrix<T>::host_values() const {
  Shared& sh = *shared_;
  if (!sh.device.borrowed) return values_.data();
  std::lock_guard<std::mutex> lock(sh.mu);
  if (sh.device.snapshot_version != sh.values.version) {  // values changed on the device since the last download
    detail::copy_to_host(values_.data(), sh.device.d_values, values_.extent(0) * sizeof(T));
    sh.device.snapshot_version = sh.values.version;
  }
  return values_.data();
}

template <class T>
const typename CsrMatrix<T>::ValueView& CsrMatrix<T>::values() const {
  host_values();
  return values_;
}

template <class T>
CsrView<T> CsrMatrix<T>::host_view() const {
  return {rows_, cols_, nnz(), row_ptr().data(), col_idx().data(), host_values()};
}

template <class T>
bool CsrMatrix<T>::host_structure_ready() const {
  return shared_->structure.ready.load(std::memory_order_acquire);
}

template <class T>
const typename CsrMatrix<T>::IndexView& CsrMatrix<T>::lazy_row_ptr() const {
  Shared& sh = *shared_;
  if (!sh.structure.ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(sh.mu);
    if (!sh.structure.ready.load(std::memory_order_relaxed)) {  // the first host use: download once
      IndexView rp(Kokkos::view_alloc(Kokkos::WithoutInitializing, "row_ptr"), std::size_t(rows_) + 1);
      IndexView ci(Kokkos::view_alloc(Kokkos::WithoutInitializing, "col_idx"), std::size_t(nnz()));
      detail::copy_to_host(rp.data(), sh.device.d_row_ptr, rp.extent(0) * sizeof(index_t));
      detail::copy_to_host(ci.data(), sh.device.d_col_idx, ci.extent(0) * sizeof(index_t));
      sh.structure.row_ptr = rp;
      sh.structure.col_idx = ci;
      sh.structure.ready.store(true, std::memory_order_release);
    }
  }
  return sh.structure.row_ptr;
}

template <class T>
const typename CsrMatrix<T>::IndexView& CsrMatrix<T>::lazy_col_idx() const {
  lazy_row_ptr();  // downloads both
  return shared_->structure.col_idx;
}

template <class T>
void CsrMatrix<T>::set_values(const std::vector<T>& values) {
  KRYSP_REQUIRE(values.size() == values_.extent(0), "set_values: got ", values.size(),
                " values for a matrix with nnz = ", values_.extent(0));
  Shared& sh = *shared_;
  std::lock_guard<std::mutex> lock(sh.mu);
  std::copy(values.begin(), values.end(), values_.data());  // the host copy, or the borrowed one's snapshot
  if (sh.device.on_device) detail::copy_to_device(sh.device.d_values, values_.data(), values_.extent(0) * sizeof(T));
  sh.values.changed();
  if (sh.device.borrowed) sh.device.snapshot_version = sh.values.version;  // the snapshot is what was just uploaded
}

template <class T>
void CsrMatrix<T>::set_values_device(const T* d_src) {
  KRYSP_REQUIRE(d_src || nnz() == 0, "set_values_device: d_src is null (nnz = ", nnz(), ")");
  if (nnz() > 0) {
    if (!cuda_device_available())
      KRYSP_THROW(DeviceError, "set_values_device: no CUDA device is available, so d_src cannot be device memory");
    require_device_pointer(d_src, "set_values_device", "d_src");
  }
  device_view();  // a host-built matrix needs its mirror to receive the values
  Shared& sh = *shared_;
  std::lock_guard<std::mutex> lock(sh.mu);
  const std::size_t bytes = values_.extent(0) * sizeof(T);
  if (d_src != sh.device.d_values) detail::copy_device_to_device(sh.device.d_values, d_src, bytes);
  // the host stays the master copy
  if (!sh.device.borrowed) detail::copy_to_host(values_.data(), sh.device.d_values, bytes);
  sh.values.changed();  // a borrowed matrix's snapshot is stale: the next host use downloads
}

template <class T>
void CsrMatrix<T>::notify_values_changed() {
  Shared& sh = *shared_;
  std::lock_guard<std::mutex> lock(sh.mu);
  sh.values.changed();  // a borrowed matrix's snapshot is now stale: the next host use downloads
  if (!sh.device.borrowed && sh.device.on_device)
    detail::copy_to_device(sh.device.d_values, values_.data(), values_.extent(0) * sizeof(T));
}

template <class T>
std::uint64_t CsrMatrix<T>::values_version() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->values.version;
}

template <class T>
std::uint64_t CsrMatrix<T>::values_stamp() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->values.stamp;
}

template <class T>
void CsrMatrix<T>::promise_notify(bool promised) {
  shared_->device.notify_promised.store(promised, std::memory_order_relaxed);
}

template <class T>
bool CsrMatrix<T>::values_tracked() const {
  const CsrDeviceMirror<T>& d = shared_->device;
  return krysp::values_tracked(d.borrowed, d.notify_promised.load(std::memory_order_relaxed));
}

template <class T>
std::string CsrMatrix<T>::memo(const std::string& tag, const std::function<std::string()>& compute) const {
  const std::uint64_t version = values_version();
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    const auto it = shared_->derived.memo.find(tag);
    if (it != shared_->derived.memo.end() && it->second.first == version) return it->second.second;
  }
  std::string result = compute();  // outside the lock: it may read the values (snapshot download)
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->derived.memo[tag] = {version, result};
  return result;
}

template <class T>
RowStats CsrMatrix<T>::row_stats() const {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->derived.row_stats) return *shared_->derived.row_stats;
  }
  // A structure still on the device is summed there (bitwise the host's statistics), not downloaded.
  const RowStats s = lazy_structure_ && !host_structure_ready()
                         ? detail::row_stats_device(shared_->device.d_row_ptr, rows(), nnz())
                         : krysp::row_stats(CsrView<T>{rows(), cols(), nnz(), row_ptr().data(), col_idx().data(), nullptr});
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->derived.row_stats = s;
  return s;
}

template <class T>
CsrView<T> CsrMatrix<T>::device_view() const {
  Shared& sh = *shared_;
  std::lock_guard<std::mutex> lock(sh.mu);
  if (!sh.device.on_device) {
    sh.device.mirror_row_ptr = DeviceArray<index_t>(row_ptr_.extent(0));
    sh.device.mirror_col_idx = DeviceArray<index_t>(col_idx_.extent(0));
    sh.device.mirror_values = DeviceArray<T>(values_.extent(0));
    sh.device.mirror_row_ptr.upload(row_ptr_.data(), row_ptr_.extent(0));
    sh.device.mirror_col_idx.upload(col_idx_.data(), col_idx_.extent(0));
    sh.device.mirror_values.upload(values_.data(), values_.extent(0));
    sh.device.d_row_ptr = sh.device.mirror_row_ptr.data();
    sh.device.d_col_idx = sh.device.mirror_col_idx.data();
    sh.device.d_values = sh.device.mirror_values.data();
    sh.device.on_device = true;
  }
  return {rows_, cols_, nnz(), sh.device.d_row_ptr, sh.device.d_col_idx, sh.device.d_values};
}

template <class T>
bool CsrMatrix<T>::has_device_copy() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->device.on_device;
}

template <class T>
bool CsrMatrix<T>::is_device_borrowed() const { return shared_->device.borrowed; }

template <class T>
void CsrMatrix<T>::multiply_host(const T* x, T* y) const {
  KRYSP_REQUIRE(nnz() == 0 || !ranges_overlap(x, cols_, static_cast<const T*>(y), rows_),
                "CsrMatrix::multiply_host: x and y share entries: y would be written while x is read");
  const T* va = host_values();
  const IndexView& rp = row_ptr();
  const IndexView& ci = col_idx();
  for (index_t i = 0; i < rows_; ++i) {
    T sum = 0;
    for (index_t k = rp(i); k < rp(i + 1); ++k) sum += va[k] * x[ci(k)];
    y[i] = sum;
  }
}

template class CsrMatrix<double>;
template class CsrMatrix<float>;
template CsrMatrix<float> CsrMatrix<float>::with_structure_of(const CsrMatrix<double>&, float*);
template CsrMatrix<double> CsrMatrix<double>::with_structure_of(const CsrMatrix<float>&, double*);
template CsrMatrix<double> CsrMatrix<double>::with_structure_of(const CsrMatrix<double>&, double*);
template CsrMatrix<float> CsrMatrix<float>::with_structure_of(const CsrMatrix<float>&, float*);

}  // namespace krysp
