// What the CSR value-update and device-pointer API does without a GPU: the values version is
// shared by copies, notify_values_changed counts as an update, and from_device_pointers refuses
// null pointers (InputError) and, with no device, everything else (DeviceError, saying why).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/cuda/structure_hash.hpp"
#include "krysp/sparse/generators.hpp"
#include "krysp/sparse/symmetry.hpp"

using namespace krysp;

namespace {
template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("CSR: the values version is shared by copies and counts set_values and notify_values_changed") {
  auto A = laplacian_2d(5, 5);
  const auto copy = A;
  CHECK(A.values_version() == 0);
  std::vector<double> v(std::size_t(A.nnz()), 2.0);
  A.set_values(v);
  CHECK(A.values_version() == 1);
  CHECK(copy.values_version() == 1);  // same storage, same version
  CHECK(copy.values()(0) == 2.0);
  A.values()(3) = 7.0;  // written in place through the host view...
  A.notify_values_changed();  // ...then declared
  CHECK(copy.values_version() == 2);
  CHECK(copy.values()(3) == 7.0);
  CHECK_FALSE(A.is_device_borrowed());
  CHECK_THROWS_AS(A.set_values(std::vector<double>(3, 1.0)), InputError);
  CHECK(A.values_version() == 2);  // a refused update changes nothing
}

TEST_CASE("CSR from device pointers: null pointers are InputErrors naming the pointer") {
  const index_t rp[3] = {0, 1, 2}, ci[2] = {0, 1};
  double va[2] = {1, 1};
  auto msg = [&](const index_t* r, const index_t* c, double* v, index_t nnz = 2) {
    return error_of<InputError>([&] { (void)CsrMatrix<double>::from_device_pointers(2, 2, nnz, r, c, v); });
  };
  CHECK(msg(nullptr, ci, va).find("d_row_ptr is null") != std::string::npos);
  CHECK(msg(rp, nullptr, va).find("d_col_idx is null") != std::string::npos);
  CHECK(msg(rp, ci, nullptr).find("d_values is null") != std::string::npos);
  CHECK(msg(rp, ci, va, -1).find("nnz = -1") != std::string::npos);
  CHECK(error_of<InputError>([&] {
          (void)CsrMatrix<double>::from_device_pointers(-2, 2, 2, rp, ci, va);
        }).find("negative dimensions -2x2") != std::string::npos);
}

TEST_CASE("CSR from device pointers: host memory is refused, with the reason") {
  const index_t rp[3] = {0, 1, 2}, ci[2] = {0, 1};
  double va[2] = {1, 1};
  auto make = [&] { (void)CsrMatrix<double>::from_device_pointers(2, 2, 2, rp, ci, va); };
  if (!cuda_device_available()) {
    const std::string m = error_of<DeviceError>(make);
    CHECK(m.find("from_device_pointers: no CUDA device is available") != std::string::npos);
    CHECK(error_of<DeviceError>([&] { (void)memory_kind(va); }).find("no CUDA device") != std::string::npos);
    CHECK_THROWS_AS(cuda_current_device(), DeviceError);
  } else {  // on a GPU machine the same call fails on the pointer's kind
    const std::string m = error_of<InputError>(make);
    CHECK(m.find("d_row_ptr") != std::string::npos);
    CHECK(m.find("not device memory") != std::string::npos);
  }
}

TEST_CASE("MemoryKind names") {
  CHECK(std::string(to_string(MemoryKind::Device)) == "device");
  CHECK(std::string(to_string(MemoryKind::Managed)) == "managed");
  CHECK(std::string(to_string(MemoryKind::Host)) == "host (pinned)");
  CHECK(std::string(to_string(MemoryKind::Unregistered)) == "host (unregistered)");
}

TEST_CASE("CSR: a corrupt middle offset is refused before any column is read") {
  // row 0 claims 9 entries of 5: before the offsets were checked first, the column loop read past col_idx
  const std::string m = error_of<InputError>([] {
    (void)CsrMatrix<double>::from_arrays(3, 3, {0, 9, 2, 5}, {0, 1, 2, 0, 2}, std::vector<double>(5, 1.0));
  });
  CHECK(m.find("row_ptr decreases at row 1 (9 > 2)") != std::string::npos);
}

TEST_CASE("CSR set_values_device: null is an InputError; without a device, a DeviceError") {
  auto A = laplacian_2d(3, 3);
  CHECK(error_of<InputError>([&] { A.set_values_device(nullptr); }).find("d_src is null") != std::string::npos);
  const std::vector<double> v(std::size_t(A.nnz()), 1.0);
  if (!cuda_device_available())
    CHECK(error_of<DeviceError>([&] { A.set_values_device(v.data()); }).find("no CUDA device") != std::string::npos);
  else
    CHECK(error_of<InputError>([&] { A.set_values_device(v.data()); }).find("not device memory") != std::string::npos);
  CHECK(A.values_version() == 0);  // refused: nothing changed
}

TEST_CASE("CsrMatrix::memo: computed once per values version, shared by copies; the symmetry check follows value updates") {
  auto A = CsrMatrix<double>::from_arrays(2, 2, {0, 2, 4}, {0, 1, 0, 1}, {2.0, 1.0, 1.0, 3.0});
  int calls = 0;
  auto f = [&] { return std::to_string(++calls); };
  CHECK(A.memo("t", f) == "1");
  CHECK(A.memo("t", f) == "1");  // cached
  const CsrMatrix<double> copy = A;
  CHECK(copy.memo("t", f) == "1");  // shared by copies
  CHECK(A.memo("other", f) == "2");  // tags are separate
  CHECK(symmetry_violation_cached(A, "A").empty());
  A.set_values({2.0, 1.0, -1.0, 3.0});  // now A(2,1) = -1: not symmetric
  CHECK(A.memo("t", f) == "3");        // recomputed after the update
  CHECK(symmetry_violation_cached(A, "A").find("not symmetric") != std::string::npos);
}

TEST_CASE("CSR: a device-hashed fingerprint never equals an FNV one; the structure hash is order-free") {
  const auto A = laplacian_2d(6, 5);
  StructureFingerprint dev = A.fingerprint();
  CHECK(dev.kind == StructureHashKind::Fnv1a);  // every public path
  dev.kind = StructureHashKind::Device;
  CHECK(dev != A.fingerprint());  // same numbers, other hash: not the same structure
  CHECK(dev.to_string() == A.fingerprint().to_string() + ":device");
  // The device hash, computed on the host: a sum of per-entry terms, so the order of summation
  // does not matter, but positions do.
  const auto& rp = A.row_ptr();
  const auto& ci = A.col_idx();
  const std::uint64_t h = detail::structure_hash_host(A.rows(), A.cols(), A.nnz(), rp.data(), ci.data());
  std::uint64_t sum = 0;
  for (std::int64_t k = A.nnz() - 1; k >= 0; --k) sum += detail::structure_term(1, k, ci(k));
  for (std::int64_t i = A.rows(); i >= 0; --i) sum += detail::structure_term(0, i, rp(i));
  CHECK(detail::structure_hash_finish(A.rows(), A.cols(), A.nnz(), sum) == h);
  std::vector<index_t> c(ci.data(), ci.data() + A.nnz());
  std::swap(c[1], c[2]);  // the same multiset of columns at other positions
  CHECK(detail::structure_hash_host(A.rows(), A.cols(), A.nnz(), rp.data(), c.data()) != h);
  CHECK(detail::structure_hash_host(A.rows(), A.cols() + 1, A.nnz(), rp.data(), ci.data()) != h);
  CHECK(h != A.fingerprint().hash);
}
