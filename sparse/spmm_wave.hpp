#pragma once
/// \file spmm_wave.hpp
/// One wave of resident threads, shared by the SpMM rule (spmm_select.hpp) and the kernels' launch
/// thresholds (sparse/cuda/spmm_common.hpp). CUDA-free.
#include <cstdint>

namespace krysp {

/// Threads resident on the whole GPU the SpMM thresholds were measured on (H100 / H200 SXM:
/// 132 SMs × 2048). Retune from bench/bench_spmm on another GPU.
inline constexpr std::int64_t kSpmmResidentThreads = std::int64_t(132) * 2048;

}  // namespace krysp
