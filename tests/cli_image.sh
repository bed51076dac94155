#!/usr/bin/env bash
# `mlxcel image`: its command line, the processors' shapes on a real photograph, and hostile
# images (tests/data/image/hostile, written by tools/image_refs/generate.py), each refused with
# exit status 1 and a message naming the problem, within bounded memory.
# Usage: tests/cli_image.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
DATA=$SRC/tests/data/image
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -d "$DATA/hostile" ] || { echo "missing $DATA (tools/image_refs/generate.py)"; exit 77; }

t_help() {
  run "$MLXCEL" image --help
  expect_rc 0
  expect_out "Usage: mlxcel image"
  expect_out "EXIF orientation is not applied"
  run "$MLXCEL" image
  expect_rc 2
  expect_err "missing IMAGE"
  run "$MLXCEL" image --bogus x.png
  expect_rc 2
  expect_err "unknown option '--bogus'"
  run "$MLXCEL" image --pixels-npy "$TMP/p.npy" "$DATA/inputs/chelsea.png"
  expect_rc 2
  expect_err "need -m DIR or --config"
  run "$MLXCEL" image --max-pixels 0 "$DATA/inputs/chelsea.png"
  expect_rc 2
  run "$MLXCEL" image "$TMP/none.png"
  expect_rc 3
}

t_shapes() {
  local img=$DATA/inputs/chelsea.png
  run "$MLXCEL" image "$img"
  expect_rc 0
  expect_out "png 451 x 300, rgb, 8-bit"
  run "$MLXCEL" image -m "$DATA/configs/llava15" "$img"
  expect_rc 0
  expect_out "^pixel_values: \[3, 336, 336\]"
  run "$MLXCEL" image --json -m "$DATA/configs/gemma3" "$img"
  expect_rc 0
  expect_out '"processor": "Gemma3ImageProcessor", "resized": \[896, 896\]'
  # Qwen2-VL: 300 x 451 rounds to 308 x 448 (multiples of 28): 22 x 32 patches of 14.
  run "$MLXCEL" image --json -m "$DATA/configs/qwen2vl" "$img"
  expect_rc 0
  expect_out '"pixel_values": \{"shape": \[704, 1176\]'
  expect_out '"image_grid_thw": \[1, 22, 32\]'
  run "$MLXCEL" image -m "$DATA/configs/qwen2vl" --pixels-npy "$TMP/p.npy" "$img"
  expect_rc 0
  [ "$(stat -c %s "$TMP/p.npy")" -eq $((128 + 704 * 1176 * 4)) ] || fail "pixels .npy size"
  # Molmo2: 451 x 300 less the margins takes 1 x 2 windows of 266: a 378 x 644 canvas, the global
  # view and 2 crops of 27 x 27 patches; 14 x 14 pooled tokens, then 14 x 23.
  run "$MLXCEL" image --json -m "$DATA/configs/molmo2" "$img"
  expect_rc 0
  expect_out '"resized": \[378, 644\], "pixel_values": \{"shape": \[3, 729, 588\]'
  expect_out '"image_grids": \[14, 14, 14, 23\], "image_token_pooling": \[518, 4\]'
  run "$MLXCEL" image -m "$DATA/configs/llava15" --pooling-npy "$TMP/q.npy" "$img"
  expect_rc 1
  expect_err "CLIPImageProcessor computes no image_token_pooling"
}

t_configs() {
  mkdir -p "$TMP/m"
  local img=$DATA/inputs/chelsea.png
  conf() { printf '%s\n' "$1" >"$TMP/m/preprocessor_config.json"; run "$MLXCEL" image -m "$TMP/m" "$img"; }
  conf '{"image_processor_type": "Qwen2VLImageProcessorFast"}'
  expect_rc 1
  expect_err "Qwen2VLImageProcessorFast is a torchvision-based processor"
  conf '{"image_processor_type": "IdeficsImageProcessor"}'
  expect_rc 1
  expect_err "'image_processor_type' IdeficsImageProcessor is not supported"
  conf '{"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": true}'
  expect_rc 1
  expect_err "'do_pan_and_scan' true is not supported"
  conf '{"image_processor_type": "CLIPImageProcessor", "resample": 1}'
  expect_rc 1
  expect_err "'resample' 1 is not supported"
  conf '{"image_processor_type": "CLIPImageProcessor", "do_flip": true}'
  expect_rc 1
  expect_err "'do_flip' is not an option this engine implements"
  conf '{"image_processor_type": "SiglipImageProcessor", "size": {"height": 16}}'
  expect_rc 1
  expect_err "'size' needs both height and width"
  conf '{"image_processor_type": "SiglipImageProcessor", "image_std": [1, 0, 1]}'
  expect_rc 1
  expect_err "'image_std' must be positive"
  conf '{"image_processor_type": "Molmo2ImageProcessor", "size": {"height": 378, "width": 364}}'
  expect_rc 1
  expect_err "Molmo2 only supports a square 'size', got 364 x 378"
  conf '{"image_processor_type": "CLIPImageProcessor"'
  expect_rc 1
  expect_err "preprocessor_config.json"
}

# Every hostile file: exit 1, the expected words in the message, in 256 MiB of address space
# (the claimed images need 1.2 to 30 GB: a decoder that allocated them would fail differently).
# A sanitizer build reserves terabytes of address space at start-up, so it runs without the cap.
t_hostile() {
  local f expect cap="ulimit -v 262144"
  [ "${MX_SANITIZED:-0}" = 1 ] && cap=":"
  while IFS=$'\t' read -r f expect; do
    run bash -c "$cap; exec \"\$@\"" _ "$MLXCEL" image "$DATA/hostile/$f"
    [ "$rc" -eq 1 ] || fail "$f: expected exit status 1, got $rc"
    grep -qiF -- "$expect" "$TMP/err" || fail "$f: stderr does not name '$expect'"
    grep -qF -- "$f" "$TMP/err" || fail "$f: stderr does not name the file"
  done < <(python3 -c '
import json, sys
for k, v in json.load(open(sys.argv[1]))["hostile"].items(): print(k + "\t" + v)' \
      "$DATA/manifest.json")
  # The limit names the dimensions and can be lowered.
  run "$MLXCEL" image --max-pixels 1000 "$DATA/inputs/chelsea.png"
  expect_rc 1
  expect_err "an image of 451 x 300 pixels is above the limit of 1000 pixels"
}

run_tests "$NAME" "help shapes configs hostile"
