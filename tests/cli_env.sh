#!/usr/bin/env bash
# The process environment is read in one place: tools/mlxcel/env.c (issue 20, ADR 0006).
# Usage: tests/cli_env.sh MLXCEL SRC_DIR CASE
#   library: nothing under src/ or include/ reads it (getenv, secure_getenv, environ), so a
#            library caller never depends on it; tools/mlxcel/ reads it only in env.c.
#   help:    env.c's table of variables (printed by `mlxcel --help`, each with the commands that
#            read it) names every MLXCEL_ variable the CLI's sources mention, each of them is read
#            in env.c, and every command's --help lists exactly the variables the table gives it.
#   reads:   the table tells the truth: with a variable set to a bad value, every command the
#            table gives it fails naming it, and every other command does not mention it.
set -u
MLXCEL=$1
SRC=$2
CASE=$3
fail() { echo "FAILED: $*"; exit 1; }

case_library() {
  # Guard against a grep that passes because it read nothing.
  local n
  n=$(find "$SRC/src" "$SRC/include" -name '*.[ch]' | wc -l)
  [ "$n" -gt 100 ] || fail "only $n C files under $SRC/src and $SRC/include"
  local pat='\b(secure_)?getenv\b|\benviron\b'
  local hits
  hits=$(grep -rnE "$pat" "$SRC/src" "$SRC/include")
  [ -z "$hits" ] || fail "the library reads the environment (pass a typed option instead):
$hits"
  hits=$(grep -rnE "$pat" "$SRC/tools/mlxcel" | grep -v '^[^:]*/env\.c:')
  [ -z "$hits" ] || fail "the CLI reads the environment outside env.c:
$hits"
  grep -qE '\bgetenv\b' "$SRC/tools/mlxcel/env.c" || fail "env.c reads no variable"
  echo "ok: only tools/mlxcel/env.c reads the environment ($n library files checked)"
}

# The variables of `mlxcel --help`, one "NAME cmd cmd ..." line each (the bracket line under a
# name lists its commands).
table() {
  "$MLXCEL" --help | awk '
    /^Environment/ { on = 1; next }
    on && /^  MLXCEL_/ { name = $1; next }
    on && /^ +\[/ { gsub(/[][]/, ""); sub(/^ +/, ""); print name, $0 }'
}

# The command names of `mlxcel --help`.
commands() {
  "$MLXCEL" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }'
}

case_help() {
  local tab
  tab=$(table)
  [ "$(echo "$tab" | wc -l)" -ge 8 ] || fail "mlxcel --help lists too few variables:
$tab"
  # Every variable a CLI source mentions (help text, messages, env.c) is in the table and is
  # read in env.c.
  local v
  for v in $(grep -ohE 'MLXCEL_[A-Z0-9_]+' "$SRC"/tools/mlxcel/*.c "$SRC"/tools/mlxcel/*.h |
             grep -vxE 'MLXCEL_(VERSION|TOOLS_[A-Z_]*_H)' | sort -u); do
    echo "$tab" | grep -q "^$v " || fail "$v appears in tools/mlxcel but not in mlxcel --help"
  done
  # (Its name stands in env.c twice at least: its row, and where it is read.)
  for v in $(echo "$tab" | cut -d' ' -f1); do
    [ "$(grep -o "\"$v\"" "$SRC/tools/mlxcel/env.c" | wc -l)" -ge 2 ] ||
      fail "$v is in the table but env.c does not read it"
  done
  # Each command's --help lists exactly the table's variables for it.
  local c n=0
  for c in $(commands); do
    local want got
    want=$(echo "$tab" | awk -v c="$c" '{ for (i = 2; i <= NF; i++) if ($i == c) print $1 }' | sort)
    got=$("$MLXCEL" "$c" --help | awk '/^Environment/ { on = 1; next } on && /^  MLXCEL_/ { print $1 }' |
          sort)
    [ "$want" = "$got" ] || fail "mlxcel $c --help lists [$(echo $got)], the table gives [$(echo $want)]"
    n=$((n + 1))
  done
  [ "$n" -ge 12 ] || fail "only $n commands in mlxcel --help"
  echo "ok: $(echo "$tab" | wc -l) variables, $n commands' --help agree with the table"
}

# A small invocation of every command that reaches the point where it reads its variables.
invocation() {
  local m=$SRC/models/stories260K
  case $1 in
    generate) echo "generate -m $m --prompt-ids 1 -n 1" ;;
    chat) echo "chat -m $TMP/tiny" ;;  # a model with a chat template; stdin: /dev/null
    tokenize) echo "tokenize -m $m hi" ;;
    detokenize) echo "detokenize -m $m --ids 1" ;;
    template) echo "template -m $TMP/tiny -p hi" ;;
    logits) echo "logits -m $m --ids 1 -o $TMP/l.npy" ;;
    emit) echo "emit -m $m -o $TMP/emit" ;;
    # (iree-compile is $TMP/fake-iree: it writes an empty module at once.)
    compile) echo "compile -m $m -o $TMP/compiled" ;;
    image) echo "image --config $SRC/tests/data/image/configs/siglip384/preprocessor_config.json $SRC/tests/data/image/inputs/astronaut.png" ;;
    mkmodel) echo "mkmodel --arch llama --preset tiny -o $TMP/mk --force -q" ;;
    bench) echo "bench -m $m --machine-file $TMP/machine.json --prompt 4 --gen 2 --reps 1" ;;
    quantize) echo "quantize -m $m -o $TMP/q --bits 8" ;;
    serve) echo "serve -m $m --port 0" ;;  # a bad variable fails it before it listens
    run) echo "run --weights $m --quant auto --ids 1 $TMP/graphs/decode.mlir" ;;
    diff) echo "diff -m $m --ids 1" ;;
    *) fail "no invocation for command $1 (add one to tests/cli_env.sh)" ;;
  esac
}

case_reads() {
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100}' >"$TMP/machine.json"
  printf '#!/bin/sh\nwhile [ $# -gt 1 ]; do [ "$1" = -o ] && : >"$2"; shift; done\n' \
    >"$TMP/fake-iree"
  chmod +x "$TMP/fake-iree"
  "$MLXCEL" mkmodel --arch qwen2 --preset tiny -o "$TMP/tiny" -q || fail "mkmodel tiny failed"
  "$MLXCEL" emit -m "$SRC/models/stories260K" -o "$TMP/graphs" >/dev/null 2>&1 ||
    fail "emit of stories260K failed"
  local tab
  tab=$(table)
  # A bad value for every variable of the table, except those that have none (exempt).
  local bad="MLXCEL_BACKEND=bogus MLXCEL_XLA_CONTEXT_CAPACITY=x MLXCEL_THREADS=0
    MLXCEL_QUANT_KERNEL=bogus MLXCEL_XLA_QUANT=bogus MLXCEL_XLA_PRECISION=bogus
    MLXCEL_XLA_KV_DTYPE=bogus MLXCEL_XLA_IREE_COMPILE=/nonexistent
    MLXCEL_XLA_VISION_BACKEND=bogus"
  # Variables without a bad value to try: any value is valid (MLXCEL_CPU_PROFILE: set and not 0
  # is on), or it is read only in a mode the invocations below do not use
  # (MLXCEL_XLA_ROCM_TARGET: compile --device hip; MLXCEL_XLA_DEVICE, _PJRT_PLUGIN, _CACHE_DIR and
  # _ATTN_WINDOW: --backend xla, see tests/cli_xla.sh).
  local exempt="MLXCEL_CPU_PROFILE MLXCEL_XLA_ROCM_TARGET MLXCEL_XLA_DEVICE MLXCEL_XLA_PJRT_PLUGIN
    MLXCEL_XLA_CACHE_DIR MLXCEL_XLA_ATTN_WINDOW"
  local here table_vars
  here=$( (echo $bad | tr ' ' '\n' | cut -d= -f1; echo $exempt | tr ' ' '\n') | sort | tr '\n' ' ')
  table_vars=$(echo "$tab" | cut -d' ' -f1 | sort | tr '\n' ' ')
  [ "$here" = "$table_vars" ] ||
    fail "the table has [$table_vars], this test knows [$here]: give each new variable a bad value"
  local c kv n=0
  for c in $(commands); do
    local args
    args=$(invocation "$c")
    for kv in $bad; do
      local v=${kv%%=*}
      local reads=no
      echo "$tab" | awk -v v="$v" -v c="$c" '$1 == v { for (i = 2; i <= NF; i++) if ($i == c) f = 1 }
        END { exit !f }' && reads=yes
      # shellcheck disable=SC2086
      # shellcheck disable=SC2086
      env MLXCEL_XLA_IREE_COMPILE="$TMP/fake-iree" "$kv" timeout 60 "$MLXCEL" $args \
        </dev/null >"$TMP/out" 2>"$TMP/err" &
      local pid=$! k=0
      # serve runs until a signal: once it listens, SIGINT drains it and it exits 0.
      while [ "$c" = serve ] && kill -0 $pid 2>/dev/null && ! grep -q listening "$TMP/err" &&
            [ $k -lt 500 ]; do
        sleep 0.1
        k=$((k + 1))
      done
      [ "$c" = serve ] && pkill -INT -P $pid 2>/dev/null
      wait $pid
      local rc=$?
      if [ $reads = yes ]; then
        [ $rc -ne 0 ] && grep -q "$v" "$TMP/err" ||
          fail "$kv mlxcel $args: exit $rc without naming $v, but the table says $c reads it:
$(tail -n 3 "$TMP/err")"
      else
        # (It must also succeed: a run that fails early for another reason proves nothing.)
        [ $rc -eq 0 ] && ! grep -q "$v" "$TMP/err" ||
          fail "$kv mlxcel $args: exit $rc, and the table does not give $v to $c:
$(tail -n 3 "$TMP/err")"
      fi
      n=$((n + 1))
    done
  done
  echo "ok: $n command x variable runs agree with the table"
}

"case_$CASE"
