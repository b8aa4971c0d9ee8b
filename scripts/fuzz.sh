#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, -DKRYSP_FUZZ=ON, clang with ASan+UBSan, no CUDA) into
# build-fuzz and runs each one for a fixed time, starting from the corpus in tests/fuzz/corpus.
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]
# Environment: FUZZ_RUNS=N stops each target after N executions instead (seconds stay a cap);
# FUZZ_MAX_LEN=bytes caps the input size (default 4096);
# FUZZ_BUILD=dir (default build-fuzz); FUZZ_WORK=dir keeps the grown corpora (default: a temporary
# folder, removed at exit; the repository corpus is never modified). Exits non-zero on the first
# crash, hang, leak or sanitizer report; the reproducer is left in the working folder.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(matrix_market spmv_tune_cache spmm_tune_cache)
build=${FUZZ_BUILD:-build-fuzz}
cxx=${FUZZ_CXX:-$(command -v clang++ || true)}
[ -n "$cxx" ] || { echo "fuzz: clang++ not found (apt-get install clang)" >&2; exit 2; }
prefix=/usr/lib/x86_64-linux-gnu/cmake
[ -f "$prefix/Kokkos/KokkosConfig.cmake" ] || prefix=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu/cmake
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" "${gen[@]}" "${launcher[@]}" -DKRYSP_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build" -j"${FUZZ_JOBS:-$(nproc)}" >/dev/null
work=${FUZZ_WORK:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
echo "fuzz: $("$cxx" --version | head -1), $(date -u +%Y-%m-%dT%H:%MZ), ${seconds}s per target${FUZZ_RUNS:+, at most $FUZZ_RUNS runs}, max_len ${FUZZ_MAX_LEN:-4096}"
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  args=(-max_total_time="$seconds" -max_len="${FUZZ_MAX_LEN:-4096}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/$t-")
  [ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$FUZZ_RUNS")
  log="$work/$t.log"
  if ! "$build/tests/fuzz/fuzz_$t" "${args[@]}" "$work/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $t FAILED (reproducer: $(ls "$work/$t-"* 2>/dev/null | head -1))" >&2
    exit 1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "$seconds")
  echo "fuzz: $t ok: $runs executions in ${secs}s, $cov, $(ls "$work/$t" | wc -l) new inputs"
done
