#!/usr/bin/env bash
# Runs one Python test module of tests/server (unittest) against the mlxcel binary, with the
# model setup.sh wrote in WORKDIR. Fails (never skips) when PYTHON or its openai client is missing.
# Usage: tests/server/run.sh PYTHON MLXCEL ROOT WORKDIR MODULE [TEST...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$1 mlxcel=$2 root=$3 work=$4
shift 4
bash "$here/check_python.sh" "$python"
# No __pycache__ in the source tree; the modules import harness.py from their own directory.
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$here PYTHONUNBUFFERED=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
MLXCEL=$mlxcel MX_ROOT=$root MX_SLOW_MODEL=$work/smollm2-135m "$python" -m unittest -v "$@" 2>&1 |
  tee "$log" || rc=$?
# A test whose reference data is missing skips; the module then reports itself skipped (77) to
# ctest, never passed (CI fails on any skip).
if [ "$rc" -eq 0 ] && grep -qE '^OK \(.*skipped=' "$log"; then exit 77; fi
exit "$rc"
