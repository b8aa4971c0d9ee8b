#pragma once
// The latency floor of a tiny sparse product, measured in the benchmark's own process: on small
// matrices both krysp and cuSPARSE take a few microseconds a call, and these times say how much of
// that any kernel pays anyway. CUDA-free, so that bench_*.cpp can include it.

namespace krysp::bench {

/// Back-to-back times in milliseconds per launch (time_device_auto_ms, as the products are timed).
struct LaunchFloor {
  double empty_launch_ms = 0;    ///< an empty kernel, <<<1, 32>>>
  double dependent_load_ms = 0;  ///< one block doing a 4-row CSR SpMV: row_ptr, col_idx/values, x, y
  /// Host wall time per empty launch over a stream of them: when it equals empty_launch_ms, the
  /// GPU waits on the host, and a small kernel's time is the cost of submitting it.
  double host_submit_ms = 0;
  /// GPU time per empty kernel replayed from a CUDA graph (no host submission per kernel).
  double graph_kernel_ms = 0;
};

/// Measures both floors on the current device (a few milliseconds; allocates a few bytes).
/// Throws DeviceError on a CUDA failure or when the SpMV result is wrong.
LaunchFloor measure_launch_floor();

}  // namespace krysp::bench
