#!/usr/bin/env python3
"""`mlxcel compile` deployables run under iree-run-module as the README shows, against the engine.

Compiles a model for local-task with one prefill chunk size smaller than the prompt and two
attention windows (--attn-len 16,32: decode_w16 / decode_w32.vmfb, ADR 0015), then runs the
prompt as one @prefill chunk plus one @decode call per remaining prompt token, then STEPS greedy
@decode calls (each decode call the module of the smallest window past its position, else
decode.vmfb), each a separate `iree-run-module` process given the modules' shared
weights file (`--parameters=model=params.safetensors`) and the caches the previous call wrote
(`--input=@FILE.npy` / `--output=@FILE.npy`). Every step's logits must be within 1e-4 of the
cpu backend's (`mlxcel logits --greedy`, f32) and the greedy ids identical. Then the errors: a
missing compiler, a failing one (its output in the message), an unknown device, hip without a
ROCm target.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
except ImportError:  # never a skip: the environment is part of what the test checks
    sys.exit(f"compile_iree: numpy is not installed in {sys.executable}; run scripts/venv.sh")

BOUND = 1e-4


def run(cmd, env=None, ok=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if ok and p.returncode != 0:
        sys.exit(f"compile_iree: {' '.join(map(str, cmd))} failed (exit {p.returncode}):\n"
                 f"{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p


def zeros_for(spec):
    *dims, et = spec.split("x")
    return np.zeros([int(d) for d in dims], {"f32": np.float32, "f16": np.float16}[et])


def deployable_run(a, out, manifest, prompt, chunk):
    """Logits of the last prompt position and of each greedy step, via iree-run-module."""
    runner = Path(sys.executable).parent / "iree-run-module"
    if not runner.exists():
        sys.exit(f"compile_iree: no iree-run-module beside {sys.executable} (iree-base-runtime)")
    entries = {e["module"]: e for e in manifest["entries"]}
    windows = sorted(e["attn_len"] for e in manifest["entries"] if e["attn_len"] > 0)
    used = set()

    def decode_module(pos):
        w = next((w for w in windows if pos < w), 0)
        return f"decode_w{w}.vmfb" if w else "decode.vmfb"
    state = Path(out) / "state"
    state.mkdir(exist_ok=True)
    caches = None

    def call(entry, tokens, pos0):
        nonlocal caches
        e = entries[entry]
        used.add(entry)
        names = [i["name"] for i in e["inputs"][2:]]
        if caches is None:
            for i in e["inputs"][2:]:
                np.save(state / f"{i['name']}.npy", zeros_for(i["type"]))
            caches = names
        cmd = [runner, "--device=local-task", f"--module={out}/{e['module']}",
               f"--parameters=model={out}/params.safetensors", f"--function={e['function']}",
               f"--input={e['inputs'][0]['type']}={','.join(map(str, tokens))}",
               f"--input={e['inputs'][1]['type']}={pos0}"]
        cmd += [f"--input=@{state}/{n}.npy" for n in names]
        cmd += [f"--output=@{state}/logits.npy"] + [f"--output=@{state}/{n}.npy" for n in names]
        run(cmd)
        return np.load(state / "logits.npy").reshape(-1)

    rows = [None] * (chunk - 1)
    rows.append(call(f"prefill_{chunk}.vmfb", prompt[:chunk], 0))
    for p in range(chunk, len(prompt)):
        rows.append(call(decode_module(p), [prompt[p]], p))
    ids = [int(np.argmax(rows[-1]))]
    for s in range(a.steps):
        rows.append(call(decode_module(len(prompt) + s), [ids[-1]], len(prompt) + s))
        ids.append(int(np.argmax(rows[-1])))
    return rows, ids, sorted(used)


def expect_error(what, cmd, env, needles):
    p = run(cmd, env=env, ok=False)
    text = p.stdout + p.stderr
    missing = [n for n in needles if n not in text]
    if p.returncode == 0 or missing:
        sys.exit(f"compile_iree: {what}: expected a failure naming {needles}, got exit "
                 f"{p.returncode}:\n{text[-3000:]}")
    print(f"ok: {what}: {text.strip().splitlines()[0]}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=8)
    ap.add_argument("--prompt", default="Once upon a time, there was a little")
    ap.add_argument("--quant", default=None, help="--quant of compile and the reference")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    ctx = 64
    load = ["--quant", a.quant] if a.quant else []

    prompt = [int(t) for t in run([a.mlxcel, "tokenize", "-m", a.model, a.prompt]).stdout.split()]
    if not a.chunk < len(prompt) <= ctx - a.steps:
        sys.exit(f"compile_iree: {len(prompt)} prompt ids do not fit the chunk {a.chunk}")
    # The README's path: the compiler from the environment (PATH first, else the test venv's).
    run([a.mlxcel, "compile", "-m", a.model, "-o", out, "--ctx", ctx, "--prefill-len", a.chunk,
         "--attn-len", "16,32"] + load)
    manifest = json.loads((out / "manifest.json").read_text())
    mods = sorted(p.name for p in out.glob("*.vmfb"))
    if mods != ["decode.vmfb", "decode_w16.vmfb", "decode_w32.vmfb", f"prefill_{a.chunk}.vmfb"]:
        sys.exit(f"compile_iree: modules {mods}")
    # The weights live in params.safetensors, not in the modules.
    params = (out / "params.safetensors").stat().st_size
    for m in mods:
        if (out / m).stat().st_size >= params:
            sys.exit(f"compile_iree: {m} is not smaller than the weights ({params} bytes)")

    ref = work / "cpu_logits.npy"
    run([a.mlxcel, "logits", "-m", a.model, "--ids", ",".join(map(str, prompt)), "--greedy",
         a.steps, "-o", ref, "--backend", "cpu", "--ctx", ctx] + load,
        env=dict(os.environ, MLXCEL_QUANT_KERNEL="exact"))
    ref_logits = np.load(ref)
    rows, ids, used = deployable_run(a, out, manifest, prompt, a.chunk)
    if used != ["decode_w16.vmfb", "decode_w32.vmfb", f"prefill_{a.chunk}.vmfb"]:
        sys.exit(f"compile_iree: the run used {used}; the windows were meant to")
    ref_ids = [int(i) for i in np.argmax(ref_logits[len(prompt) - 1:], axis=1)]
    err = max(float(np.max(np.abs(r - ref_logits[i]))) for i, r in enumerate(rows)
              if r is not None)
    print(f"iree-run-module: {len(prompt)} prompt ids ({a.chunk} in @prefill, "
          f"{len(prompt) - a.chunk} through @decode), {a.steps} greedy steps with {used}; ids {ids}; "
          f"cpu {ref_ids}; max |logit diff| {err:.3g} (bound {BOUND})", flush=True)
    if ids != ref_ids or not err <= BOUND:
        sys.exit("compile_iree: FAIL: the deployable differs from the cpu backend")

    # Errors: each clear, each before or instead of a module.
    base = [a.mlxcel, "compile", "-m", a.model, "-o", work / "err", "--ctx", ctx]
    env = dict(os.environ)
    expect_error("a window not below the capacity", base + ["--attn-len", "64"], env,
                 ["--attn-len 64 is not below the context capacity 64"])
    expect_error("missing compiler", base, dict(env, MLXCEL_XLA_IREE_COMPILE="/nonexistent/ic"),
                 ["/nonexistent/ic", "MLXCEL_XLA_IREE_COMPILE"])
    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "iree-compile"
        fake.write_text("#!/bin/sh\necho 'error: the fake compiler refuses' >&2\nexit 3\n")
        fake.chmod(0o755)
        expect_error("failing compiler", base, dict(env, MLXCEL_XLA_IREE_COMPILE=str(fake)),
                     ["the fake compiler refuses", "exit status 3"])
    expect_error("unknown device", base, dict(env, MLXCEL_XLA_DEVICE="tpu"),
                 ["MLXCEL_XLA_DEVICE", "tpu"])
    hip_env = {k: v for k, v in env.items() if k != "MLXCEL_XLA_ROCM_TARGET"}
    # The xla backend's name for the same device (one MLXCEL_XLA_DEVICE serves both commands).
    expect_error("rocm, the xla backend's name for hip, without a target", base,
                 dict(hip_env, MLXCEL_XLA_DEVICE="rocm"), ["--device hip needs", "ROCM_TARGET"])
    expect_error("hip without a target", base + ["--device", "hip"], hip_env,
                 ["MLXCEL_XLA_ROCM_TARGET"])
    print("compile_iree: PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
