#!/usr/bin/env bash
# End-to-end tests of the model commands (generate, tokenize, detokenize, logits, emit,
# run --weights) on the bundled stories260K model.
# Usage: tests/cli_model.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
MODEL=$SRC/models/stories260K
SHARED=${MX_SHARED:-$SRC/../shared}
# The JSON and logits checks need Python (the test environment's, or Debian's python3 that
# scripts/deps.sh installs): missing, they fail, never skip.
PYTHON=${MX_PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The session reads these; the tests pin their own settings.
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY

# Facts from upstream llama2.c run.c (shared/models/stories260K/reference-greedy.json): the
# prompt "Once upon a time" encodes to PROMPT_IDS (BOS first) and greedy decoding continues with
# GREEDY_IDS (the first 128 of its 256 steps), which decode to GREEDY_TEXT.
PROMPT_IDS="1,403,407,261,378"
GREEDY_IDS="432,383,286,261,376,298,315,421,395,317,426,338,401,396,267,337,410,408,419,292,411,\
322,265,282,295,433,426,385,328,432,358,394,261,370,432,352,266,268,388,426,338,391,266,267,337,\
335,312,432,398,312,286,267,414,270,333,415,426,13,438,310,439,419,357,336,432,313,438,310,432,\
278,316,439,419,298,414,267,265,282,295,433,426,436,317,286,296,418,269,279,292,416,439,413,409,\
416,327,263,415,294,267,400,426,338,336,432,313,442,391,267,337,335,364,420,268,388,432,398,359,\
280,303,439,413,272,417,264,312,426,436,13"
GREEDY_TEXT='Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily'"'"'s mom said, "Lily, let'"'"'s go to the park." Lily was sad and didn'"'"'t know what to do. She said, "I want to play with your ball, but I can'"'"'t find it."'

fails=0
skips=0
run() {
  "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
}
fail() {
  echo "FAILED: $*"
  echo "--- exit status: $rc"
  echo "--- stdout:"; head -c 3000 "$TMP/out"; echo
  echo "--- stderr:"; head -c 3000 "$TMP/err"; echo
  fails=$((fails + 1))
}
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }
# The ids of a `generate --json` run's token lines, comma-separated.
json_ids() { grep -oE '^\{"id": [0-9]+' "$TMP/out" | grep -oE '[0-9]+$' | paste -sd, -; }
# $TMP/gc: the bundled model with the generation_config.json given as text.
with_generation_config() {
  rm -rf "$TMP/gc" && mkdir "$TMP/gc"
  for f in config.json model.safetensors tokenizer.json tokenizer_config.json; do
    ln -s "$MODEL/$f" "$TMP/gc/$f"
  done
  printf '%s\n' "$1" >"$TMP/gc/generation_config.json"
}
expect_no_crash() { [ "$rc" -lt 128 ] || fail "crashed (signal $((rc - 128)))"; }

# max_abs_diff A.npy B.npy [OFFSET_FLOATS COUNT]: largest |a - b| over the float32 data of two
# .npy files (headers skipped), optionally over B's floats [OFFSET, OFFSET + COUNT) against A.
npy_floats() { # FILE: one float per line
  local hlen
  hlen=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
  tail -c +$((10 + hlen + 1)) "$1" | od -An -v -tf4 | tr -s ' ' '\n' | sed '/^$/d'
}
max_abs_diff() {
  npy_floats "$1" >"$TMP/a.txt"
  npy_floats "$2" | tail -n +$((${3:-0} + 1)) | head -n "${4:-100000000}" >"$TMP/b.txt"
  [ "$(wc -l <"$TMP/a.txt")" -eq "$(wc -l <"$TMP/b.txt")" ] || { echo "size-mismatch"; return; }
  paste "$TMP/a.txt" "$TMP/b.txt" |
    awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d} END {printf "%.3g\n", m + 0}'
}
# le A B: A <= B as numbers (false when A is not a number, e.g. "size-mismatch").
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a ~ /^[0-9.eE+-]+$/ && a + 0 <= b + 0)}'; }

t_help() {
  run "$MLXCEL" --help
  expect_rc 0
  for c in generate tokenize detokenize logits emit run; do expect_out "^  $c "; done
  for c in generate tokenize detokenize logits emit; do
    run "$MLXCEL" "$c" --help
    expect_rc 0; expect_out "^Usage: mlxcel $c"; expect_out 'Exit status'
  done
  run "$MLXCEL" generate --help
  expect_out 'greedy'; expect_out 'generation_config'
  run "$MLXCEL" run --help
  expect_out -- '--weights DIR'
}

t_tokenize() {
  run "$MLXCEL" tokenize -m "$MODEL" "Once upon a time"
  expect_rc 0; [ "$out" = "1 403 407 261 378" ] || fail "tokenize: got '$out'"
  run "$MLXCEL" tokenize -m "$MODEL" --json "Once upon a time"
  expect_rc 0; [ "$out" = "[1, 403, 407, 261, 378]" ] || fail "tokenize --json: got '$out'"
  run "$MLXCEL" tokenize -m "$MODEL" --no-special "Once upon a time"
  expect_rc 0; [ "$out" = "403 407 261 378" ] || fail "tokenize --no-special: got '$out'"
  # Special tokens spelled in the text are matched unless --no-special.
  run "$MLXCEL" tokenize -m "$MODEL" "a</s>b"
  expect_rc 0; echo " $out " | grep -q ' 2 ' || fail "</s> in the text should be id 2"
  run "$MLXCEL" tokenize -m "$MODEL" --no-special "a</s>b"
  expect_rc 0; echo " $out " | grep -q ' 2 ' && fail "--no-special must not match </s>"
  # Hugging Face's decode(): special tokens are written unless skipped.
  run "$MLXCEL" detokenize -m "$MODEL" --ids "$PROMPT_IDS"
  expect_rc 0; [ "$out" = "<s> Once upon a time" ] || fail "detokenize: got '$out'"
  run "$MLXCEL" detokenize -m "$MODEL" --ids "$PROMPT_IDS" --skip-special
  expect_rc 0; [ "$out" = "Once upon a time" ] || fail "detokenize --skip-special: got '$out'"
  run "$MLXCEL" detokenize -m "$MODEL" --ids "1,403,2" --skip-special
  expect_rc 0; [ "$out" = "Once" ] || fail "detokenize --skip-special: got '$out'"
  # Round trip, byte fallback included (the vocabulary has no emoji or accented letters).
  local text ids
  text=$(printf 'Lily said: "Hi, Ben!"\tOK? caf\xc3\xa9 \xf0\x9f\x99\x82 42')
  run "$MLXCEL" tokenize -m "$MODEL" --no-special "$text"
  expect_rc 0
  ids=$(echo "$out" | tr ' ' ',')
  run "$MLXCEL" detokenize -m "$MODEL" --ids "$ids"
  expect_rc 0; [ "$out" = "$text" ] || fail "round trip: '$text' came back as '$out'"
  # Text from a file / standard input.
  printf 'Once upon a time' >"$TMP/prompt.txt"
  run "$MLXCEL" tokenize -m "$MODEL" -f "$TMP/prompt.txt"
  expect_rc 0; [ "$out" = "1 403 407 261 378" ] || fail "tokenize -f: got '$out'"
  run "$MLXCEL" detokenize -m "$MODEL" --ids 1,99999
  expect_rc 1; expect_no_crash; expect_err '99999'
}

t_generate_greedy() {
  # The README's main-job command: greedy by default (generation_config has no sampling).
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 128
  expect_rc 0
  [ "$out" = "$GREEDY_TEXT" ] || fail "greedy text differs from llama2.c's"
  expect_err 'finish: length'
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 128 --json
  expect_rc 0
  local got
  got=$(grep -oE '^\{"id": [0-9]+' "$TMP/out" | grep -oE '[0-9]+$' | paste -sd, -)
  [ "$got" = "$GREEDY_IDS" ] || fail "greedy ids differ from llama2.c's: $got"
  [ "$(grep -c '^{"id": [0-9]*, "text": ".*"}$' "$TMP/out")" -eq 128 ] || fail "expected 128 token lines"
  expect_out '^\{"type": "summary", "prompt_tokens": 5, "generated_tokens": 128, .*"finish_reason": "length"'
  expect_out '"prefill_tok_s": [0-9.]+, "decode_tok_s": [0-9.]+'
  "$PYTHON" - "$TMP/out" "$GREEDY_TEXT" <<'EOF' || fail "--json lines are not valid JSON or their texts do not add up"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
text = "".join(l["text"] for l in lines if "id" in l)
# (the shell variable lost the text's final newline)
assert ("Once upon a time" + text).rstrip("\n") == sys.argv[2], repr(text)
s = lines[-1]
assert s["type"] == "summary" and s["generated_tokens"] == 128 and s["finish_reason"] == "length"
EOF
  # The prompt as ids gives the same tokens.
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids "$PROMPT_IDS" -n 8 --json
  expect_rc 0
  got=$(grep -oE '^\{"id": [0-9]+' "$TMP/out" | grep -oE '[0-9]+$' | paste -sd, -)
  [ "$got" = "$(echo "$GREEDY_IDS" | cut -d, -f1-8)" ] || fail "--prompt-ids: got $got"
}

t_generate_speculative() {
  # Greedy text with prompt lookup and with a draft model (the model itself: the CLI loads the
  # draft with the model's own options) equals llama2.c's on both built-in backends, and the
  # statistics say how many drafts were accepted.
  local b
  for b in cpu interp; do
    run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 48 --backend "$b" --ctx 96 --json \
      --speculative ngram --draft-tokens 3
    expect_rc 0
    [ "$(json_ids)" = "$(echo "$GREEDY_IDS" | cut -d, -f1-48)" ] || fail "$b ngram: ids differ: $(json_ids)"
    expect_out '"speculative": "ngram", "spec_steps": [0-9]+, "spec_drafted": [0-9]+, "spec_accepted": [1-9]'
  done
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 128 --draft-model "$MODEL"
  expect_rc 0
  [ "$out" = "$GREEDY_TEXT" ] || fail "draft model: greedy text differs from llama2.c's"
  expect_err 'speculative draft: [0-9.]+ tokens/step, [0-9]+ of [0-9]+ drafts accepted'
  # Sampled: the same seed gives the same text run to run.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 32 --temp 0.8 --seed 7 \
    --speculative ngram
  expect_rc 0
  local first=$out
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 32 --temp 0.8 --seed 7 \
    --speculative ngram
  [ "$out" = "$first" ] || fail "sampled speculative decoding is not reproducible with --seed"
  # Errors: a mode that does not exist, flags that make no sense alone, another tokenizer.
  run "$MLXCEL" generate -m "$MODEL" -p "x" --speculative fast
  expect_rc 2; expect_err "unknown mode 'fast' \(ngram or draft\)"
  run "$MLXCEL" generate -m "$MODEL" -p "x" --draft-tokens 3
  expect_rc 2; expect_err '--draft-tokens needs --speculative'
  run "$MLXCEL" generate -m "$MODEL" -p "x" --draft-tokens 33 --speculative ngram
  expect_rc 2; expect_err 'draft-tokens'
  run "$MLXCEL" generate -m "$MODEL" -p "x" --speculative draft
  expect_rc 2; expect_err 'needs --draft-model DIR'
  run "$MLXCEL" generate -m "$MODEL" -p "x" --speculative ngram --draft-model "$MODEL"
  expect_rc 2; expect_err 'goes with --speculative draft'
  run "$MLXCEL" generate -m "$MODEL" -p "x" --draft-model "$SRC/tests/data/families/llava"
  expect_rc 1; expect_err 'draft-model .*llava.*speculative decoding needs the same tokenizer'
  run "$MLXCEL" generate -m "$MODEL" -p "x" --draft-model "$TMP/no-such-dir"
  expect_rc 3; expect_err 'no-such-dir'
  run "$MLXCEL" generate --help
  expect_rc 0; expect_out '--speculative MODE'; expect_out '--draft-tokens K'; expect_out '--draft-model DIR'
}

t_generate_options() {
  # A stop string ends the text before it.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 64 --stop "Lily" -q
  expect_rc 0
  [ "$out" = "Once upon a time, there was a little girl named " ] || fail "--stop: got '$out'"
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 64 --stop "Lily" --json
  expect_out '"finish_reason": "stop"'
  # Sampling with a seed is reproducible.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 24 --temp 1.0 --top-p 0.9 --seed 7 -q
  expect_rc 0
  local first=$out
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 24 --temp 1.0 --top-p 0.9 --seed 7 -q
  expect_rc 0; [ "$out" = "$first" ] || fail "same seed, different text"
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 24 --top-k 40 --min-p 0.05 \
    --repeat-penalty 1.1 --seed 1 --json
  expect_rc 0; expect_out '"seed": 1[,}]'
  # --ignore-eos: on a copy whose generation_config makes the first greedy token (432) an EOS,
  # generation stops there without the flag and runs on through it with the flag.
  with_generation_config '{"bos_token_id": 1, "eos_token_id": [2, 432]}'
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 8 --json
  expect_rc 0; expect_out '"generated_tokens": 0,'; expect_out '"finish_reason": "eos"'
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 8 --ignore-eos --json
  expect_rc 0; expect_out '"generated_tokens": 8,'; expect_out '"finish_reason": "length"'
  [ "$(json_ids)" = "$(echo "$GREEDY_IDS" | cut -d, -f1-8)" ] || fail "--ignore-eos: ids $(json_ids)"
  # generation_config's temperature applies only with do_sample true, as in transformers:
  # without it decoding stays greedy whatever the seed.
  with_generation_config '{"bos_token_id": 1, "eos_token_id": 2, "temperature": 1.5}'
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 16 --json --seed 3
  expect_rc 0; [ "$(json_ids)" = "$(echo "$GREEDY_IDS" | cut -d, -f1-16)" ] ||
    fail "temperature without do_sample must decode greedily: $(json_ids)"
  with_generation_config '{"bos_token_id": 1, "eos_token_id": 2, "do_sample": false, "temperature": 1.5}'
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 16 --json --seed 3
  expect_rc 0; [ "$(json_ids)" = "$(echo "$GREEDY_IDS" | cut -d, -f1-16)" ] ||
    fail "do_sample false must decode greedily: $(json_ids)"
  with_generation_config '{"bos_token_id": 1, "eos_token_id": 2, "do_sample": true, "temperature": 1.5}'
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 16 --json --seed 3
  expect_rc 0; local sampled
  sampled=$(json_ids)
  [ "$sampled" != "$(echo "$GREEDY_IDS" | cut -d, -f1-16)" ] || fail "do_sample true did not sample"
  run "$MLXCEL" generate -m "$TMP/gc" --prompt-ids "$PROMPT_IDS" -n 16 --json --temp 1.5 --seed 3
  [ "$(json_ids)" = "$sampled" ] || fail "do_sample true: not the sampler at its temperature"
  # --no-echo prints only the new text.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 3 --no-echo -q
  expect_rc 0; [ "$out" = ", there was" ] || fail "--no-echo: got '$out'"
}

# --json-schema: whatever the seed, the story model's text is a document the schema accepts
# (checked by Python's json and the checks below), ending as soon as it is complete.
t_generate_json_schema() {
  cat >"$TMP/schema.json" <<'JSON'
{"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
 "age": {"type": "integer"}, "kind": {"enum": ["cat", "dog"]},
 "toys": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2}},
 "required": ["name", "age", "kind"], "additionalProperties": false}
JSON
  local seed
  for seed in 1 2 3 4; do
    run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" --no-echo -q -n 300 --temp 1 \
      --seed "$seed" --json-schema "$TMP/schema.json"
    expect_rc 0
    "${MX_PYTHON:-python3}" - "$TMP/out" <<'PY' || fail "seed $seed: not a conforming document"
import json, sys
v = json.loads(open(sys.argv[1], encoding="utf-8").read())
assert set(v) <= {"name", "age", "kind", "toys"} and {"name", "age", "kind"} <= set(v), v
assert isinstance(v["name"], str) and len(v["name"]) <= 10, v
assert isinstance(v["age"], int) and not isinstance(v["age"], bool), v
assert v["kind"] in ("cat", "dog"), v
assert all(isinstance(t, str) and len(t) <= 5 for t in v.get("toys", [])), v
assert len(v.get("toys", [])) <= 2, v
PY
  done
  run "$MLXCEL" generate -m "$MODEL" -p x --json-schema "$TMP/schema.json" -n 300 --json
  expect_rc 0; expect_out '"finish_reason": "eos"'
  echo '{"type": "string", "format": "email"}' >"$TMP/bad.json"
  run "$MLXCEL" generate -m "$MODEL" -p x --json-schema "$TMP/bad.json"
  expect_rc 1; expect_err "'format' at # is not supported"
  run "$MLXCEL" generate -m "$MODEL" -p x --json-schema "$TMP/no-such.json"
  expect_rc 3; expect_err 'no-such.json'
}

t_generate_errors() {
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" --bogus
  expect_rc 2; expect_err "unknown option '--bogus'"; expect_err 'Usage: mlxcel generate'
  [ -z "$out" ] || fail "nothing may run after a bad flag"
  run "$MLXCEL" generate -p "Once upon a time"
  expect_rc 2; expect_err 'missing -m'
  run "$MLXCEL" generate -m "$MODEL"
  expect_rc 2; expect_err 'missing -p'
  run "$MLXCEL" generate -m "$MODEL" -p x -n abc
  expect_rc 2; expect_err "'abc' is not an integer"
  run "$MLXCEL" generate -m "$MODEL" -p x -n 0
  expect_rc 2; expect_err 'out of range'
  run "$MLXCEL" generate -m "$MODEL" -p x --temp
  expect_rc 2; expect_err 'needs a value'
  run "$MLXCEL" generate -m "$MODEL" -p x --prompt-ids 1,2
  expect_rc 2; expect_err 'not both'
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1,x
  expect_rc 2; expect_err 'token ids'
  run "$MLXCEL" generate -m "$MODEL" -p x --temp -1
  expect_rc 1; expect_no_crash; expect_err 'temperature'
  run "$MLXCEL" generate -m "$MODEL" -p x --backend nosuch
  expect_rc 1; expect_no_crash; expect_err 'nosuch'
  # The prompt does not fit the context: the message names both numbers.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" --ctx 3
  expect_rc 1; expect_err 'prompt is 5 tokens'; expect_err 'holds 3'
  run "$MLXCEL" generate -m "$MODEL" -p x --ctx 100000
  expect_rc 1; expect_no_crash; expect_err '100000'
  MLXCEL_XLA_CONTEXT_CAPACITY=3 "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" \
    >"$TMP/out" 2>"$TMP/err"
  rc=$?; out=$(cat "$TMP/out"); err=$(cat "$TMP/err")
  expect_rc 1; expect_err 'holds 3'
  # The environment is read by the CLI only (tools/mlxcel/env.c): bad values are errors that
  # name the variable, and a flag wins over its variable.
  local bad
  for bad in 12x abc -3 0 " 12" +12 1e3 99999999999999999999999; do
    run env MLXCEL_XLA_CONTEXT_CAPACITY="$bad" "$MLXCEL" generate -m "$MODEL" -p x -n 1
    expect_rc 1; expect_no_crash; expect_err "MLXCEL_XLA_CONTEXT_CAPACITY='.*' is not a positive"
  done
  run env MLXCEL_XLA_CONTEXT_CAPACITY=1000 "$MLXCEL" generate -m "$MODEL" -p x -n 1
  expect_rc 1; expect_err 'MLXCEL_XLA_CONTEXT_CAPACITY'; expect_err 'max_position_embeddings'
  run env MLXCEL_XLA_CONTEXT_CAPACITY=12x "$MLXCEL" generate -m "$MODEL" -p x -n 1 --ctx 64
  expect_rc 0
  run env MLXCEL_BACKEND=bogus "$MLXCEL" generate -m "$MODEL" -p x -n 1
  expect_rc 1; expect_err 'MLXCEL_BACKEND'; expect_err 'bogus'; expect_err 'interp'
  run env MLXCEL_BACKEND=bogus "$MLXCEL" generate -m "$MODEL" -p x -n 1 --backend cpu
  expect_rc 0
  for bad in 0 x 257; do
    run env MLXCEL_THREADS="$bad" "$MLXCEL" generate -m "$MODEL" -p x -n 1
    expect_rc 1; expect_err "MLXCEL_THREADS='$bad'"
  done
  # A token id outside the vocabulary.
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1,512 -n 2
  expect_rc 1; expect_no_crash; expect_err '512'
}

t_missing_model() {
  for c in generate tokenize logits emit; do
    case $c in
      generate) run "$MLXCEL" generate -m "$TMP/no-such-model" -p hi ;;
      tokenize) run "$MLXCEL" tokenize -m "$TMP/no-such-model" hi ;;
      logits) run "$MLXCEL" logits -m "$TMP/no-such-model" --ids 1 -o "$TMP/x.npy" ;;
      emit) run "$MLXCEL" emit -m "$TMP/no-such-model" -o "$TMP/x" ;;
    esac
    expect_rc 3; expect_err "cannot read model directory '.*no-such-model'"
  done
  run "$MLXCEL" detokenize -m "$TMP/no-such-model" --ids 1
  expect_rc 3; expect_err 'no-such-model'
  # A directory that is not a model.
  mkdir -p "$TMP/empty"
  run "$MLXCEL" generate -m "$TMP/empty" -p hi
  expect_rc 3; expect_err 'config.json'
  # A broken model: clear message, exit 1.
  mkdir -p "$TMP/broken"
  cp "$MODEL"/* "$TMP/broken/"
  echo '{"model_type": "llama", "hidden_size": ' >"$TMP/broken/config.json"
  run "$MLXCEL" generate -m "$TMP/broken" -p hi
  expect_rc 1; expect_no_crash; expect_err 'config.json'
  cp "$MODEL/config.json" "$TMP/broken/"
  head -c 5000 "$MODEL/model.safetensors" >"$TMP/broken/model.safetensors"
  run "$MLXCEL" generate -m "$TMP/broken" -p hi
  expect_rc 1; expect_no_crash; expect_err 'model.safetensors'
}

t_logits() {
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" -o "$TMP/l.npy"
  expect_rc 0
  [ -f "$TMP/l.npy" ] || { fail "no .npy written"; return; }
  # NPY 1.0: magic, version 1.0, header length, dict; data = 5 x 512 float32 after 128 bytes.
  [ "$(head -c 8 "$TMP/l.npy" | od -An -tx1 | tr -d ' \n')" = "934e554d50590100" ] ||
    fail "bad .npy magic/version"
  head -c 128 "$TMP/l.npy" | grep -q "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 512), }" ||
    fail "bad .npy header: $(head -c 128 "$TMP/l.npy" | tail -c 118)"
  [ "$(head -c 128 "$TMP/l.npy" | tail -c 1 | od -An -tx1 | tr -d ' ')" = "0a" ] ||
    fail ".npy header must end with a newline at byte 128"
  [ "$(wc -c <"$TMP/l.npy")" -eq $((128 + 5 * 512 * 4)) ] || fail "bad .npy size"
  # Against llama2.c's logits when the shared reference is there (1e-4 absolute).
  local ref=$SHARED/models/stories260K/reference-greedy.json
  if [ -f "$ref" ]; then
    "$PYTHON" - "$TMP/l.npy" "$ref" <<'EOF' || fail "logits differ from llama2.c's by more than 1e-4"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
hlen = struct.unpack("<H", data[8:10])[0]
vals = struct.unpack("<%df" % (5 * 512), data[10 + hlen:])
run = json.load(open(sys.argv[2]))["runs"][0]
ref = {e["pos"]: e["logits"] for e in run["logits"]}
worst = max(abs(vals[p * 512 + v] - ref[p][v]) for p in range(5) for v in range(512))
print("max |logits - llama2.c| = %.3g" % worst)
sys.exit(0 if worst <= 1e-4 else 1)
EOF
  else
    skip "comparison with llama2.c logits (needs $ref)"
  fi
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS"
  expect_rc 2; expect_err 'missing -o'
  run "$MLXCEL" logits -m "$MODEL" --ids 1,2 -o "$TMP/no-such-dir/x.npy"
  expect_rc 3; expect_err 'no-such-dir'
}

t_emit() {
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/g" --prefill-len 5 --all-logits
  expect_rc 0
  for f in prefill decode; do
    [ -s "$TMP/g/$f.mlir" ] || { fail "no $f.mlir"; continue; }
    grep -q "func.func public @$f\|func.func @$f" "$TMP/g/$f.mlir" || fail "$f.mlir lacks @$f"
    grep -q 'stablehlo.composite "mx.rms_norm"' "$TMP/g/$f.mlir" || fail "$f.mlir: no mx.rms_norm"
    grep -qE 'loc\("model.layers.0.self_attn.q_proj.weight"\)|mx.name = "model.layers.0.self_attn.q_proj.weight"' \
      "$TMP/g/$f.mlir" || fail "$f.mlir: weights are not named after the checkpoint tensors"
    # Re-parses and prints identically.
    run "$MLXCEL" run --print "$TMP/g/$f.mlir"
    expect_rc 0
    cmp -s "$TMP/out" "$TMP/g/$f.mlir" || fail "$f.mlir does not print back identically"
  done
  grep -q 'func.func public @decode\|func.func @decode' "$TMP/g/prefill.mlir" &&
    fail "prefill.mlir must hold only @prefill"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/plain" --ctx 64 --inline-composites
  expect_rc 0
  grep -q 'stablehlo.composite' "$TMP/plain/prefill.mlir" "$TMP/plain/decode.mlir" &&
    fail "--inline-composites left composites"
  run "$MLXCEL" run --print "$TMP/plain/decode.mlir"
  expect_rc 0
  run "$MLXCEL" emit -m "$MODEL"
  expect_rc 2; expect_err 'missing -o'
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/g2" --prefill-len 100 --ctx 64
  expect_rc 1; expect_err '100'
}

t_run_weights() {
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/g" --prefill-len 5 --all-logits --ctx 128
  expect_rc 0
  # The emitted modules run on the reference interpreter: compare with the in-process path on
  # the same engine (1e-5), and with the fast cpu backend at the fixtures' tolerance (1e-4).
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" -o "$TMP/ref.npy" --ctx 128 --backend interp
  expect_rc 0
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" -o "$TMP/cpu.npy" --ctx 128 --backend cpu
  expect_rc 0
  run "$MLXCEL" run --weights "$MODEL" "$TMP/g/prefill.mlir" --ids "$PROMPT_IDS" -o "$TMP/p.npy"
  expect_rc 0
  local d
  d=$(max_abs_diff "$TMP/p.npy" "$TMP/ref.npy")
  le "$d" 1e-5 || fail "emitted @prefill vs in-process logits: max |diff| = $d"
  d=$(max_abs_diff "$TMP/p.npy" "$TMP/cpu.npy")
  le "$d" 1e-4 || fail "emitted @prefill vs the cpu backend's logits: max |diff| = $d"
  # @decode of the first token at position 0 (zeroed caches) = the first row.
  run "$MLXCEL" run --weights "$MODEL" "$TMP/g/decode.mlir" --ids 1 --pos0 0 -o "$TMP/d.npy"
  expect_rc 0
  d=$(max_abs_diff "$TMP/d.npy" "$TMP/ref.npy" 0 512)
  le "$d" 1e-5 || fail "emitted @decode vs in-process logits: max |diff| = $d"
  # The same without composites (plain StableHLO).
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/plain" --prefill-len 5 --all-logits --ctx 128 \
    --inline-composites
  expect_rc 0
  run "$MLXCEL" run --weights "$MODEL" "$TMP/plain/prefill.mlir" --ids "$PROMPT_IDS" \
    -o "$TMP/pp.npy"
  expect_rc 0
  d=$(max_abs_diff "$TMP/pp.npy" "$TMP/ref.npy")
  le "$d" 1e-5 || fail "emitted plain @prefill vs in-process logits: max |diff| = $d"
  # A window of 8 rows (ADR 0015): the rows it leaves out are masked in the whole-capacity
  # graph, so the interpreter's logits are the same bits.
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/win" --prefill-len 5 --all-logits --ctx 128 --attn-len 8
  expect_rc 0
  grep -q 'stablehlo.slice' "$TMP/win/decode.mlir" || fail "--attn-len 8: no slice of the caches"
  run "$MLXCEL" run --weights "$MODEL" "$TMP/win/prefill.mlir" --ids "$PROMPT_IDS" -o "$TMP/pw.npy"
  expect_rc 0
  cmp -s "$TMP/pw.npy" "$TMP/p.npy" || fail "emit --attn-len 8: logits differ from the whole capacity's"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/win" --prefill-len 5 --ctx 128 --attn-len 4
  expect_rc 1; expect_err 'attention window 4 must be 0 or within prefill_len 5 .. ctx 128'
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/win" --ctx 128 --attn-len 0
  expect_rc 2
  # Text and JSON output.
  run "$MLXCEL" run --weights "$MODEL" "$TMP/g/decode.mlir" --ids 1
  expect_rc 0; expect_out '^// .*decode.mlir @decode: logits 1x512$'; expect_out '^dense<\['
  run "$MLXCEL" run --weights "$MODEL" --json "$TMP/g/decode.mlir" --ids 1
  expect_rc 0; expect_out '^\{"type": "result", .*"func": "decode", "shape": \[1, 512\], "logits": \['
  # Errors: wrong number of ids, no ids, missing weights dir, flags without --weights.
  run "$MLXCEL" run --weights "$MODEL" "$TMP/g/prefill.mlir" --ids 1,2
  expect_rc 1; expect_err 'takes 5 token ids .* but --ids gave 2'
  run "$MLXCEL" run --weights "$MODEL" "$TMP/g/decode.mlir"
  expect_rc 1; expect_err 'give --ids'
  run "$MLXCEL" run --weights "$TMP/nope" "$TMP/g/decode.mlir" --ids 1
  expect_rc 3; expect_err 'nope'
  run "$MLXCEL" run --ids 1 "$TMP/g/decode.mlir"
  expect_rc 2; expect_err 'need --weights'
  run "$MLXCEL" run --weights "$MODEL" --func nosuch "$TMP/g/decode.mlir" --ids 1
  expect_rc 1; expect_err '@nosuch'
  # Without --weights the graph's arguments are reported.
  run "$MLXCEL" run "$TMP/g/decode.mlir"
  expect_rc 1; expect_err 'entry function|needs arguments'
}

# logits --greedy N: the cpu backend's greedy continuation through its decode path, as rows after
# the prompt's; their argmax are run.c's greedy ids.
argmax_rows() { # FILE.npy VOCAB FIRST_ROW: the argmax of each row from FIRST_ROW on, comma-separated
  npy_floats "$1" | awk -v v="$2" -v first="$3" '
    { r = int((NR - 1) / v); c = (NR - 1) % v
      if (c == 0 || $1 > best) { best = $1; arg = c }
      if (c == v - 1 && r >= first) out = out (out == "" ? "" : ",") arg }
    END { print out }'
}
t_logits_greedy() {
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" --greedy 8 --backend cpu -o "$TMP/g.npy"
  expect_rc 0; expect_err 'wrote 13 x 512 float32 logits'
  local got want
  got=$(argmax_rows "$TMP/g.npy" 512 4)
  want=$(echo "$GREEDY_IDS" | cut -d, -f1-9)
  [ "$got" = "$want" ] || fail "logits --greedy 8: argmax $got, run.c $want"
  # The prompt's rows are what a plain `logits` writes.
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" --backend cpu -o "$TMP/p.npy"
  expect_rc 0
  local d
  d=$(max_abs_diff "$TMP/p.npy" "$TMP/g.npy" 0 $((5 * 512)))
  le "$d" 0 || fail "logits --greedy: prompt rows differ from logits' by $d"
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" --greedy 60 --ctx 64 -o "$TMP/x.npy"
  expect_rc 1; expect_err '5 ids \+ 60 greedy steps but the context holds 64'
  run "$MLXCEL" logits -m "$MODEL" --ids "$PROMPT_IDS" --greedy -1 -o "$TMP/x.npy"
  expect_rc 2
}

# emit --main --params: what IREE and XLA consume (tests/portability runs them there). Each file's
# entry is @main; the params file holds the weight arguments as the graph types them, so the
# interpreter run on it alone (no requantization) gives the logits of the quantized model.
t_emit_portable() {
  mkdir -p "$TMP/w"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/m" --quant int4 --ctx 32 --prefill-len 5 --all-logits \
    --main --params "$TMP/w/model.safetensors"
  expect_rc 0; expect_err 'wrote .*model.safetensors \(78 weights\)'
  for f in prefill decode; do
    grep -q '^  func.func @main(' "$TMP/m/$f.mlir" || fail "$f.mlir: no public @main"
    grep -q "func.func @$f(" "$TMP/m/$f.mlir" && fail "$f.mlir: still has @$f"
  done
  grep -q '"model.layers.0.self_attn.q_proj.weight":{"dtype":"U32"' "$TMP/w/model.safetensors" ||
    fail "params: the packed int4 weights are not U32"
  run "$MLXCEL" run --weights "$TMP/w" --ids "$PROMPT_IDS" -o "$TMP/a.npy" "$TMP/m/prefill.mlir"
  expect_rc 0
  run "$MLXCEL" run --weights "$MODEL" --quant int4 --ids "$PROMPT_IDS" -o "$TMP/b.npy" \
    "$TMP/m/prefill.mlir"
  expect_rc 0
  local d
  d=$(max_abs_diff "$TMP/a.npy" "$TMP/b.npy")
  le "$d" 0 || fail "emit --params: logits differ from the requantized model's by $d"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/m2" --params
  expect_rc 2; expect_err '--params'
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/m3" --ctx 32 --params "$TMP/no-such-dir/w.safetensors"
  expect_rc 3; expect_err 'no-such-dir'
}

TESTS="help tokenize generate_greedy generate_speculative generate_options generate_errors generate_json_schema
missing_model logits emit run_weights logits_greedy emit_portable"
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
# A part whose reference data is missing reports the test skipped (77), never passed.
[ "$skips" -eq 0 ] || { echo "$skips part(s) skipped"; exit 77; }
echo "ok"
