#!/usr/bin/env bash
# Runs one Node test file of tests/server against the mlxcel binary, with the modules that
# setup.sh installed in WORKDIR.
# Usage: tests/server/run.sh MLXCEL ROOT WORKDIR TEST.mjs
set -euo pipefail
mlxcel=$1 root=$2 work=$3 file=$4
if [ ! -d "$work/node_modules/openai" ]; then
  echo "SKIP: no node modules in $work (tests/server/setup.sh was skipped: npm unreachable)"
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi
# The test files run from WORKDIR so that Node resolves `openai` from its node_modules.
cp "$root"/tests/server/*.mjs "$work/"
cd "$work"
MLXCEL=$mlxcel MX_ROOT=$root MX_SLOW_MODEL=$work/smollm2-135m exec node --test-reporter=spec --test "$work/$file"
