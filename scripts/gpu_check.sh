#!/usr/bin/env bash
# Builds krysp on a GPU machine and runs the GPU tests, the CLI on a bundled matrix and (optionally)
# benchmarks, writing logs and results under $OUT (or ./gpu-out). Needs .deps/kokkos
# (scripts/fetch_kokkos.sh) when the machine has no Kokkos of its own.
#   scripts/gpu_check.sh [test] [gpu-tests] [gtest=PATTERN] [lobpcg-cupy] [bench-NAME ...] [ncu-NAME ...]
#   (default: test); gpu-tests runs the GPU suite alone (no ctest); gtest=PATTERN runs the GPU test
#   cases matching the doctest filter; lobpcg-cupy runs bench/lobpcg_vs_cupy.py with $LOBPCG_CUPY_ARGS
#   ($KRYSP_SHARED_MATRICES, when set, is the shared matrix folder; $KRYSP_COMMIT, when set, is the
#   commit recorded in its JSON: a device copy's git metadata can be older than the tree it runs);
#   bench-NAME runs bench/bench_NAME
#   with the arguments in $BENCH_ARGS_NAME, e.g. BENCH_ARGS_CG="--quick" for bench-cg; ncu-NAME runs
#   bench_NAME --profile with them under Nsight Compute (metrics in $NCU_METRICS), CSV to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
steps=${*:-test}
kokkos=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$kokkos:${LD_LIBRARY_PATH:-}
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"
t0=$(date +%s)
if ! cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DCMAKE_PREFIX_PATH="$kokkos/cmake" >"$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log"; exit 1
fi
if ! cmake --build build-gpu -j16 -- -k 0 >"$out/build.log" 2>&1; then
  grep -E "error" "$out/build.log" | head -20
  note "BUILD FAILED in part (see above); running what was built"
else
  note "build ok in $(( $(date +%s) - t0 )) s"
fi

for step in $steps; do
  case $step in
    test)
      (cd build-gpu && ctest --output-on-failure -j4 >"$out/ctest.log" 2>&1); rc=$?
      tail -15 "$out/ctest.log"
      ./build-gpu/tests/krysp_gpu_tests >"$out/gpu_tests.log" 2>&1; g=$?
      tail -5 "$out/gpu_tests.log"
      note "ctest rc=$rc, gpu tests rc=$g ($(grep -E 'test cases' "$out/gpu_tests.log" | tr -s ' '))"
      ./build-gpu/krysp solve tests/data/bcsstk06.mtx --out "$out/solve_bcsstk06.h5" >"$out/solve.log" 2>&1
      note "krysp solve bcsstk06 rc=$? : $(grep -E 'after|true relative' "$out/solve.log" | tr '\n' ' ')"
      ;;
    gpu-tests)
      ./build-gpu/tests/krysp_gpu_tests >"$out/gpu_tests.log" 2>&1; g=$?
      grep -E "ERROR|FAILED" -A6 "$out/gpu_tests.log" | head -60; tail -4 "$out/gpu_tests.log"
      note "gpu tests rc=$g ($(grep -E 'test cases' "$out/gpu_tests.log" | tr -s ' '))"
      ;;
    lobpcg-cupy)
      m=${KRYSP_SHARED_MATRICES:-../shared/matrices}
      timeout ${STEP_TIMEOUT:-480} python3 bench/lobpcg_vs_cupy.py --krysp build-gpu/krysp --matrices "$m" \
        --json "$out/lobpcg_vs_cupy.json" ${LOBPCG_CUPY_ARGS:-} >"$out/lobpcg_vs_cupy.log" 2>&1
      note "lobpcg_vs_cupy rc=$?"; cat "$out/lobpcg_vs_cupy.log"
      ;;
    gtest=*)  # gtest=PATTERN runs only the GPU test cases matching the doctest filter PATTERN
      ./build-gpu/tests/krysp_gpu_tests --test-case="${step#gtest=}" >"$out/gpu_tests_filtered.log" 2>&1; g=$?
      grep -E "ERROR|FAILED|test cases|assertions" "$out/gpu_tests_filtered.log" | tail -8
      note "gpu tests '${step#gtest=}' rc=$g"
      ;;
    bench-*)  # bench-NAME runs build-gpu/bench/bench_NAME with $BENCH_ARGS_NAME (upper case)
      name=${step#bench-}; name=${name//-/_}; var=BENCH_ARGS_$(echo "$name" | tr 'a-z-' 'A-Z_')
      timeout ${STEP_TIMEOUT:-240} ./build-gpu/bench/bench_$name --json "$out/bench_$name.json" ${!var:-} >"$out/bench_$name.log" 2>&1
      note "bench_$name rc=$?"; tail -${TAIL:-12} "$out/bench_$name.log"
      ;;
    ncu-*)  # ncu-NAME: bench_NAME --profile $BENCH_ARGS_NAME under Nsight Compute, metrics $NCU_METRICS
      name=${step#ncu-}; name=${name//-/_}; var=BENCH_ARGS_$(echo "$name" | tr 'a-z-' 'A-Z_')
      metrics=${NCU_METRICS:-gpu__time_duration.sum}
      timeout ${STEP_TIMEOUT:-240} ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics "$metrics" --csv --page raw ./build-gpu/bench/bench_$name --profile ${!var:-} \
        >"$out/ncu_$name.csv" 2>"$out/ncu_$name.err"
      note "ncu bench_$name rc=$? ($(grep -c '^"' "$out/ncu_$name.csv") csv lines)"; tail -3 "$out/ncu_$name.err"
      ;;
    *) note "unknown step $step" ;;
  esac
done
echo; echo "== summary"; printf '%s\n' "${summary[@]}"
