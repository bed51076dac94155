#!/usr/bin/env bash
# End-to-end tests of the mlxcel command line: exit codes, messages, output formats.
# Usage: tests/cli.sh MLXCEL SOURCE_DIR TEST_NAME   (ctest runs one TEST_NAME per test; "all"
# runs every one of them)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
DATA=$SRC/tests/data/cli
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fails=0
# run CMD...: runs CMD, storing stdout, stderr and the exit status in $out, $err, $rc.
run() {
  "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  rc=$?
  out=$(cat "$TMP/out")
  err=$(cat "$TMP/err")
}
fail() {
  echo "FAILED: $*"
  echo "--- exit status: $rc"
  echo "--- stdout:"; echo "$out"
  echo "--- stderr:"; echo "$err"
  fails=$((fails + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }
expect_no_crash() { [ "$rc" -lt 128 ] || fail "crashed (signal $((rc - 128)))"; }

t_help() {
  run "$MLXCEL" --help
  expect_rc 0; expect_out '^Usage: mlxcel'; expect_out 'Exit status'; expect_out '^  run '
  run "$MLXCEL" run --help
  expect_rc 0; expect_out '^Usage: mlxcel run'; expect_out -- '--check'
}
t_version() {
  run "$MLXCEL" --version
  expect_rc 0; expect_out '^mlxcel [0-9]+\.[0-9]+'
}
t_usage_errors() {
  run "$MLXCEL"
  expect_rc 2; expect_err 'Usage: mlxcel'
  run "$MLXCEL" frobnicate
  expect_rc 2; expect_err "unknown command 'frobnicate'"; expect_err 'Usage: mlxcel'
  run "$MLXCEL" --bogus
  expect_rc 2; expect_err "unknown option '--bogus'"
  run "$MLXCEL" run
  expect_rc 2; expect_err 'no input file'; expect_err 'Usage: mlxcel run'
}
t_bad_flag() {
  run "$MLXCEL" run --chek "$DATA/pass.mlir"
  expect_rc 2; expect_err "unknown option '--chek'"; expect_err 'Usage: mlxcel run'
  [ -z "$out" ] || fail "nothing may run after a bad flag"
  run "$MLXCEL" run --print --check "$DATA/pass.mlir"
  expect_rc 2; expect_err 'cannot be combined'
  run "$MLXCEL" run --args='[1]' "$DATA/args.mlir"
  expect_rc 2; expect_err 'not available yet'
}
t_missing_file() {
  run "$MLXCEL" run --check "$TMP/no-such-file.mlir"
  expect_rc 3; expect_err 'no-such-file.mlir'
  run "$MLXCEL" run --check "$TMP"
  expect_rc 3; expect_no_crash
  # The other files still run; the exit status reports the unreadable one.
  run "$MLXCEL" run --check "$DATA/pass.mlir" "$TMP/no-such-file.mlir"
  expect_rc 3; expect_out '^PASS .*pass.mlir:2 @add_i64$'
}
t_malformed() {
  run "$MLXCEL" run --check "$DATA/malformed.mlir"
  expect_rc 1; expect_no_crash
  expect_out '^ERROR .*malformed.mlir:2: .*malformed.mlir:4:[0-9]+: '
  expect_out '^0 passed, 1 failed, 0 unsupported$'
  run "$MLXCEL" run "$DATA/malformed.mlir"
  expect_rc 1; expect_err 'malformed.mlir:4:[0-9]+: '
  run "$MLXCEL" run --print "$DATA/malformed.mlir"
  expect_rc 1; expect_err 'malformed.mlir:4:[0-9]+: '
  # Garbage and empty input never crash.
  printf 'func.func @f( {{{{ \x01\xff "unterminated' >"$TMP/garbage.mlir"
  run "$MLXCEL" run --check --json "$TMP/garbage.mlir"
  expect_rc 1; expect_no_crash; expect_out '"status": "ERROR"'
  : >"$TMP/empty.mlir"
  run "$MLXCEL" run --check "$TMP/empty.mlir"
  expect_rc 0; expect_out '^0 passed, 0 failed, 0 unsupported$'
}
t_check_pass() {
  run "$MLXCEL" run --check "$DATA/pass.mlir"
  expect_rc 0
  expect_out '^PASS .*pass.mlir:2 @add_i64$'
  expect_out '^PASS .*pass.mlir:12 @no_checks$'
  expect_out '^2 passed, 0 failed, 0 unsupported$'
}
t_check_fail() {
  run "$MLXCEL" run --check "$DATA/fail.mlir" "$DATA/pass.mlir"
  expect_rc 1
  expect_out '^FAIL .*fail.mlir:2 @wrong_sum: .+'
  expect_out '^2 passed, 1 failed, 0 unsupported$'
  # Without --check a failed check op is an error.
  run "$MLXCEL" run "$DATA/fail.mlir"
  expect_rc 1; expect_err 'fail.mlir:2 @wrong_sum: '
}
t_unsupported() {
  run "$MLXCEL" run --check "$DATA/unsupported.mlir"
  expect_rc 0
  expect_out '^UNSUPPORTED .*unsupported.mlir:2 @frobnicate: .*unsupported: .*stablehlo.frobnicate'
  expect_out '^0 passed, 0 failed, 1 unsupported$'
}
t_args() {
  run "$MLXCEL" run --check "$DATA/args.mlir"
  expect_rc 1
  expect_out '^ERROR .*args.mlir:2 @main: @main needs arguments \(tensor<2xi32>, tensor<2xi32>\)'
  expect_out -- '--args option to pass them is planned'
}
t_values() {
  run "$MLXCEL" run "$DATA/values.mlir"
  expect_rc 0
  expect_out '^// .*values.mlir:2 @main$'
  expect_out '^dense<\[\[1, -2\], \[3, 4\]\]> : tensor<2x2xi32>$'
  expect_out '^dense<\[0\.5, -1\.0, 3\.0e\+10\]> : tensor<3xf32>$'
  expect_out '^dense<true> : tensor<i1>$'
}
t_json() {
  run "$MLXCEL" run --check --json "$DATA/pass.mlir" "$DATA/fail.mlir" "$DATA/unsupported.mlir"
  expect_rc 1
  expect_out '^\{"type": "case", "file": ".*pass.mlir", "line": 2, "func": "add_i64", "status": "PASS", "message": "", "checks": 1\}$'
  expect_out '"func": "no_checks", "status": "PASS", "message": "", "checks": 0\}$'
  expect_out '"func": "wrong_sum", "status": "FAIL", "message": ".+"'
  expect_out '"status": "UNSUPPORTED"'
  expect_out '^\{"type": "summary", "passed": 2, "failed": 1, "unsupported": 1, "errors": 0\}$'
  "${MX_PYTHON:-python3}" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$TMP/out" ||
    fail "--json output is not one JSON object per line"
  run "$MLXCEL" run --json "$DATA/values.mlir"
  expect_rc 0
  expect_out '"status": "OK", "message": "", "results": \["dense<\[\[1, -2\], \[3, 4\]\]> : tensor<2x2xi32>", '
}
t_print() {
  run "$MLXCEL" run --print "$DATA/pass.mlir"
  expect_rc 0
  expect_out 'func.func @add_i64'
  expect_out 'stablehlo.add'
  expect_out '^// -----$'
  # What --print writes parses again and prints the same.
  cp "$TMP/out" "$TMP/printed.mlir"
  run "$MLXCEL" run --print "$TMP/printed.mlir"
  expect_rc 0
  cmp -s "$TMP/out" "$TMP/printed.mlir" || fail "--print output does not round-trip"
}
t_stdin() {
  "$MLXCEL" run --check - <"$DATA/pass.mlir" >"$TMP/out" 2>"$TMP/err"
  rc=$?; out=$(cat "$TMP/out"); err=$(cat "$TMP/err")
  expect_rc 0; expect_out '^PASS -:2 @add_i64$'
}
t_examples() {
  for f in "$SRC"/examples/*.mlir; do
    run "$MLXCEL" run --check "$f"
    expect_rc 0
    expect_out ' 0 failed, 0 unsupported$'
    grep -q '^PASS' "$TMP/out" || fail "$f: no case passed"
  done
}

TESTS="help version usage_errors bad_flag missing_file malformed check_pass check_fail
unsupported args values json print stdin examples"
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
