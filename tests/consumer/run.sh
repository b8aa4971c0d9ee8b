#!/usr/bin/env bash
# Installs krysp from the build tree into a scratch prefix, then configures, builds and runs the
# consumer project against it; or, with `headers`, checks the installed headers (check_headers.sh).
#   run.sh <build-dir> <kokkos-cmake-prefix> [consumer|headers]
set -euo pipefail
build=$1 kokkos_prefix=$2 what=${3:-consumer}
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
if [ "$what" = headers ]; then
  "$here/check_headers.sh" "$scratch/prefix" "$kokkos_prefix" "$scratch"
  exit 0
fi
cmake -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix;$kokkos_prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
"$scratch/build/lowest_modes" 4
# Built when the installed krysp has MPI: run it on 2 ranks (mpiexec flags from MPIEXEC_FLAGS).
if [ -x "$scratch/build/distributed_heat" ]; then
  # shellcheck disable=SC2086
  mpiexec ${MPIEXEC_FLAGS:---allow-run-as-root --oversubscribe} -np 2 "$scratch/build/distributed_heat" 8 2
fi
