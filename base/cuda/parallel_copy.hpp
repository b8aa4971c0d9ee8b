#pragma once
/// \file parallel_copy.hpp
/// A host memcpy split over a few threads (internal; no CUDA types, so that the host tests can
/// include it). The staged host<->device copies (device_memory.cu) use it to fill and empty their
/// pinned buffers: one thread's memcpy moves about a third of what the DMA engine moves from
/// pinned memory (docs/tuning.md, "Staged host-device copies").
#include <cstddef>

namespace krysp::detail {

/// Smallest part one thread copies: below it, waking a worker (~10-50 µs) costs more than it saves.
inline constexpr std::size_t kParallelCopyMinPart = std::size_t(2) << 20;

/// Copies `bytes` from src to dst (which must not overlap), as std::memcpy, in at most `max_parts`
/// (and 64) parts of at least kParallelCopyMinPart bytes each: the caller copies one part and the
/// workers of a pool started on first use copy the others. Parts no worker has started when the
/// caller is done with its own are copied by the caller, so the copy completes even when every
/// worker is busy (another caller) or there are none. Returns when every byte is copied; safe from
/// several threads at once.
void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int max_parts);

/// How many threads (the caller included) a staged copy uses, and the pool's workers + 1:
/// KRYSP_COPY_THREADS (1 to 64) when set, else min(4, the CPUs this process may run on). Read once.
int copy_threads();

}  // namespace krysp::detail
