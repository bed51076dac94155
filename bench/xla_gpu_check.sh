#!/usr/bin/env bash
# The xla backend on an NVIDIA GPU, in one run of at most ten minutes, on a machine whose image
# has jax's CUDA PJRT plugin installed (site-packages/jax_plugins/xla_cuda*/), nvcc, cmake and a
# C compiler, and no network. Usage: bench/xla_gpu_check.sh [BUILD_DIR]
#
# What it checks, in order (each step's output goes to $WORK/*.log; the summary is the last
# thing printed, and the exit status is 0 only when every check passed):
#  1. the machine: nvidia-smi lists a GPU, nvcc and cmake run;
#  2. the build: mlxcel configured and built in Release (BUILD_DIR, default build-gpu-check);
#  3. the plugin: `MLXCEL_XLA_DEVICE=cuda` finds the installed jax CUDA plugin by itself (the
#     CLI's search of site-packages; MLXCEL_XLA_PJRT_PLUGIN, when set, is used instead), loads
#     it and runs on platform "cuda";
#  4. parity, on stories260K (in the repository) and a random-weight SmolLM2-135M-shape model
#     (`mlxcel mkmodel`, 135M parameters, the size where a GPU starts to matter): the cpu
#     backend's 32 greedy ids (`generate --temp 0`), then the logits of every position of prompt
#     + those ids on both backends (`logits`, the same inputs): the check passes when the xla
#     backend's argmax agrees at >= 90% of the positions and max |dlogit| <= 2^-4 of the largest
#     |logit| (the precision gate's bf16 bound: XLA's GPU compiler runs f32 dots as TF32 by
#     default, so f32 logits are not held to the CPU's 1e-4);
#  5. speed rows: `mlxcel bench` of both models on the cpu backend and on the xla backend (GPU),
#     prompt 128, 64 decode steps, 3 reps; the xla rows' compile time is reported apart (it is
#     not in the tok/s);
#  6. the compile cache: a second `generate --backend xla` of SmolLM2-135M loads every entry
#     from the cache (its start-up time beside the first's).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-gpu-check}
WORK=$(mktemp -d /tmp/xla_gpu_check.XXXXXX)
export MLXCEL_XLA_CACHE_DIR=$WORK/cache
START=$SECONDS
declare -a SUMMARY
status=0
note() { SUMMARY+=("$*"); echo "== $*"; }
failed() { note "FAIL: $*"; status=1; }
# Runs a step with what is left of the ten minutes (at most $1 seconds).
step() {
  local limit=$1 log=$2
  shift 2
  local left=$((600 - (SECONDS - START) - 15))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    echo "out of time before: $*" >"$WORK/$log"
    return 124
  fi
  timeout "$limit" "$@" >"$WORK/$log" 2>&1
}

# ---- 1. the machine ----
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
  head -1)
[ -n "$gpu" ] && note "GPU: $gpu" || failed "nvidia-smi lists no GPU"
nvcc --version >/dev/null 2>&1 && note "nvcc: $(nvcc --version | grep -o 'release [0-9.]*')" ||
  failed "no nvcc"
command -v cmake >/dev/null || { failed "no cmake"; printf '%s\n' "${SUMMARY[@]}"; exit 1; }

# ---- 2. the build ----
if step 300 build.log bash -c "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_BUILD_TYPE=Release &&
    cmake --build '$BUILD' -j\$(nproc) --target mlxcel"; then
  note "build: ok ($((SECONDS - START)) s)"
else
  failed "build (see $WORK/build.log)"
  tail -20 "$WORK/build.log"
  printf '%s\n' "${SUMMARY[@]}"
  exit 1
fi
MLX=$BUILD/mlxcel

# ---- 3. the plugin ----
[ -z "${MLXCEL_XLA_PJRT_PLUGIN:-}" ] && export MLXCEL_XLA_DEVICE=cuda
STORIES=$ROOT/models/stories260K
if step 120 plugin.log "$MLX" generate -m "$STORIES" -p "Once upon a time" -n 4 --temp 0 \
  --backend xla; then
  note "plugin: ${MLXCEL_XLA_PJRT_PLUGIN:-found by MLXCEL_XLA_DEVICE=cuda}: runs"
else
  failed "the xla backend does not start on the GPU: $(tail -1 "$WORK/plugin.log")"
fi

# ---- 4. parity ----
SMOL=$WORK/smollm2-135m
step 120 mkmodel.log "$MLX" mkmodel --arch llama --preset smollm2-135m -o "$SMOL" --force -q ||
  failed "mkmodel smollm2-135m (see $WORK/mkmodel.log)"
PROMPT_IDS=1,403,407,261,378,109,365,261,137,362,278
parity() { # NAME DIR
  local name=$1 dir=$2 ids
  if ! step 120 "$name.gen.log" "$MLX" generate -m "$dir" --prompt-ids "$PROMPT_IDS" -n 32 \
    --temp 0 --ignore-eos --json --no-echo --backend cpu; then
    failed "$name: cpu generate (see $WORK/$name.gen.log)"
    return
  fi
  ids=$(grep -o '"id": [0-9]*' "$WORK/$name.gen.log" | grep -o '[0-9]*' | paste -sd, -)
  for be in cpu xla; do
    step 180 "$name.$be.log" "$MLX" logits -m "$dir" --ids "$PROMPT_IDS,$ids" \
      -o "$WORK/$name.$be.npy" --backend $be || {
      failed "$name: logits on $be (see $WORK/$name.$be.log)"
      return
    }
  done
  local verdict
  verdict=$(python3 - "$WORK/$name.cpu.npy" "$WORK/$name.xla.npy" <<'EOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
same = float((a.argmax(-1) == b.argmax(-1)).mean())
d, m = float(np.abs(a - b).max()), float(np.abs(a).max())
ok = a.shape == b.shape and same >= 0.9 and d <= m / 16
print(f"{'ok' if ok else 'FAIL'} argmax agrees at {same:.3f} of {a.shape[0]} positions, "
      f"max |dlogit| {d:.3g} (max |logit| {m:.3g}, bound {m / 16:.3g})")
EOF
  ) || verdict="FAIL (python3 with numpy is needed to compare the logits)"
  case $verdict in ok*) note "parity $name: $verdict" ;; *) failed "parity $name: $verdict" ;; esac
}
parity stories260K "$STORIES"
[ -s "$SMOL/model.safetensors" ] && parity smollm2-135m "$SMOL"

# ---- 5. speed ----
# The machine's limits are not measured (a minute of the budget): the rows' "% of limit" columns
# are meaningless here, the tok/s are what counts.
echo '{"bandwidth_gbs": 1, "peak_gflops": 1, "threads": 0}' >"$WORK/mf.json"
bench() { # NAME DIR BACKEND
  local log=$1.bench.$3.log
  if step 180 "$log" "$MLX" bench -m "$2" --prompt 128 --gen 64 --reps 3 \
    --machine-file "$WORK/mf.json" --backend "$3"; then
    local pre dec comp
    pre=$(awk '$1 == "prefill" {print $4; exit}' "$WORK/$log")
    dec=$(awk '$1 == "decode" {print $4; exit}' "$WORK/$log")
    comp=$(grep -o 'xla compile: .*' "$WORK/$log")
    note "speed $1 $3: prefill $pre tok/s, decode $dec tok/s${comp:+; $comp}"
  else
    failed "bench $1 on $3 (see $WORK/$log): $(tail -1 "$WORK/$log")"
  fi
}
for m in stories260K smollm2-135m; do
  dir=$STORIES
  [ $m = smollm2-135m ] && dir=$SMOL
  [ -s "$dir/model.safetensors" ] || continue
  bench $m "$dir" cpu
  bench $m "$dir" xla
done

# ---- 6. the compile cache ----
if [ -s "$SMOL/model.safetensors" ]; then
  rm -rf "$MLXCEL_XLA_CACHE_DIR"
  for run in first second; do
    t0=$(date +%s%N)
    step 150 "cache.$run.log" "$MLX" generate -m "$SMOL" --prompt-ids "$PROMPT_IDS" -n 8 \
      --temp 0 --backend xla || failed "cache: $run generate (see $WORK/cache.$run.log)"
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    eval "t_$run=$((ms / 1000)).$(printf %03d $((ms % 1000)))"
  done
  note "start-up + 8 tokens of smollm2-135m on the GPU: ${t_first:-?} s compiling, ${t_second:-?} s from the compile cache"
fi

echo
echo "==== xla_gpu_check summary ($((SECONDS - START)) s; logs in $WORK) ===="
printf '%s\n' "${SUMMARY[@]}"
[ "$status" -eq 0 ] && echo "ALL CHECKS PASSED" || echo "SOME CHECKS FAILED"
exit "$status"
