#!/usr/bin/env bash
# Installs krysp from the build tree into a scratch prefix, then configures, builds and runs the
# consumer project against it.   run.sh <build-dir> <kokkos-cmake-prefix>
set -euo pipefail
build=$1 kokkos_prefix=$2
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix;$kokkos_prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
"$scratch/build/consumer"
"$scratch/build/lowest_modes" 4
