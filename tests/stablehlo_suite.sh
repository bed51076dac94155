#!/usr/bin/env bash
# Runs StableHLO's interpreter test suite (../shared/stablehlo-interpret) through
# `mlxcel run --check`, one process per file, and requires at least MIN_PASS passing cases and
# no crash or timeout. Exits 77 (ctest SKIP_RETURN_CODE) when the suite is not present.
# Usage: tests/stablehlo_suite.sh MLXCEL DEFAULT_SHARED_DIR MIN_PASS
# The MX_SHARED environment variable, when set, overrides DEFAULT_SHARED_DIR.
set -u
MLXCEL=$1
SHARED=${MX_SHARED:-$2}
MIN_PASS=$3
FILE_TIMEOUT=${MX_SUITE_FILE_TIMEOUT:-$((120 * ${MX_TIMEOUT_SCALE:-1}))}
SUITE=$SHARED/stablehlo-interpret

if [ ! -d "$SUITE" ]; then
  echo "SKIP: StableHLO interpreter suite not found at $SUITE (set MX_SHARED to the shared folder)"
  exit 77
fi
cd "$SUITE" || exit 1
files=$(find . -name '*.mlir' | sed 's|^\./||' | LC_ALL=C sort)
if [ -z "$files" ]; then
  echo "SKIP: no .mlir files in $SUITE"
  exit 77
fi

passed=0 failed=0 unsupported=0 broken=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in $files; do
  timeout "$FILE_TIMEOUT" "$MLXCEL" run --check "$f" >"$out" 2>&1
  rc=$?
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ unsupported$' "$out" | tail -1)
  if [ "$rc" -gt 1 ] || [ -z "$summary" ]; then
    if [ "$rc" -eq 124 ]; then
      echo "TIMEOUT $f (more than ${FILE_TIMEOUT}s)"
    else
      echo "CRASH $f (exit status $rc)"
    fi
    tail -5 "$out" | sed 's/^/    /'
    broken=$((broken + 1))
    continue
  fi
  read -r p _ fl _ u _ <<<"$summary"
  passed=$((passed + p)) failed=$((failed + fl)) unsupported=$((unsupported + u))
  printf '%-40s %3d passed, %3d failed, %3d unsupported\n' "$f" "$p" "$fl" "$u"
  grep -E '^(FAIL|ERROR) ' "$out" | cut -c1-300 | sed 's/^/    /'
done

echo
echo "StableHLO interpreter suite: $passed passed, $failed failed, $unsupported unsupported," \
  "$broken files crashed or timed out (required: at least $MIN_PASS passed, none crashed)"
status=0
if [ "$broken" -ne 0 ]; then
  echo "FAILED: $broken file(s) crashed or timed out"
  status=1
fi
if [ "$passed" -lt "$MIN_PASS" ]; then
  echo "FAILED: $passed cases passed, fewer than MX_SUITE_MIN_PASS=$MIN_PASS"
  status=1
fi
exit $status
