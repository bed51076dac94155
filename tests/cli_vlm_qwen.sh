#!/usr/bin/env bash
# `mlxcel generate --image` and `mlxcel emit` on the tiny Qwen2-VL / Qwen2.5-VL / Qwen3-VL
# checkpoints written by transformers (tests/data/families/qwen2_vl, qwen2_5_vl, qwen3_vl;
# tools/vlm/make_qwen2_vl_fixtures.py, make_qwen3_vl_fixture.py): the greedy ids of the
# reference prompt equal
# transformers' on both backends, the prompt token count includes the image's grid-sized run,
# a prompt without <|vision_start|> / <|vision_end|> gets them, --vision-backend interp gives the
# same ids, chat's /image keeps the conversation's M-RoPE positions across turns, the errors
# name the problem, and
# emit writes @vision for a grid and @prefill_media with its M-RoPE positions argument (Qwen3-VL:
# @vision's rows carry the DeepStack features, @prefill_media takes them; ADR 0021).
# Usage: tests/cli_vlm_qwen.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
IMG=$SRC/tests/data/image/inputs/chelsea.png
JPEG=$SRC/tests/data/image/inputs/camera_gray.jpg
PYTHON=${MX_PYTHON:-python3}  # JSON for a conversation (chat)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
for t in qwen2_vl qwen2_5_vl qwen3_vl; do
  [ -f "$SRC/tests/data/families/$t/vision_reference.json" ] ||
    { echo "missing $t (tools/vlm/make_qwen2_vl_fixtures.py, make_qwen3_vl_fixture.py)"; exit 77; }
done

# A JSON list of a reference file as "1,2,3".
ref_ids() { grep -o "\"$2\": \[[0-9, -]*\]" "$1/vision_reference.json" | sed 's/.*\[//; s/\]//; s/ //g'; }
# The ids of generate --json's token lines, as "1,2,3".
got_ids() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }
PROMPT='Look: <|vision_start|><|image_pad|><|vision_end|>What is in the picture?'

t_generate() {
  local m want n_prompt
  for t in qwen2_vl qwen2_5_vl qwen3_vl; do
    m=$SRC/tests/data/families/$t
    want=$(ref_ids "$m" greedy_ids)
    n_prompt=$(ref_ids "$m" prompt_ids | tr ',' '\n' | wc -l)
    for be in interp cpu; do
      run "$MLXCEL" generate -m "$m" --backend "$be" --image "$IMG" -p "$PROMPT" -n 16 --json
      expect_rc 0
      [ "$(got_ids)" = "$want" ] || fail "$t $be: greedy ids $(got_ids), transformers $want"
      expect_out "\"prompt_tokens\": $n_prompt,"
    done
    # The bare placeholder gets its vision markers: the same prompt, the same ids.
    run "$MLXCEL" generate -m "$m" --image "$IMG" -p 'Look: <|image_pad|>What is in the picture?' \
      -n 16 --json
    expect_rc 0
    [ "$(got_ids)" = "$want" ] || fail "$t bare placeholder: greedy ids $(got_ids)"
    # Without a placeholder the image goes first: 1 + 12 + 1 + the text's bytes.
    run "$MLXCEL" generate -m "$m" --image "$IMG" -p "hi" -n 2 --json
    expect_rc 0
    expect_out '"prompt_tokens": 16,'
    # Two images of different grids (astronaut.png is square: 8 x 8 patches, 16 tokens, with
    # patches of 14 pixels (Qwen2) and of 16 (Qwen3) alike).
    run "$MLXCEL" generate -m "$m" --image "$IMG" --image "$SRC/tests/data/image/inputs/astronaut.png" \
      -p "<|image_pad|> and <|image_pad|>" -n 2 --json
    expect_rc 0
    expect_out '"prompt_tokens": 37,'
  done
}

t_errors() {
  local m=$SRC/tests/data/families/qwen2_vl
  run "$MLXCEL" generate -m "$m" --image "$IMG" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the prompt has 1 image placeholder \(<\|image_pad\|>\) for 2 --image"
  run "$MLXCEL" generate -m "$m" --image "$SRC/tests/data/image/hostile/truncated.png" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "truncated.png"
  # The processor's patches and the tower's disagree.
  cp -r "$m" "$TMP/m"
  sed -i 's/"temporal_patch_size": 2/"temporal_patch_size": 1/' "$TMP/m/preprocessor_config.json"
  run "$MLXCEL" generate -m "$TMP/m" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the vision tower takes rows of 1176"
  # The context must hold the expanded prompt.
  run "$MLXCEL" generate -m "$m" --image "$IMG" -p "$PROMPT" -n 2 --ctx 32
  expect_rc 1
  expect_err "the prompt is 43 tokens but the context holds 32"
  # The tower on another backend: the interpreter's from a cpu session; xla's needs its plugin.
  run "$MLXCEL" generate -m "$m" --backend cpu --vision-backend interp --image "$IMG" -p "$PROMPT" \
    -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$(ref_ids "$m" greedy_ids)" ] || fail "cpu text, interp tower: $(got_ids)"
  MLXCEL_XLA_PJRT_PLUGIN= MLXCEL_XLA_DEVICE= run "$MLXCEL" generate -m "$m" --vision-backend xla \
    --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "vision backend xla: the xla backend needs a PJRT plugin"
  run "$MLXCEL" emit -m "$m" -o "$TMP/e" --vision-grid 5x8
  expect_rc 1
  expect_err "5 x 8 patch grid"
  run "$MLXCEL" emit -m "$SRC/tests/data/families/llava" -o "$TMP/e" --vision-grid 4x4
  expect_rc 2
  expect_err "has no patch-grid vision tower"
}

t_emit() {
  local m=$SRC/tests/data/families/qwen2_5_vl
  run "$MLXCEL" emit -m "$m" -o "$TMP/e" --ctx 64 --vision-grid 6x8
  expect_rc 0
  for f in prefill decode prefill_media vision; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'tensor<48x1176xf32> {mx.name = "pixels", mx.role = "pixels"}' "$TMP/e/vision.mlir" ||
    grep -q 'mx.role = "pixels"' "$TMP/e/vision.mlir" || fail "@vision has no pixels argument"
  grep -q '48x1176xf32' "$TMP/e/vision.mlir" || fail "@vision is not for 48 patches"
  grep -q 'mx.role = "positions"' "$TMP/e/prefill_media.mlir" || fail "no positions argument"
  grep -q 'chlo\.' "$TMP/e/vision.mlir" && fail "vision.mlir uses chlo"
  # Without a grid: the text and media entries, no @vision.
  run "$MLXCEL" emit -m "$m" -o "$TMP/f" --ctx 64
  expect_rc 0
  [ -e "$TMP/f/vision.mlir" ] && fail "vision.mlir without --vision-grid"
  [ -s "$TMP/f/prefill_media.mlir" ] || fail "no prefill_media.mlir"
  grep -q 'mx.role = "deepstack"' "$TMP/f/prefill_media.mlir" && fail "qwen2_5_vl takes DeepStack rows"
  # Qwen3-VL: rows of 3 x 2 x 16 x 16 pixels, features [1, 12, 3 x 64] (the main ones and two
  # DeepStack sets), and @prefill_media's DeepStack argument [2, 1, T, 64].
  m=$SRC/tests/data/families/qwen3_vl
  run "$MLXCEL" emit -m "$m" -o "$TMP/g" --ctx 64 --vision-grid 6x8
  expect_rc 0
  grep -q 'tensor<48x1536xf32> {mx.name = "pixels", mx.role = "pixels"}' "$TMP/g/vision.mlir" ||
    fail "@vision of qwen3_vl does not take 48 rows of 1536"
  grep -q -- '-> tensor<1x12x192xf32>' "$TMP/g/vision.mlir" || fail "@vision of qwen3_vl: not [1, 12, 192]"
  grep -q 'tensor<2x1x[0-9]*x64xf32> {mx.name = "deepstack", mx.role = "deepstack"}' \
    "$TMP/g/prefill_media.mlir" || fail "no deepstack argument"
  grep -q 'chlo\.' "$TMP/g/vision.mlir" && fail "qwen3_vl vision.mlir uses chlo"
  return 0
}

# chat's /image (ADR 0013): each turn's positions are the whole conversation's from 0, the cache
# kept across turns: the first reply is generate's on the template's text, a second turn with a
# second image (another grid) is prefilled incrementally and answers as generate on the whole
# conversation rendered by the template with both images.
t_chat() {
  local m text
  local tmpl="{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for c in m.content %}{% if c.type == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c.text }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
  for t in qwen2_vl qwen3_vl youtu_vl; do  # youtu_vl: the same at 1-D positions (ADR 0027)
    m=$SRC/tests/data/families/$t
    rm -rf "$TMP/c"
    mkdir "$TMP/c"
    for f in "$m"/*; do ln -s "$f" "$TMP/c/"; done
    rm "$TMP/c/tokenizer_config.json"
    sed "1s/^{/{\"chat_template\": \"$tmpl\",/" "$m/tokenizer_config.json" \
      >"$TMP/c/tokenizer_config.json"
    printf '/image %s\nWhat?\n/image %s\nAnd?\n' "$IMG" "$JPEG" |
      "$MLXCEL" chat -m "$TMP/c" -n 6 --stats >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc 0
    grep -qE '^\[[0-9]+ prompt tokens added, ' "$TMP/err" || fail "$t chat: turn 2 not incremental"
    # The replies (random text, line breaks included): after each attach line.
    awk '/^\[image 2 attached/ {exit} NR > 1' "$TMP/out" >"$TMP/r1"
    awk 'f; /^\[image 2 attached/ {f = 1}' "$TMP/out" >"$TMP/r2"
    "$MLXCEL" generate -m "$m" -p "<|vision_start|><|image_pad|><|vision_end|>What?" \
      --image "$IMG" -n 6 --no-echo -q >"$TMP/ref" 2>"$TMP/err2" || fail "$t: $(cat "$TMP/err2")"
    [ "$(cat "$TMP/r1")" = "$(cat "$TMP/ref")" ] || fail "$t chat: first reply differs"
    printf '%s' "$(cat "$TMP/r1")" | "$PYTHON" -c 'import json, sys
r = sys.stdin.read()
print(json.dumps([
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What?"}]},
    {"role": "assistant", "content": r},
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "And?"}]}]))' \
      >"$TMP/conv.json"
    text=$("$MLXCEL" template -m "$TMP/c" --messages "$TMP/conv.json" --add-generation-prompt
      echo x)
    "$MLXCEL" generate -m "$m" -p "${text%x}" --image "$IMG" --image "$JPEG" -n 6 --no-echo -q \
      >"$TMP/ref" 2>"$TMP/err2" || fail "$t two images: $(cat "$TMP/err2")"
    [ "$(cat "$TMP/r2")" = "$(cat "$TMP/ref")" ] ||
      fail "$t chat: second reply '$(cat "$TMP/r2")', generate '$(cat "$TMP/ref")'"
  done
}

run_tests "$NAME" "generate chat errors emit"
