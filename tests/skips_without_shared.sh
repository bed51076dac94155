#!/usr/bin/env bash
# Each test binary given reads reference data from ../shared: with MX_SHARED pointing at a
# folder that does not exist, every one must exit 77 (ctest's "skipped"), not 0 (a pass on the
# checks that are left) and not crash. CI fails on any skipped test, so a missing reference can
# never go unnoticed.
# Usage: tests/skips_without_shared.sh TEST_BINARY...
set -u
nowhere=$(mktemp -d)/no-such-shared
fails=0
for t in "$@"; do
  MX_SHARED=$nowhere "$t" >/tmp/skips_without_shared.$$ 2>&1
  rc=$?
  if [ "$rc" -ne 77 ]; then
    echo "FAILED: $(basename "$t") exited $rc with MX_SHARED=$nowhere (expected 77, skipped):"
    tail -n 5 /tmp/skips_without_shared.$$
    fails=$((fails + 1))
  elif ! grep -q '^SKIP: ' /tmp/skips_without_shared.$$; then
    echo "FAILED: $(basename "$t") exited 77 without a SKIP line saying what is missing"
    fails=$((fails + 1))
  fi
done
rm -f /tmp/skips_without_shared.$$
rmdir "$(dirname "$nowhere")"
[ "$fails" -eq 0 ] || { echo "$fails of $# tests did not report themselves skipped"; exit 1; }
echo "ok: $# tests report themselves skipped without their reference data"
