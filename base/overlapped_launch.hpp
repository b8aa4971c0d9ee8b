#pragma once
/// \file overlapped_launch.hpp
/// Overlapped launches of krysp's sparse kernels and of the vector kernels of CG, Chebyshev and
/// the AMG V-cycle (programmatic dependent launch, compute capability 9.0 and newer): such a
/// kernel is scheduled while the previous kernel on its stream is still finishing, and waits for
/// that kernel's completion and memory before its first global load or store. Stream order is
/// kept; what overlaps is the launch itself, about 0.3 us of the 1.5-2.5 us a small product takes
/// (bench_spmm reports both).
///
/// Early launches go further in the SpMM row kernels of small launches
/// (sparse/cuda/spmm_common.hpp, spmm_early_launch): when the plan sees the matrix values of its
/// last product again, on the same stream (CsrMatrix::values_stamp), and krysp tracks every change
/// of those values (CsrMatrix::values_tracked: a host-built matrix, or a device-borrowed one whose
/// caller opted in with CsrMatrix::promise_notify; sparse/early_loads.hpp), the kernel loads each
/// row's offsets and first nonzeros before its wait, and right after the wait lets the next kernel
/// launch (release_next_kernel), so that the next product's matrix loads overlap this one's work.
/// Sound because a releasing kernel has already waited for everything before it, and the values
/// are unchanged since a product on this stream that waited for their writer. A device-borrowed
/// matrix without the opt-in never loads early: its caller's writes are invisible to krysp, and a
/// forgotten notify_values_changed() must not give stale products. Back-to-back products take
/// 10-17% less time this way at N = 2..8 and 3-6% at N = 16..64 (docs/tuning.md, "Overlapped
/// launches", has the measurements and the variants tried on the way). A release before the
/// kernel's own wait would be unsound for data written by the kernel before; early loads without
/// any release gain nothing (the next kernel only starts at the end of this one); kernels that do
/// not load early never release, and grids above half a wave do not load early: both lost time.
/// On by default; the environment variable KRYSP_OVERLAPPED_LAUNCH=0 turns overlapped and early
/// launches off at startup. Graphs keep the setting in force when their calls were captured.
namespace krysp {

/// Turns overlapped launches on or off for the whole process (all devices, all threads).
void set_overlapped_launch(bool on);

/// The process-wide setting (a device older than compute capability 9.0 launches as usual anyway).
bool overlapped_launch();

}  // namespace krysp
