#pragma once
/// \file overlapped_launch.hpp
/// Overlapped launches of krysp's sparse kernels (Hopper's programmatic dependent launch, compute
/// capability 9.0 and newer): such a kernel is scheduled while the previous kernel on its stream
/// is still finishing, and waits for that kernel's completion and memory before its first global
/// load or store. Stream order is kept; what overlaps is the launch itself, about 0.3 us of the
/// 1.5-2.5 us a small product takes (bench_spmm reports both). Tried on an H100, with a 4-row CSR
/// kernel replayed from a graph: loading a row's offsets and column indices before the wait
/// (sound only for a structure no kernel rewrites) saved 0.27 us, the same as waiting first; and
/// letting the next kernel launch at the start of this one (launch_dependents) made back-to-back
/// products slower (1.67 against 1.55 us). On by default; the environment variable
/// KRYSP_OVERLAPPED_LAUNCH=0 turns it off at startup. Graphs keep the setting in force when their
/// calls were captured.
namespace krysp {

/// Turns overlapped launches on or off for the whole process (all devices, all threads).
void set_overlapped_launch(bool on);

/// The process-wide setting (a device older than compute capability 9.0 launches as usual anyway).
bool overlapped_launch();

}  // namespace krysp
