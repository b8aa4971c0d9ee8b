#!/usr/bin/env bash
# Builds krysp with AddressSanitizer + UndefinedBehaviorSanitizer on the host code
# (-DKRYSP_SANITIZE=ON) into build-asan and runs the host test suite and the command-line tests.
#   scripts/sanitize.sh [extra ctest arguments]
# Needs no GPU (the GPU tests are not run: ASan and the CUDA driver do not mix well; use
# scripts/compute_sanitizer.sh on a GPU machine). Exits non-zero on any sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD:-build-asan}
prefix=/usr/lib/x86_64-linux-gnu/cmake
[ -f "$prefix/Kokkos/KokkosConfig.cmake" ] || prefix=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu/cmake
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" "${gen[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKRYSP_SANITIZE=ON \
  -DKRYSP_BUILD_BENCH=OFF -DKRYSP_BUILD_EXAMPLES=OFF -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" >/dev/null
cmake --build "$build" -j"${SANITIZE_JOBS:-$(nproc)}" --target krysp_host_tests krysp_cli
# CUDA's runtime maps memory in ways LeakSanitizer and ASan's allocator checks do not expect;
# protect_shadow_gap=0 lets the CUDA driver initialise (it probes for a device even on hosts
# without one). detect_leaks stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}
ctest --test-dir "$build" --output-on-failure -E '^(gpu_tests|consumer_project)$' "$@"
echo "sanitize: host tests and command-line tests clean under ASan+UBSan ($build)"
