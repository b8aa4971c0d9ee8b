#!/usr/bin/env bash
# Sets up a fresh Debian 12 / Ubuntu machine and builds krysp into ./build.
#  - installs the Debian packages krysp needs when apt-get is usable (root, network);
#  - uses the system's Kokkos if cmake finds it, else extracts Debian's into .deps/kokkos;
#  - configures (CUDA arch 90 unless CMAKE_CUDA_ARCHITECTURES is set) and builds.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs="cmake g++ libtrilinos-kokkos-dev libhdf5-dev doctest-dev liblapacke-dev libopenmpi-dev openmpi-bin"
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && ! dpkg -s $pkgs >/dev/null 2>&1; then
  echo "bootstrap: installing $pkgs"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null
fi
# clang and its libFuzzer runtime, for scripts/fuzz.sh (CI fuzzes the file parsers). Not needed to
# build or use krysp, so a failure here only warns; KRYSP_NO_FUZZ_DEPS=1 skips it.
fuzz_pkgs="clang libclang-rt-dev"
if [ -z "${KRYSP_NO_FUZZ_DEPS:-}" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] &&
   ! dpkg -s $fuzz_pkgs >/dev/null 2>&1; then
  echo "bootstrap: installing $fuzz_pkgs (for scripts/fuzz.sh)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $fuzz_pkgs >/dev/null; } ||
    echo "bootstrap: warning: could not install $fuzz_pkgs; scripts/fuzz.sh needs them" >&2
fi
prefix=/usr/lib/x86_64-linux-gnu/cmake
if [ ! -f "$prefix/Kokkos/KokkosConfig.cmake" ]; then
  [ -f .deps/kokkos/usr/lib/x86_64-linux-gnu/cmake/Kokkos/KokkosConfig.cmake ] || scripts/fetch_kokkos.sh
  prefix=$PWD/.deps/kokkos/usr/lib/x86_64-linux-gnu/cmake
fi
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" >/dev/null
cmake --build build -j"$(nproc)"
