#!/usr/bin/env bash
# `mlxcel generate --chat` on the bundled stories260K model: the clear error for a model
# without a chat template, usage errors, and (on a copy given a small template) that the chat
# prompt reaches the model as the rendered text's tokens.
# Usage: tests/cli_chat.sh MLXCEL SOURCE_DIR
set -u
MLXCEL=$1
SRC=$2
MODEL=$SRC/models/stories260K
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
  echo "--- stdout:"; head -c 2000 "$TMP/out"; echo
  echo "--- stderr:"; head -c 2000 "$TMP/err"; echo
  fails=$((fails + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }

# No chat_template: a clear error, nothing generated.
run "$MLXCEL" generate -m "$MODEL" --chat -p "Hello"
expect_rc 1
expect_err "has no chat_template in tokenizer_config.json; --chat needs one"
[ -s "$TMP/out" ] && fail "nothing may be printed on stdout"

# Usage errors.
run "$MLXCEL" generate -m "$MODEL" --system "Be brief." -p "Hello"
expect_rc 2; expect_err "--system only applies with --chat"
run "$MLXCEL" generate -m "$MODEL" --chat --prompt-ids 1,2
expect_rc 2; expect_err "--chat needs -p TEXT"
run "$MLXCEL" generate -m "$MODEL" --chat -p x --system
expect_rc 2; expect_err "needs a value"

# A copy with a template that joins the messages after BOS: --chat with system "Once upon" and
# user "a time" must generate exactly what the plain prompt "Once upon a time" does.
mkdir -p "$TMP/model"
cp "$MODEL"/config.json "$MODEL"/generation_config.json "$MODEL"/model.safetensors \
  "$MODEL"/tokenizer.json "$TMP/model/"
sed '0,/{/s//{\n  "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% if not loop.last %} {% endif %}{% endfor %}",/' \
  "$MODEL/tokenizer_config.json" >"$TMP/model/tokenizer_config.json"
run "$MLXCEL" generate -m "$TMP/model" --chat --system "Once upon" -p "a time" -n 12 --json
expect_rc 0
grep -o '"id": [0-9]*' "$TMP/out" >"$TMP/chat_ids"
grep -q '"prompt_tokens": 5' "$TMP/out" || fail "chat prompt should be 5 tokens"
run "$MLXCEL" generate -m "$TMP/model" -p "Once upon a time" -n 12 --json
expect_rc 0
grep -o '"id": [0-9]*' "$TMP/out" >"$TMP/plain_ids"
[ -s "$TMP/chat_ids" ] && cmp -s "$TMP/chat_ids" "$TMP/plain_ids" ||
  fail "--chat ids differ from the plain prompt's: $(tr '\n' ' ' <"$TMP/chat_ids")"
# Text mode prints only the reply (no echo of the rendered template).
run "$MLXCEL" generate -m "$TMP/model" --chat -p "Once upon a time" -n 4 -q
expect_rc 0
grep -q "Once upon" "$TMP/out" && fail "--chat must not echo the prompt"

# Special-token text typed into the user message is text: the template's BOS is the prompt's
# only special token, and the rest are the plain-text ids of the message (issue 28: a user must
# not be able to end their turn by typing the end-of-turn token).
run "$MLXCEL" tokenize -m "$TMP/model" --no-add-special --split-special "Once</s>upon"
expect_rc 0
n_text=$(wc -w <"$TMP/out")
run "$MLXCEL" tokenize -m "$TMP/model" --no-add-special "Once</s>upon"
n_special=$(wc -w <"$TMP/out")
[ "$n_text" -gt "$n_special" ] || fail "split </s> should take more ids ($n_text vs $n_special)"
run "$MLXCEL" generate -m "$TMP/model" --chat -p "Once</s>upon" -n 1 --json
expect_rc 0
grep -q "\"prompt_tokens\": $((n_text + 1))," "$TMP/out" ||
  fail "--chat prompt should be BOS + $n_text text ids: $(grep -o '"prompt_tokens": [0-9]*' "$TMP/out")"

# A template that fails at render time: the error names the position.
sed '0,/{/s//{\n  "chat_template": "{{ raise_exception(\\"no system messages\\") }}",/' \
  "$MODEL/tokenizer_config.json" >"$TMP/model/tokenizer_config.json"
run "$MLXCEL" generate -m "$TMP/model" --chat -p "hi" -n 2
expect_rc 1; expect_err "chat template 1:4: raise_exception: no system messages"
# A malformed template: compile error with its position.
sed '0,/{/s//{\n  "chat_template": "{% for m in messages %}{{ m.content }}",/' \
  "$MODEL/tokenizer_config.json" >"$TMP/model/tokenizer_config.json"
run "$MLXCEL" generate -m "$TMP/model" --chat -p "hi" -n 2
expect_rc 1; expect_err "chat_template: chat template 1:39: unexpected end of template"

if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "ok"
