#!/usr/bin/env bash
# Builds mlxcel with warnings as errors and runs every test (unit tests, interpreter cases,
# CLI tests, and StableHLO's interpreter suite when ../shared/stablehlo-interpret is present).
# Installs its own Debian dependencies. Environment: BUILD_DIR (default build), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
build=${BUILD_DIR:-build}
jobs=${JOBS:-2}
cmake -S . -B "$build" -DMX_WERROR=ON
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs"
