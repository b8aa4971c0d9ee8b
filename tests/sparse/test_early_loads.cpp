// The early-load rule of the SpMM plans (sparse/early_loads.hpp), without a GPU: a plan reads a
// matrix's values before the kernel ahead of it has finished only when krysp tracks every change
// of those values (a host-built matrix, or a device-borrowed one whose caller called
// promise_notify), they are those of the plan's last product on the same stream, and overlapped
// launches are on; an untracked panel split gathers its values before every product.
#include <doctest/doctest.h>

#include <vector>

#include "krysp/sparse/csr.hpp"
#include "krysp/sparse/early_loads.hpp"
#include "krysp/sparse/generators.hpp"

using namespace krysp;

TEST_CASE("Early loads: values are tracked for host-built matrices, and for borrowed ones only with the promise") {
  CHECK(values_tracked(false, false));  // host-built: krysp owns the device mirror
  CHECK(values_tracked(false, true));
  CHECK_FALSE(values_tracked(true, false));  // device-borrowed, the default: the caller's writes are unseen
  CHECK(values_tracked(true, true));         // device-borrowed, promise_notify()

  auto A = laplacian_2d(4, 4);
  CHECK_FALSE(A.is_device_borrowed());
  CHECK(A.values_tracked());
  const auto copy = A;
  A.promise_notify(false);  // no effect on a host-built matrix
  CHECK(copy.values_tracked());
  A.promise_notify();
  CHECK(A.values_tracked());
  // value changes through krysp move the stamp on, so a plan never takes new values for its last ones
  const auto stamp = A.values_stamp();
  A.set_values(std::vector<double>(std::size_t(A.nnz()), 3.0));
  CHECK(copy.values_stamp() != stamp);
  const auto stamp2 = A.values_stamp();
  A.notify_values_changed();
  CHECK(A.values_stamp() != stamp2);
}

TEST_CASE("Early loads: only tracked values, seen in the last product on the same stream, with overlapped launches") {
  for (int bits = 0; bits < 16; ++bits) {
    SpmmEarlyLoadFacts f;
    f.values_tracked = bits & 1;
    f.same_values = bits & 2;
    f.same_stream = bits & 4;
    f.overlapped = bits & 8;
    INFO("tracked " << f.values_tracked << " same values " << f.same_values << " same stream " << f.same_stream
                    << " overlapped " << f.overlapped);
    CHECK(spmm_may_load_early(f) == (bits == 15));
  }
  // the hazard of issue #28: a device-borrowed matrix whose caller changed the values in place and
  // did not notify looks unchanged (same stamp, same stream), yet without the promise no early load
  SpmmEarlyLoadFacts borrowed;
  borrowed.values_tracked = values_tracked(true, false);
  borrowed.same_values = borrowed.same_stream = borrowed.overlapped = true;
  CHECK_FALSE(spmm_may_load_early(borrowed));
  borrowed.values_tracked = values_tracked(true, true);
  CHECK(spmm_may_load_early(borrowed));
}

TEST_CASE("Early loads: a panel split gathers untracked values before every product, tracked ones on change") {
  CHECK(spmm_panels_gather(false, true));  // untracked: always, even with the stamp of the last gather
  CHECK(spmm_panels_gather(false, false));
  CHECK_FALSE(spmm_panels_gather(true, true));  // tracked, unchanged: the copies are current
  CHECK(spmm_panels_gather(true, false));
}
