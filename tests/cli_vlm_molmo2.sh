#!/usr/bin/env bash
# `mlxcel generate --image` and `mlxcel emit` on the tiny Molmo2 checkpoints written by
# transformers (tests/data/families/molmo2 and molmo2-olmo; tools/vlm/make_molmo2_fixture.py):
# the prompt's <|image|> expanded as Molmo2Processor does (BOS, the global view's and the crops'
# rows of <im_patch> with their column / start / end tokens, from the processor's image_grids)
# gives transformers' prompt token count and 16 greedy ids on both backends and both
# checkpoints, and with the tower on the interpreter beside the cpu text model; a prompt without
# the placeholder gets the image first; two images side by side share one block, two separated
# by text give transformers' ids (every image token sees the other image's); bad images and
# chat's /image are refused by name; emit writes @prefill_media with the block ids'
# mx.attention and, with --vision-pooled, @vision with its pooling argument.
# Usage: tests/cli_vlm_molmo2.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
IMG=$SRC/tests/data/image/inputs/chelsea.png
JPEG=$SRC/tests/data/image/inputs/camera_gray.jpg
M=$SRC/tests/data/families/molmo2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/cli_lib.sh"
[ -f "$M/vision_reference.json" ] || { echo "missing molmo2 (tools/vlm/make_molmo2_fixture.py)"; exit 77; }

ref_ids() { grep -o "\"$2\": \[[0-9, -]*\]" "$1/vision_reference.json" | sed 's/.*\[//; s/\]//; s/ //g'; }
got_ids() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }
PROMPT='Look: <|image|> What is in the picture?'

t_generate() {
  local want n_prompt d
  for d in "$M" "$M-olmo"; do
    want=$(ref_ids "$d" greedy_ids)
    n_prompt=$(ref_ids "$d" prompt_ids | tr ',' '\n' | wc -l)
    for be in interp cpu; do
      run "$MLXCEL" generate -m "$d" --backend "$be" --image "$IMG" -p "$PROMPT" -n 16 --json
      expect_rc 0
      [ "$(got_ids)" = "$want" ] || fail "$d $be: greedy ids $(got_ids), transformers $want"
      expect_out "\"prompt_tokens\": $n_prompt,"
    done
  done
  # The tower on the interpreter (a tower-only state) beside the cpu text model.
  want=$(ref_ids "$M" greedy_ids)
  run "$MLXCEL" generate -m "$M" --vision-backend interp --image "$IMG" -p "$PROMPT" -n 16 --json
  expect_rc 0
  [ "$(got_ids)" = "$want" ] || fail "--vision-backend interp: greedy ids $(got_ids), want $want"
  # Without a placeholder the image goes first, after the BOS: 36 image tokens, BOS, "What?".
  run "$MLXCEL" generate -m "$M" --image "$IMG" -p "What?" -n 2 --json
  expect_rc 0
  expect_out '"prompt_tokens": 42,'
  # Two images side by side: one run of image tokens, one block (transformers lets every image
  # token see every other image's), on both backends the same ids (72 image tokens: more than
  # the interpreter's default chunk of 64).
  local ids_interp
  for be in interp cpu; do
    run "$MLXCEL" generate -m "$M" --backend "$be" --prefill-chunk 128 --image "$IMG" \
      --image "$JPEG" -p 'A: <|image|><|image|> Same?' -n 8 --json
    expect_rc 0
    [ "$be" = interp ] && ids_interp=$(got_ids)
  done
  [ "$(got_ids)" = "$ids_interp" ] || fail "two images: cpu ids $(got_ids), interp $ids_interp"
  # Separated by text: every image token sees the other image's, not the text between (ADR
  # 0023): transformers' prompt token count and greedy ids on both backends (the photograph
  # twice), and with a chunk of 16 (the span from the first image token to the last, text
  # between included, runs as one call).
  want=$(ref_ids "$M" two_image_greedy_ids)
  n_prompt=$(ref_ids "$M" two_image_prompt_ids | tr ',' '\n' | wc -l)
  for args in "--backend interp" "--backend cpu" "--backend cpu --prefill-chunk 16"; do
    # shellcheck disable=SC2086
    run "$MLXCEL" generate -m "$M" $args --image "$IMG" --image "$IMG" \
      -p 'Image 1: <|image|> and image 2: <|image|> compare' -n 16 --json
    expect_rc 0
    [ "$(got_ids)" = "$want" ] || fail "two images, text between, $args: $(got_ids), want $want"
    expect_out "\"prompt_tokens\": $n_prompt,"
  done
}

t_errors() {
  run "$MLXCEL" generate -m "$M" --image "$IMG" --image "$IMG" -p "$PROMPT" -n 2
  expect_rc 1
  expect_err 'the prompt has 1 image placeholder \(id 264\) for 2 images'
  run "$MLXCEL" generate -m "$M" --image "$SRC/tests/data/families/molmo2/config.json" \
    -p "$PROMPT" -n 2
  expect_rc 1
  # The image's block (36 tokens) runs whole, in one call of its length, whatever the prefill
  # chunk: 16 and 40 give transformers' ids (the text in pieces of the chunk).
  for c in 16 40; do
    run "$MLXCEL" generate -m "$M" --backend interp --prefill-chunk $c --image "$IMG" -p "$PROMPT" \
      -n 16 --json
    expect_rc 0
    [ "$(got_ids)" = "$(ref_ids "$M" greedy_ids)" ] || fail "--prefill-chunk $c: ids $(got_ids)"
  done
  # chat's /image: refused by name (the fixture with a chat template, its other files linked).
  mkdir "$TMP/chat"
  for f in "$M"/*; do ln -s "$(realpath "$f")" "$TMP/chat/$(basename "$f")"; done
  rm "$TMP/chat/tokenizer_config.json"
  sed 's|"backend": "tokenizers",|"backend": "tokenizers", "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",|' \
    "$M/tokenizer_config.json" >"$TMP/chat/tokenizer_config.json"
  printf '/image %s\nWhat?\n' "$IMG" | "$MLXCEL" chat -m "$TMP/chat" -n 2 >"$TMP/out" 2>"$TMP/err"
  expect_err "/image: model_type 'molmo2' takes its images with the prompt"
}

t_emit() {
  run "$MLXCEL" emit -m "$M" -o "$TMP/e" --ctx 96 --vision-pooled 5x25x4
  expect_rc 0
  for f in prefill decode prefill_media vision; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'blocks = 1' "$TMP/e/prefill_media.mlir" || fail "@prefill_media has no block ids"
  grep -q 'blocks = 1' "$TMP/e/prefill.mlir" && fail "@prefill has block ids"
  grep -q 'mx.role = "pooling"' "$TMP/e/vision.mlir" || fail "@vision has no pooling argument"
  grep -q '5x25x192xf32' "$TMP/e/vision.mlir" || fail "@vision does not take 5 crops"
  run "$MLXCEL" emit -m "$M" -o "$TMP/e2" --ctx 96
  expect_rc 0
  [ -s "$TMP/e2/prefill_media.mlir" ] || fail "no prefill_media.mlir"
  [ -e "$TMP/e2/vision.mlir" ] && fail "vision.mlir without --vision-pooled"
  run "$MLXCEL" emit -m "$SRC/tests/data/families/gemma3_vlm" -o "$TMP/e3" --vision-pooled 1x1x1
  expect_rc 2
  expect_err "--vision-pooled: model_type 'gemma3' has no Molmo2 tower"
}

run_tests "$NAME" "generate errors emit"
