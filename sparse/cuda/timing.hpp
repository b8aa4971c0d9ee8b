#pragma once
/// \file timing.hpp
/// Device timing with CUDA events (no CUDA types in this header, so that the command line and the
/// benchmarks can use it). Everything runs on the default stream.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "krysp/base/stream.hpp"

namespace krysp {

/// Median time in milliseconds of one call of `fn`, which enqueues device work on the default
/// stream: `warmup` untimed calls, then `reps` timed samples, each an event pair around `inner`
/// back-to-back calls (the sample is divided by `inner`; use inner > 1 for launches of a few
/// microseconds). Synchronizes.
double time_device_ms(const std::function<void()>& fn, int warmup, int reps, int inner = 1);

/// time_device_ms() with `inner` chosen so that one sample lasts about `sample_ms` (estimated from
/// one timed call after `warmup` untimed ones), so that launches of a few microseconds are timed as
/// back-to-back throughput and long ones one by one. Median of `reps` samples.
double time_device_auto_ms(const std::function<void()>& fn, double sample_ms = 0.5, int reps = 9, int warmup = 2);

/// Times several functions fairly: `warmup` untimed rounds over all of them, then `reps` timed
/// rounds, each function once per round (one event pair per call), round robin so that clock
/// drift hits all alike. When prune_factor > 0, only functions within prune_factor × the fastest
/// of the first timed round, and at most max_finalists of them (fastest first; 0 = no limit), run
/// again; the others keep that one sample. When one_round_below_ms > 0 and the fastest of the
/// first timed round took less, there are no more rounds. Returns the median of each function in
/// milliseconds. Synchronizes.
std::vector<double> time_device_interleaved_ms(const std::vector<std::function<void()>>& fns, int warmup, int reps,
                                               double prune_factor = 0, std::size_t max_finalists = 0,
                                               double one_round_below_ms = 0);

/// time_device_auto_ms() for several functions at once, fairly: each gets its own `inner` (from
/// one timed call after `warmup` untimed ones), then `reps` rounds each take one sample of every
/// function in turn, so that a burst of interference on a shared machine hits all of them in the
/// same rounds rather than one function's whole measurement. prune_factor as in
/// time_device_interleaved_ms. Medians in milliseconds (per call). Synchronizes.
std::vector<double> time_device_auto_interleaved_ms(const std::vector<std::function<void()>>& fns,
                                                    double sample_ms = 0.5, int reps = 9, int warmup = 2,
                                                    double prune_factor = 0);

/// `calls` calls of fn (which enqueues device work on the stream it is given) captured into a
/// CUDA graph on a stream of its own. launch() replays them on the default stream, so that the
/// timers above time replays: the GPU's own time of a call in a stream of them, without the host's
/// submission of each launch (several µs, more than a small matrix's kernel takes). ok() is false
/// when the capture failed (fn enqueued something a graph cannot hold or synchronized, or threw
/// krysp::Error); launch() then throws.
class CapturedCalls {
 public:
  CapturedCalls(const std::function<void(DeviceStream)>& fn, int calls);
  ~CapturedCalls();
  CapturedCalls(const CapturedCalls&) = delete;
  CapturedCalls& operator=(const CapturedCalls&) = delete;
  /// The capture succeeded.
  bool ok() const { return exec_ != nullptr; }
  /// The calls captured.
  int calls() const { return calls_; }
  /// Enqueues one replay of all the calls on the default stream.
  void launch() const;

 private:
  void* stream_ = nullptr;  // cudaStream_t
  void* exec_ = nullptr;    // cudaGraphExec_t
  int calls_ = 0;
};

/// Device copy bandwidth in GB/s (1e9 bytes/s), counting bytes read plus bytes written: the
/// median of `reps` device-to-device cudaMemcpy of `bytes` bytes (after one warm-up copy).
double measure_copy_bandwidth_gbs(std::size_t bytes = std::size_t(1) << 30, int reps = 9);

/// Name of the current CUDA device, looked up once per device and process (cheap to call often).
std::string cached_device_name();

}  // namespace krysp
