#!/usr/bin/env bash
# End-to-end tests of `mlxcel mkmodel` (random-weight checkpoints) and `mlxcel bench` on the tiny
# preset: the generated model loads, generates and round-trips text; bench prints its fields.
# Usage: tests/cli_bench.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY

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

tiny() { # DIR [extra mkmodel args]: writes the tiny preset
  local dir=$1
  shift
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$dir" -q "$@"
  expect_rc 0
}

t_help() {
  run "$MLXCEL" mkmodel --help
  expect_rc 0; expect_out 'Usage: mlxcel mkmodel'; expect_out 'llama-3.2-1b'
  expect_out 'smollm2-360m'; expect_out 'smollm2-135m'; expect_out 'tiny'
  run "$MLXCEL" bench --help
  expect_rc 0; expect_out 'Usage: mlxcel bench'; expect_out '--machine'
  run "$MLXCEL" --help
  expect_rc 0; expect_out 'mkmodel'; expect_out 'bench'
}

t_mkmodel_tiny() {
  tiny "$TMP/m"
  for f in config.json generation_config.json model.safetensors tokenizer.json; do
    [ -s "$TMP/m/$f" ] || fail "missing $f"
  done
  grep -q '"model_type": "llama"' "$TMP/m/config.json" || fail "config.json: model_type"
  grep -q '"tie_word_embeddings": true' "$TMP/m/config.json" || fail "config.json: tied"
  # Loads (config, checkpoint validation, tokenizer) and generates.
  run "$MLXCEL" generate -m "$TMP/m" -p "Hello world" -n 4 --ignore-eos --json --backend interp
  expect_rc 0; expect_out '"generated_tokens": 4'; expect_out '"backend": "interp"'
  run "$MLXCEL" generate -m "$TMP/m" -p "Hello world" -n 4 --ignore-eos --json
  expect_rc 0; expect_out '"generated_tokens": 4'
  # Tokenizer round trip, BOS from the template, special tokens matched.
  text='Hello world, the cat sat. ünï ✓ 123'
  run "$MLXCEL" tokenize -m "$TMP/m" "$text <|end_of_text|>"
  expect_rc 0; expect_out '^318 .* 319$'
  ids=$(tr ' ' ',' <"$TMP/out")
  run "$MLXCEL" detokenize -m "$TMP/m" --ids "$ids" --skip-special
  expect_rc 0
  [ "$(cat "$TMP/out")" = "$text " ] || fail "round trip: got '$(cat "$TMP/out")'"
}

t_mkmodel_dtypes() {
  for d in f16 bf16; do
    tiny "$TMP/$d" --dtype "$d"
    grep -q "\"torch_dtype\": \"$([ $d = f16 ] && echo float16 || echo bfloat16)\"" \
      "$TMP/$d/config.json" || fail "$d: torch_dtype"
    run "$MLXCEL" generate -m "$TMP/$d" -p "Hi" -n 2 --ignore-eos --json
    expect_rc 0; expect_out '"generated_tokens": 2'
  done
  # f32 file is twice the f16 one (header aside).
  tiny "$TMP/f32"
  a=$(stat -c %s "$TMP/f32/model.safetensors")
  b=$(stat -c %s "$TMP/f16/model.safetensors")
  [ $((a / b)) -eq 1 ] && [ "$a" -gt $((b * 19 / 10)) ] || fail "sizes f32 $a, f16 $b"
}

t_mkmodel_seed() {
  tiny "$TMP/a" --seed 7
  tiny "$TMP/b" --seed 7
  tiny "$TMP/c" --seed 8
  cmp -s "$TMP/a/model.safetensors" "$TMP/b/model.safetensors" || fail "same seed, other bytes"
  cmp -s "$TMP/a/model.safetensors" "$TMP/c/model.safetensors" && fail "seeds 7 and 8 agree"
  cmp -s "$TMP/a/tokenizer.json" "$TMP/c/tokenizer.json" || fail "tokenizer depends on the seed"
}

t_mkmodel_errors() {
  run "$MLXCEL" mkmodel --preset tiny -o "$TMP/x"
  expect_rc 2; expect_err 'missing --arch'
  run "$MLXCEL" mkmodel --arch gpt2 --preset tiny -o "$TMP/x"
  expect_rc 2; expect_err "not supported"
  run "$MLXCEL" mkmodel --arch llama --preset huge -o "$TMP/x"
  expect_rc 2; expect_err "unknown --preset 'huge'"
  run "$MLXCEL" mkmodel --arch llama --preset tiny
  expect_rc 2; expect_err 'missing -o DIR'
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/x" --dtype f8
  expect_rc 2; expect_err "--dtype 'f8'"
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/x" --seed -1
  expect_rc 2
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/x" --bogus
  expect_rc 2; expect_err "unknown option '--bogus'"
  # A non-empty directory is refused without --force, and left alone.
  mkdir -p "$TMP/full"
  echo keep >"$TMP/full/notes.txt"
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/full"
  expect_rc 1; expect_err 'not empty.*--force'
  [ ! -e "$TMP/full/config.json" ] || fail "wrote into a non-empty directory"
  tiny "$TMP/full" --force
  [ -s "$TMP/full/model.safetensors" ] && [ -e "$TMP/full/notes.txt" ] || fail "--force"
  # Not a directory.
  echo x >"$TMP/file"
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/file"
  expect_rc 3; expect_err 'not a directory'
  # Nested directories are created.
  tiny "$TMP/deep/er/m"
  [ -s "$TMP/deep/er/m/config.json" ] || fail "nested directory"
}

t_bench_machine() {
  run "$MLXCEL" bench --machine --bw-mib 16 --reps 1 --threads 1 --json -o "$TMP/machine.json"
  expect_rc 0
  for k in bandwidth_gbs peak_gflops threads loop_isa; do expect_out "\"$k\": "; done
  [ -s "$TMP/machine.json" ] || fail "-o FILE not written"
  run "$MLXCEL" bench --machine --bw-mib 16 --reps 1
  expect_rc 0; expect_out 'GB/s'; expect_out 'GFLOP/s'
}

t_bench_json() {
  tiny "$TMP/bj"
  run "$MLXCEL" bench -m "$TMP/bj" --prompt 8 --gen 2 --reps 1 --bw-mib 16 --threads 1 --json \
    --backend interp
  expect_rc 0
  for k in prefill_tok_s decode_tok_s weight_bytes flops_per_token threads precision quant \
    backend bandwidth_gbs peak_gflops pct_of_limit prefill_pct_of_limit decode_pct_of_limit \
    peak_rss_mib; do
    expect_out "\"$k\": "
  done
  expect_out '"precision": "f32"'; expect_out '"quant": "none"'; expect_out '"backend": "interp"'
  expect_out '"threads": 1,'
  # Exactly the tiny model's matmul weights + embedding row + norms at f32:
  # 2 x (64x64 + 2x32x64 + 64x64 + 3x64x128) + 320x64 = 94208 params; + 64 + 5 x 64 floats.
  expect_out '"weight_bytes": 378368,'
  [ "$(grep -c '^{' "$TMP/out")" -eq 1 ] || fail "not one JSON object"
  # The built-in runtime: same fields, its name.
  run "$MLXCEL" bench -m "$TMP/bj" --backend cpu --prompt 8 --gen 2 --reps 1 --bw-mib 16 --json
  expect_rc 0; expect_out '"backend": "cpu"'; expect_out '"decode_tok_s": [0-9.]+'
  expect_out '"weight_bytes": 378368,'
  [ "$(grep -c '^{' "$TMP/out")" -eq 1 ] || fail "not one JSON object"
  # The machine numbers can come from a file.
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100, "threads": 1}' >"$TMP/mf.json"
  run "$MLXCEL" bench -m "$TMP/bj" --prompt 4 --gen 2 --reps 1 --machine-file "$TMP/mf.json" --json
  expect_rc 0; expect_out '"bandwidth_gbs": 10.000'; expect_out '"machine_source": "file"'
  # Text mode.
  run "$MLXCEL" bench -m "$TMP/bj" --prompt 4 --gen 2 --reps 1 --machine-file "$TMP/mf.json"
  expect_rc 0; expect_out 'prefill .* tok/s .*% of limit'; expect_out 'decode .* tok/s'
}

t_bench_parallel() {
  tiny "$TMP/bp"
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100, "threads": 1}' >"$TMP/mf.json"
  run "$MLXCEL" bench -m "$TMP/bp" --prompt 5 --gen 3 --reps 1 --parallel 3 --threads 1 \
    --machine-file "$TMP/mf.json" --json
  expect_rc 0; expect_out '"parallel": 3, "engine": "batch"'; expect_out '"decode_tok_s": '
  expect_out '"backend": "cpu"'
  run "$MLXCEL" bench -m "$TMP/bp" --prompt 5 --gen 3 --reps 1 --parallel 2 --backend interp \
    --machine-file "$TMP/mf.json"
  expect_rc 0; expect_out 'parallel 2 sequences'; expect_out 'backend interp'
  run "$MLXCEL" bench -m "$TMP/bp" --prompt 5 --gen 3 --reps 1 --machine-file "$TMP/mf.json" --json
  expect_rc 0; expect_out '"parallel": 1, "engine": "session"'
  run "$MLXCEL" bench -m "$TMP/bp" --parallel 0
  expect_rc 2; expect_err 'parallel'
  run "$MLXCEL" bench -m "$TMP/bp" --parallel 65
  expect_rc 2; expect_err 'parallel'
}

t_bench_errors() {
  run "$MLXCEL" bench
  expect_rc 2; expect_err 'missing -m DIR'
  run "$MLXCEL" bench --machine -m "$TMP"
  expect_rc 2
  run "$MLXCEL" bench -m "$TMP/nope"
  expect_rc 3
  run "$MLXCEL" bench -m "$TMP" --prompt 0
  expect_rc 2
  tiny "$TMP/be"
  echo '{"bandwidth_gbs": 0}' >"$TMP/bad.json"
  run "$MLXCEL" bench -m "$TMP/be" --machine-file "$TMP/bad.json"
  expect_rc 1; expect_err 'bandwidth_gbs'
  run "$MLXCEL" bench -m "$TMP/be" --machine-file "$TMP/none.json"
  expect_rc 3
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100}' >"$TMP/mf.json"
  run "$MLXCEL" bench -m "$TMP/be" --prompt 200 --gen 100 --machine-file "$TMP/mf.json"
  expect_rc 1
  run "$MLXCEL" bench -m "$TMP/be" --backend nosuch --bw-mib 16 --reps 1
  expect_rc 1; expect_err 'nosuch'
}

# bench --image on the tiny VLM fixtures: the tower time, the time to first token and decode
# against the limit, in text and JSON, the image's token count (a Qwen patch grid's merged
# units, LLaVA's fixed count), and the refusals.
t_bench_image() {
  local img=$SRC/tests/data/image/inputs/chelsea.png fam=$SRC/tests/data/families
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100, "threads": 1}' >"$TMP/mf.json"
  run "$MLXCEL" bench -m "$fam/qwen2_vl" --image "$img" --gen 3 --reps 2 --threads 1 \
    --machine-file "$TMP/mf.json"
  expect_rc 0
  expect_out '^image 451x300 \(12 tokens, Qwen patch grid\): vision tower [0-9.]+ ms/image, time to first token [0-9.]+ ms$'
  expect_out '^prefill +33 tokens: +[0-9.]+ tok/s'; expect_out '^decode +3 tokens: .*% of limit'
  run "$MLXCEL" bench -m "$fam/qwen2_vl" --image "$img" --gen 3 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json" --json
  expect_rc 0
  for k in tower_ms ttft_ms decode_tok_s decode_pct_of_limit decode_limit_tok_s; do
    expect_out "\"$k\": [0-9.]+"
  done
  expect_out '"image_width": 451, "image_height": 300, "image_grid": \[6, 8\], "image_tokens": 12,'
  expect_out '"prompt_tokens": 33,'
  [ "$(grep -c '^{' "$TMP/out")" -eq 1 ] || fail "not one JSON object"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out" || fail "bad JSON"
  run "$MLXCEL" bench -m "$fam/llava" --image "$img" --gen 2 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json" --backend interp
  expect_rc 0; expect_out '^image 451x300 \(16 tokens\): vision tower'
  expect_out 'backend interp'
  # Molmo2: the prompt is the processor's expansion of its 5 views (the fixture's 40 px crops and
  # the global view): 36 pooled features in 37 image tokens and 56 prompt tokens, as generate.
  run "$MLXCEL" bench -m "$fam/molmo2" --image "$img" --gen 2 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json"
  expect_rc 0
  expect_out '^image 451x300 \(37 tokens, 5 crops with the global view\): vision tower [0-9.]+ ms'
  expect_out '^prefill +56 tokens:'
  run "$MLXCEL" bench -m "$fam/molmo2" --image "$img" --gen 2 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json" --json
  expect_rc 0; expect_out '"prompt_tokens": 56,'; expect_out '"image_tokens": 37, .*"image_crops": 5}'
  run "$MLXCEL" generate -m "$fam/molmo2" --image "$img" -p "Describe the image." -n 1 --json
  expect_rc 0; expect_out '"prompt_tokens": 56,'
  # Refusals: a text model, a missing image, --parallel, --machine.
  tiny "$TMP/bi"
  run "$MLXCEL" bench -m "$TMP/bi" --image "$img" --machine-file "$TMP/mf.json"
  expect_rc 1; expect_err "model_type 'llama' takes no images"
  run "$MLXCEL" bench -m "$fam/qwen2_vl" --image "$TMP/none.png" --machine-file "$TMP/mf.json"
  expect_rc 3; expect_err "none.png"
  run "$MLXCEL" bench -m "$fam/qwen2_vl" --image "$img" --parallel 2
  expect_rc 2; expect_err '--image goes with -m DIR, one session'
  run "$MLXCEL" bench --machine --image "$img"
  expect_rc 2; expect_err '--image'
}

# bench --audio on Gemma 3n's audio fixture (a tokenizer written beside its files, as cli_xla's
# media test does): the recording's length and frames, the host's mel features, the tower and
# the time to first token in text and JSON, the prompt generate --audio builds, and the refusals.
t_bench_audio() {
  local a=$SRC/tests/data/families/gemma3n-audio wav=$SRC/tests/data/audio/pluck-pcm16.wav
  local d=$TMP/g3n
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100, "threads": 1}' >"$TMP/mf.json"
  mkdir -p "$d" && ln -s "$a/config.json" "$a/model.safetensors" "$d/" &&
    python3 "$SRC/tests/cli_audio_tokenizer.py" "$d" || fail "cannot write the tokenizer"
  run "$MLXCEL" bench -m "$d" --audio "$wav" --gen 3 --reps 2 --threads 1 \
    --machine-file "$TMP/mf.json"
  expect_rc 0
  expect_out '^audio 0\.30 s \(28 log-mel frames, 6 tokens\): mel features [0-9.]+ ms, audio tower [0-9.]+ ms/clip, time to first token [0-9.]+ ms$'
  expect_out '^prefill +31 tokens: +[0-9.]+ tok/s'; expect_out '^decode +3 tokens: .*% of limit'
  run "$MLXCEL" bench -m "$d" --audio "$wav" --gen 3 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json" --json
  expect_rc 0
  for k in mel_ms tower_ms ttft_ms decode_tok_s decode_pct_of_limit; do
    expect_out "\"$k\": [0-9.]+"
  done
  expect_out '"audio_seconds": 0.300, "audio_frames": 28, "audio_tokens": 6,'
  expect_out '"prompt_tokens": 31,'
  [ "$(grep -c '^{' "$TMP/out")" -eq 1 ] || fail "not one JSON object"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/out" || fail "bad JSON"
  run "$MLXCEL" generate -m "$d" --audio "$wav" -p "Describe the audio." -n 1 --json
  expect_rc 0; expect_out '"prompt_tokens": 31,'
  # Refusals: a model without an audio tower, one without a tokenizer, a missing file, a file
  # that is not a WAV, --image with it, --parallel, --machine.
  run "$MLXCEL" bench -m "$SRC/tests/data/families/qwen2_vl" --audio "$wav" \
    --machine-file "$TMP/mf.json"
  expect_rc 2; expect_err "model_type 'qwen2_vl' has no audio tower"
  run "$MLXCEL" bench -m "$a" --audio "$wav" --machine-file "$TMP/mf.json"
  expect_rc 1; expect_err '--audio needs the model.s tokenizer'
  run "$MLXCEL" bench -m "$d" --audio "$TMP/none.wav" --machine-file "$TMP/mf.json"
  expect_rc 3; expect_err "none.wav"
  run "$MLXCEL" bench -m "$d" --audio "$SRC/tests/data/image/inputs/chelsea.png" \
    --machine-file "$TMP/mf.json"
  expect_rc 1; expect_err 'not a RIFF/WAVE file'
  run "$MLXCEL" bench -m "$d" --audio "$wav" --image "$SRC/tests/data/image/inputs/chelsea.png"
  expect_rc 2; expect_err 'give --image or --audio, not both'
  run "$MLXCEL" bench -m "$d" --audio "$wav" --parallel 2
  expect_rc 2; expect_err '--audio goes with -m DIR, one session'
  run "$MLXCEL" bench --machine --audio "$wav"
  expect_rc 2; expect_err '--audio'
}

TESTS="help mkmodel_tiny mkmodel_dtypes mkmodel_seed mkmodel_errors bench_machine bench_json
bench_parallel bench_errors bench_image bench_audio"
if [ "$NAME" = all ]; then
  for t in $TESTS; do "t_$t"; done
elif declare -F "t_$NAME" >/dev/null; then
  "t_$NAME"
else
  echo "unknown test '$NAME' (known: $TESTS)"
  exit 2
fi
if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "ok"
