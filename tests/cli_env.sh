#!/usr/bin/env bash
# The process environment is read in one place: tools/mlxcel/env.c (issue 20, ADR 0006).
# Usage: tests/cli_env.sh MLXCEL SRC_DIR CASE
#   library: nothing under src/ or include/ reads it (getenv, secure_getenv, environ), so a
#            library caller never depends on it; tools/mlxcel/ reads it only in env.c.
set -u
MLXCEL=$1
SRC=$2
CASE=$3
fail() { echo "FAILED: $*"; exit 1; }

case_library() {
  # Guard against a grep that passes because it read nothing.
  local n
  n=$(find "$SRC/src" "$SRC/include" -name '*.[ch]' | wc -l)
  [ "$n" -gt 100 ] || fail "only $n C files under $SRC/src and $SRC/include"
  local pat='\b(secure_)?getenv\b|\benviron\b'
  local hits
  hits=$(grep -rnE "$pat" "$SRC/src" "$SRC/include")
  [ -z "$hits" ] || fail "the library reads the environment (pass a typed option instead):
$hits"
  hits=$(grep -rnE "$pat" "$SRC/tools/mlxcel" | grep -v '^[^:]*/env\.c:')
  [ -z "$hits" ] || fail "the CLI reads the environment outside env.c:
$hits"
  grep -qE '\bgetenv\b' "$SRC/tools/mlxcel/env.c" || fail "env.c reads no variable"
  echo "ok: only tools/mlxcel/env.c reads the environment ($n library files checked)"
}

"case_$CASE"
