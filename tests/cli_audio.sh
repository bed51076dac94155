#!/usr/bin/env bash
# `mlxcel emit --audio-frames N` on the tiny Gemma 3n checkpoint with its audio tower written by
# transformers (tests/data/families/gemma3n-audio, tools/audio/make_gemma3n_audio_fixture.py):
# audio.mlir holds @audio with its feature and mask arguments and the padded rows as its result
# (unit_audio_gemma3n runs it); a frame count beyond the tower's soft tokens, a model without an
# audio tower and a bad count fail with a message naming the problem.
# Usage: tests/cli_audio.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
M=$SRC/tests/data/families/gemma3n-audio
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -f "$M/audio_reference.json" ] || { echo "missing $M (tools/audio/make_gemma3n_audio_fixture.py)"; exit 77; }

t_emit() {
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --ctx 64 --audio-frames 28
  expect_rc 0
  for f in prefill decode audio; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'func.func @audio(' "$TMP/e/audio.mlir" || fail "audio.mlir has no @audio"
  grep -q 'tensor<1x28x128xf32> {mx.name = "audio", mx.role = "audio"}' "$TMP/e/audio.mlir" ||
    fail "@audio has no features argument [1, 28, 128]"
  grep -q 'tensor<1x28xi32> {mx.name = "audio_mask", mx.role = "audio_mask"}' "$TMP/e/audio.mlir" ||
    fail "@audio has no mask argument [1, 28]"
  grep -q -- '-> tensor<1x6x64xf32>' "$TMP/e/audio.mlir" || fail "@audio does not return [1, 6, 64]"
  grep -q 'chlo\.' "$TMP/e/audio.mlir" && fail "audio.mlir uses chlo"
  # 49 frames give 7 tokens, past audio_soft_tokens_per_image (6).
  run "$MLXCEL" emit -m "$M" -o "$TMP/f" --ctx 64 --audio-frames 49
  expect_rc 1
  expect_err "49 log-mel frames give 7 audio tokens"
  run "$MLXCEL" emit -m "$SRC/tests/data/families/gemma3n" -o "$TMP/g" --ctx 64 --audio-frames 28
  expect_rc 2
  expect_err "model_type 'gemma3n' has no audio tower"
  run "$MLXCEL" emit -m "$M" -o "$TMP/h" --audio-frames 0
  expect_rc 2
  expect_err "--audio-frames"
  run "$MLXCEL" emit --help
  expect_out "--audio-frames N"
}

run_tests "$NAME" "emit"
