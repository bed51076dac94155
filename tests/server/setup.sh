#!/usr/bin/env bash
# The fixture of the server tests: checks the test environment's Python and its `openai` client
# (scripts/venv.sh installs tests/requirements.txt) and writes the random-weight
# SmolLM2-135M-shape model the slow-request tests use (WORKDIR/smollm2-135m), once.
# Usage: tests/server/setup.sh PYTHON MLXCEL WORKDIR
# A missing Python or client is a failure, never a skip: the tests cannot run without them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$1 mlxcel=$2 work=$3
bash "$here/check_python.sh" "$python"
mkdir -p "$work"
# Written beside its place and moved there once complete: a run interrupted while writing leaves
# only the partial directory (removed by the next run), never a truncated model that later runs
# would take as ready.
if [ ! -s "$work/smollm2-135m/model.safetensors" ]; then
  rm -rf "$work/smollm2-135m.partial"
  "$mlxcel" mkmodel --arch llama --preset smollm2-135m -o "$work/smollm2-135m.partial" --force -q
  rm -rf "$work/smollm2-135m"
  mv "$work/smollm2-135m.partial" "$work/smollm2-135m"
fi
client=$("$python" -c 'import openai; print(openai.__version__)')
echo "$work/smollm2-135m is ready; openai $client"
