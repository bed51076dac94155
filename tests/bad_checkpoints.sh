#!/usr/bin/env bash
# Makes the broken-checkpoint corpus (tests/data/bad/make_bad.sh) in a temporary folder and checks
# that `mlxcel generate` refuses each case with the exit status and exact message of
# tests/data/bad/expected.txt, and that every case made has an expectation.
# Usage: bad_checkpoints.sh MLXCEL REPO_ROOT
set -uo pipefail
mlxcel=$1
repo=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mx_bad.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash "$repo/tests/data/bad/make_bad.sh" "$repo/models/stories260K" "$tmp" || exit 1
fails=0
checked=0
declare -A seen
while IFS=$'\t' read -r name code msg; do
  case $name in '#'* | '') continue ;; esac
  seen[$name]=1
  want=${msg//@DIR@/$tmp}
  got=$("$mlxcel" generate -m "$tmp/$name" -p x -n 1 -q 2>&1 >/dev/null)
  rc=$?
  checked=$((checked + 1))
  if [ "$rc" != "$code" ] || [ "$got" != "$want" ]; then
    fails=$((fails + 1))
    printf 'FAIL %s\n  exit %s, expected %s\n  got:      %s\n  expected: %s\n' "$name" "$rc" \
      "$code" "$got" "$want"
  fi
done <"$repo/tests/data/bad/expected.txt"
for d in "$tmp"/*; do
  n=$(basename "$d")
  if [ -z "${seen[$n]:-}" ]; then
    fails=$((fails + 1))
    echo "FAIL $n: made by make_bad.sh but has no line in expected.txt"
  fi
done
echo "$checked cases checked, $fails failed"
[ "$fails" -eq 0 ]
