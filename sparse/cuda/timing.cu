#include "krysp/sparse/cuda/timing.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "krysp/base/cuda/check.cuh"
#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"

namespace krysp {

namespace {

/// Events are reused across calls (creating them costs microseconds, which matter when a plan
/// times candidates that run in a few microseconds). One pool per device; never destroyed.
std::vector<cudaEvent_t>& event_pool(std::size_t n) {
  static std::mutex mu;
  static std::map<int, std::vector<cudaEvent_t>> pools;
  std::lock_guard<std::mutex> lock(mu);
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  auto& pool = pools[dev];
  while (pool.size() < n) {
    cudaEvent_t e;
    KRYSP_CUDA_CHECK(cudaEventCreate(&e));
    pool.push_back(e);
  }
  return pool;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  KRYSP_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

}  // namespace

double time_device_ms(const std::function<void()>& fn, int warmup, int reps, int inner) {
  KRYSP_REQUIRE(reps >= 1 && inner >= 1 && warmup >= 0, "time_device_ms: bad arguments reps=", reps,
                " inner=", inner, " warmup=", warmup);
  for (int i = 0; i < warmup; ++i) fn();
  auto& ev = event_pool(std::size_t(2 * reps));
  for (int r = 0; r < reps; ++r) {
    KRYSP_CUDA_CHECK(cudaEventRecord(ev[2 * r]));
    for (int i = 0; i < inner; ++i) fn();
    KRYSP_CUDA_CHECK(cudaEventRecord(ev[2 * r + 1]));
  }
  KRYSP_CUDA_CHECK(cudaEventSynchronize(ev[2 * reps - 1]));
  std::vector<double> t(reps);
  for (int r = 0; r < reps; ++r) t[r] = double(elapsed(ev[2 * r], ev[2 * r + 1])) / inner;
  return median(t);
}

namespace {

/// Calls of fn per sample so that a sample lasts about sample_ms (from one timed call after
/// `warmup` untimed ones).
int calls_per_sample(const std::function<void()>& fn, double sample_ms, int warmup) {
  const double est = time_device_ms(fn, warmup, 1, 1);
  return int(std::clamp(sample_ms / std::max(est, 1e-4), 1.0, 1000.0));
}

}  // namespace

double time_device_auto_ms(const std::function<void()>& fn, double sample_ms, int reps, int warmup) {
  return time_device_ms(fn, 0, reps, calls_per_sample(fn, sample_ms, warmup));
}

std::vector<double> time_device_interleaved_ms(const std::vector<std::function<void()>>& fns, int warmup, int reps,
                                               double prune_factor, std::size_t max_finalists,
                                               double one_round_below_ms) {
  KRYSP_REQUIRE(reps >= 1 && warmup >= 0, "time_device_interleaved_ms: bad arguments reps=", reps, " warmup=",
                warmup);
  const std::size_t n = fns.size();
  std::vector<std::vector<double>> samples(n);
  if (n == 0) return {};
  for (int w = 0; w < warmup; ++w)
    for (const auto& f : fns) f();
  auto& ev = event_pool(2 * n * std::size_t(reps));
  std::vector<bool> alive(n, true);
  for (int r = 0; r < reps; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!alive[i]) continue;
      KRYSP_CUDA_CHECK(cudaEventRecord(ev[2 * (r * n + i)]));
      fns[i]();
      KRYSP_CUDA_CHECK(cudaEventRecord(ev[2 * (r * n + i) + 1]));
    }
    if (r == 0 || r == reps - 1) {  // read the first round (for pruning) and the rest at the end
      KRYSP_CUDA_CHECK(cudaDeviceSynchronize());
      for (int rr = (r == 0 ? 0 : 1); rr <= r; ++rr)
        for (std::size_t i = 0; i < n; ++i)
          if (alive[i]) samples[i].push_back(elapsed(ev[2 * (rr * n + i)], ev[2 * (rr * n + i) + 1]));
      if (r == 0) {
        std::vector<std::size_t> order(n);  // fastest first
        for (std::size_t i = 0; i < n; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return samples[a][0] < samples[b][0]; });
        const double best = samples[order[0]][0];
        if (best < one_round_below_ms) break;  // at the launch floor: no more rounds
        if (prune_factor > 0)
          for (std::size_t j = 0; j < n; ++j)
            alive[order[j]] = samples[order[j]][0] <= prune_factor * best && (max_finalists == 0 || j < max_finalists);
      }
    }
  }
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = median(samples[i]);
  return out;
}

std::vector<double> time_device_auto_interleaved_ms(const std::vector<std::function<void()>>& fns, double sample_ms,
                                                    int reps, int warmup, double prune_factor) {
  KRYSP_REQUIRE(reps >= 1 && warmup >= 0 && sample_ms > 0, "time_device_auto_interleaved_ms: bad arguments reps=",
                reps, " warmup=", warmup, " sample_ms=", sample_ms);
  // One sample of function i is inner[i] back-to-back calls, timed round-robin with the others.
  std::vector<int> inner;
  std::vector<std::function<void()>> samples;
  for (const auto& fn : fns) {
    const int k = calls_per_sample(fn, sample_ms, warmup);
    inner.push_back(k);
    samples.push_back([&fn, k] {
      for (int c = 0; c < k; ++c) fn();
    });
  }
  std::vector<double> ms = time_device_interleaved_ms(samples, 0, reps, prune_factor);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i] /= inner[i];
  return ms;
}

CapturedCalls::CapturedCalls(const std::function<void(DeviceStream)>& fn, int calls) : calls_(calls) {
  KRYSP_REQUIRE(calls >= 1, "CapturedCalls: calls = ", calls, " (must be >= 1)");
  cudaStream_t s = nullptr;
  KRYSP_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
  const cudaError_t began = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (began != cudaSuccess) {
    cudaStreamDestroy(s);  // the destructor does not run when the constructor throws
    KRYSP_THROW(DeviceError, "CapturedCalls: cudaStreamBeginCapture failed: ", cudaGetErrorName(began));
  }
  // Ends the capture, keeping the graph only when it is whole (an invalidated capture ends too).
  auto end_capture = [&](bool keep) {
    cudaGraph_t g = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s, &g);
    cudaGraphExec_t exec = nullptr;
    if (keep && ended == cudaSuccess && g != nullptr && cudaGraphInstantiate(&exec, g, 0) == cudaSuccess) exec_ = exec;
    if (g != nullptr) cudaGraphDestroy(g);
    (void)cudaGetLastError();  // a failed capture leaves its error behind; ok() reports it
  };
  try {
    for (int i = 0; i < calls; ++i) fn(DeviceStream{s});
  } catch (const Error&) {
    end_capture(false);  // a krysp error: the capture failed, ok() is false
    return;
  } catch (...) {
    end_capture(false);
    cudaStreamDestroy(s);
    throw;
  }
  end_capture(true);
}

CapturedCalls::~CapturedCalls() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void CapturedCalls::launch() const {
  KRYSP_REQUIRE(ok(), "CapturedCalls::launch: the capture of ", calls_, " calls failed");
  KRYSP_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), cudaStreamLegacy));
}

double measure_copy_bandwidth_gbs(std::size_t bytes, int reps) {
  KRYSP_REQUIRE(bytes > 0 && reps >= 1, "measure_copy_bandwidth_gbs: bad arguments");
  DeviceArray<unsigned char> a(bytes), b(bytes);
  KRYSP_CUDA_CHECK(cudaMemset(a.data(), 1, bytes));
  const double ms = time_device_ms(
      [&] { KRYSP_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice)); }, 1, reps);
  return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

std::string cached_device_name() {
  static std::mutex mu;
  static std::map<int, std::string> names;
  int dev = 0;
  KRYSP_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(dev);
  if (it != names.end()) return it->second;
  cudaDeviceProp prop{};
  KRYSP_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return names[dev] = prop.name;
}

}  // namespace krysp
