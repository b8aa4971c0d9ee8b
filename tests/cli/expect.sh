#!/usr/bin/env bash
# Runs a command and checks its exit code and output (stdout and stderr together), for the CLI
# tests in tests/CMakeLists.txt:
#   expect.sh CODE REGEX [--absent PATH]... [--present PATH]... [--once REGEX]... [--env NAME=VALUE]...
#             -- COMMAND [ARG]...
# CODE: the exit code wanted; REGEX: an extended regular expression the output must match ("" for
# any); --absent PATH: PATH must not exist afterwards (it is removed first), nor any PATH.tmp.*;
# --present PATH: PATH must exist afterwards (it is removed first); --once REGEX: exactly one line
# of the output matches (under mpirun: one rank printed it).
set -uo pipefail
want=$1 regex=$2
shift 2
absent=()
present=()
once=()
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --absent) absent+=("$2"); shift 2 ;;
    --present) present+=("$2"); shift 2 ;;
    --once) once+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    *) echo "expect.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift
for p in "${absent[@]+"${absent[@]}"}" "${present[@]+"${present[@]}"}"; do rm -f "$p" "$p".tmp.*; done
out=$(env "${envs[@]+"${envs[@]}"}" "$@" 2>&1)
code=$?
printf '%s\n' "$out"
fail=0
if [ "$code" != "$want" ]; then echo "expect.sh: exit code $code, wanted $want" >&2; fail=1; fi
if [ -n "$regex" ] && ! grep -Eq -- "$regex" <<<"$out"; then echo "expect.sh: output does not match /$regex/" >&2; fail=1; fi
for p in "${absent[@]+"${absent[@]}"}"; do
  if compgen -G "$p" >/dev/null || compgen -G "$p.tmp.*" >/dev/null; then
    echo "expect.sh: $p (or a temporary file of it) was left behind" >&2; fail=1
  fi
done
for p in "${present[@]+"${present[@]}"}"; do
  if [ ! -s "$p" ]; then echo "expect.sh: $p was not written" >&2; fail=1; fi
done
for r in "${once[@]+"${once[@]}"}"; do
  n=$(grep -Ec -- "$r" <<<"$out")
  if [ "$n" != 1 ]; then echo "expect.sh: $n lines match /$r/, wanted exactly 1" >&2; fail=1; fi
done
exit $fail
