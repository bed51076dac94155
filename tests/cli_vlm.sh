#!/usr/bin/env bash
# `mlxcel generate --image` and `mlxcel emit` on the tiny LLaVA checkpoint written by
# transformers (tests/data/families/llava, tools/vlm/make_llava_fixture.py): the greedy ids of a
# raw prompt with its <image> placeholder and of --chat equal transformers' (both backends), the
# prompt token count includes the image tokens, and bad images / bad requests fail with a
# message naming the problem.
# Usage: tests/cli_vlm.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
M=$SRC/tests/data/families/llava
IMG=$SRC/tests/data/image/inputs/chelsea.png
HOSTILE=$SRC/tests/data/image/hostile
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -f "$M/vision_reference.json" ] || { echo "missing $M (tools/vlm/make_llava_fixture.py)"; exit 77; }

# A JSON list of the reference file as "1,2,3".
ref_ids() { grep -o "\"$1\": \[[0-9, ]*\]" "$M/vision_reference.json" | sed 's/.*\[//; s/\]//; s/ //g'; }
# The ids of generate --json's token lines, as "1,2,3".
got_ids() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }
PROMPT=$'USER: <image>\nWhat is in the picture? ASSISTANT:'

t_generate() {
  local want n_prompt
  want=$(ref_ids greedy_ids)
  n_prompt=$(ref_ids prompt_ids | tr ',' '\n' | wc -l)
  for be in interp cpu; do
    run "$MLXCEL" generate -m "$M" --backend "$be" --image "$IMG" -p "$PROMPT" -n 16 --json
    expect_rc 0
    [ "$(got_ids)" = "$want" ] || fail "$be: greedy ids $(got_ids), transformers $want"
    expect_out "\"prompt_tokens\": $n_prompt,"
  done
  want=$(ref_ids chat_greedy_ids)
  n_prompt=$(ref_ids chat_prompt_ids | tr ',' '\n' | wc -l)
  run "$MLXCEL" generate -m "$M" --image "$IMG" --chat -p "What is in the picture?" -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "--chat: greedy ids $(got_ids), transformers $want"
  expect_out "\"prompt_tokens\": $n_prompt,"
  # Without a placeholder the image goes first (after BOS): 1 + 16 + the text's bytes.
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "hi" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 19,'
  # Two images, two placeholders.
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$IMG" -p "<image><image>" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 33,'
}

t_errors() {
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the prompt has 1 image placeholder \(<image>\) for 2 --image"
  run "$MLXCEL" generate -m "$M" --image "$IMG" --prompt-ids 1,2 -n 2
  expect_rc 2
  expect_err "--image needs -p TEXT"
  run "$MLXCEL" generate -m "$M" --image "$TMP/none.png" -p "$PROMPT" -n 2
  expect_rc 3
  expect_err "none.png"
  for f in truncated.png wrong_magic.txt bomb.png; do
    run "$MLXCEL" generate -m "$M" --image "$HOSTILE/$f" -p "$PROMPT" -n 2
    expect_rc 1
    expect_err "$f"
  done
  run "$MLXCEL" generate -m "$M" --image "$HOSTILE/huge_dims.png" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "pixel limit|exceeds|too large"
  # The processor and the tower disagree on the image size.
  cp -r "$M" "$TMP/m"
  sed -i 's/"shortest_edge": 56/"shortest_edge": 42/; s/"height": 56/"height": 42/; s/"width": 56/"width": 42/' \
    "$TMP/m/preprocessor_config.json"
  run "$MLXCEL" generate -m "$TMP/m" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the vision tower takes \[3, 56, 56\]"
  # A text-only model takes no images.
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/text" -q
  expect_rc 0
  run "$MLXCEL" generate -m "$TMP/text" --image "$IMG" -p "hi" -n 2
  expect_rc 1
  expect_err "model_type 'llama' takes no images"
  # Muse Glimmer is refused, for images as for text, saying why and where it runs.
  mkdir -p "$TMP/glimmer"
  cp "$M"/*.json "$TMP/glimmer/"
  sed -i 's/"model_type": "llava"/"model_type": "muse_glimmer"/' "$TMP/glimmer/config.json"
  grep -q '"model_type": "muse_glimmer"' "$TMP/glimmer/config.json" || fail "glimmer config"
  run "$MLXCEL" generate -m "$TMP/glimmer" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "model_type 'muse_glimmer' is not supported on this engine's graph path"
  expect_err "MLX backend"
  # The context must hold the expanded prompt.
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "$PROMPT" -n 2 --ctx 32
  expect_rc 1
  expect_err "the prompt is 58 tokens but the context holds 32"
}

t_emit() {
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --ctx 64
  expect_rc 0
  for f in prefill decode prefill_media vision; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'func.func @vision(' "$TMP/e/vision.mlir" || fail "vision.mlir has no @vision"
  grep -q 'mx.role = "pixels"' "$TMP/e/vision.mlir" || fail "@vision has no pixels argument"
  grep -q 'mx.role = "media"' "$TMP/e/prefill_media.mlir" || fail "no media argument"
  grep -q 'chlo\.' "$TMP/e/vision.mlir" && fail "vision.mlir uses chlo"
  # run --weights --input binds @vision's pixels to raw bytes (the .npy's data: 3 x 56 x 56 f32).
  run "$MLXCEL" image -m "$M" --pixels-npy "$TMP/px.npy" "$IMG"
  expect_rc 0
  tail -c $((3 * 56 * 56 * 4)) "$TMP/px.npy" >"$TMP/px.bin"
  run "$MLXCEL" run --weights "$M" --input "pixels=$TMP/px.bin" "$TMP/e/vision.mlir"
  expect_rc 0; expect_out '@vision: logits 1x16x64$'
  run "$MLXCEL" run --weights "$M" "$TMP/e/vision.mlir"
  expect_rc 0  # pixels not given: zeros, as any unbound non-weight argument
  head -c 100 "$TMP/px.bin" >"$TMP/short.bin"
  run "$MLXCEL" run --weights "$M" --input "pixels=$TMP/short.bin" "$TMP/e/vision.mlir"
  expect_rc 1; expect_err "--input pixels: '.*short.bin' holds 100 bytes, tensor<1x3x56x56xf32> needs 37632"
  run "$MLXCEL" run --weights "$M" --input "$TMP/px.bin" "$TMP/e/vision.mlir"
  expect_rc 2; expect_err "--input wants NAME=FILE"
  run "$MLXCEL" run --weights "$M" --input "media=$TMP/px.bin" "$TMP/e/vision.mlir"
  expect_rc 1; expect_err "--input media=.*: @vision has no argument of that name"
  run "$MLXCEL" run --weights "$M" --input "pixels=$TMP/none.bin" "$TMP/e/vision.mlir"
  expect_rc 3; expect_err "--input pixels: cannot open .*none.bin"
  run "$MLXCEL" run --input "pixels=$TMP/px.bin" "$TMP/e/vision.mlir"
  expect_rc 2; expect_err "need --weights DIR"
  run "$MLXCEL" generate --help
  expect_out "--image PATH"
}

# --vision-backend / MLXCEL_XLA_VISION_BACKEND: the tower on another backend than the text
# model, with transformers' greedy ids still; a backend that cannot run @vision (xla) and an
# unknown one are errors naming them, never a fallback.
t_vision_backend() {
  local want
  want=$(ref_ids greedy_ids)
  run "$MLXCEL" generate -m "$M" --backend cpu --vision-backend interp --image "$IMG" -p "$PROMPT" \
    -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "cpu text, interp tower: greedy ids $(got_ids), want $want"
  MLXCEL_XLA_VISION_BACKEND=cpu run "$MLXCEL" generate -m "$M" --backend interp --image "$IMG" \
    -p "$PROMPT" -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "interp text, cpu tower: greedy ids $(got_ids), want $want"
  # The tower on xla needs its PJRT plugin (cli_xla.sh runs it with one); the flag wins over the
  # variable.
  MLXCEL_XLA_VISION_BACKEND=interp MLXCEL_XLA_PJRT_PLUGIN= MLXCEL_XLA_DEVICE= run "$MLXCEL" \
    generate -m "$M" --vision-backend xla --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "vision backend xla: the xla backend needs a PJRT plugin"
  run "$MLXCEL" generate -m "$M" --vision-backend bogus --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "unknown vision backend 'bogus'"
  MLXCEL_XLA_VISION_BACKEND=bogus run "$MLXCEL" generate -m "$M" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "from MLXCEL_XLA_VISION_BACKEND"
  printf '/image %s\nWhat is in the picture?\n' "$IMG" >"$TMP/in"
  MLXCEL_XLA_PJRT_PLUGIN= MLXCEL_XLA_DEVICE= "$MLXCEL" chat -m "$M" --vision-backend xla -n 2 \
    <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
  [ $? -eq 1 ] && grep -q "vision backend xla: the xla backend needs a PJRT plugin" "$TMP/err" ||
    fail "chat --vision-backend xla: $(cat "$TMP/err")"
  run "$MLXCEL" generate --help
  expect_out "--vision-backend NAME"
}

run_tests "$NAME" "generate errors emit vision_backend"
