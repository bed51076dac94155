#!/usr/bin/env python3
"""Same graph, same machine, same threads: the built-in cpu runtime, IREE's llvm-cpu and XLA's
CPU compiler, prefill and decode tok/s, each beside the machine's limit (issue 21, part 4).

For each model shape (`mlxcel mkmodel --preset`, f32 weights) and mode (f32, bf16 = --precision
bf16, int8 / int4 = --quant), the three consumers run the graph `mlxcel emit` builds for that
mode:
  cpu   `mlxcel bench --backend cpu --reps 1 --json` (prompt in one prefill chunk, then GEN
        decode steps); its JSON also gives the row's limits, measured in the same run: the decode
        limit (bandwidth / bytes per token) and the prefill limit (peak FLOP/s / FLOPs per token);
  iree  the deployables of `mlxcel compile` (the same graph, weights as IREE parameters) timed
        by `iree-benchmark-module` on local-task with --task_topology_max_group_count=THREADS:
        one @prefill call of PROMPT tokens, and @decode calls at position PROMPT;
  xla   the `mlxcel emit --main` text compiled by jaxlib's CPU client (compile_and_load), one
        @prefill call and GEN chained @decode calls (each given the caches the previous returned).
Rounds are interleaved (every configuration and consumer once per round, then the next round);
each number is the median over the rounds, each limit the median of the cpu runs' limits. The
load average is recorded beside the numbers: the development machine is shared.

  bench/portability_speed.py --mlxcel build/mlxcel --work /tmp/ps [--gen 2] [--rounds 2]
      [--once llama-3.2-1b] [--doc FILE]

With --probe-linear it instead times one linear layer (an N x K f32 weight, one token) in each
operand form on IREE (default flags, and the flags that change its code) and XLA.

With --doc the table between the markers BEGIN and END in FILE (docs/performance.md, section
"Same graph on IREE and XLA", which bench/run.sh keeps when it rewrites the page) is replaced.
"""
import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

MODES = {"f32": [], "bf16": ["--precision", "bf16"], "int8": ["--quant", "int8"],
         "int4": ["--quant", "int4"]}
BEGIN = "<!-- portability_speed.py: begin -->"
END = "<!-- portability_speed.py: end -->"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Failed(Exception):
    pass


def run(cmd, env=None):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise Failed(f"{' '.join(map(str, cmd))} failed (exit {p.returncode}):\n"
                     f"{p.stdout[-2000:]}{p.stderr[-3000:]}")
    return p.stdout


def loadavg():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# ---- XLA worker (a separate process per run, so each consumer starts from the same state) ----

ST_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "U32": "uint32",
             "I32": "int32", "U8": "uint8", "I8": "int8"}


def xla_worker(a):
    import numpy as np
    import ml_dtypes  # noqa: F401 (registers bfloat16 with numpy)
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import xla_client
    client = xla_bridge.get_backend("cpu")
    dev = client.devices()[0]
    d = Path(a.xla_worker)
    raw = np.memmap(d / "params.safetensors", dtype=np.uint8, mode="r")
    n = int(np.frombuffer(raw[:8], np.uint64)[0])
    header = json.loads(bytes(raw[8:8 + n]))
    weights = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        s, e = h["data_offsets"]
        dt = ml_dtypes.bfloat16 if h["dtype"] == "BF16" else np.dtype(ST_DTYPES[h["dtype"]])
        weights[name] = jax.device_put(
            np.frombuffer(raw[8 + n + s:8 + n + e], dtype=dt).reshape(h["shape"]), dev)

    def entry(name):
        text = (d / f"{name}.mlir").read_text()
        m = re.search(r"^  func\.func @main\((.*?)\) -> ", text, re.M)
        sig = []
        for arg in re.finditer(r"%arg\d+: tensor<([^>]*)> \{([^}]*)\}", m.group(1)):
            *dims, et = arg.group(1).split("x")
            nm = re.search(r'mx\.name = "([^"]*)"', arg.group(2)).group(1)
            role = re.search(r'mx\.role = "([^"]*)"', arg.group(2)).group(1)
            sig.append((nm, role, [int(x) for x in dims], et))
        t0 = time.perf_counter()
        exe = client.compile_and_load(text, xla_client.DeviceList((dev,)),
                                      xla_client.CompileOptions())
        return exe, sig, time.perf_counter() - t0

    np_et = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
    entries = {e: entry(e) for e in ("prefill", "decode")}

    def call(e, n_tok, pos0, caches):
        exe, sig, _ = entries[e]
        args, k = [], 0
        for nm, role, dims, et in sig:
            if role == "weight":
                args.append(weights[nm])
            elif role == "tokens":
                args.append(jax.device_put(np.ones(dims, np.int32), dev))
            elif role == "pos0":
                args.append(jax.device_put(np.full(dims, pos0, np.int32), dev))
            else:
                args.append(caches[k] if caches else
                            jax.device_put(np.zeros(dims, np_et[et]), dev))
                k += 1
        r = exe.execute(args)
        np.asarray(r[0])  # waits for the call
        return list(r[1:])

    caches = call("prefill", a.prompt, 0, None)  # warm-up: first-call costs stay out
    caches = call("decode", 1, a.prompt, caches)
    t0 = time.perf_counter()
    caches = call("prefill", a.prompt, 0, None)
    t_prefill = time.perf_counter() - t0
    steps = []
    for s in range(a.gen):
        t0 = time.perf_counter()
        caches = call("decode", 1, a.prompt + s, caches)
        steps.append(time.perf_counter() - t0)
    print(json.dumps({"prefill_tok_s": a.prompt / t_prefill,
                      "decode_tok_s": 1 / statistics.median(steps),
                      "compile_s": sum(e[2] for e in entries.values())}))
    return 0


# ---- The consumers, one run each ----

def run_cpu(a, model, flags):
    out = run([a.mlxcel, "bench", "-m", model, "--backend", "cpu", "--prompt", a.prompt,
               "--gen", a.gen, "--reps", 1, "--ctx", a.ctx, "--chunk", a.prompt, "--threads",
               a.threads, "--json"] + flags)
    return json.loads(out)


def bench_module(a, dep, module, pos0, iters):
    manifest = json.loads((dep / "manifest.json").read_text())
    e = next(x for x in manifest["entries"] if x["module"] == module)
    cmd = [Path(sys.executable).parent / "iree-benchmark-module", "--device=local-task",
           f"--task_topology_max_group_count={a.threads}", f"--module={dep}/{module}",
           f"--parameters=model={dep}/params.safetensors", f"--function={e['function']}",
           f"--benchmark_min_time={iters}x"]
    tok = e["inputs"][0]["type"]
    cmd.append(f"--input={tok}=" + ",".join(["1"] * int(tok.split("x")[1])))
    cmd.append(f"--input={e['inputs'][1]['type']}={pos0}")
    for i in e["inputs"][2:]:  # zero caches as raw files (iree's .npy reader lacks bf16)
        f = dep / f"zeros_{i['type']}.bin"
        if not f.exists():
            *dims, et = i["type"].split("x")
            n = 1
            for x in dims:
                n *= int(x)
            f.write_bytes(bytes(n * {"f32": 4, "bf16": 2, "f16": 2}[et]))
        cmd.append(f"--input={i['type']}=@{f}")
    out = run(cmd)
    m = re.search(r"real_time\s+([0-9.]+) (ms|us|s)\b", out)
    if not m:
        sys.exit(f"portability_speed: no time in iree-benchmark-module's output:\n{out}")
    return float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[m.group(2)]


def run_iree(a, dep):
    t_prefill = bench_module(a, dep, f"prefill_{a.prompt}.vmfb", 0, 1)
    t_decode = bench_module(a, dep, "decode.vmfb", a.prompt, a.gen)
    return {"prefill_tok_s": a.prompt / t_prefill, "decode_tok_s": 1 / t_decode}


def run_xla(a, emit_dir):
    out = run([sys.executable, __file__, "--xla-worker", emit_dir, "--prompt", a.prompt,
               "--gen", a.gen, "--mlxcel", a.mlxcel, "--work", a.work])
    return json.loads(out.strip().splitlines()[-1])


# ---- One linear layer in each operand form (--probe-linear): where IREE's decode time goes ----

PROBE_FORMS = {
    # name: (weight shape, dot_general text, result reshape), x = [1, K], W as stored
    "as emitted: x[1,K] . W[N,K], contracting [1] x [1]": (
        "NxK", "stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : "
               "(tensor<1xKxf32>, tensor<NxKxf32>) -> tensor<1xNxf32>", None),
    "W[N,K] . x[1,K] -> [N,1], then reshape to [1,N]": (
        "NxK", "stablehlo.dot_general %w, %x, contracting_dims = [1] x [1] : "
               "(tensor<NxKxf32>, tensor<1xKxf32>) -> tensor<Nx1xf32>", "Nx1"),
    "x[1,K] . W[K,N] (weight stored transposed)": (
        "KxN", "stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : "
               "(tensor<1xKxf32>, tensor<KxNxf32>) -> tensor<1xNxf32>", None),
}


def probe_linear(a):
    import numpy as np
    n, k = a.probe_shape
    work = Path(a.work) / "probe"
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / "x.npy", np.random.default_rng(0).random((1, k), np.float32))
    ic = Path(sys.executable).parent / "iree-compile"
    base = ["--iree-input-type=stablehlo", "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
    variants = [("iree", []), ("iree", ["--iree-opt-aggressively-propagate-transposes"]),
                ("iree", ["--iree-llvmcpu-enable-ukernels=all"]), ("iree", ["--iree-opt-data-tiling"]),
                ("xla", [])]
    rows = []
    for i, (form, (wshape, dot, reshape)) in enumerate(PROBE_FORMS.items()):
        sub = lambda t: t.replace("N", str(n)).replace("K", str(k))
        body = sub(dot)
        ret = f"tensor<1x{n}xf32>"
        text = (f"module {{\n  func.func @main(%x: tensor<1x{k}xf32>, %w: tensor<{sub(wshape)}xf32>)"
                f" -> {ret} {{\n    %0 = {body}\n")
        if reshape:
            text += f"    %1 = stablehlo.reshape %0 : (tensor<{sub(reshape)}xf32>) -> {ret}\n"
            text += f"    return %1 : {ret}\n  }}\n}}\n"
        else:
            text += f"    return %0 : {ret}\n  }}\n}}\n"
        (work / f"f{i}.mlir").write_text(text)
        wfile = work / f"w_{sub(wshape)}.npy"
        if not wfile.exists():
            dims = [int(x) for x in sub(wshape).split("x")]
            np.save(wfile, np.random.default_rng(1).random(dims, np.float32))
        for consumer, flags in variants:
            t = (probe_iree(a, ic, base + flags, work, i, wfile) if consumer == "iree"
                 else probe_xla(work / f"f{i}.mlir", work / "x.npy", wfile))
            label = consumer + (" " + " ".join(flags) if flags else "")
            gbs = n * k * 4 / t / 1e9
            rows.append(f"| {form} | {label} | {t * 1e3:.2f} | {gbs:.1f} |")
            log(rows[-1])
    print(f"| form ({n}x{k} f32 weight) | consumer, flags | ms per call | weight GB/s |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nload average (1/5/15 min) at the end: {loadavg()}")
    return 0


def probe_iree(a, ic, flags, work, i, wfile):
    tag = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:12]
    vmfb = work / f"f{i}_{tag}.vmfb"
    if not vmfb.exists():
        run([ic, *flags, work / f"f{i}.mlir", "-o", vmfb])
    out = run([Path(sys.executable).parent / "iree-benchmark-module", "--device=local-task",
               f"--task_topology_max_group_count={a.threads}", f"--module={vmfb}",
               "--function=main", f"--input=@{work / 'x.npy'}", f"--input=@{wfile}",
               "--benchmark_min_time=20x"])
    m = re.search(r"real_time\s+([0-9.]+) (ms|us|s)\b", out)
    return float(m.group(1)) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[m.group(2)]


def probe_xla(mlir, xfile, wfile):
    import numpy as np
    import jax
    from jax._src import xla_bridge
    from jax._src.lib import xla_client
    client = xla_bridge.get_backend("cpu")
    dev = client.devices()[0]
    exe = client.compile_and_load(mlir.read_text(), xla_client.DeviceList((dev,)),
                                  xla_client.CompileOptions())
    args = [jax.device_put(np.load(xfile), dev), jax.device_put(np.load(wfile), dev)]
    np.asarray(exe.execute(args)[0])
    ts = []
    for _ in range(20):
        t0 = time.perf_counter()
        np.asarray(exe.execute(args)[0])
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


# ---- Preparation: checkpoints, deployables, emitted text ----

def prepare(a, shape, mode):
    work = Path(a.work)
    model = work / shape
    if not (model / "config.json").exists():
        log(f"mkmodel {shape}")
        run([a.mlxcel, "mkmodel", "--preset", shape, "-o", model])
    cfg = work / f"{shape}_{mode}"
    dep, emit = cfg / "iree", cfg / "xla"
    flags = MODES[mode]
    stamp = json.dumps([a.ctx, a.prompt, flags, a.iree_flag])
    if (cfg / "stamp").exists() and (cfg / "stamp").read_text() == stamp:
        return str(model), flags, dep, emit
    log(f"{shape} {mode}: mlxcel compile, mlxcel emit")
    cfg.mkdir(parents=True, exist_ok=True)
    extra = [x for f in a.iree_flag for x in ("--iree-flag", f)]
    run([a.mlxcel, "compile", "-m", model, "-o", dep, "--ctx", a.ctx, "--prefill-len", a.prompt]
        + flags + extra)
    run([a.mlxcel, "emit", "-m", model, "-o", emit, "--ctx", a.ctx, "--prefill-len", a.prompt,
         "--main"] + flags)
    # One weights file: XLA reads the deployables' parameters (the same tensors emit --params
    # writes) instead of a second copy.
    if not (emit / "params.safetensors").exists():
        os.symlink(dep / "params.safetensors", emit / "params.safetensors")
    (cfg / "stamp").write_text(stamp)
    return str(model), flags, dep, emit


def fmt(x):
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def table(a, results, loads):
    lines = [
        f"| model shape | mode | consumer | threads | prompt / gen / ctx | prefill tok/s | "
        f"prefill limit | % | decode tok/s | decode limit | % |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (shape, mode), per in results.items():
        if not per["cpu"]:
            continue
        lim_p = statistics.median(r["prefill_limit_tok_s"] for r in per["cpu"])
        lim_d = statistics.median(r["decode_limit_tok_s"] for r in per["cpu"])
        for c in ("cpu", "iree", "xla"):
            if not per.get(c):
                continue
            p = statistics.median(r["prefill_tok_s"] for r in per[c])
            d = statistics.median(r["decode_tok_s"] for r in per[c])
            lines.append(f"| {shape} | {mode} | {c} | {a.threads} | {a.prompt} / {a.gen} / "
                         f"{a.ctx} | {fmt(p)} | {fmt(lim_p)} | {100 * p / lim_p:.1f}% | {fmt(d)} "
                         f"| {fmt(lim_d)} | {100 * d / lim_d:.1f}% |")
    bw = [r["bandwidth_gbs"] for per in results.values() for r in per["cpu"]]
    pk = [r["peak_gflops"] for per in results.values() for r in per["cpu"]]
    lines.append("")
    once = f" ({', '.join(a.once)}: the first round only)" if a.once else ""
    lines.append(f"{a.rounds} interleaved rounds{once}, medians; limits from the cpu runs' own "
                 f"measurements (bandwidth {min(bw):.1f}-{max(bw):.1f} GB/s, peak "
                 f"{min(pk):.0f}-{max(pk):.0f} GFLOP/s across the runs); load average "
                 f"(1/5/15 min) {loads[0]} at the start, {loads[1]} at the end.")
    lines[-1] = textwrap.fill(lines[-1], 100)
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--work", required=True, help="checkpoints, deployables (kept for reruns)")
    ap.add_argument("--shapes", default="smollm2-360m,llama-3.2-1b")
    ap.add_argument("--modes", default="f32,bf16,int8,int4")
    ap.add_argument("--consumers", default="cpu,iree,xla")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--gen", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--once", default="", type=lambda s: [x for x in s.split(",") if x],
                    help="shapes that run in the first round only (the slow ones)")
    ap.add_argument("--iree-flag", action="append", default=[],
                    help="more iree-compile flags for the deployables (repeatable)")
    ap.add_argument("--doc", help="replace the section in this markdown file")
    ap.add_argument("--probe-linear", action="store_true",
                    help="instead: one linear layer in each operand form on IREE and XLA")
    ap.add_argument("--probe-shape", type=int, nargs=2, default=[8192, 2048],
                    metavar=("N", "K"), help="the probe's weight: N outputs, K inputs")
    ap.add_argument("--xla-worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.xla_worker:
        return xla_worker(a)
    if a.probe_linear:
        return probe_linear(a)
    Path(a.work).mkdir(parents=True, exist_ok=True)
    configs = [(s, m) for s in a.shapes.split(",") for m in a.modes.split(",")]
    try:
        prepared = {c: prepare(a, *c) for c in configs}
    except Failed as e:
        sys.exit(f"portability_speed: {e}")
    consumers = a.consumers.split(",")
    if "cpu" not in consumers:
        sys.exit("portability_speed: the cpu consumer gives the limits; keep it")
    results = {c: {k: [] for k in consumers} for c in configs}
    loads = [loadavg()]
    for r in range(a.rounds):
        for c in configs:
            if r > 0 and c[0] in a.once:
                continue
            model, flags, dep, emit = prepared[c]
            for k in consumers:
                t0 = time.time()
                try:
                    res = (run_cpu(a, model, flags) if k == "cpu" else
                           run_iree(a, dep) if k == "iree" else run_xla(a, emit))
                except Failed as e:  # one failing run is reported, the others still run
                    log(f"round {r + 1} {c[0]} {c[1]} {k}: FAILED: {e}")
                    continue
                results[c][k].append(res)
                log(f"round {r + 1} {c[0]} {c[1]} {k}: prefill {res['prefill_tok_s']:.3g} tok/s, "
                    f"decode {res['decode_tok_s']:.3g} tok/s ({time.time() - t0:.0f} s; load "
                    f"{loadavg()})")
    loads.append(loadavg())
    text = table(a, results, loads)
    print(text)
    Path(a.work, "results.json").write_text(json.dumps(
        {f"{s}|{m}": v for (s, m), v in results.items()}, indent=1))
    if a.doc:
        # The table sits between two markers in the section; the prose around it is kept.
        doc = Path(a.doc).read_text()
        i, j = doc.find(BEGIN), doc.find(END)
        if i < 0 or j < i:
            sys.exit(f"portability_speed: {a.doc} has no {BEGIN} ... {END}")
        Path(a.doc).write_text(doc[:i + len(BEGIN)] + "\n" + text + "\n" + doc[j:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
