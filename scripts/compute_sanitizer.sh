#!/usr/bin/env bash
# Runs the GPU test binary under compute-sanitizer: memcheck (out-of-bounds and misaligned device
# accesses, invalid frees, errors of CUDA API calls) and racecheck (shared-memory hazards). Needs a
# GPU. Device-memory leaks are checked by the soak test (tests/gpu/test_soak_gpu.cpp).
#   scripts/compute_sanitizer.sh [build dir, default build-gpu] [doctest arguments]
# e.g. scripts/compute_sanitizer.sh build-gpu --test-case='CG*'
# The build dir must hold tests/krysp_gpu_tests (cmake --build <dir> --target krysp_gpu_tests).
#
# CS_JOBS=N: every test case in its own process, N at a time, both tools at once (the sanitizers
# are slow — racecheck took > 280 s on one test case — and mostly bound by host-side work, so
# processes sharing the GPU finish the whole suite in one sitting). Logs go to $CS_OUT (default
# cs-out), one per tool and test case, and a table (tool, test case, exit code, errors, seconds)
# to $CS_OUT/summary.tsv; CS_TIMEOUT (s, default 500) bounds each process. CS_RACE_LAUNCHES=N
# has racecheck check the first N kernel launches of each process (the solver tests repeat the
# same kernels every iteration; checking all of them takes hours) and run the rest unchecked.
# CS_CASES (extended regex) picks test cases, CS_TOOLS the tools (default "memcheck racecheck"),
# CS_RACE_CASES (regex) limits racecheck to some of the picked cases.
# Without CS_JOBS the soak and out-of-memory tests are excluded (slow under the sanitizer; the real
# out-of-memory case provokes an expected cudaMalloc failure); set CS_ALL=1 to include them. With
# CS_JOBS every test case runs; the OOM ones are run under memcheck with the API-error report
# off for the cudaMalloc failure they provoke on purpose (--report-api-errors no), and the
# device-side checks still on.
set -euo pipefail
cd "$(dirname "$0")/.."
# krysp's cache of freed device blocks would hide a use after free of a reused block from memcheck
export KRYSP_DEVICE_CACHE=${KRYSP_DEVICE_CACHE:-0}
build=${1:-build-gpu}
shift || true
bin=$build/tests/krysp_gpu_tests
[ -x "$bin" ] || { echo "compute_sanitizer: $bin not found (build it first)" >&2; exit 2; }
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "compute_sanitizer: compute-sanitizer not found" >&2; exit 2; }

if [ -n "${CS_JOBS:-}" ]; then
  out=${CS_OUT:-cs-out}
  mkdir -p "$out"
  # test case names, with the filter's special characters (, [ ] and the like) as '?' wildcards
  "$bin" --list-test-cases --no-version | sed -n 's/^\(.*[^ ]\) *$/\1/p' | grep -v -E '^(=+|\[doctest\].*|no CUDA.*|GPU tests on.*)$' \
    | sed 's/[],[\\]/?/g' | grep -E "${CS_CASES:-.}" >"$out/cases.txt"
  echo "compute_sanitizer: $(wc -l <"$out/cases.txt") test cases x memcheck, racecheck, $CS_JOBS at a time"
  run_one() {  # tool index case
    local tool=$1 i=$2 name=$3 extra=() t0 rc errors
    [ "$tool" = memcheck ] && [[ "$name" == OOM* ]] && extra=(--report-api-errors no)
    [ "$tool" = racecheck ] && [ -n "${CS_RACE_LAUNCHES:-}" ] && extra=(--launch-count "$CS_RACE_LAUNCHES")
    t0=$(date +%s)
    rc=0
    timeout "${CS_TIMEOUT:-500}" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 "$bin" --test-case="$name" \
      >"$out/$tool.$i.log" 2>&1 || rc=$?
    errors=$(grep -oE '(ERROR|RACECHECK) SUMMARY: [0-9]+' "$out/$tool.$i.log" | grep -oE '[0-9]+$' | tail -1 || true)
    errors=${errors:-?}  # no summary line: killed by the timeout
    printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$name" "$rc" "$errors" "$(( $(date +%s) - t0 ))" >>"$out/summary.tsv"
  }
  export -f run_one
  export cs bin out
  : >"$out/summary.tsv"
  : >"$out/jobs.tsv"
  while IFS= read -r name; do
    i=$((${i:-0} + 1))
    for tool in ${CS_TOOLS:-memcheck racecheck}; do
      [ "$tool" = racecheck ] && [ -n "${CS_RACE_CASES:-}" ] && ! grep -qE "$CS_RACE_CASES" <<<"$name" && continue
      printf '%s\t%s\t%s\n' "$tool" "$i" "$name" >>"$out/jobs.tsv"
    done
  done <"$out/cases.txt"
  tr '\n' '\0' <"$out/jobs.tsv" | xargs -0 -P "$CS_JOBS" -I{} bash -c 'IFS=$'"'"'\t'"'"' read -r t i n <<<"$1"; run_one "$t" "$i" "$n"' _ {}
  sort "$out/summary.tsv" -o "$out/summary.tsv"
  bad=$(awk -F'\t' '$3 != 0 || $4 != 0' "$out/summary.tsv" | wc -l)
  echo "compute_sanitizer: $(wc -l <"$out/summary.tsv") runs, $bad not clean (exit code or errors):"
  awk -F'\t' '$3 != 0 || $4 != 0' "$out/summary.tsv"
  [ "$bad" -eq 0 ]
  exit
fi

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
