#pragma once
/// \file overlapped_launch.hpp
/// Overlapped launches of krysp's sparse kernels (Hopper's programmatic dependent launch, compute
/// capability 9.0 and newer): such a kernel is scheduled while the previous kernel on its stream
/// is still finishing, and waits for that kernel's completion and memory before its first global
/// load or store. Stream order is kept; what overlaps is the launch itself, about 0.3 us of the
/// 1.5-2.5 us a small product takes (bench_spmm reports both).
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
/// forgotten notify_values_changed() must not give stale products. Back-to-back products
/// replayed from a graph took 0.83-0.90x the time at N = 2..8 and 0.94-0.97x at N = 16..64 (H200,
/// H100; spmm_h*_2026-11-26_final against _final_baseline_f14e46f). Tried on the way
/// (bench/experiments/pdl_prefetch.cu, H200): the release at the start of a kernel, before its
/// wait, was mostly slower (up to 1.29x) unless the next kernel loaded early too, and is unsound
/// for data written by the kernel before; early loads without any release gained nothing (the next
/// kernel only starts at the end of this one); the release in kernels that do not load early cost
/// split CSC rows up to 1.33x, and grids above half a wave lost up to 1.26x. On by default; the
/// environment variable KRYSP_OVERLAPPED_LAUNCH=0 turns overlapped and early launches off at
/// startup. Graphs keep the setting in force when their calls were captured.
namespace krysp {

/// Turns overlapped launches on or off for the whole process (all devices, all threads).
void set_overlapped_launch(bool on);

/// The process-wide setting (a device older than compute capability 9.0 launches as usual anyway).
bool overlapped_launch();

}  // namespace krysp
