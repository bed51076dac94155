#!/usr/bin/env bash
# Helpers shared by the CLI test scripts (sourced after TMP is set): run a command capturing
# its output, report failures, dispatch TEST_NAME ("all" runs every test).
fails=0
# Runs a command with stdin from /dev/null; stdout, stderr and the status in $TMP/out,
# $TMP/err and $rc.
run() {
  "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  rc=$?
}
# Reports a failed check with the last command's output (and what fail_context, when the
# script defines it, prints).
fail() {
  echo "FAILED: $*"
  echo "--- exit status: ${rc:-}"
  echo "--- stdout:"; [ -f "$TMP/out" ] && head -c 3000 "$TMP/out"; echo
  echo "--- stderr:"; [ -f "$TMP/err" ] && head -c 3000 "$TMP/err"; echo
  declare -F fail_context >/dev/null && fail_context
  fails=$((fails + 1))
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }
# run_tests NAME "T1 T2 ...": runs t_NAME (every t_Ti for "all"), then exits 0 ("ok") or 1.
run_tests() {
  if [ "$1" = all ]; then
    for t in $2; do "t_$t"; done
  elif declare -F "t_$1" >/dev/null; then
    "t_$1"
  else
    echo "unknown test '$1' (known: $2)"
    exit 2
  fi
  if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
  fi
  echo "ok"
  exit 0
}
