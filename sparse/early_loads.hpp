#pragma once
/// \file early_loads.hpp
/// When an SpMM plan may read a matrix's values early, that is, before the kernel ahead of it on
/// the stream has finished (base/overlapped_launch.hpp), and when a panel-split plan must gather
/// them again (spmm_panels.hpp). Plain host code, so that the rule is tested without a GPU.
///
/// The hazard: a kernel still running may be writing the values. A plan can only know it is not
/// when every change of the device values goes through krysp, which then moves the values stamp
/// on (CsrMatrix::values_stamp): the values are "tracked". They are for a host-built matrix
/// (krysp owns its device mirror, written only by set_values, set_values_device and
/// notify_values_changed), and for a device-borrowed matrix (CsrMatrix::from_device_pointers,
/// with_structure_of) only once its caller has promised to notify every change
/// (CsrMatrix::promise_notify): krysp cannot see the caller's writes into its own array, so
/// without the promise an unchanged stamp says nothing. A forgotten notify may then cost speed,
/// never correctness.
namespace krysp {

/// Whether krysp knows of every change of a matrix's device values (CsrMatrix::values_tracked):
/// a host-built matrix, or a device-borrowed one whose caller promised to notify.
inline bool values_tracked(bool device_borrowed, bool notify_promised) { return !device_borrowed || notify_promised; }

/// What SpmmPlan::apply() knows about A's values when it launches a product.
struct SpmmEarlyLoadFacts {
  bool values_tracked = false;  ///< CsrMatrix::values_tracked()
  bool same_values = false;     ///< A.values_stamp() is the stamp of the plan's last product
  bool same_stream = false;     ///< that product ran on the same stream
  bool overlapped = false;      ///< overlapped launches are on (overlapped_launch()): else nothing to gain
};

/// Whether the product may load A early: tracked values, the same as the plan's last product
/// read on the same stream (that product waited for everything before it there, their writer
/// included), with overlapped launches on. The kernels then load early only in small launches
/// (sparse/cuda/spmm_common.hpp, spmm_early_launch).
inline bool spmm_may_load_early(const SpmmEarlyLoadFacts& f) {
  return f.values_tracked && f.same_values && f.same_stream && f.overlapped;
}

/// Whether a panel-split plan gathers A's values into its panels before the product: always when
/// the values are not tracked (a change may have gone unnotified), else when they are not the
/// values gathered last (`same_as_gathered`: same stamp).
inline bool spmm_panels_gather(bool values_tracked, bool same_as_gathered) {
  return !values_tracked || !same_as_gathered;
}

}  // namespace krysp
