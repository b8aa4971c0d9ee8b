// The benchmarks' round-robin timer (sparse/cuda/timing.hpp): every function runs its warm-up, its
// estimate and at least one call per round, each gets a positive finite median, and bad arguments
// are refused; CapturedCalls replays what it captured, and reports a failed capture. No assertion
// on how long anything takes: speed belongs in the benchmarks.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "krysp/base/device_memory.hpp"
#include "krysp/base/error.hpp"
#include "krysp/sparse/cuda/timing.hpp"

using namespace krysp;

TEST_CASE("Timing: time_device_auto_interleaved_ms runs every function each round and returns medians") {
  DeviceArray<std::uint64_t> d(1024);
  std::vector<std::uint64_t> h(1024, 7);
  int calls[2] = {0, 0};
  const std::vector<std::function<void()>> fns = {[&] {
                                                    ++calls[0];
                                                    d.upload(h.data(), 8);
                                                  },
                                                  [&] {
                                                    ++calls[1];
                                                    d.upload(h.data(), 1024);
                                                  }};
  const int reps = 5, warmup = 2;
  const std::vector<double> ms = time_device_auto_interleaved_ms(fns, 0.05, reps, warmup);
  REQUIRE(ms.size() == 2);
  for (int i = 0; i < 2; ++i) {
    INFO("function ", i);
    CHECK(std::isfinite(ms[i]));
    CHECK(ms[i] > 0);
    CHECK(calls[i] >= warmup + 1 + reps);  // warm-up, the estimate, then inner >= 1 calls per round
  }
  // pruning (as SpMM tuning uses it): a function far slower than the fastest after the first
  // round keeps that one sample; every function still gets a finite median
  int slow_calls = 0;
  const std::vector<std::function<void()>> pruned = {[&] { d.upload(h.data(), 1); },
                                                     [&] {
                                                       ++slow_calls;
                                                       for (int k = 0; k < 50; ++k) d.upload(h.data(), 1024);
                                                     }};
  const std::vector<double> pm = time_device_auto_interleaved_ms(pruned, 0.01, reps, 0, 2.0);
  REQUIRE(pm.size() == 2);
  CHECK(std::isfinite(pm[0]));
  CHECK(std::isfinite(pm[1]));
  CHECK(pm[1] > pm[0]);
  CHECK(slow_calls < 1 + reps);  // the estimate and the first round only: pruned after it
  CHECK(time_device_auto_interleaved_ms({}).empty());
  CHECK_THROWS_AS(time_device_auto_interleaved_ms(fns, 0.05, 0), InputError);
  CHECK_THROWS_AS(time_device_auto_interleaved_ms(fns, 0.0, 3), InputError);
  CHECK_THROWS_AS(time_device_auto_interleaved_ms(fns, 0.05, 3, -1), InputError);
}

TEST_CASE("Timing: time_device_interleaved_ms rounds, finalists, and one round below a threshold") {
  DeviceArray<std::uint64_t> d(1024);
  std::vector<std::uint64_t> h(1024, 7);
  int calls[3] = {0, 0, 0};
  std::vector<std::function<void()>> fns;
  for (int i = 0; i < 3; ++i)
    fns.push_back([&, i] {
      ++calls[i];
      d.upload(h.data(), 8);
    });
  auto count = [&](int warmup, int reps, std::size_t finalists, double one_round_below_ms) {
    calls[0] = calls[1] = calls[2] = 0;
    const auto ms = time_device_interleaved_ms(fns, warmup, reps, finalists ? 1e9 : 0, finalists, one_round_below_ms);
    REQUIRE(ms.size() == 3);
    for (const double m : ms) CHECK((std::isfinite(m) && m > 0));
    return calls[0] + calls[1] + calls[2];
  };
  CHECK(count(1, 3, 0, 0) == 3 * (1 + 3));  // every function in every round
  CHECK(count(0, 3, 1, 0) == 3 + 2);        // one finalist after the first round
  CHECK(count(0, 3, 0, 1e9) == 3);          // the fastest below the threshold: one round only
  CHECK(count(0, 3, 0, 1e-9) == 9);         // above it: all rounds
}

TEST_CASE("Timing: CapturedCalls replays its calls on the default stream and reports a failed capture") {
  // Call c (1, 2, 3) sets byte c of d to 40 + c; the others keep 10.
  constexpr std::size_t n = 4096;
  DeviceArray<unsigned char> d(n);
  std::vector<unsigned char> h(n, 10);
  d.upload(h.data(), n);
  cuda_synchronize();
  int captured = 0;
  const CapturedCalls g(
      [&](DeviceStream st) {
        ++captured;
        REQUIRE(cudaMemsetAsync(d.data() + captured, 40 + captured, 1, static_cast<cudaStream_t>(st.handle)) ==
                cudaSuccess);
      },
      3);
  REQUIRE(g.ok());
  CHECK(g.calls() == 3);
  CHECK(captured == 3);
  // nothing ran at capture time
  d.download(h.data(), n);
  CHECK(h[1] == 10);
  g.launch();
  cuda_synchronize();
  d.download(h.data(), n);
  CHECK(h[0] == 10);
  CHECK(h[1] == 41);
  CHECK(h[2] == 42);
  CHECK(h[3] == 43);
  CHECK(h[4] == 10);
  const double ms = time_device_auto_ms([&] { g.launch(); }, 0.05, 3, 1);
  CHECK(std::isfinite(ms));
  CHECK(ms > 0);
  // a call that throws fails the capture; the stream is left usable and launch() refuses
  const CapturedCalls bad([](DeviceStream) { throw InputError("refused at capture"); }, 2);
  CHECK_FALSE(bad.ok());
  CHECK_THROWS_AS(bad.launch(), InputError);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK_THROWS_AS(CapturedCalls([](DeviceStream) {}, 0), InputError);
}
