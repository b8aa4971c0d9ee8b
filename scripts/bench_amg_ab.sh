#!/usr/bin/env bash
# bench_amg, before and after, on a GPU machine: an earlier tree and the working tree built side by
# side and run alternately (old, new, old, new, ...) in one call, so that every ratio comes from one
# machine and one stretch of its load. Needs .deps/kokkos (scripts/fetch_kokkos.sh).
#   scripts/bench_amg_ab.sh OLD ROUNDS [bench_amg arguments ...]
# OLD: a directory holding the earlier tree (for a device copy whose git history may not reach the
# commit: `git archive REV -- . ':!bench/results' ':!tests/data' | tar -x -C DIR` beforehand), or
# a commit, extracted here the same way. Writes $OUT/ab (or ./gpu-out/ab): s_old_rN.json and
# s_dev_rN.json with their printed tables, the build logs, and summary.json from
# scripts/summarise_ab.py (medians over the rounds; AMG_AB_OLD and AMG_AB_NEW name the two builds
# there, default "old" and "new"). AMG_AB_PACK=1 packs that folder into $OUT/ab.tgz instead, for a
# device tool that brings back only a few files.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$1 rounds=$2
shift 2
case $rounds in '' | *[!0-9]* | 0) echo "bench_amg_ab: ROUNDS must be a positive integer, not '$rounds'"; exit 2 ;; esac
out=${OUT:-gpu-out}/ab
mkdir -p "$out"
kokkos=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$kokkos:${LD_LIBRARY_PATH:-}
if [ ! -d "$old" ]; then
  tree=build-ab-old-src
  rm -rf "$tree" && mkdir -p "$tree"
  git archive "$old" -- . ':!bench/results' ':!tests/data' | tar -x -C "$tree" || {
    echo "bench_amg_ab: '$old' is neither a directory nor a commit this checkout has"; exit 2; }
  old=$tree
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/device.txt"
for b in dev old; do
  src=.
  [ "$b" = old ] && src=$old
  if ! cmake -S "$src" -B "build-ab-$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
       -DCMAKE_PREFIX_PATH="$kokkos/cmake" -DKRYSP_BUILD_TESTS=OFF -DKRYSP_BUILD_EXAMPLES=OFF >"$out/configure-$b.log" 2>&1 ||
     ! ninja -C "build-ab-$b" -j16 bench_amg >"$out/build-$b.log" 2>&1; then
    tail -30 "$out/build-$b.log" "$out/configure-$b.log" 2>/dev/null
    echo "bench_amg_ab: the $b build failed"; exit 1
  fi
  echo "bench_amg_ab: $b built at ${SECONDS} s"
done
for r in $(seq 1 "$rounds"); do
  for b in old dev; do
    "./build-ab-$b/bench/bench_amg" "$@" --label-suffix " $b r$r" --json "$out/s_${b}_r$r.json" \
      >"$out/s_${b}_r$r.txt" 2>&1
    rc=$?
    echo "bench_amg_ab: round $r $b exit $rc at ${SECONDS} s"
    if [ $rc -ne 0 ] || [ ! -s "$out/s_${b}_r$r.json" ]; then  # no GPU: bench_amg says so and writes nothing
      tail -5 "$out/s_${b}_r$r.txt"
      echo "bench_amg_ab: round $r of the $b build wrote no results"; exit 1
    fi
  done
done
python3 scripts/summarise_ab.py "$out" "$rounds" "${AMG_AB_OLD:-old}" "${AMG_AB_NEW:-new}" "$out/summary.json"
rc=$?
if [ "${AMG_AB_PACK:-0}" = 1 ]; then
  tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && rm -rf "$out" &&
    echo "bench_amg_ab: packed $out.tgz"
fi
exit $rc
