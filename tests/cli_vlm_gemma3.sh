#!/usr/bin/env bash
# `mlxcel generate --image` and `mlxcel emit` on the tiny Gemma 3 checkpoint written by
# transformers (tests/data/families/gemma3_vlm; tools/vlm/make_gemma3_fixture.py): the prompt
# expanded in its text as Gemma3Processor does (<start_of_image> -> "\n\n<start_of_image>", 16
# image tokens, "<end_of_image>\n\n") gives transformers' prompt token count and greedy ids on
# both backends, a prompt without the placeholder gets it first, generate --chat and chat's
# /image expand the template's placeholder the same way, the errors name the problem
# (a text-only Gemma 3 checkpoint given --image, placeholders that do not match the images;
# unit_vlm_gemma3 holds the prefill chunks), and emit writes @vision and @prefill_media with the
# block ids' mx.attention.
# Usage: tests/cli_vlm_gemma3.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
IMG=$SRC/tests/data/image/inputs/chelsea.png
M=$SRC/tests/data/families/gemma3_vlm
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -f "$M/vision_reference.json" ] || { echo "missing gemma3_vlm (tools/vlm/make_gemma3_fixture.py)"; exit 77; }

ref_ids() { grep -o "\"$1\": \[[0-9, -]*\]" "$M/vision_reference.json" | sed 's/.*\[//; s/\]//; s/ //g'; }
got_ids() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }
PROMPT='<bos>Look: <start_of_image> What is in the picture?'
QUESTION='What is in the picture?'  # the reference's chat_user
JPEG=$SRC/tests/data/image/inputs/camera_gray.jpg

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
  # bf16 KV caches: the image block's bidirectional attention runs fused on the cpu (the
  # profile names no decomposition) and gives the interpreter's ids at the same precision.
  local ids_interp
  for be in interp cpu; do
    [ "$be" = cpu ] && export MLXCEL_CPU_PROFILE=1
    run "$MLXCEL" generate -m "$M" --backend "$be" --image "$IMG" -p "$PROMPT" -n 16 --json \
      --kv-dtype bf16
    unset MLXCEL_CPU_PROFILE
    expect_rc 0
    [ "$be" = interp ] && ids_interp=$(got_ids)
  done
  [ "$(got_ids)" = "$ids_interp" ] || fail "bf16 KV: cpu ids $(got_ids), interp $ids_interp"
  expect_err 'mx\.attention \(bf16/f16 KV\)'
  ! grep 'composite decomposition' "$TMP/err" || fail "bf16 KV: a composite ran decomposed"
  # Without a placeholder the image goes first: 16 + 6 more tokens than the bare text.
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "What?" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 27,'
}

# generate --chat: the template writes <start_of_image> straight before the text and the
# processor's expansion applies to the rendered text: transformers' chat prompt and greedy ids.
# chat's /image: the first reply is generate --chat's; a second turn with a second image
# continues the cached conversation (its image run whole) and answers as generate on the whole
# conversation rendered by the template with both images; a typed "<start_of_image>" is text.
t_chat() {
  local want n_prompt ref text
  want=$(ref_ids chat_greedy_ids)
  n_prompt=$(ref_ids chat_prompt_ids | tr ',' '\n' | wc -l)
  for be in interp cpu; do
    run "$MLXCEL" generate -m "$M" --backend "$be" --image "$IMG" --chat -p "$QUESTION" -n 16 \
      --json
    expect_rc 0
    [ "$(got_ids)" = "$want" ] || fail "$be --chat: greedy ids $(got_ids), transformers $want"
    expect_out "\"prompt_tokens\": $n_prompt,"
  done
  "$MLXCEL" generate -m "$M" --chat -p "$QUESTION" --image "$IMG" -n 6 --no-echo -q \
    >"$TMP/ref" 2>"$TMP/err" || fail "generate --chat --image: $(cat "$TMP/err")"
  printf '/image %s\n%s\n/image %s\nAnd this one?\n' "$IMG" "$QUESTION" "$JPEG" |
    "$MLXCEL" chat -m "$M" -n 6 --stats >"$TMP/out" 2>"$TMP/err"
  rc=$?
  expect_rc 0
  [ "$(sed -n 2p "$TMP/out")" = "$(cat "$TMP/ref")" ] || fail "chat: first reply differs"
  grep -q "^\[$n_prompt prompt tokens, " "$TMP/err" || fail "chat: first turn's prompt tokens"
  grep -qE '^\[[0-9]+ prompt tokens added, ' "$TMP/err" || fail "chat: second turn not incremental"
  cat >"$TMP/conv.json" <<EOF
[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "$QUESTION"}]},
 {"role": "assistant", "content": "$(sed -n 2p "$TMP/out")"},
 {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "And this one?"}]}]
EOF
  text=$("$MLXCEL" template -m "$M" --messages "$TMP/conv.json" --add-generation-prompt; echo x)
  "$MLXCEL" generate -m "$M" -p "${text%x}" --image "$IMG" --image "$JPEG" -n 6 --no-echo -q \
    >"$TMP/ref" 2>"$TMP/err" || fail "generate, two images: $(cat "$TMP/err")"
  [ "$(sed -n 4p "$TMP/out")" = "$(cat "$TMP/ref")" ] ||
    fail "chat: second reply differs from generate on the whole conversation"
  for typed in "<start_of_image>?" "<start_of_imagX>?"; do
    printf '/image %s\n%s\n' "$IMG" "$typed" | "$MLXCEL" chat -m "$M" -n 1 --stats \
      >"$TMP/out" 2>"$TMP/err"
    grep -o '^\[[0-9]* prompt tokens' "$TMP/err" >>"$TMP/typed"
  done
  [ "$(sort -u "$TMP/typed" | wc -l)" -eq 1 ] || fail "a typed <start_of_image>: $(cat "$TMP/typed")"
}

t_errors() {
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "the prompt has 1 image placeholder \(<start_of_image>\) for 2 images"
  # The text part alone (no vision_config): a text model, which takes no images.
  mkdir -p "$TMP/text"
  cp "$M"/*.json "$M/model.safetensors" "$TMP/text/"
  sed -i 's/"vision_config"/"vision_config_dropped"/' "$TMP/text/config.json"
  run "$MLXCEL" generate -m "$TMP/text" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err "takes no images"
}

t_emit() {
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --ctx 64
  expect_rc 0
  for f in prefill decode prefill_media vision; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'blocks = 1' "$TMP/e/prefill_media.mlir" || fail "@prefill_media has no block ids"
  grep -q 'blocks = 1' "$TMP/e/prefill.mlir" && fail "@prefill has block ids"
  grep -q '1x3x64x64xf32' "$TMP/e/vision.mlir" || fail "@vision does not take 64 px images"
}

run_tests "$NAME" "generate chat errors emit"
