#!/usr/bin/env bash
# `mlxcel generate --image` and `mlxcel emit` on the tiny Youtu-VL checkpoint whose reference is
# llama.cpp's (tests/data/families/youtu_vl, tools/vlm/make_youtu_vl_fixture.py; ADR 0027): the
# greedy ids of the reference prompt equal llama.cpp's on both backends and with the tower on the
# interpreter, the prompt's token count is the fixture's (less its BOS, which llama.cpp was
# given by hand) with the image's grid-sized run, a bare <|image_pad|> gets its vision markers,
# two images of different grids and an image with no placeholder take their runs, the errors
# name the problem, and emit writes @vision for a grid (rows of 16 x 16 x 3 values) and an
# @prefill_media without M-RoPE positions. chat's /image on it is cli_vlm_qwen.sh's chat test.
# Usage: tests/cli_vlm_youtu.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
IMG=$SRC/tests/data/image/inputs/chelsea.png
M=$SRC/tests/data/families/youtu_vl
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -f "$M/vision_reference.json" ] || { echo "missing $M (tools/vlm/make_youtu_vl_fixture.py)"; exit 77; }

ref_ids() { grep -o "\"$1\": \[[0-9, -]*\]" "$M/vision_reference.json" | sed 's/.*\[//; s/\]//; s/ //g'; }
got_ids() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }
PROMPT='Look: <|vision_start|><|image_pad|><|vision_end|>What is in the picture?'

t_generate() {
  local want n_prompt
  want=$(ref_ids greedy_ids)
  n_prompt=$(($(ref_ids prompt_ids | tr ',' '\n' | wc -l) - 1))
  for be in interp cpu; do
    run "$MLXCEL" generate -m "$M" --backend "$be" --image "$IMG" -p "$PROMPT" -n 16 --json
    expect_rc 0
    [ "$(got_ids)" = "$want" ] || fail "$be: greedy ids $(got_ids), llama.cpp $want"
    expect_out "\"prompt_tokens\": $n_prompt,"
  done
  run "$MLXCEL" generate -m "$M" --backend cpu --vision-backend interp --image "$IMG" -p "$PROMPT" \
    -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "cpu text, interp tower: $(got_ids)"
  # The bare placeholder gets its vision markers: the same prompt, the same ids.
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p 'Look: <|image_pad|>What is in the picture?' \
    -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "bare placeholder: greedy ids $(got_ids)"
  expect_out "\"prompt_tokens\": $n_prompt,"
  # Without a placeholder the image goes first: 1 + 24 + 1 + 2 bytes.
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "hi" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 28,'
  # Two grids: the photograph's 24 tokens and astronaut.png's (512 x 512 -> 128 x 128 under the
  # fixture's 96 patches: 16 tokens), each wrapped: 26 + 5 + 18.
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$SRC/tests/data/image/inputs/astronaut.png" \
    -p "<|image_pad|> and <|image_pad|>" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 49,'
}

t_errors() {
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the prompt has 1 image placeholder \(<\|image_pad\|>\) for 2 --image"
  run "$MLXCEL" generate -m "$M" --image "$SRC/tests/data/image/hostile/truncated.png" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "truncated.png"
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "$PROMPT" -n 2 --ctx 32
  expect_rc 1
  expect_err "the prompt is 55 tokens but the context holds 32"
  # A processor file of another family: its patch rows are not the tower's.
  cp -r "$M" "$TMP/m"
  cp "$SRC/tests/data/families/qwen2_vl/preprocessor_config.json" "$TMP/m/"
  run "$MLXCEL" generate -m "$TMP/m" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the vision tower takes rows of 768"
  sed 's/"resample": 2/"resample": 3/' "$M/preprocessor_config.json" > "$TMP/m/preprocessor_config.json"
  run "$MLXCEL" generate -m "$TMP/m" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "only 'resample' 2 \(bilinear\)"
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --vision-grid 5x8
  expect_rc 1
  expect_err "5 x 8 patch grid"
}

t_emit() {
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --ctx 64 --vision-grid 8x12
  expect_rc 0
  for f in prefill decode prefill_media vision; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'tensor<96x768xf32> {mx.name = "pixels", mx.role = "pixels"}' "$TMP/e/vision.mlir" ||
    fail "@vision does not take 96 rows of 768"
  grep -q -- '-> tensor<1x24x64xf32>' "$TMP/e/vision.mlir" || fail "@vision is not [1, 24, 64]"
  grep -q 'mx.role = "positions"' "$TMP/e/prefill_media.mlir" && fail "youtu_vl takes M-RoPE positions"
  grep -q 'mx.role = "media"' "$TMP/e/prefill_media.mlir" || fail "no media argument"
  grep -q 'chlo\.' "$TMP/e/vision.mlir" && fail "vision.mlir uses chlo"
  return 0
}

run_tests "$NAME" "generate errors emit"
