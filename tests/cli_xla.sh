#!/usr/bin/env bash
# End-to-end tests of `--backend xla` on the bundled stories260K model with the PJRT CPU plugin of
# the test environment (tests/requirements.txt; its path asked of PYTHON, which must have it:
# a missing plugin fails, never skips).
# Usage: tests/cli_xla.sh MLXCEL SOURCE_DIR PYTHON FAKE_PLUGIN TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
PYTHON=$3
FAKE=$4
NAME=$5
MODEL=$SRC/models/stories260K
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY MLXCEL_XLA_PRECISION MLXCEL_XLA_KV_DTYPE \
  MLXCEL_XLA_DEVICE MLXCEL_XLA_PJRT_PLUGIN VIRTUAL_ENV CONDA_PREFIX
# Every run here keeps its compiled entries in this test's own cache.
export MLXCEL_XLA_CACHE_DIR=$TMP/cache
source "$SRC/tests/cli_lib.sh"
PLUGIN=$("$PYTHON" -c 'import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)') || {
  echo "FAILED: the PJRT CPU plugin (lammps-jax-pjrt-cpu, tests/requirements.txt) is not in" \
    "$PYTHON: run scripts/venv.sh"
  exit 1
}
# The environment PLUGIN is installed in (VIRTUAL_ENV is how an activated venv announces itself).
VENV=$(cd "$(dirname "$PLUGIN")/../../../.." && pwd)
PROMPT="Once upon a time"

# Greedy text of generate, logits of every position and decode step of logits: the same as cpu.
t_parity() {
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 32 --temp 0 --backend cpu
  expect_rc 0
  cp "$TMP/out" "$TMP/cpu.txt"
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 32 --temp 0 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 0
  cmp -s "$TMP/out" "$TMP/cpu.txt" || fail "generate --backend xla differs from cpu"
  expect_err "backend xla"
  local ids=1,403,407,261,378,109,365,261,137
  run "$MLXCEL" logits -m "$MODEL" --ids $ids -o "$TMP/cpu.npy" --greedy 8 --backend cpu
  expect_rc 0
  run "$MLXCEL" logits -m "$MODEL" --ids $ids -o "$TMP/xla.npy" --greedy 8 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 0
  run "$PYTHON" -c "
import numpy as np, sys
a, b = np.load('$TMP/cpu.npy'), np.load('$TMP/xla.npy')
d = float(np.abs(a - b).max())
print(a.shape, d)
sys.exit(0 if a.shape == b.shape and d <= 1e-4 else 1)"
  expect_rc 0
}

# The variables: MLXCEL_BACKEND and MLXCEL_XLA_PJRT_PLUGIN, and MLXCEL_XLA_DEVICE finding the
# installed plugin package in the active virtual environment.
t_env() {
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 16 --temp 0 --backend cpu
  cp "$TMP/out" "$TMP/cpu.txt"
  MLXCEL_BACKEND=xla MLXCEL_XLA_PJRT_PLUGIN=$PLUGIN run "$MLXCEL" generate -m "$MODEL" \
    -p "$PROMPT" -n 16 --temp 0
  expect_rc 0
  expect_err "backend xla"
  cmp -s "$TMP/out" "$TMP/cpu.txt" || fail "MLXCEL_BACKEND=xla differs from cpu"
  VIRTUAL_ENV=$VENV MLXCEL_XLA_DEVICE=cpu run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" \
    -n 16 --temp 0 --backend xla
  expect_rc 0
  cmp -s "$TMP/out" "$TMP/cpu.txt" || fail "MLXCEL_XLA_DEVICE=cpu differs from cpu"
}

# Clear errors and a clean exit (status 1, or 3 for an unreadable file) for each way to get the
# plugin wrong.
t_errors() {
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla
  expect_rc 1
  expect_err "needs a PJRT plugin: pass --pjrt-plugin PATH, set MLXCEL_XLA_PJRT_PLUGIN"
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla --pjrt-plugin /nonexistent.so
  expect_rc 3
  expect_err "cannot load PJRT plugin '/nonexistent.so'"
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla --pjrt-plugin libc.so.6
  expect_rc 1
  expect_err "'libc.so.6' is not a PJRT plugin: it does not export GetPjrtApi"
  run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla --pjrt-plugin "$FAKE"
  expect_rc 1
  expect_err "implements PJRT C API 1.3; mlxcel needs 0.81 or a later 0.x"
  MLXCEL_XLA_DEVICE=abacus run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla
  expect_rc 1
  expect_err "MLXCEL_XLA_DEVICE='abacus': no known plugin package"
  HOME=$TMP MLXCEL_XLA_DEVICE=rocm run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 \
    --backend xla
  if ! compgen -G "/usr/lib/python3*/site-packages/jax_plugins/xla_rocm*" >/dev/null &&
    ! compgen -G "/usr/local/lib/python3*/*-packages/jax_plugins/xla_rocm*" >/dev/null; then
    expect_rc 1
    expect_err "MLXCEL_XLA_DEVICE='rocm': no installed PJRT plugin found"
  fi
  MLXCEL_XLA_DEVICE=cuda run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 1
  expect_err "device 'cuda' asked, but the PJRT plugin '.*' runs on 'cpu'"
  MLXCEL_XLA_CACHE_DIR=/proc/no/such run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 \
    --backend xla --pjrt-plugin "$PLUGIN"
  expect_rc 3
  expect_err "cannot create the XLA compile cache directory"
}

# A second start of the same model compiles nothing: every compile writes its cache file anew
# (under a fresh inode), so unchanged files mean none happened.
t_cache() {
  local c=$TMP/cache2
  MLXCEL_XLA_CACHE_DIR=$c run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 8 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 0
  local before after
  before=$(cd "$c" && ls -i --full-time ./*.pjrt 2>/dev/null)
  [ "$(echo "$before" | grep -c pjrt)" -eq 2 ] || fail "expected 2 cache files (@prefill T = 4, @decode): $before"
  MLXCEL_XLA_CACHE_DIR=$c run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 8 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 0
  after=$(cd "$c" && ls -i --full-time ./*.pjrt 2>/dev/null)
  [ "$before" = "$after" ] || fail "the second start rewrote the cache: $before / $after"
  # Without a cache nothing is written.
  MLXCEL_XLA_CACHE_DIR=none run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 8 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 0
}

# Windowed attention entries (ADR 0015): with MLXCEL_XLA_ATTN_WINDOW=4 a 16-token generation
# runs windows 4, 8 and 16 (one cache file each for @decode, more for the prompt's pieces) and
# writes the same text as whole-capacity entries (none).
t_windows() {
  local c=$TMP/cache_w
  MLXCEL_XLA_ATTN_WINDOW=none MLXCEL_XLA_CACHE_DIR=$c run "$MLXCEL" generate -m "$MODEL" \
    -p "$PROMPT" -n 16 --ctx 64 --backend xla --pjrt-plugin "$PLUGIN"
  expect_rc 0
  local whole n0
  whole=$(cat "$TMP/out")
  n0=$(ls "$c"/*.pjrt | wc -l)
  MLXCEL_XLA_ATTN_WINDOW=4 MLXCEL_XLA_CACHE_DIR=$c run "$MLXCEL" generate -m "$MODEL" \
    -p "$PROMPT" -n 16 --ctx 64 --backend xla --pjrt-plugin "$PLUGIN"
  expect_rc 0
  [ "$(cat "$TMP/out")" = "$whole" ] || fail "windowed entries wrote different text"
  local n1
  n1=$(ls "$c"/*.pjrt | wc -l)
  [ "$n1" -ge $((n0 + 3)) ] || fail "MLXCEL_XLA_ATTN_WINDOW=4 made $((n1 - n0)) new entries (>= 3 expected)"
  MLXCEL_XLA_ATTN_WINDOW=x run "$MLXCEL" generate -m "$MODEL" -p "$PROMPT" -n 4 --backend xla \
    --pjrt-plugin "$PLUGIN"
  expect_rc 1; expect_err "MLXCEL_XLA_ATTN_WINDOW='x' is not a positive integer or none"
}

# bench reports the compile time apart from the run.
t_bench() {
  echo '{"bandwidth_gbs": 10, "peak_gflops": 100, "threads": 1}' >"$TMP/mf.json"
  run "$MLXCEL" bench -m "$MODEL" --prompt 16 --gen 8 --reps 1 --threads 1 \
    --machine-file "$TMP/mf.json" --backend xla --pjrt-plugin "$PLUGIN"
  expect_rc 0
  expect_out "xla compile: 2 entries compiled, 0 loaded from the cache"
}

# Images and audio on the xla backend: generate --image on the LLaVA and Qwen3-VL fixtures and
# --audio on the Gemma 3n one give transformers' greedy ids (the cpu backend's), with the whole model on xla and
# with only the tower there (--vision-backend xla, MLXCEL_XLA_VISION_BACKEND=xla) under cpu.
t_media() {
  local L=$SRC/tests/data/families/llava IMG=$SRC/tests/data/image/inputs/chelsea.png want
  local P=$'USER: <image>\nWhat is in the picture? ASSISTANT:'
  want=$("$PYTHON" -c 'import json, sys
print(",".join(map(str, json.load(open(sys.argv[1]))["greedy_ids"])))' "$L/vision_reference.json")
  run "$MLXCEL" generate -m "$L" --backend xla --pjrt-plugin "$PLUGIN" --image "$IMG" -p "$P" \
    -n 16 --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "--backend xla --image: greedy ids $(ids_of), want $want"
  run "$MLXCEL" generate -m "$L" --backend cpu --vision-backend xla --pjrt-plugin "$PLUGIN" \
    --image "$IMG" -p "$P" -n 16 --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "cpu text, xla tower: greedy ids $(ids_of), want $want"
  MLXCEL_XLA_VISION_BACKEND=xla MLXCEL_XLA_PJRT_PLUGIN=$PLUGIN run "$MLXCEL" generate -m "$L" \
    --backend cpu --image "$IMG" -p "$P" -n 16 --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "MLXCEL_XLA_VISION_BACKEND=xla: greedy ids $(ids_of)"
  # A tower on xla needs the plugin as the whole model does.
  run "$MLXCEL" generate -m "$L" --backend cpu --vision-backend xla --image "$IMG" -p "$P" -n 2
  expect_rc 1
  expect_err "vision backend xla: the xla backend needs a PJRT plugin"
  # Qwen3-VL: interleaved M-RoPE positions and the DeepStack rows added into the first text
  # layers, on xla whole and with only its tower there.
  local Q=$SRC/tests/data/families/qwen3_vl
  P='Look: <|vision_start|><|image_pad|><|vision_end|>What is in the picture?'
  want=$("$PYTHON" -c 'import json, sys
print(",".join(map(str, json.load(open(sys.argv[1]))["greedy_ids"])))' "$Q/vision_reference.json")
  run "$MLXCEL" generate -m "$Q" --backend xla --pjrt-plugin "$PLUGIN" --image "$IMG" -p "$P" \
    -n 16 --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "qwen3_vl --backend xla: greedy ids $(ids_of), want $want"
  run "$MLXCEL" generate -m "$Q" --backend cpu --vision-backend xla --pjrt-plugin "$PLUGIN" \
    --image "$IMG" -p "$P" -n 16 --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "qwen3_vl cpu text, xla tower: greedy ids $(ids_of), want $want"
  local A=$SRC/tests/data/families/gemma3n-audio D=$TMP/g3n WAV=$SRC/tests/data/audio/pluck-pcm16.wav
  mkdir -p "$D" && ln -s "$A/config.json" "$A/model.safetensors" "$D/" &&
    "$PYTHON" "$SRC/tests/cli_audio_tokenizer.py" "$D" || fail "cannot write the tokenizer"
  want=$("$PYTHON" -c 'import json, sys
print(",".join(map(str, json.load(open(sys.argv[1]))["greedy_ids"])))' "$A/audio_reference.json")
  run "$MLXCEL" generate -m "$D" --audio "$WAV" --prompt-ids 1,10,20,30,250,273,273,273,273,273,273,272,40,50,256,60 \
    -n 16 --ignore-eos --temp 0 --backend xla --pjrt-plugin "$PLUGIN" --json
  expect_rc 0
  [ "$(ids_of)" = "$want" ] || fail "--backend xla --audio: greedy ids $(ids_of), want $want"
  expect_out '"audio": 1, "audio_seconds"'
}

# Greedy ids of a --json generation in $TMP/out, comma-separated.
ids_of() { grep -o '"id": [0-9]*' "$TMP/out" | sed 's/"id": //' | paste -sd, -; }

run_tests "$NAME" "parity env errors cache windows bench media"
