#!/usr/bin/env bash
# Tests of `mlxcel serve` that need nothing but bash (the full API tests with the openai client
# are tests/server/): help and usage errors, an unreadable model directory, a busy port, and a
# loopback round trip over bash's /dev/tcp (health, a greedy completion equal to `mlxcel
# generate`, an error reply) ending with SIGINT and exit status 0.
# Usage: tests/cli_serve.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill -KILL "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY
M=$SRC/models/stories260K

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

# start ARGS...: starts the server on a free loopback port; sets PORT and SERVER_PID.
start() {
  : >"$TMP/server.log"
  "$MLXCEL" serve -m "$M" --host 127.0.0.1 --port 0 "$@" 2>"$TMP/server.log" &
  SERVER_PID=$!
  PORT=
  for _ in $(seq 300); do
    PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/server.log")
    [ -n "$PORT" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  rc=1
  cp "$TMP/server.log" "$TMP/err"
  fail "server did not start"
  return 1
}

# http METHOD PATH [BODY]: one HTTP/1.1 request over /dev/tcp; the reply goes to $TMP/out.
http() {
  local body=${3:-}
  exec 3<>"/dev/tcp/127.0.0.1/$PORT" || { rc=1; fail "cannot connect"; return 1; }
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$1" "$2" "${#body}" "$body" >&3
  cat <&3 >"$TMP/out"
  exec 3<&-
  rc=0
}

t_help() {
  run "$MLXCEL" serve --help
  expect_rc 0; expect_out 'Usage: mlxcel serve'; expect_out '--parallel'; expect_out '/v1/chat/completions'
  run "$MLXCEL" --help
  expect_rc 0; expect_out 'serve'
}

t_usage_errors() {
  run "$MLXCEL" serve
  expect_rc 2; expect_err 'missing -m DIR'
  run "$MLXCEL" serve -m "$M" --port 70000
  expect_rc 2; expect_err '--port'
  run "$MLXCEL" serve -m "$M" --parallel 0
  expect_rc 2; expect_err '--parallel'
  run "$MLXCEL" serve -m "$M" --parallel 65
  expect_rc 2; expect_err '--parallel'
  run "$MLXCEL" serve -m "$M" --bogus
  expect_rc 2; expect_err "unknown option '--bogus'"
  run "$MLXCEL" serve -m "$M" --api-key ''
  expect_rc 2; expect_err 'empty key'
  run "$MLXCEL" serve -m "$M" extra
  expect_rc 2; expect_err 'unexpected argument'
  run "$MLXCEL" serve -m "$M" --speculative fast
  expect_rc 2; expect_err "unknown mode 'fast' \(ngram, draft or off\)"
  run "$MLXCEL" serve -m "$M" --speculative draft
  expect_rc 2; expect_err 'speculative draft needs --draft-model DIR'
  run "$MLXCEL" serve -m "$M" --draft-tokens 4
  expect_rc 2; expect_err 'needs --speculative ngram or --draft-model DIR'
  run "$MLXCEL" serve -m "$M" --draft-model "$TMP/nonexistent" --port 0
  expect_rc 3; expect_err 'cannot read model directory'
  run "$MLXCEL" serve -m "$M" --draft-model "$SRC/tests/data/families/llava" --port 0
  expect_rc 1; expect_err 'draft model.*speculative decoding needs the same tokenizer'
  run "$MLXCEL" serve -m "$M" --speculative ngram --draft-tokens 33
  expect_rc 2; expect_err '--draft-tokens'
}

t_missing_model() {
  run "$MLXCEL" serve -m "$TMP/nonexistent"
  expect_rc 3; expect_err 'cannot read model directory'
  run "$MLXCEL" serve -m "$M" --backend nosuch --port 0
  expect_rc 1; expect_err 'nosuch'
}

t_port_busy() {
  start || return
  run "$MLXCEL" serve -m "$M" --host 127.0.0.1 --port "$PORT"
  expect_rc 1; expect_err "cannot listen on 127.0.0.1:$PORT"
  run "$MLXCEL" serve -m "$M" --host no.such.host.invalid --port 0
  expect_rc 1; expect_err 'cannot resolve host'
  kill -INT "$SERVER_PID"
  wait "$SERVER_PID"
  rc=$?
  SERVER_PID=
  expect_rc 0
}

t_roundtrip() {
  start --parallel 2 || return
  http GET /health
  expect_out '^HTTP/1.1 200'; expect_out '\{"status":"ok"\}'
  run "$MLXCEL" generate -m "$M" -p "Once upon a time" -n 24 --temp 0 --json --no-echo
  want=$(sed -n 's/^{"id": [0-9]*, "text": \(".*"\)}$/\1/p' "$TMP/out" | tr -d '\n' | sed 's/""//g')
  http POST /v1/completions '{"model":"stories260K","prompt":"Once upon a time","max_tokens":24,"temperature":0}'
  expect_out '^HTTP/1.1 200'
  expect_out '"finish_reason":"length"'
  expect_out '"usage":\{"prompt_tokens":5,"completion_tokens":24,"total_tokens":29,"prompt_tokens_details":\{"cached_tokens":0\}\}'
  got=$(sed -n 's/.*"text":\("[^"]*\(\\.[^"]*\)*"\).*/\1/p' "$TMP/out")
  [ -n "$want" ] && [ "$got" = "$want" ] || fail "completion text $got, want $want"
  http POST /v1/completions '{"prompt":"x","max_tokens":"many"}'
  expect_out '^HTTP/1.1 400'; expect_out '"param":"max_tokens"'
  http POST /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}]}'
  expect_out '^HTTP/1.1 400'; expect_out 'no chat template'
  http GET /metrics
  expect_out '^mlxcel_requests_total\{endpoint="/v1/completions",code="200"\} 1'
  kill -INT "$SERVER_PID"
  wait "$SERVER_PID"
  rc=$?
  SERVER_PID=
  cp "$TMP/server.log" "$TMP/err"
  expect_rc 0; expect_err 'SIGINT: finishing'; expect_err 'stopped$'
}

TESTS="help usage_errors missing_model port_busy roundtrip"
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
