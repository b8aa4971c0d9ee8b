#!/usr/bin/env bash
# Checks the headers of an installed krysp (tests/consumer/run.sh ... headers):
#  - every installed file outside lib/ and bin/ lies under include/krysp/;
#  - no internal header is installed (cuda/ or host/ folders, .cuh) and none includes a CUDA header;
#  - every #include "..." of an installed header names krysp/<path>, and every krysp/<path> it
#    includes ("..." or <...>) is installed;
#  - every installed header compiles on its own with only <prefix>/include and Kokkos's includes
#    (headers/CMakeLists.txt), so one that needs a header left out of the install fails; and all
#    of them compile together in one translation unit (no name defined twice).
#   check_headers.sh <prefix> <kokkos-cmake-prefix> <scratch-dir>
set -euo pipefail
prefix=$1 kokkos_prefix=$2 scratch=$3
here=$(cd "$(dirname "$0")" && pwd)
fail=0
bad() { echo "installed headers: $*" >&2; fail=1; }

while IFS= read -r path; do
  case $path in
    lib/*|bin/*|include/krysp/*) ;;
    *) bad "$path is installed outside include/krysp/" ;;
  esac
done < <(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | sort)

[ -f "$prefix/include/krysp/krysp.hpp" ] || bad "the umbrella include/krysp/krysp.hpp is not installed"
count=0
while IFS= read -r header; do
  count=$((count + 1))
  rel=${header#"$prefix/include/"}
  case $rel in
    */cuda/*|*/host/*|*.cuh) bad "$rel is internal (a cuda/ or host/ folder, or a CUDA header)" ;;
  esac
  if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](cuda|cublas|cusparse|cub/|thrust/|curand)' "$header"; then
    bad "$rel includes a CUDA header"
  fi
  while IFS= read -r inc; do
    case $inc in
      krysp/*) [ -f "$prefix/include/$inc" ] || bad "$rel includes \"$inc\", which is not installed" ;;
      *) bad "$rel includes \"$inc\": krysp headers are included as \"krysp/<folder>/<file>\"" ;;
    esac
  done < <(sed -nE -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/p' \
                   -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<(krysp\/[^>]*)>.*/\1/p' "$header")
done < <(find "$prefix/include" -type f | sort)
[ "$count" -gt 0 ] || bad "no headers installed under $prefix/include"
[ "$fail" = 0 ] || exit 1

# Each header alone: a build failure names the header's translation unit and the missing include.
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here/headers" -B "$scratch/headers" "${gen[@]}" -DKRYSP_INCLUDE="$prefix/include" \
  -DCMAKE_PREFIX_PATH="$prefix;$kokkos_prefix" >/dev/null
if ! cmake --build "$scratch/headers" -j"$(nproc)" >"$scratch/headers.log" 2>&1; then
  grep -E 'error:|FAILED:' "$scratch/headers.log" | head -40 >&2
  bad "a header does not compile on its own against the install tree (above)"
  exit 1
fi
echo "installed headers: $count under include/krysp, each compiles on its own and all together"
