#!/usr/bin/env bash
# Runs a command and checks its exit code and output (stdout and stderr together), for the CLI
# tests in tests/CMakeLists.txt:
#   expect.sh CODE REGEX [--absent PATH]... [--env NAME=VALUE]... -- COMMAND [ARG]...
# CODE: the exit code wanted; REGEX: an extended regular expression the output must match ("" for
# any); --absent PATH: PATH must not exist afterwards (it is removed first), nor any PATH.tmp.*.
set -uo pipefail
want=$1 regex=$2
shift 2
absent=()
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --absent) absent+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    *) echo "expect.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift
for p in "${absent[@]+"${absent[@]}"}"; do rm -f "$p" "$p".tmp.*; done
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
exit $fail
