#!/usr/bin/env bash
# End-to-end tests of weight quantization on the command line: --quant / --group-size on the
# model commands, `mlxcel quantize`, emitted quantized graphs re-run by the interpreter, bench's
# JSON. On the bundled stories260K model (and ../shared's MLX copies when present).
# Usage: tests/cli_quant.sh MLXCEL SOURCE_DIR TEST_NAME   ("all" runs every test)
set -u
MLXCEL=$1
SRC=$2
NAME=$3
MODEL=$SRC/models/stories260K
SHARED=${MX_SHARED:-$SRC/../shared}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset MLXCEL_BACKEND MLXCEL_XLA_CONTEXT_CAPACITY MLXCEL_XLA_QUANT MLXCEL_QUANT_KERNEL

# upstream llama2.c run.c (shared/models/stories260K/reference-greedy.json): "Once upon a time"
# and the first 32 ids of its greedy (f32) continuation, which int8 must reproduce.
PROMPT_IDS="1,403,407,261,378"
GREEDY32="432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322 \
265 282 295 433 426 385 328 432 358 394"

fails=0
skips=0
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
skip() { echo "SKIP: $*"; skips=$((skips + 1)); }
expect_rc() { [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"; }
expect_out() { grep -qE -- "$1" "$TMP/out" || fail "stdout does not match /$1/"; }
expect_err() { grep -qE -- "$1" "$TMP/err" || fail "stderr does not match /$1/"; }
ids_of() { grep -o '"id": [0-9]*' "$1" | sed 's/"id": //' | tr '\n' ' ' | sed 's/ $//'; }

npy_floats() { # FILE: one float per line
  local hlen
  hlen=$(od -An -tu2 -j8 -N2 "$1" | tr -d ' ')
  tail -c +$((10 + hlen + 1)) "$1" | od -An -v -tf4 | tr -s ' ' '\n' | sed '/^$/d'
}
max_abs_diff() {
  npy_floats "$1" >"$TMP/a.txt"
  npy_floats "$2" >"$TMP/b.txt"
  [ "$(wc -l <"$TMP/a.txt")" -eq "$(wc -l <"$TMP/b.txt")" ] || { echo "size-mismatch"; return; }
  paste "$TMP/a.txt" "$TMP/b.txt" |
    awk '{d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d} END {printf "%.3g\n", m + 0}'
}
le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a ~ /^[0-9.eE+-]+$/ && a + 0 <= b + 0)}'; }

# edit_safetensors DIR add NAME DTYPE D0,D1 | drop NAME | rename FROM TO: edits DIR's single
# model.safetensors (zeros for an added tensor; a renamed one replaces any tensor of its new name)
# and removes its index.
edit_safetensors() {
  python3 - "$@" <<'PY' || fail "could not edit $1/model.safetensors"
import json, os, struct, sys
d, op = sys.argv[1], sys.argv[2]
path = os.path.join(d, "model.safetensors")
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = raw[8 + n:]
if op == "add":
    shape = [int(x) for x in sys.argv[5].split(",")]
    size = 2 * shape[0] * shape[1]
    head[sys.argv[3]] = {"dtype": sys.argv[4], "shape": shape,
                         "data_offsets": [len(data), len(data) + size]}
    data += bytes(size)
elif op == "drop":
    del head[sys.argv[3]]
else:
    head[sys.argv[4]] = head.pop(sys.argv[3])
h = json.dumps(head, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
index = os.path.join(d, "model.safetensors.index.json")
if os.path.exists(index):
    os.remove(index)
PY
}

# quantize_router SRC DST quant|float: SRC with layer 0's router replaced by its MLX affine 8-bit
# quantization (groups of 32, f16 scales and biases) or by that quantization's f32 values.
quantize_router() {
  python3 - "$@" <<'PY' || fail "could not quantize the router of $1"
import json, os, shutil, struct, sys
src, dst, form = sys.argv[1], sys.argv[2], sys.argv[3]
name = "model.layers.0.block_sparse_moe.gate"
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
path = os.path.join(dst, "model.safetensors")
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = raw[8 + n:]
meta = head.pop("__metadata__", None)
v = head[name + ".weight"]
rows, k = v["shape"]
b = data[v["data_offsets"][0]:v["data_offsets"][1]]
w = struct.unpack("<%de" % (rows * k), b) if v["dtype"] == "F16" else struct.unpack("<%df" % (rows * k), b)
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
f16 = lambda x: struct.unpack("<e", struct.pack("<e", x))[0]
words, scales, biases, deq = [], [], [], []
for r in range(rows):
    for g in range(k // 32):
        grp = w[r * k + g * 32:(r + 1) * k][:32]
        lo, hi = min(grp), max(grp)
        s, bb = f16((hi - lo) / 255 or 1.0), f16(lo)
        u = [max(0, min(255, round((x - bb) / s))) for x in grp]
        scales.append(s)
        biases.append(bb)
        deq += [f32(f32(q * s) + bb) for q in u]
        words += [u[i] | u[i + 1] << 8 | u[i + 2] << 16 | u[i + 3] << 24 for i in range(0, 32, 4)]
out = {}
for key, t in head.items():
    if key != name + ".weight":
        out[key] = (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
if form == "quant":
    out[name + ".weight"] = ("U32", [rows, k // 4], struct.pack("<%dI" % len(words), *words))
    out[name + ".scales"] = ("F16", [rows, k // 32], struct.pack("<%de" % len(scales), *scales))
    out[name + ".biases"] = ("F16", [rows, k // 32], struct.pack("<%de" % len(biases), *biases))
else:
    out[name + ".weight"] = ("F32", [rows, k], struct.pack("<%df" % len(deq), *deq))
hdr, body, off = ({"__metadata__": meta} if meta else {}), [], 0
for key in sorted(out):
    dt, shape, bb = out[key]
    hdr[key] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(bb)]}
    off += len(bb)
    body.append(bb)
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(body))
PY
}

# restack SRC DST: a Mixtral checkpoint with per-expert tensors (experts.<e>.w1 / w3 / w2)
# rewritten as mlx-lm stores MoE layers: switch_mlp.gate_proj / up_proj / down_proj.<part>,
# each expert's tensor stacked along a new first dimension, in expert order.
restack() {
  python3 - "$1" "$2" <<'PY' || fail "could not restack $1"
import json, os, re, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
names = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}
os.makedirs(dst, exist_ok=True)
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = raw[8 + n:]
meta = head.pop("__metadata__", None)
out, stacks = {}, {}
for k, v in head.items():
    b = data[v["data_offsets"][0]:v["data_offsets"][1]]
    m = re.match(r"(.*)experts\.(\d+)\.(w[123])\.(weight|scales|biases)$", k)
    if m:
        key = "%sswitch_mlp.%s.%s" % (m.group(1), names[m.group(3)], m.group(4))
        stacks.setdefault(key, {})[int(m.group(2))] = (v, b)
    else:
        out[k] = (v["dtype"], v["shape"], b)
for key, ex in stacks.items():
    v0 = ex[0][0]
    out[key] = (v0["dtype"], [len(ex)] + v0["shape"], b"".join(ex[e][1] for e in sorted(ex)))
hdr, body, off = ({"__metadata__": meta} if meta else {}), [], 0
for k in sorted(out):
    dt, shape, b = out[k]
    hdr[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
    off += len(b)
    body.append(b)
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
open(os.path.join(dst, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b"".join(body))
for f in os.listdir(src):
    if f not in ("model.safetensors", "model.safetensors.index.json"):
        shutil.copy(os.path.join(src, f), dst)
PY
}

t_help() {
  run "$MLXCEL" --help
  expect_rc 0; expect_out '^  quantize '
  run "$MLXCEL" quantize --help
  expect_rc 0; expect_out '^Usage: mlxcel quantize'; expect_out -- '--bits'; expect_out 'Exit status'
  for c in generate chat logits bench emit serve; do
    run "$MLXCEL" "$c" --help
    expect_rc 0; expect_out -- '--quant MODE'; expect_out -- '--group-size'
  done
  run "$MLXCEL" run --help
  expect_out -- '--quant MODE'
}

t_errors() {
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q"
  expect_rc 2; expect_err 'missing --bits'
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q" --bits 3
  expect_rc 2; expect_err -- '--bits 3: 4 or 8'
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q" --bits 4 --group-size 48
  expect_rc 2; expect_err '32, 64 or 128'
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q" --bits 4 --dtype f64
  expect_rc 2; expect_err "--dtype 'f64'"
  run "$MLXCEL" quantize -m "$TMP/nope" -o "$TMP/q" --bits 4
  expect_rc 3; expect_err 'nope'
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 --quant q4
  expect_rc 2; expect_err "'q4' is not a quantization mode"
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 --group-size 48
  expect_rc 2; expect_err '48 is not 32, 64 or 128'
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 --quant mlx
  expect_rc 1; expect_err 'needs an MLX-quantized checkpoint'
  run "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 --group-size 32
  expect_rc 1; expect_err 'applies to --quant int8 / int4 only'
  run env MLXCEL_XLA_QUANT=fp8 "$MLXCEL" generate -m "$MODEL" --prompt-ids 1
  expect_rc 1; expect_err "MLXCEL_XLA_QUANT: 'fp8'"
  run env MLXCEL_QUANT_KERNEL=fast "$MLXCEL" generate -m "$MODEL" --prompt-ids 1 -n 1
  expect_rc 1; expect_err "MLXCEL_QUANT_KERNEL: 'fast' is not a quantized kernel"
  run env MLXCEL_QUANT_KERNEL=fast "$MLXCEL" diff -m "$MODEL" --ids 1
  expect_rc 1; expect_err "MLXCEL_QUANT_KERNEL: 'fast' is not a quantized kernel"
  # Mixture-of-experts checkpoints with malformed quantized experts: refused naming the tensors.
  local mix=$SRC/tests/data/families/mixtral
  # Experts float (the expert width 32 is not a multiple of 64), then a scales tensor beside
  # one of them: an f16 weight with scales is no quantized format.
  run "$MLXCEL" quantize -m "$mix" -o "$TMP/qmix" --bits 4 --group-size 64
  expect_rc 0; expect_err '0 expert projections'
  edit_safetensors "$TMP/qmix" add model.layers.0.block_sparse_moe.experts.0.w1.scales F16 32,1
  run "$MLXCEL" logits -m "$TMP/qmix" --ids 1 -o "$TMP/qmix.npy"
  expect_rc 1
  expect_err 'quantized tensor "model.layers.0.block_sparse_moe.experts.0.w1.weight": dtype f16'
  # Experts quantized, one expert's biases gone: that projection reads as int4, the others
  # as MLX affine, and mx.moe takes one format per layer.
  run "$MLXCEL" quantize -m "$mix" -o "$TMP/qmix" --bits 4 --group-size 32
  expect_rc 0
  edit_safetensors "$TMP/qmix" drop model.layers.1.block_sparse_moe.experts.3.w2.biases
  run "$MLXCEL" logits -m "$TMP/qmix" --ids 1 -o "$TMP/qmix.npy"
  expect_rc 1
  expect_err 'the experts of one layer must share one format: model.layers.1.block_sparse_moe.experts.0.w1.weight is affine 4-bit in groups of 32, model.layers.1.block_sparse_moe.experts.3.w2.weight is int4 4-bit'
  # mlx-lm's stacked layout with a first dimension that is not the number of experts.
  run "$MLXCEL" quantize -m "$mix" -o "$TMP/qmix" --bits 4 --group-size 32
  expect_rc 0
  restack "$TMP/qmix" "$TMP/qstk"
  edit_safetensors "$TMP/qstk" add model.layers.0.block_sparse_moe.switch_mlp.up_proj.extra F16 7,1
  edit_safetensors "$TMP/qstk" rename model.layers.0.block_sparse_moe.switch_mlp.up_proj.extra \
    model.layers.0.block_sparse_moe.switch_mlp.up_proj.weight
  run "$MLXCEL" logits -m "$TMP/qstk" --ids 1 -o "$TMP/qmix.npy"
  expect_rc 1
  expect_err "stacked expert tensor 'model.layers.0.block_sparse_moe.switch_mlp.up_proj.weight' must have shape \[8, N, K\]"
}

# int8 follows run.c's greedy trajectory for 32 tokens (groups of 64 and 32; via the
# environment too), int4 runs and says so.
t_generate() {
  for g in 64 32; do
    run "$MLXCEL" generate -m "$MODEL" --prompt-ids "$PROMPT_IDS" -n 32 --json --quant int8 \
      --group-size "$g"
    expect_rc 0; expect_out '"quant": "int8"'
    [ "$(ids_of "$TMP/out")" = "$GREEDY32" ] || fail "int8 g$g: greedy ids differ from run.c's"
  done
  run env MLXCEL_XLA_QUANT=int8 "$MLXCEL" generate -m "$MODEL" --prompt-ids "$PROMPT_IDS" -n 32 \
    --json
  expect_rc 0; expect_out '"quant": "int8"'
  [ "$(ids_of "$TMP/out")" = "$GREEDY32" ] || fail "MLXCEL_XLA_QUANT=int8: greedy ids differ"
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 16 --quant int4
  expect_rc 0; expect_out '^Once upon a time'; expect_err 'quant int4'
  run "$MLXCEL" generate -m "$MODEL" -p "Once upon a time" -n 16 --quant int8 --backend interp
  expect_rc 0; expect_err 'backend interp.*quant int8'
}

# mlxcel quantize writes an MLX checkpoint that loads as stored (the default) and as none; on
# the same weights as ../shared's mlx-q4 it gives the same logits.
t_quantize() {
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q4" --bits 4 --group-size 32
  expect_rc 0; expect_err 'wrote'
  for f in config.json model.safetensors model.safetensors.index.json tokenizer.json; do
    [ -s "$TMP/q4/$f" ] || fail "quantize did not write $f"
  done
  grep -q '"quantization"' "$TMP/q4/config.json" || fail "config.json has no quantization"
  run "$MLXCEL" generate -m "$TMP/q4" --prompt-ids "$PROMPT_IDS" -n 8 --json
  expect_rc 0; expect_out '"quant": "mlx"'
  # (The 5 ids run as a 4-token prefill and a decode step; exact kernels for a tight bound.)
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/q4" --ids "$PROMPT_IDS" \
    -o "$TMP/mine.npy" --backend cpu
  expect_rc 0
  run "$MLXCEL" logits -m "$TMP/q4" --ids "$PROMPT_IDS" -o "$TMP/none.npy" --quant none
  expect_rc 0
  local d
  d=$(max_abs_diff "$TMP/mine.npy" "$TMP/none.npy")
  le "$d" 1e-4 || fail "--quant mlx vs none: max |diff| $d > 1e-4"
  local ref=$SHARED/models/stories260K/mlx-q4
  if [ -f "$ref/model.safetensors" ]; then
    run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$ref" --ids "$PROMPT_IDS" \
      -o "$TMP/ref.npy" --backend cpu
    expect_rc 0
    d=$(max_abs_diff "$TMP/mine.npy" "$TMP/ref.npy")
    [ "$d" = 0 ] || fail "quantize output vs the shared mlx-q4: max |diff| $d (expected 0)"
  else
    skip "comparison with $ref (missing)"
  fi
  # An MLX checkpoint requantized to int8 at load.
  run "$MLXCEL" generate -m "$TMP/q4" --prompt-ids "$PROMPT_IDS" -n 8 --json --quant int8
  expect_rc 0; expect_out '"quant": "int8"'
}

# The emitted StableHLO of each mode re-parses and runs on the reference interpreter to the
# fast runtime's logits: within 1e-4 of its exact kernels, within 2e-3 (docs/quantization.md) of
# its default ones (the last of the 5 ids is a decode step: VNNI16 where the CPU has it).
cpu_logits() { # DIR QUANT KERNEL OUT
  run env MLXCEL_QUANT_KERNEL="$3" "$MLXCEL" logits -m "$1" --quant "$2" --ids "$PROMPT_IDS" \
    -o "$4" --backend cpu
  expect_rc 0
}
t_emit_run() {
  run "$MLXCEL" quantize -m "$MODEL" -o "$TMP/q8" --bits 8 --group-size 32
  expect_rc 0
  local spec dir q d
  for spec in "$MODEL:int8" "$MODEL:int4" "$TMP/q8:mlx" "$TMP/q8:none"; do
    dir=${spec%:*}
    q=${spec##*:}
    rm -rf "$TMP/g"
    run "$MLXCEL" emit -m "$dir" -o "$TMP/g" --quant "$q" --ctx 32 --prefill-len 5 --all-logits
    expect_rc 0
    if [ "$q" = none ]; then
      grep -q 'mx.linear' "$TMP/g/prefill.mlir" && fail "--quant none: the graph has mx.linear"
    else
      grep -q '"mx.linear"' "$TMP/g/prefill.mlir" || fail "$q: the graph has no mx.linear"
      grep -q 'stablehlo.shift_right_logical\|stablehlo.convert' "$TMP/g/prefill.mlir" ||
        fail "$q: no unpacking in the decompositions"
    fi
    run "$MLXCEL" run --weights "$dir" --quant "$q" --ids "$PROMPT_IDS" -o "$TMP/e.npy" \
      "$TMP/g/prefill.mlir"
    expect_rc 0
    cpu_logits "$dir" "$q" exact "$TMP/c.npy"
    d=$(max_abs_diff "$TMP/e.npy" "$TMP/c.npy")
    le "$d" 1e-4 || fail "$q: emitted graph vs the cpu runtime (exact): max |diff| $d > 1e-4"
    cpu_logits "$dir" "$q" "" "$TMP/c.npy"
    d=$(max_abs_diff "$TMP/e.npy" "$TMP/c.npy")
    le "$d" 2e-3 || fail "$q: emitted graph vs the cpu runtime (default): max |diff| $d > 2e-3"
  done
  # Plain StableHLO (composites inlined) gives the same logits.
  rm -rf "$TMP/g"
  run "$MLXCEL" emit -m "$MODEL" -o "$TMP/g" --quant int4 --ctx 32 --prefill-len 5 --all-logits \
    --inline-composites
  expect_rc 0
  grep -q 'stablehlo.composite' "$TMP/g/prefill.mlir" && fail "--inline-composites left composites"
  run "$MLXCEL" run --weights "$MODEL" --quant int4 --ids "$PROMPT_IDS" -o "$TMP/e.npy" \
    "$TMP/g/prefill.mlir"
  expect_rc 0
  cpu_logits "$MODEL" int4 exact "$TMP/c.npy"
  d=$(max_abs_diff "$TMP/e.npy" "$TMP/c.npy")
  le "$d" 1e-4 || fail "int4 inlined: max |diff| $d > 1e-4"
}

t_bench_json() {
  run "$MLXCEL" bench -m "$MODEL" --quant int8 --prompt 4 --gen 4 --reps 1 --bw-mib 16 --json
  expect_rc 0
  expect_out '"quant": "int8", "quant_group_size": 64, "quant_bits": 8, "quantized_matrices": 31'
  # 30 projections and the tied head at 1 byte + an f16 scale per 64 weights, down_proj at f32.
  local wb
  wb=$(grep -o '"weight_bytes": [0-9]*' "$TMP/out" | sed 's/.*: //')
  local want
  want=$(awk 'BEGIN {q = 5 * (2*64*64 + 2*32*64 + 2*172*64) + 512*64; printf "%d", q * (1 + 2/64) + 5*64*172*4 + 4*(64 + 11*64)}')
  [ "$wb" = "$want" ] || fail "weight_bytes $wb, expected $want"
  # gpt-oss's MXFP4 experts, kept as stored, are reported as MXFP4 (not as MLX's affine format).
  run "$MLXCEL" bench -m "$SRC/tests/data/families/gpt_oss-mxfp4" --prompt 4 --gen 2 --reps 1 \
    --bw-mib 16 --json
  expect_rc 0; expect_out '"quant": "mxfp4", "quant_group_size": 32, "quant_bits": 4'
}

# Mixture of experts with quantized experts (tests/data/families/mixtral, transformers'
# reference): mlxcel quantize quantizes the experts and leaves the routers float, the cpu
# kernels equal the interpreter's decomposition, mlx-lm's stacked switch_mlp layout loads to the
# same logits, --quant int8 / int4 requantize experts at load, and the emitted graph re-runs.
t_moe() {
  local mix=$SRC/tests/data/families/mixtral ids d q
  ids=$(grep -o '"prompt_ids": \[[^]]*\]' "$mix/reference.json" | sed 's/.*\[//; s/\]//; s/ //g')
  run "$MLXCEL" quantize -m "$mix" -o "$TMP/qmix" --bits 4 --group-size 32
  expect_rc 0
  expect_err '58 matrices quantized \(48 expert projections\); left float: 2 routers'
  grep -q 'experts.0.w1.scales' "$TMP/qmix/model.safetensors.index.json" ||
    fail "no quantized expert in the index"
  grep -q 'block_sparse_moe.gate.scales' "$TMP/qmix/model.safetensors.index.json" &&
    fail "the router was quantized"
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/qmix" --ids "$ids" -o "$TMP/c.npy"
  expect_rc 0
  run "$MLXCEL" logits -m "$TMP/qmix" --ids "$ids" -o "$TMP/i.npy" --backend interp
  expect_rc 0
  d=$(max_abs_diff "$TMP/c.npy" "$TMP/i.npy")
  le "$d" 1e-5 || fail "quantized experts: cpu (exact) vs interp: max |diff| $d > 1e-5"
  restack "$TMP/qmix" "$TMP/qstk"
  grep -q 'switch_mlp' "$TMP/qstk/model.safetensors" || fail "restack wrote no switch_mlp"
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/qstk" --ids "$ids" -o "$TMP/s.npy"
  expect_rc 0
  cmp -s "$TMP/c.npy" "$TMP/s.npy" || fail "the stacked layout gives other logits"
  # A router stored MLX-quantized (8-bit, groups of 32) loads dequantized: the logits of its
  # float copy (dequantized here with the same f32 arithmetic, u * s + b).
  quantize_router "$TMP/qstk" "$TMP/qrq" quant
  quantize_router "$TMP/qstk" "$TMP/qrf" float
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/qrq" --ids "$ids" -o "$TMP/rq.npy"
  expect_rc 0
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/qrf" --ids "$ids" -o "$TMP/rf.npy"
  expect_rc 0
  cmp -s "$TMP/rq.npy" "$TMP/rf.npy" || fail "a quantized router: other logits than its float copy"
  cmp -s "$TMP/rq.npy" "$TMP/s.npy" && fail "quantizing the router changed nothing"
  for q in int8 int4; do
    run "$MLXCEL" logits -m "$mix" --quant "$q" --group-size 32 --ids "$ids" -o "$TMP/c.npy"
    expect_rc 0
    run "$MLXCEL" logits -m "$mix" --quant "$q" --group-size 32 --ids "$ids" -o "$TMP/i.npy" \
      --backend interp
    expect_rc 0
    d=$(max_abs_diff "$TMP/c.npy" "$TMP/i.npy")
    le "$d" 2e-3 || fail "--quant $q experts: cpu vs interp: max |diff| $d > 2e-3"
  done
  rm -rf "$TMP/g"
  run "$MLXCEL" emit -m "$TMP/qmix" -o "$TMP/g" --ctx 32 --prefill-len 5 --all-logits
  expect_rc 0
  grep -q '"mx.moe"' "$TMP/g/prefill.mlir" || fail "the graph has no mx.moe"
  grep -q 'mode = "affine"' "$TMP/g/prefill.mlir" || fail "mx.moe has no quantized format"
  run "$MLXCEL" run --weights "$TMP/qmix" --ids 1,2,3,4,5 -o "$TMP/e.npy" "$TMP/g/prefill.mlir"
  expect_rc 0
  run env MLXCEL_QUANT_KERNEL=exact "$MLXCEL" logits -m "$TMP/qmix" --ids 1,2,3,4,5 \
    -o "$TMP/c.npy"
  expect_rc 0
  d=$(max_abs_diff "$TMP/e.npy" "$TMP/c.npy")
  le "$d" 1e-5 || fail "emitted quantized mx.moe vs the cpu runtime: max |diff| $d > 1e-5"
}

TESTS="help errors generate quantize emit_run bench_json moe"
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
