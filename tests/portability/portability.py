#!/usr/bin/env python3
"""Portability suite: the graphs `mlxcel emit` writes, compiled by IREE and by XLA, against the
engine's own `cpu` backend (docs/portability.md).

For one model (and one precision or quantization) this driver
  1. emits @prefill and @decode twice, composites kept and `--inline-composites`, each entry
     named @main (`--main`: XLA compiles only @main) with the weight arguments' values
     (`--params`, safetensors, in the types the graph declares);
  2. asks the cpu backend for its greedy continuation (`mlxcel generate --json`) and for its
     logits at every position of prompt + continuation (`mlxcel logits`);
  3. compiles both entries with IREE (`iree-compile --iree-input-type=stablehlo`, local device,
     llvm-cpu) and runs them with IREE's runtime, and compiles them with XLA's CPU compiler
     (jaxlib's `compile_and_load`) and runs them through PJRT;
  4. runs the prompt in one @prefill call and STEPS greedy @decode calls, each fed the KV caches
     the previous call returned, and requires at every step the cpu backend's greedy id and
     logits within the tolerance of the precision (max |difference| over the vocabulary).

Each (form, consumer) pair is a case; the driver prints one line per case, then the count of
cases it ran, and writes the measurements to WORK/result.json. A missing package (IREE, jax) is
a failure: the suite never passes without running its consumers.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

try:
    import numpy as np
    import ml_dtypes
    import iree.runtime as ireert
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import xla_client
except ImportError as e:  # never a skip: the environment is part of what the suite checks
    sys.exit(f"portability: cannot import {e.name}: the pinned test packages "
             f"(tests/requirements.txt) are not installed in {sys.executable}; run scripts/venv.sh")

# Bounds on max |logit - cpu logit| over the vocabulary at every step. The consumers run the
# same graph as the cpu backend, so at f32 only the summation order of the dots and the
# implementations of exp / tanh / rsqrt / sin / cos differ: the fixtures' 1e-4 holds. Quantized
# graphs dequantize in f32 (exact arithmetic on the packed weights), so they are held to the same
# 1e-4 against the cpu backend's exact kernels (MLXCEL_QUANT_KERNEL=exact, the graph's own
# semantics; the default VNNI16 decode kernels round the activations and are held to the graph
# by tests/cli_quant.sh). At bf16 / f16 the matmul inputs are rounded in the graph; a
# summation-order difference before a rounding can move that input by one unit of the
# precision, so the bound is the precision gate's (tests/unit/test_precision_gate.c): a fraction
# of the largest |logit|.
ABS_BOUND = 1e-4
REL_BOUND = {"bf16": 2.0 ** -4, "f16": 2.0 ** -7}


IREE_FLAGS = ["--iree-input-type=stablehlo", "--iree-hal-target-device=local",
              "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host"]

ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
             "U32": np.uint32, "I32": np.int32, "U8": np.uint8, "I8": np.int8}
MLIR_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
               "i32": np.int32, "ui32": np.uint32, "i8": np.int8, "ui8": np.uint8}


def log(msg):
    print(msg, flush=True)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"portability: {' '.join(map(str, cmd))} failed "
                         f"(exit {p.returncode}):\n{p.stderr[-4000:]}")
    return p.stdout


def read_safetensors(path):
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, d in header.items():
        if name == "__metadata__":
            continue
        a, b = d["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b],
                                  dtype=ST_DTYPES[d["dtype"]]).reshape(d["shape"])
    return out


def entry_signature(path):
    """(name, role, shape, dtype) of each argument of the file's @main, in order."""
    text = Path(path).read_text()
    m = re.search(r"^  func\.func @main\((.*?)\) -> ", text, re.M)
    if not m:
        raise SystemExit(f"portability: {path} has no public @main")
    args = []
    for a in re.finditer(r"%arg\d+: tensor<([^>]*)> \{([^}]*)\}", m.group(1)):
        *dims, et = a.group(1).split("x")
        name = re.search(r'mx\.name = "([^"]*)"', a.group(2)).group(1)
        role = re.search(r'mx\.role = "([^"]*)"', a.group(2)).group(1)
        args.append((name, role, tuple(int(d) for d in dims), MLIR_DTYPES[et]))
    return args


# What DESIGN.md promises the text never holds, because some consumer rejects it: IREE refuses
# `custom_call` targets it does not know and `dot_general` algorithm attributes; `chlo` is not
# StableHLO; 4-bit element types cannot be passed through IREE's tools (packed weights travel as
# 8 / 32-bit integers and are unpacked in the graph).
FORBIDDEN = [(re.compile(r"stablehlo\.custom_call|\bcustom_call\b"), "a custom_call"),
             (re.compile(r"\balgorithm\s*="), "a dot_general algorithm attribute"),
             (re.compile(r"\bchlo\."), "a chlo op"),
             (re.compile(r"%arg\d+: tensor<[0-9x]*u?i4>"), "a 4-bit argument")]


def check_portable_text(path):
    text = Path(path).read_text()
    for pattern, what in FORBIDDEN:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            raise SystemExit(f"portability: {path}:{line} holds {what}: {m.group(0)}")


# ---- The cpu backend: the reference every consumer must reproduce ----

def cpu_reference(mlxcel, model, prompt, steps, ctx, load_flags):
    """Greedy ids (prefill's pick, then one per decode step) and the logits each was picked
    from, as the cpu backend computes them through its prefill and decode paths."""
    npy = Path(WORK) / "cpu_logits.npy"
    env = dict(os.environ, MLXCEL_QUANT_KERNEL="exact")
    run([mlxcel, "logits", "-m", model, "--ids", ",".join(map(str, prompt)), "--greedy",
         str(steps), "-o", str(npy), "--backend", "cpu", "--ctx", str(ctx)] + load_flags, env=env)
    logits = np.load(npy)[len(prompt) - 1:]
    return [int(i) for i in np.argmax(logits, axis=1)], logits


# ---- Consumers ----

class Iree:
    name = "iree"

    def __init__(self):
        self.compiler = shutil.which("iree-compile", path=str(Path(sys.executable).parent))
        if not self.compiler:
            raise SystemExit(f"portability: no iree-compile beside {sys.executable} "
                             "(iree-base-compiler, tests/requirements.txt)")
        self.config = ireert.Config("local-task")

    def compile(self, mlir):
        # Compiled modules are kept under WORK/cache by the hash of their text and flags, so a
        # rerun with unchanged graphs skips IREE's compiler.
        text = Path(mlir).read_bytes()
        key = hashlib.sha256(text + " ".join(IREE_FLAGS).encode()).hexdigest()[:24]
        vmfb = Path(WORK) / "cache" / f"{key}.vmfb"
        if not vmfb.exists():
            vmfb.parent.mkdir(parents=True, exist_ok=True)
            run([self.compiler, *IREE_FLAGS, str(mlir), "-o", str(vmfb) + ".tmp"])
            os.replace(str(vmfb) + ".tmp", vmfb)
        ctx = ireert.SystemContext(config=self.config)
        ctx.add_vm_module(ireert.VmModule.mmap(self.config.vm_instance, str(vmfb)))
        return ctx.modules.module["main"]

    def put(self, array):
        return ireert.asdevicearray(self.config.device, array)

    def call(self, fn, args):
        r = fn(*args)
        if not isinstance(r, (tuple, list)):  # an entry with one result (@vision)
            r = (r,)
        # to_host() may map the device buffer, which a later call reuses: copy it out.
        return np.array(r[0].to_host(), copy=True), list(r[1:])


class Xla:
    name = "xla"

    def __init__(self):
        self.client = xla_bridge.get_backend("cpu")
        self.device = self.client.devices()[0]

    def compile(self, mlir):
        return self.client.compile_and_load(Path(mlir).read_text(),
                                            xla_client.DeviceList((self.device,)),
                                            xla_client.CompileOptions())

    def put(self, array):
        return jax.device_put(array, self.device)

    def call(self, exe, args):
        r = exe.execute(args)
        return np.asarray(r[0]), list(r[1:])


def run_case(consumer, emit_dir, weights, prompt, steps):
    """Greedy ids and per-step logits of prompt + STEPS decode steps on one consumer."""
    t0 = time.time()
    entries = {e: (consumer.compile(f"{emit_dir}/{e}.mlir"), entry_signature(f"{emit_dir}/{e}.mlir"))
               for e in ("prefill", "decode")}
    t_compile = time.time() - t0
    dev_weights = {k: consumer.put(v) for k, v in weights.items()}

    def call(entry, tokens, pos0, caches):
        fn, sig = entries[entry]
        args, k = [], 0
        for name, role, shape, dtype in sig:
            if role == "weight":
                args.append(dev_weights[name])
            elif role == "tokens":
                args.append(consumer.put(np.array(tokens, np.int32).reshape(shape)))
            elif role == "pos0":
                args.append(consumer.put(np.full(shape, pos0, np.int32)))
            else:  # a cache: zeros before the prompt, then what the previous call returned
                args.append(caches[k] if caches else consumer.put(np.zeros(shape, dtype)))
                k += 1
        return consumer.call(fn, args)

    t0 = time.time()
    logits, caches = call("prefill", prompt, 0, None)
    rows = [np.asarray(logits, np.float32).reshape(-1)]
    ids = [int(np.argmax(rows[-1]))]
    for s in range(steps):
        logits, caches = call("decode", [ids[-1]], len(prompt) + s, caches)
        rows.append(np.asarray(logits, np.float32).reshape(-1))
        ids.append(int(np.argmax(rows[-1])))
    return ids, np.stack(rows), t_compile, time.time() - t0


def summary(work, names):
    """The count of cases the suite's tests ran; fails when one left no result."""
    total, failed, missing, skipped = 0, 0, [], []
    log("| configuration | precision | quant | greedy ids (33 per case; @prefill_media: the "
        "argmax at every prompt position) | max abs logit diff (@vision: feature diff): "
        "IREE kept / inlined, XLA kept / inlined | bound | max abs logit |")
    log("| --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        name = name.removeprefix("portability_")
        if (Path(work) / name / "skipped").exists():
            skipped.append(name)
            continue
        f = Path(work) / name / "result.json"
        if not f.exists():
            missing.append(name)
            continue
        rs = json.loads(f.read_text())
        total += len(rs)
        failed += sum(not r["ok"] for r in rs)
        # One row per entry: the media cases (media.py) hold @vision and @prefill_media.
        entries = {}
        for r in rs:
            entries.setdefault(r.get("entry"), []).append(r)
        for entry, es in entries.items():
            errs = {(r["consumer"], r["form"]): r["max_abs_err"] for r in es}
            cells = " / ".join(f"{errs[(c, f)]:.2g}" if (c, f) in errs else "-"
                               for c in ("iree", "xla") for f in ("keep", "inline"))
            same = ("features" if es[0]["greedy_match"] is None else
                    "identical" if all(r["greedy_match"] for r in es) else "DIFFER")
            label = name if entry is None else f"{name} @{entry}"
            log(f"| {label} | {es[0]['precision']} | {es[0]['quant']} | {same} | {cells} | "
                f"{es[0]['bound']:.2g} | {es[0]['max_abs_logit']:.3g} |")
    log(f"portability suite: {total} cases ran in {len(names) - len(skipped) - len(missing)} "
        f"model configurations, {total - failed} passed, {failed} failed"
        + (f"; skipped (no ../shared): {' '.join(skipped)}" if skipped else "")
        + (f"; NO RESULT: {' '.join(missing)}" if missing else ""))
    return 1 if failed or missing or total == 0 else 0


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--summary":
        return summary(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--name", required=True, help="label of this model configuration")
    ap.add_argument("--work", required=True, help="working directory (kept: graphs, cache)")
    ap.add_argument("--skip-if-absent", action="store_true",
                    help="exit 77 (skipped) when the model directory does not exist")
    ap.add_argument("--quant", default=None)
    ap.add_argument("--group-size", default=None, help="int8 / int4 group size")
    ap.add_argument("--precision", default=None)
    ap.add_argument("--forms", default="keep,inline")
    ap.add_argument("--consumers", default="iree,xla")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--prompt", default="Once upon a time, there was a little",
                    help="prompt text when the model has no reference.json with prompt_ids")
    a = ap.parse_args()
    global WORK
    WORK = a.work
    Path(WORK).mkdir(parents=True, exist_ok=True)
    for stale in ("result.json", "skipped"):
        Path(WORK, stale).unlink(missing_ok=True)
    if a.skip_if_absent and not Path(a.model).is_dir():
        log(f"portability {a.name}: skipped: {a.model} is absent (../shared is not here)")
        Path(WORK, "skipped").touch()
        return 77
    t_start = time.time()

    load_flags = []
    if a.quant:
        load_flags += ["--quant", a.quant]
    if a.group_size:
        load_flags += ["--group-size", a.group_size]
    if a.precision:
        load_flags += ["--precision", a.precision]
    ref_json = Path(a.model) / "reference.json"
    if ref_json.exists() and "prompt_ids" in json.loads(ref_json.read_text()):
        prompt = json.loads(ref_json.read_text())["prompt_ids"]
    else:
        prompt = [int(t) for t in run([a.mlxcel, "tokenize", "-m", a.model, a.prompt]).split()]
    if len(prompt) + a.steps > a.ctx:
        raise SystemExit(f"portability: {len(prompt)} prompt ids + {a.steps} steps exceed --ctx")

    ref_ids, ref_logits = cpu_reference(a.mlxcel, a.model, prompt, a.steps, a.ctx, load_flags)
    scale = float(np.max(np.abs(ref_logits)))
    prec = a.precision or "f32"
    bound = REL_BOUND[prec] * scale if prec in REL_BOUND else ABS_BOUND

    consumers = {"iree": Iree, "xla": Xla}
    results, failures = [], []
    for form in a.forms.split(","):
        emit_dir = Path(WORK) / form
        shutil.rmtree(emit_dir, ignore_errors=True)
        extra = ["--inline-composites"] if form == "inline" else []
        run([a.mlxcel, "emit", "-m", a.model, "-o", str(emit_dir), "--ctx", str(a.ctx),
             "--prefill-len", str(len(prompt)), "--main", "--params",
             str(emit_dir / "params.safetensors")] + extra + load_flags)
        for e in ("prefill", "decode"):
            check_portable_text(emit_dir / f"{e}.mlir")
        weights = read_safetensors(emit_dir / "params.safetensors")
        for cname in a.consumers.split(","):
            consumer = consumers[cname]()
            ids, logits, t_compile, t_run = run_case(consumer, emit_dir, weights, prompt, a.steps)
            same = next((i for i, (x, y) in enumerate(zip(ids, ref_ids)) if x != y), None)
            err = float(np.max(np.abs(logits - ref_logits)))
            ok = same is None and err <= bound
            r = {"model": a.name, "form": form, "consumer": cname, "precision": prec,
                 "quant": a.quant or "none", "steps": a.steps, "greedy_match": same is None,
                 "first_mismatch": same, "max_abs_err": err, "bound": bound,
                 "max_abs_logit": scale, "compile_s": round(t_compile, 2),
                 "run_s": round(t_run, 2), "ok": ok}
            results.append(r)
            np.save(Path(WORK) / f"{form}_{cname}_logits.npy", logits)
            log(f"{'PASS' if ok else 'FAIL'} {a.name} {form} {cname}: greedy "
                f"{'identical' if same is None else f'differs from step {same}'} "
                f"({a.steps + 1} ids), max |logit diff| {err:.3g} (bound {bound:.3g}), "
                f"compile {t_compile:.1f} s, run {t_run:.1f} s")
            if not ok:
                failures.append(r)
                log(f"  consumer ids {ids}\n  cpu ids      {ref_ids}")
    Path(WORK, "result.json").write_text(json.dumps(results, indent=1) + "\n")
    log(f"portability {a.name}: {len(results)} cases ran, {len(results) - len(failures)} passed, "
        f"{len(failures)} failed ({time.time() - t_start:.0f} s)")
    return 1 if failures or not results else 0


WORK = None
if __name__ == "__main__":
    sys.exit(main())
