#!/usr/bin/env bash
# End-to-end tests of --precision / --kv-dtype (generate, logits, emit, run --weights, bench) on
# the bundled stories260K model and a bf16 tiny checkpoint.
# Usage: tests/cli_precision.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
#
# Tolerances on stories260K (logits up to ~19): the emitted graph run by the reference
# interpreter equals the in-process interpreter on the same graph (1e-5); against the fast cpu
# backend the difference is f32 reassociation, which can move an activation's rounding to the
# next bf16 / f16 value, so it depends on the machine's kernels: measured 0.055 (bf16) and
# 0.0084 (f16) with AMX / AVX512-BF16 kernels, 3.8e-6 (bf16) on AVX-512 without them; bounds
# about 3x the largest measured, 0.15 and 0.025 (1e-4 at f32, measured 1.5e-5). bf16 vs f32
# logits, both on the reference interpreter (machine-independent): measured 0.213, bound 0.4.
set -u
MLXCEL=$1
SRC=$2
NAME=$3
MODEL=$SRC/models/stories260K
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY MLXCEL_XLA_PRECISION MLXCEL_XLA_KV_DTYPE
IDS="1,403,407,261,378,109,365,261,137,362,278"

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
npy_floats() { # FILE: one float per line
  local hlen
  hlen=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
  tail -c +$((10 + hlen + 1)) "$1" | od -An -v -tf4 | tr -s ' ' '\n' | sed '/^$/d'
}
max_abs_diff() { # A.npy B.npy
  npy_floats "$1" >"$TMP/a.txt"
  npy_floats "$2" >"$TMP/b.txt"
  [ "$(wc -l <"$TMP/a.txt")" -eq "$(wc -l <"$TMP/b.txt")" ] || { echo "size-mismatch"; return; }
  paste "$TMP/a.txt" "$TMP/b.txt" |
    awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d} END {printf "%.3g\n", m + 0}'
}
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a ~ /^[0-9.eE+-]+$/ && a + 0 <= b + 0)}'; }

t_help() {
  for c in generate logits emit bench chat serve; do
    run "$MLXCEL" "$c" --help
    expect_rc 0; expect_out -- '--precision T'; expect_out -- '--kv-dtype T'
    expect_out 'MLXCEL_XLA_PRECISION'
  done
  run "$MLXCEL" run --help
  expect_out -- '--precision'
}

t_errors() {
  run "$MLXCEL" generate -m "$MODEL" -p hi --precision f8
  expect_rc 2; expect_err "'f8' is not a precision \(f32, f16 or bf16\)"
  run "$MLXCEL" logits -m "$MODEL" --ids 1 -o "$TMP/x.npy" --kv-dtype int8
  expect_rc 2; expect_err -- "--kv-dtype: 'int8' is not a precision"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/e" --precision
  expect_rc 2; expect_err 'needs a value'
  run "$MLXCEL" bench --machine --precision bf16
  expect_rc 2; expect_err 'go with -m DIR'
  run env MLXCEL_XLA_PRECISION=fp8 "$MLXCEL" logits -m "$MODEL" --ids 1 -o "$TMP/x.npy"
  expect_rc 1; expect_err "MLXCEL_XLA_PRECISION: 'fp8' is not a precision"
  run env MLXCEL_XLA_KV_DTYPE=half4 "$MLXCEL" generate -m "$MODEL" -p hi -n 1
  expect_rc 1; expect_err 'MLXCEL_XLA_KV_DTYPE'
}

t_generate() {
  # stories260K's greedy text is the same at every precision for these 40 tokens.
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 40 -q
  expect_rc 0
  cp "$TMP/out" "$TMP/f32.txt"
  for p in bf16 f16; do
    run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 40 -q --precision $p
    expect_rc 0
    cmp -s "$TMP/out" "$TMP/f32.txt" || fail "greedy text at $p differs from f32"
  done
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1,403 -n 2 --precision bf16 --kv-dtype f16 \
    --json
  expect_rc 0; expect_out '"precision": "bf16", "kv_dtype": "f16"\}$'
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1,403 -n 2
  expect_rc 0; expect_err 'precision f32, kv f32\]'
  # The environment variable sets the default; the flag wins over it.
  run env MLXCEL_XLA_PRECISION=f16 "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 -n 1 --json
  expect_out '"precision": "f16", "kv_dtype": "f16"'
  run env MLXCEL_XLA_PRECISION=f16 "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 -n 1 --json \
    --precision bf16
  expect_out '"precision": "bf16", "kv_dtype": "bf16"'
}

t_emit_run() {
  local p tol d
  for p in f32 bf16 f16; do
    case $p in f32) tol=1e-4 ;; bf16) tol=0.15 ;; f16) tol=0.025 ;; esac
    run "$MLXCEL" emit -m "$MODEL" -o "$TMP/g_$p" --prefill-len 11 --all-logits --ctx 128 \
      --precision $p
    expect_rc 0; expect_err "precision $p, KV cache $p"
    if [ $p != f32 ]; then
      # A linear layer: convert to the precision, then dot_general(p, p) -> f32.
      grep -qE "stablehlo.convert .* -> tensor<1x11x64x$p>" "$TMP/g_$p/prefill.mlir" ||
        fail "$p: no convert of the activation to $p"
      grep -qE "stablehlo.dot_general .*: \(tensor<1x11x64x$p>, tensor<[0-9]+x64x$p>\) -> tensor<1x11x[0-9]+xf32>" \
        "$TMP/g_$p/prefill.mlir" || fail "$p: no dot_general($p, $p) -> f32"
    else
      grep -qE 'bf16|xf16' "$TMP/g_$p/prefill.mlir" && fail "f32 graph holds 16-bit floats"
    fi
    run "$MLXCEL" run --weights "$MODEL" "$TMP/g_$p/prefill.mlir" --ids "$IDS" -o "$TMP/p_$p.npy"
    expect_rc 0
    run "$MLXCEL" logits -m "$MODEL" --ids "$IDS" -o "$TMP/ref_$p.npy" --ctx 128 --precision $p \
      --backend interp
    expect_rc 0
    run "$MLXCEL" logits -m "$MODEL" --ids "$IDS" -o "$TMP/cpu_$p.npy" --ctx 128 --precision $p \
      --backend cpu
    expect_rc 0
    d=$(max_abs_diff "$TMP/p_$p.npy" "$TMP/ref_$p.npy")
    le "$d" 1e-5 || fail "$p: emitted @prefill vs the in-process interpreter: max |diff| = $d"
    d=$(max_abs_diff "$TMP/p_$p.npy" "$TMP/cpu_$p.npy")
    echo "$p: emitted @prefill vs the cpu backend: max |diff| $d (bound $tol)"
    le "$d" $tol || fail "$p: emitted @prefill vs the cpu backend: max |diff| = $d > $tol"
  done
  # Precision changes the logits (the graphs differ), within the gate's bounds.
  d=$(max_abs_diff "$TMP/ref_bf16.npy" "$TMP/ref_f32.npy")
  echo "bf16 vs f32 logits: max |diff| $d"
  le "$d" 1e-6 && fail "bf16 logits equal f32's: the precision did nothing"
  le "$d" 0.4 || fail "bf16 vs f32 logits: max |diff| = $d"
}

t_bench_json() {
  run "$MLXCEL" mkmodel --arch llama --preset tiny -o "$TMP/tiny" -q --dtype bf16
  expect_rc 0
  run "$MLXCEL" bench -m "$TMP/tiny" --prompt 4 --gen 2 --reps 1 --bw-mib 8 --json
  expect_rc 0; expect_out '"dtype": "bf16"'; expect_out '"precision": "bf16", "kv_dtype": "bf16"'
  local b16 b32
  b16=$(sed -n 's/.*"decode_bytes_per_token": \([0-9]*\).*/\1/p' "$TMP/out")
  run "$MLXCEL" bench -m "$TMP/tiny" --prompt 4 --gen 2 --reps 1 --bw-mib 8 --json \
    --precision f32 --kv-dtype f32
  expect_rc 0; expect_out '"precision": "f32", "kv_dtype": "f32"'
  b32=$(sed -n 's/.*"decode_bytes_per_token": \([0-9]*\).*/\1/p' "$TMP/out")
  [ -n "$b16" ] && [ -n "$b32" ] && [ "$b16" -lt "$b32" ] ||
    fail "decode bytes per token: bf16 $b16 not below f32 $b32"
}

TESTS="help errors generate emit_run bench_json"
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
