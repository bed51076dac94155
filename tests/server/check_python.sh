#!/usr/bin/env bash
# Fails, with a message naming scripts/venv.sh, unless PYTHON runs and imports `openai`.
# Usage: tests/server/check_python.sh PYTHON
python=$1
if [ ! -x "$python" ]; then
  echo "tests/server: no Python at $python: run scripts/venv.sh (it installs" \
    "tests/requirements.txt into .venv) and configure with" \
    "-DMX_PYTHON=<that environment>/bin/python" >&2
  exit 1
fi
if ! "$python" -c 'import openai' 2>/dev/null; then
  why=$("$python" -c 'import openai' 2>&1 | tail -1)
  echo "tests/server: $python cannot import openai ($why): run scripts/venv.sh to install" \
    "tests/requirements.txt into the environment MX_PYTHON names" >&2
  exit 1
fi
