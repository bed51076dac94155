#!/usr/bin/env bash
# `mlxcel chat` in a pseudo-terminal (util-linux `script`, Debian package bsdutils): two turns
# (the second prefills only what it adds), /reset, /help, Ctrl-C during a reply and twice at
# the prompt; errors (no chat template, a conversation over the context, usage) with piped
# input. The model is a copy of the bundled stories260K given a chat template; /image runs on
# the tiny LLaVA fixture.
# Usage: tests/cli_chatcli.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
MODEL=$SRC/models/stories260K
TMP=$(mktemp -d)
PID=
cleanup() {
  { exec 3>&-; } 2>/dev/null
  [ -n "$PID" ] && kill "$PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY
PYTHON=${MX_PYTHON:-python3}

. "$SRC/tests/cli_lib.sh"
fail_context() {
  echo "--- terminal:"; [ -f "$TMP/tty" ] && tr -d '\r' <"$TMP/tty" | head -c 4000; echo
}

# The chat model: the template puts "role:content" lines after BOS and ends with "assistant:",
# so that a reply's text continues the rendering exactly.
mkdir -p "$TMP/m"
cp "$MODEL"/config.json "$MODEL"/generation_config.json "$MODEL"/model.safetensors \
  "$MODEL"/tokenizer.json "$TMP/m/"
sed '0,/{/s//{\n  "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }}\\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",/' \
  "$MODEL/tokenizer_config.json" >"$TMP/m/tokenizer_config.json"

# ---- A chat in a pseudo-terminal: input through a FIFO, the terminal's output in $TMP/tty ----

start() { # chat options...
  rm -f "$TMP/in" "$TMP/tty"
  mkfifo "$TMP/in"
  : >"$TMP/tty"
  # script runs the command with $SHELL -c: bash, since the quoting is bash's printf %q, and
  # `exec`, since a shell that stays the parent dies of the Ctrl-C meant for the chat.
  SHELL=/bin/bash timeout $((300 * ${MX_TIMEOUT_SCALE:-1})) script -qefc "exec $(printf '%q ' "$MLXCEL" chat -m "$TMP/m" "$@")" /dev/null \
    <"$TMP/in" >"$TMP/tty" 2>&1 &
  PID=$!
  exec 3>"$TMP/in"
}
screen() { tr -d '\r' <"$TMP/tty"; }
# Waits (up to 120 s) until the terminal shows at least N lines matching REGEX.
wait_for() { # REGEX [N]
  local n=${2:-1}
  for _ in $(seq 1200); do
    [ "$(screen | grep -cE -- "$1")" -ge "$n" ] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  [ "$(screen | grep -cE -- "$1")" -ge "$n" ] && return 0
  fail "the terminal never showed $n line(s) matching /$1/"
  return 1
}
send() { printf '%b' "$1" >&3; }
# Waits for the chat to exit; its status in $rc.
finish() {
  exec 3>&-
  wait "$PID"
  rc=$?
  PID=
}
prompts() { screen | grep -c '^> '; }

t_turns() {
  start -n 12 --stats
  wait_for '^> ' || return
  send 'Once upon a time\n'
  wait_for 'finish: ' && wait_for '^> ' 2 || return
  # Turn 2 is prefilled as what it adds to the cached conversation: the unfed last token of
  # the reply, "\nuser:The end\nassistant:".
  send 'The end\n'
  wait_for 'finish: ' 2 && wait_for '^> ' 3 || return
  screen | grep 'finish: ' | sed -n 2p | grep -qE '^\[[0-9]+ prompt tokens added, ' ||
    fail "turn 2 was not prefilled incrementally"
  send '/reset\n'
  wait_for '^\[conversation reset\]$' || return
  # After /reset the first turn again: the whole prompt, the same greedy reply.
  send 'Once upon a time\n'
  wait_for 'finish: ' 3 && wait_for '^> ' 5 || return
  local s1 s3
  s1=$(screen | grep 'finish: ' | sed -n 1p | sed 's/[0-9.]* tok\/s//')
  s3=$(screen | grep 'finish: ' | sed -n 3p | sed 's/[0-9.]* tok\/s//')
  [ "$s1" = "$s3" ] && case $s1 in *"prompt tokens, "*) true ;; *) false ;; esac ||
    fail "after /reset: '$s3', first turn: '$s1'"
  [ "$(screen | grep -A1 '^> Once upon a time$' | sed -n 2p)" = \
    "$(screen | grep -A1 '^> Once upon a time$' | sed -n 5p)" ] || fail "reply after /reset differs"
  send '/help\n'
  wait_for '^/reset +forget the conversation' || return
  send '/bogus\n'
  wait_for "unknown command '/bogus'" || return
  send '/exit\n'
  finish
  [ "$rc" -eq 0 ] || fail "/exit: exit status $rc"
}

t_interrupt() {
  # The reference interpreter and --ignore-eos keep the reply going long enough to stop it.
  start -n 480 --ignore-eos --backend interp --stats
  wait_for '^> ' || return
  send 'Once upon a time\n'
  wait_for '^> Once upon a time$' || return
  # The reply has started when the terminal shows text after the echoed input.
  for _ in $(seq 1200); do
    [ "$(screen | sed -n '/^> Once upon a time$/,$p' | wc -c)" -ge 22 ] && break
    sleep 0.1
  done
  send '\003'
  wait_for '^\[interrupted\]$' && wait_for '^> ' 2 || return
  screen | grep -qE '^\[[0-9]+ prompt tokens, [0-9]+ in context; [0-9]+ generated, .*finish: callback\]' ||
    fail "no stats line of a stopped reply"
  local gen
  gen=$(screen | sed -n 's/.* in context; \([0-9]*\) generated.*/\1/p' | head -1)
  [ -n "$gen" ] && [ "$gen" -lt 480 ] || fail "Ctrl-C did not stop the reply ($gen generated)"
  # Ctrl-C at the prompt: a hint; a second one exits.
  send '\003'
  wait_for 'Ctrl-C again' || return
  send '\003'
  finish
  [ "$rc" -eq 0 ] || fail "Ctrl-C twice at the prompt: exit status $rc"
}

# ---- Piped input (no terminal) ----

# Like run, with the text INPUT on stdin.
run_input() { # INPUT COMMAND...
  local input=$1
  shift
  printf '%b' "$input" | "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

t_errors() {
  run_input 'hi\n' "$MLXCEL" chat -m "$MODEL"
  [ "$rc" -eq 1 ] || fail "no template: exit status $rc"
  grep -q "has no chat_template in tokenizer_config.json; chat needs one" "$TMP/err" ||
    fail "no template: message"
  # A conversation over the context: a message, then the chat goes on.
  run_input 'Once upon a time\n/help\n' "$MLXCEL" chat -m "$TMP/m" --ctx 16
  [ "$rc" -eq 1 ] || fail "over the context: exit status $rc"
  grep -q "the conversation would take 20 tokens but the context holds 16: /reset" "$TMP/err" ||
    fail "over the context: message"
  grep -q "^/reset  forget" "$TMP/out" || fail "over the context: the chat did not go on"
  # Piped input works too; end of input ends the chat.
  run_input 'Once upon a time\n' "$MLXCEL" chat -m "$TMP/m" -n 4 --temp 0.8 --seed 3
  [ "$rc" -eq 0 ] && [ -s "$TMP/out" ] || fail "piped input"
  run_input '' "$MLXCEL" chat
  [ "$rc" -eq 2 ] && grep -q "missing -m DIR" "$TMP/err" || fail "usage: missing -m"
  run_input '' "$MLXCEL" chat -m "$TMP/m" hello
  [ "$rc" -eq 2 ] && grep -q "messages are typed at the prompt" "$TMP/err" || fail "usage: arg"
  run_input '' "$MLXCEL" chat -m "$TMP/m" --top-p 2
  [ "$rc" -eq 1 ] && grep -q "top_p" "$TMP/err" || fail "bad sampling value"
  run_input '' "$MLXCEL" chat --help
  [ "$rc" -eq 0 ] && grep -q "Usage: mlxcel chat -m DIR" "$TMP/out" || fail "--help"
}

# Speculative decoding in a chat (piped): three greedy turns give the replies of plain decoding
# with prompt lookup and with a draft model (the chat model itself), and --stats says how many
# drafts each turn accepted.
t_speculative() {
  local msgs='Once upon a time\nThe end\nOnce upon a time\n' plain
  run_input "$msgs" "$MLXCEL" chat -m "$TMP/m" -n 24 --temp 0
  [ "$rc" -eq 0 ] && [ -s "$TMP/out" ] || fail "plain chat: exit status $rc"
  plain=$(cat "$TMP/out")
  run_input "$msgs" "$MLXCEL" chat -m "$TMP/m" -n 24 --temp 0 --speculative ngram --stats
  [ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$plain" ] || fail "ngram chat replies differ"
  [ "$(grep -cE 'speculative ngram: [0-9.]+ tokens/step, [0-9]+ of [0-9]+ drafts' "$TMP/err")" -eq 3 ] ||
    fail "ngram chat: --stats lines: $(cat "$TMP/err")"
  run_input "$msgs" "$MLXCEL" chat -m "$TMP/m" -n 24 --temp 0 --draft-model "$TMP/m" \
    --draft-tokens 3 --stats
  [ "$rc" -eq 0 ] && [ "$(cat "$TMP/out")" = "$plain" ] || fail "draft-model chat replies differ"
  grep -qE 'speculative draft: [0-9.]+ tokens/step' "$TMP/err" || fail "draft chat: --stats"
  run_input '' "$MLXCEL" chat -m "$TMP/m" --speculative draft
  [ "$rc" -eq 2 ] && grep -q "needs --draft-model DIR" "$TMP/err" || fail "usage: draft"
  run_input '' "$MLXCEL" chat --help
  grep -q -- "--speculative MODE" "$TMP/out" || fail "--help: --speculative"
}

# A second turn's reply equals a fresh run of the whole conversation (tests/chat_second_turn.py).
t_second_turn() {
  "$PYTHON" "$SRC/tests/chat_second_turn.py" "$MLXCEL" "$TMP/m" ||
    fail "second turns differ from fresh runs of the whole conversation"
}

# /image PATH on the tiny LLaVA (tests/data/families/llava): the reply equals generate --chat
# --image on the same message, the image's tokens count in the prompt; a text turn after it
# keeps the image in the cached conversation; /reset forgets it; errors leave the chat going.
t_image() {
  local M=$SRC/tests/data/families/llava IMG=$SRC/tests/data/image/inputs/chelsea.png ref
  "$MLXCEL" generate -m "$M" --chat -p "What is in the picture?" --image "$IMG" -n 16 --temp 0 \
    --no-echo >"$TMP/ref" 2>"$TMP/err" || { fail "generate --image: $(cat "$TMP/err")"; return; }
  ref=$(cat "$TMP/ref")
  run_input "/image $IMG\nWhat is in the picture?\nAnd then?\n/reset\n/image $IMG\nWhat is in the picture?\n" \
    "$MLXCEL" chat -m "$M" -n 16 --temp 0 --stats
  [ "$rc" -eq 0 ] || fail "image chat: exit status $rc: $(cat "$TMP/err")"
  [ "$(grep -c '^\[image 1 attached to the next message: 16 tokens' "$TMP/out")" -eq 2 ] ||
    fail "image chat: no attach lines"
  [ "$(sed -n 2p "$TMP/out")" = "$ref" ] || fail "image chat: reply '$(sed -n 2p "$TMP/out")', generate '$ref'"
  [ "$(sed -n 6p "$TMP/out")" = "$ref" ] || fail "image chat after /reset: '$(sed -n 6p "$TMP/out")'"
  local stats
  stats=$(grep '^\[[0-9]* prompt tokens' "$TMP/err")
  echo "$stats" | sed -n 1p | grep -q '^\[58 prompt tokens, ' ||
    fail "image chat: first turn stats '$(echo "$stats" | sed -n 1p)'"
  echo "$stats" | sed -n 2p | grep -qE '^\[[0-9]+ prompt tokens added, ' ||
    fail "image chat: the second turn was not prefilled incrementally"
  echo "$stats" | sed -n 3p | grep -q '^\[58 prompt tokens, ' ||
    fail "image chat: after /reset '$(echo "$stats" | sed -n 3p)'"
  # Errors: the chat goes on (the message still gets a reply), the exit status says it failed.
  run_input "/image $TMP/missing.png\n/image\n/image $SRC/tests/data/image/hostile/truncated.png\nHi\n" \
    "$MLXCEL" chat -m "$M" -n 2 --temp 0 --stats
  [ "$rc" -eq 1 ] || fail "bad /image: exit status $rc"
  grep -q "missing.png" "$TMP/err" && grep -q "/image needs a PATH" "$TMP/err" &&
    grep -q "truncated.png" "$TMP/err" || fail "bad /image: messages: $(cat "$TMP/err")"
  grep -q '^\[[0-9]* prompt tokens, ' "$TMP/err" || fail "bad /image: the chat did not go on"
  grep -q '^\[image' "$TMP/out" && fail "bad /image: an image was attached"
  run_input "/image $IMG\nHi\n" "$MLXCEL" chat -m "$TMP/m" -n 2
  [ "$rc" -eq 1 ] && grep -q "/image: model_type 'llama' takes no images" "$TMP/err" ||
    fail "text model /image: $rc $(cat "$TMP/err")"
}

run_tests "$NAME" "turns interrupt errors second_turn image speculative"
