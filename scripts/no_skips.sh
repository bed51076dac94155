#!/usr/bin/env bash
# Fails when a ctest log lists skipped tests and MX_FAIL_ON_SKIP=1 (CI sets it): a test skips
# only when its reference data is missing, which on CI means a broken setup, not a pass.
# Usage: scripts/no_skips.sh CTEST_LOG
set -euo pipefail
log=$1
if grep -q '^The following tests did not run:' "$log"; then
  sed -n '/^The following tests did not run:/,/^$/p' "$log" >&2
  if [ "${MX_FAIL_ON_SKIP:-0}" = 1 ]; then
    echo "scripts/no_skips.sh: tests were skipped (MX_FAIL_ON_SKIP=1): failing" >&2
    exit 1
  fi
fi
