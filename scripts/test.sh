#!/usr/bin/env bash
# Builds mlxcel with warnings as errors and runs every test (unit tests, interpreter cases,
# CLI tests, and StableHLO's interpreter suite when ../shared/stablehlo-interpret is present).
# Installs its own Debian dependencies and the pinned Python test packages (tests/requirements.txt,
# into .venv by scripts/venv.sh). Environment: BUILD_DIR (default build), JOBS (default 2),
# MX_VENV (the virtual environment, default .venv), MX_FAIL_ON_SKIP=1 (CI sets it: a test that
# reports itself skipped, its reference data missing, fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
python=$(scripts/venv.sh | tail -1)
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
cmake -S . -B "$build" -DMX_WERROR=ON -DMX_PYTHON="$python"
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs" | tee "$build/ctest.log"
scripts/no_skips.sh "$build/ctest.log"
