#pragma once
// A writer that lets the next kernel start at once and writes late: the test of overlapped
// launches (base/overlapped_launch.hpp). A kernel launched overlapped after it reads what it
// wrote only if it waited for it; without the wait it reads what was there before.
#include <cstddef>

namespace krysp::test {

/// Enqueues on the default stream a kernel that first allows the next kernel to launch
/// (programmatic launch trigger, compute capability 9.0 and newer), then spins for `delay_us`
/// microseconds and copies n doubles from src to dst. Throws on a CUDA error.
void late_copy(const double* src, double* dst, std::size_t n, int delay_us);

/// Enqueues, overlapped, a kernel that copies n doubles from src to dst WITHOUT waiting for the
/// kernel before it: the negative control, which must see what late_copy had not yet written.
void copy_without_waiting(const double* src, double* dst, std::size_t n);

/// Whether the current device launches overlapped (compute capability 9.0 and newer): the tests
/// that need the late writer to overlap return early elsewhere.
bool device_overlaps_launches();

}  // namespace krysp::test
