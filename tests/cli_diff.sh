#!/usr/bin/env bash
# `mlxcel diff` (the divergence finder) on the bundled stories260K model.
# Usage: tests/cli_diff.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
MODEL=$SRC/models/stories260K
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY MLXCEL_THREADS
IDS="1,403,407,261,378,432,383"

fails=0
run() {
  "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  rc=$?
}
fail() {
  echo "FAILED: $*"
  echo "--- exit status: $rc"
  echo "--- stdout:"; head -c 3000 "$TMP/out"; echo
  echo "--- stderr:"; head -c 3000 "$TMP/err"; echo
  fails=$((fails + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }

t_help() {
  run "$MLXCEL" diff --help
  expect_rc 0
  expect_out "Usage: mlxcel diff -m DIR --ids"
  run "$MLXCEL" --help
  expect_out "diff +find the first op"
}

# The fast runtime agrees with the interpreter op by op on the real model, 1 and 2 threads,
# @prefill (several ids) and @decode (one id).
t_clean() {
  for t in 1 2; do
    run "$MLXCEL" diff -m "$MODEL" --ids "$IDS" --threads $t
    expect_rc 0
    expect_out "^@prefill of 7 ids, $t threads"
    expect_out "^no divergence: every compared op result is within 0.0001"
    expect_out "^[0-9]+ op results compared, 0 diverged, 0 not compared"
  done
  run "$MLXCEL" diff -m "$MODEL" --ids 403 --ctx 8
  expect_rc 0
  expect_out "^@decode of 1 ids"
  expect_out "^no divergence"
}

# A deliberately broken kernel (test-only knob: +1 on the first element of the first op of that
# name) is named, with its worst element and both values.
t_perturb() {
  run "$MLXCEL" diff -m "$MODEL" --ids "$IDS" --test-perturb mx.rms_norm
  expect_rc 1
  expect_out "^first divergence \(error > 0.0001\):"
  expect_out "^  at: %[a-z0-9]+ = mx.rms_norm \(op [0-9]+ of @prefill\)"
  expect_out "^  result 0 \(%[a-z0-9]+\): tensor<1x7x64xf32>, 1 of 448 elements beyond 0.0001"
  expect_out "^  worst element \[0, 0, 0\] \(flat 0\): fast -?[0-9.e+-]+, reference -?[0-9.e+-]+ \(error 1\)"
  expect_out "operand 1: %[a-z0-9]+ tensor<64xf32> weight model.layers.0.input_layernorm.weight"
  run "$MLXCEL" diff -m "$MODEL" --ids "$IDS" --test-perturb mx.gated_mlp --threads 2
  expect_rc 1
  expect_out "^  at: %[a-z0-9]+ = mx.gated_mlp \(op [0-9]+ of @prefill\), after weight model.layers.0.mlp.down_proj.weight"
}

t_errors() {
  run "$MLXCEL" diff -m "$MODEL"
  expect_rc 2
  expect_err "missing --ids"
  run "$MLXCEL" diff -m "$MODEL" --ids 1,2 --tol 0
  expect_rc 2
  expect_err "--tol must be a positive number"
  run "$MLXCEL" diff -m "$MODEL" --ids 1,2 --bogus
  expect_rc 2
  run "$MLXCEL" diff -m "$TMP/nope" --ids 1,2
  expect_rc 3
  run "$MLXCEL" diff -m "$MODEL" --ids 1,99999
  expect_rc 1
  expect_err "id 99999 at index 1 is not below the vocabulary \(512\)"
  run "$MLXCEL" diff -m "$MODEL" --ids 1,2,3 --ctx 2
  expect_rc 1
  expect_err "--ctx 2 must hold the 3 ids"
}

if [ "$NAME" = all ]; then
  for t in help clean perturb errors; do "t_$t"; done
else
  "t_$NAME"
fi
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "ok"
