#!/usr/bin/env bash
# `mlxcel emit --audio-frames N` on the tiny Gemma 3n checkpoint with its audio tower written by
# transformers (tests/data/families/gemma3n-audio, tools/audio/make_gemma3n_audio_fixture.py):
# audio.mlir holds @audio with its feature and mask arguments and the padded rows as its result
# (unit_audio_gemma3n runs it); a frame count beyond the tower's soft tokens, a model without an
# audio tower and a bad count fail with a message naming the problem. generate --audio (the
# fixture with a byte-level tokenizer from cli_audio_tokenizer.py): the reference prompt's 16 greedy
# ids of transformers on interp and cpu, -p TEXT's placeholder expanded as Gemma3nProcessor does,
# and the refusals.
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
  for f in prefill decode prefill_media audio; do
    [ -s "$TMP/e/$f.mlir" ] || fail "no $f.mlir"
  done
  grep -q 'func.func @audio(' "$TMP/e/audio.mlir" || fail "audio.mlir has no @audio"
  grep -q 'tensor<1x28x128xf32> {mx.name = "audio", mx.role = "audio"}' "$TMP/e/audio.mlir" ||
    fail "@audio has no features argument [1, 28, 128]"
  grep -q 'tensor<1x28xi32> {mx.name = "audio_mask", mx.role = "audio_mask"}' "$TMP/e/audio.mlir" ||
    fail "@audio has no mask argument [1, 28]"
  grep -q -- '-> tensor<1x6x64xf32>' "$TMP/e/audio.mlir" || fail "@audio does not return [1, 6, 64]"
  grep -q 'chlo\.' "$TMP/e/audio.mlir" && fail "audio.mlir uses chlo"
  grep -q 'tensor<1x64x64xf32> {mx.name = "media", mx.role = "media"}' \
    "$TMP/e/prefill_media.mlir" ||
    fail "@prefill_media has no media rows [1, 64, 64]"
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

# Greedy ids of a --json generation in $TMP/out, comma-separated.
ids_of() {
  python3 -c 'import json, sys
print(",".join(str(json.loads(l)["id"]) for l in open(sys.argv[1]) if "\"id\"" in l))' "$TMP/out"
}

t_generate() {
  local D=$TMP/m WAV=$SRC/tests/data/audio/pluck-pcm16.wav
  mkdir -p "$D" && ln -s "$M/config.json" "$M/model.safetensors" "$D/" &&
    python3 "$SRC/tests/cli_audio_tokenizer.py" "$D" || fail "cannot write the tokenizer"
  local want
  want=$(python3 -c 'import json, sys
print(",".join(map(str, json.load(open(sys.argv[1]))["greedy_ids"])))' "$M/audio_reference.json")
  local prompt=1,10,20,30,250,273,273,273,273,273,273,272,40,50,256,60
  for b in interp cpu; do
    run "$MLXCEL" generate -m "$D" --audio "$WAV" --prompt-ids "$prompt" -n 16 --ignore-eos \
      --temp 0 --backend "$b" --json
    expect_rc 0
    [ "$(ids_of)" = "$want" ] || fail "$b: greedy ids $(ids_of), transformers' $want"
    expect_out '"prompt_tokens": 16, "generated_tokens": 16'
    expect_out '"audio": 1, "audio_seconds"'
  done
  # -p TEXT: <audio_soft_token> becomes "\n\n<start_of_audio>", 6 audio tokens and
  # "<end_of_audio>\n\n":
  # a + 2 + 8 + 2 + b = 14 tokens (the test tokenizer adds no BOS); without a placeholder the
  # audio goes first (the same count).
  for p in 'a<audio_soft_token>b' 'ab'; do
    run "$MLXCEL" generate -m "$D" --audio "$WAV" -p "$p" -n 2 --temp 0 --json
    expect_rc 0
    expect_out '"prompt_tokens": 14,'
  done
  # Errors: placeholders that do not match the files, audio tokens not in runs of 6, a file that
  # is not a WAV, a model without an audio tower, --chat.
  run "$MLXCEL" generate -m "$D" --audio "$WAV" -p '<audio_soft_token><audio_soft_token>' -n 1
  expect_rc 2
  expect_err "the prompt has 2 audio placeholders \(<audio_soft_token>\) for 1 recordings"
  run "$MLXCEL" generate -m "$D" --audio "$WAV" --prompt-ids 1,250,273,273,272 -n 1
  expect_rc 2
  expect_err "must form one run of 6 \(audio_soft_tokens_per_image\) per recording"
  run "$MLXCEL" generate -m "$D" --audio "$D/config.json" --prompt-ids "$prompt" -n 1
  expect_rc 1
  expect_err "--audio .*config.json"
  run "$MLXCEL" generate -m "$SRC/tests/data/families/gemma3_vlm" --audio "$WAV" -p hi -n 1
  expect_rc 2
  expect_err "--audio: model_type 'gemma3' has no audio tower"
  run "$MLXCEL" generate -m "$D" --audio "$WAV" --chat -p hi -n 1
  expect_rc 2
  expect_err "--audio takes -p TEXT or --prompt-ids"
  run "$MLXCEL" generate --help
  expect_out "--audio PATH"
  # A checkpoint whose vocabulary reaches the vision ids without embed_vision's tables: refused
  # naming the missing tensor (never embedded from the text table).
  local E=$TMP/novision
  mkdir -p "$E" && cp "$D/tokenizer.json" "$D/tokenizer_config.json" "$M/config.json" "$E/"
  python3 - "$M/model.safetensors" "$E/model.safetensors" <<'PY' || fail "cannot write it"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head, data = json.loads(b[8:8 + n]), b[8 + n:]
out, blobs, off = {}, [], 0
for k, v in head.items():
    if k == "__metadata__" or k.startswith("model.embed_vision."):
        continue
    s, e = v["data_offsets"]
    blobs.append(data[s:e])
    out[k] = dict(v, data_offsets=[off, off + e - s])
    off += e - s
h = json.dumps(out).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
  run "$MLXCEL" generate -m "$E" --prompt-ids 1,10,256 -n 1
  expect_rc 1
  expect_err 'model.embed_vision.embedding.weight'
}

# chat's /audio PATH: the reply equals generate --audio's on the prompt the template renders.
t_chat() {
  local D=$TMP/m WAV=$SRC/tests/data/audio/pluck-pcm16.wav
  mkdir -p "$D" && ln -s "$M/config.json" "$M/model.safetensors" "$D/" &&
    python3 "$SRC/tests/cli_audio_tokenizer.py" "$D" || fail "cannot write the tokenizer"
  python3 - "$D/tokenizer_config.json" <<'PY' || fail "cannot add the chat template"
import json, sys
c = json.load(open(sys.argv[1]))
c["chat_template"] = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                      "{% if add_generation_prompt %}model:{% endif %}")
json.dump(c, open(sys.argv[1], "w"))
PY
  run "$MLXCEL" generate -m "$D" --audio "$WAV" \
    -p $'user: <audio_soft_token>What is this?\nmodel:' -n 8 --temp 0 --ignore-eos --no-echo
  expect_rc 0
  local want
  want=$(cat "$TMP/out")
  printf '/audio %s\nWhat is this?\n' "$WAV" >"$TMP/in"
  # (run reads no stdin: chat reads the lines from $TMP/in)
  "$MLXCEL" chat -m "$D" -n 8 --temp 0 --ignore-eos <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  expect_rc 0
  expect_out '\[audio 1 attached to the next message: 6 tokens, audio tower'
  local got
  got=$(tail -n 1 "$TMP/out")
  [ "$got" = "$want" ] || fail "chat replied '$got', generate '$want'"
  # A model without an audio tower: the command fails, the conversation goes on.
  printf '/audio %s\n' "$WAV" >"$TMP/in"
  "$MLXCEL" chat -m "$SRC/tests/data/families/gemma3_vlm" -n 1 <"$TMP/in" >"$TMP/out" 2>"$TMP/err"
  expect_err "/audio: model_type 'gemma3' has no audio tower"
}

run_tests "$NAME" "emit generate chat"
