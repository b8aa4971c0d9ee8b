#!/usr/bin/env bash
# Runs the GPU test binary under compute-sanitizer: memcheck (out-of-bounds and misaligned device
# accesses, invalid frees, errors of CUDA API calls) and racecheck (shared-memory hazards). Needs a
# GPU. Device-memory leaks are checked by the soak test (tests/gpu/test_soak_gpu.cpp).
#   scripts/compute_sanitizer.sh [build dir, default build-gpu] [doctest arguments]
# e.g. scripts/compute_sanitizer.sh build-gpu --test-case='CG*'
# The build dir must hold tests/krysp_gpu_tests (cmake --build <dir> --target krysp_gpu_tests).
# The soak and out-of-memory tests are excluded by default (slow under the sanitizer; the real
# out-of-memory case provokes an expected cudaMalloc failure); set CS_ALL=1 to include them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
shift || true
bin=$build/tests/krysp_gpu_tests
[ -x "$bin" ] || { echo "compute_sanitizer: $bin not found (build it first)" >&2; exit 2; }
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "compute_sanitizer: compute-sanitizer not found" >&2; exit 2; }
filter=()
[ -n "${CS_ALL:-}" ] || filter=(--test-case-exclude='Soak GPU*,OOM GPU*')
status=0
for tool in memcheck racecheck; do
  extra=()
  # Leak checking is off by default: krysp keeps two small process-wide device buffers (the SpMV
  # statistics accumulator, the tuning scratch) until exit on purpose. CS_LEAKS=1 turns it on.
  [ "$tool" = memcheck ] && [ -n "${CS_LEAKS:-}" ] && extra=(--leak-check full)
  echo "== compute-sanitizer --tool $tool"
  if ! "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 "$bin" "${filter[@]}" "$@"; then
    echo "compute_sanitizer: $tool reported errors" >&2
    status=1
  fi
done
exit $status
