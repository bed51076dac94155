#!/usr/bin/env bash
# The library to embed, as a user gets it: `cmake --install` into a fresh prefix, then the
# example program (examples/embed/complete.c) built against the installed copy only, once with
# pkg-config and once with CMake's find_package(mlxcel), run on stories260K. Its greedy text must
# be exactly `mlxcel generate`'s; the shared library must export the embedding API and nothing
# else; errors (a missing model, chat without a template) must reach the program as messages.
# Usage: tests/install_embed.sh BUILD_DIR SOURCE_DIR
set -u
BUILD=$1
SRC=$2
MODEL=$SRC/models/stories260K
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY

fails=0
fail() {
  echo "FAILED: $*"
  fails=$((fails + 1))
}

prefix=$TMP/prefix
cmake --install "$BUILD" --prefix "$prefix" >"$TMP/install.log" 2>&1 ||
  { cat "$TMP/install.log"; echo "FAILED: cmake --install"; exit 1; }
for f in bin/mlxcel include/mlxcel/mlxcel.h; do
  [ -f "$prefix/$f" ] || fail "$f is not installed"
done
lib=$(dirname "$(find "$prefix" -name 'libmlxcel.so.0' | head -1)")
[ -n "$lib" ] && [ -d "$lib" ] || { echo "FAILED: libmlxcel.so.0 is not installed"; exit 1; }
[ -f "$lib/pkgconfig/mlxcel.pc" ] || fail "mlxcel.pc is not installed"
[ -f "$lib/cmake/mlxcel/mlxcelConfig.cmake" ] || fail "the CMake package is not installed"
# Only the installed header: no other engine header is public API.
[ "$(find "$prefix/include" -type f | wc -l)" -eq 1 ] || fail "headers other than mlxcel.h installed"

# The exported symbols are the embedding API.
nm -D --defined-only "$lib/libmlxcel.so.0" | awk '{print $3}' | sort >"$TMP/exports"
grep -v '^mx_engine_' "$TMP/exports" >"$TMP/extra" && fail "exports beyond mx_engine_*: $(head -5 "$TMP/extra" | tr '\n' ' ')"
for f in mx_engine_open mx_engine_close mx_engine_complete mx_engine_chat mx_engine_last_error \
  mx_engine_api_version mx_engine_opts_init mx_engine_gen_opts_init; do
  grep -qx "$f" "$TMP/exports" || fail "$f is not exported"
done

# The reference: the CLI's greedy text (prompt echoed, then the continuation).
"$prefix/bin/mlxcel" generate -m "$MODEL" -p "Once upon a time" -n 40 --temp 0 \
  >"$TMP/want" 2>/dev/null || fail "mlxcel generate"

# pkg-config, against the prefix only (the source tree's headers are not on the path).
export PKG_CONFIG_PATH=$lib/pkgconfig
flags=$(pkg-config --cflags --libs mlxcel) || fail "pkg-config mlxcel"
cc -std=c17 -Wall -Werror "$SRC/examples/embed/complete.c" $flags -Wl,-rpath,"$lib" \
  -o "$TMP/complete-pc" 2>"$TMP/cc.log" || { cat "$TMP/cc.log"; fail "cc with pkg-config"; }
if [ -x "$TMP/complete-pc" ]; then
  "$TMP/complete-pc" "$MODEL" "Once upon a time" 40 >"$TMP/got-pc" 2>"$TMP/err-pc" ||
    fail "complete (pkg-config): $(cat "$TMP/err-pc")"
  cmp -s "$TMP/want" "$TMP/got-pc" ||
    fail "complete (pkg-config) differs from mlxcel generate: $(head -c 300 "$TMP/got-pc")"
  grep -q "generated" "$TMP/err-pc" || fail "no stats line: $(cat "$TMP/err-pc")"
  # Errors reach the program as messages.
  "$TMP/complete-pc" "$TMP/nowhere" "x" >/dev/null 2>"$TMP/err" && fail "a missing model loaded"
  grep -q "nowhere" "$TMP/err" || fail "missing model message: $(cat "$TMP/err")"
  "$TMP/complete-pc" --chat "$MODEL" "Hello" >/dev/null 2>"$TMP/err" && fail "chat without a template"
  grep -q "cannot chat: .*chat_template" "$TMP/err" || fail "chat message: $(cat "$TMP/err")"
fi

# CMake's find_package against the prefix.
cmake -S "$SRC/examples/embed" -B "$TMP/b" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$lib" >"$TMP/cmake.log" 2>&1 &&
  cmake --build "$TMP/b" >>"$TMP/cmake.log" 2>&1 || { cat "$TMP/cmake.log"; fail "CMake build"; }
if [ -x "$TMP/b/complete" ]; then
  "$TMP/b/complete" "$MODEL" "Once upon a time" 40 >"$TMP/got-cm" 2>/dev/null ||
    fail "complete (CMake)"
  cmp -s "$TMP/want" "$TMP/got-cm" || fail "complete (CMake) differs from mlxcel generate"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "ok: installed to a fresh prefix; the example built with pkg-config and with CMake and matched mlxcel generate"
