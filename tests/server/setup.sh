#!/usr/bin/env bash
# Installs the Node test dependencies (the official `openai` client, pinned by
# package-lock.json) into WORKDIR with `npm ci`, outside the source tree, and writes the
# random-weight SmolLM2-135M-shape model the slow-request tests use (WORKDIR/smollm2-135m).
# Usage: tests/server/setup.sh MLXCEL WORKDIR
# Exit 77 (skip) only when npm cannot reach its registry and this is not CI ($CI unset).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mlxcel=$1 work=$2
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "tests/server/setup.sh: node and npm are needed (scripts/deps.sh installs Debian's nodejs npm)" >&2
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi
mkdir -p "$work"
[ -s "$work/smollm2-135m/model.safetensors" ] ||
  "$mlxcel" mkmodel --arch llama --preset smollm2-135m -o "$work/smollm2-135m" --force -q
# Reinstall only when the lock file changed.
if [ -d "$work/node_modules/openai" ] && cmp -s "$here/package-lock.json" "$work/package-lock.json"; then
  echo "node modules up to date in $work"
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$work/"
if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
  if [ -z "${CI:-}" ] && ! npm ping >/dev/null 2>&1; then
    echo "SKIP: the npm registry is unreachable, so the openai client cannot be installed" >&2
    exit 77
  fi
  echo "tests/server/setup.sh: npm ci failed" >&2
  exit 1
fi
