#!/usr/bin/env python3
"""Portability of the media entries: a vision-language fixture's @vision and @prefill_media, as
`mlxcel emit` writes them, compiled by IREE and by XLA and run on the fixture's photograph,
against the reference interpreter running the same text (docs/portability.md, "The media
entries"); for Gemma 3n's audio fixture (audio_reference.json) @audio on the reference's log-mel
features and its mask, and @prefill_media with its rows at the audio tokens.

For one fixture (a directory with vision_reference.json, written by tools/vlm/) this driver
  1. preprocesses the reference's photograph with `mlxcel image` (the pixel rows; Qwen's patch
     grid; Molmo2's pooling indices);
  2. emits @vision (for that grid) and @prefill_media (T = the reference prompt, the logits of
     every position; --prompt two_image: Molmo2's prompt of the photograph twice with text
     between), each named @main, with the weights' values (`--params`);
  3. runs both on the reference interpreter (`mlxcel run --weights DIR --input NAME=FILE`):
     the image features, then the prompt with those features as the media rows of its image
     tokens (Qwen: transformers' M-RoPE positions from the reference; Qwen3-VL: the DeepStack
     sets, split from the feature rows as the graph runner splits them);
  4. compiles each entry once per consumer and runs it on exactly the interpreter's inputs;
  5. requires each consumer's result within the case's bound of the interpreter's (max
     |difference|; the bounds are a small multiple of what was measured, given per case by the
     suite's CMake list), every position's argmax equal to the interpreter's, and both sides
     within 1e-4 (the fixtures' tolerance) of transformers' features and logits in the fixture.

One line per (entry, consumer), then WORK/result.json with the measurements (read by
`portability.py --summary`). A consumer that cannot compile an entry is a failure, never a skip.
"""
import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import portability as port  # the consumers, the argument signatures, the text checks
from portability import np

# The fixtures' tolerance against transformers (tests/unit/test_vlm_*.c).
REF_BOUND = 1e-4
ROOT = Path(__file__).resolve().parents[2]


def log(msg):
    print(msg, flush=True)


def preprocess(mlxcel, model, image, work):
    """Inputs of @vision by argument name, and the emit options its shapes need."""
    pixels, pooling = work / "pixels.npy", work / "pooling.npy"
    cmd = [mlxcel, "image", "-m", model, "--json", "--pixels-npy", str(pixels), str(image)]
    info = json.loads(port.run(cmd))
    inputs = {"pixels": np.load(pixels)}
    emit_opts = []
    if "image_grid_thw" in info:  # Qwen: @vision is built for the image's patch grid
        t, h, w = info["image_grid_thw"]
        emit_opts = ["--vision-grid", f"{h}x{w}"]
    if "image_token_pooling" in info:  # Molmo2: the patches each image token pools
        port.run(cmd + ["--pooling-npy", str(pooling)])
        inputs["pooling"] = np.load(pooling)
        # @vision is built per geometry: the crops, the image tokens they pool into, and the
        # patches each pools.
        c, (t, k) = inputs["pixels"].shape[0], inputs["pooling"].shape
        emit_opts = ["--vision-pooled", f"{c}x{t}x{k}"]
    return inputs, emit_opts


def reference_features(ref):
    """The reference's feature rows [N, W]: the main features, then each DeepStack set."""
    # Youtu-VL's reference (llama.cpp's) names each image's features; the prompt's is
    # prompt_image.
    main = ref["image_features"] if "image_features" in ref else ref[
        "image_features_" + ref["prompt_image"]]
    sets = [main] + [ref[f"deepstack_features_{i}"]
                                      for i in range(ref.get("n_deepstack", 0))]
    return np.concatenate([np.asarray(s, np.float32) for s in sets], axis=1)


def media_inputs(sig, prompt, ref, features):
    """@prefill_media's non-weight inputs by argument name: the prompt, the features placed at
    its image tokens, the M-RoPE positions and DeepStack rows where the entry takes them."""
    shapes = {name: shape for name, _, shape, _ in sig}
    T = len(prompt)
    at = np.flatnonzero(np.asarray(prompt) == ref["image_token_index"])
    feats = features.reshape(-1, features.shape[-1])
    if len(at) != feats.shape[0]:
        raise SystemExit(f"media: the prompt has {len(at)} image tokens, the tower "
                         f"{feats.shape[0]} feature rows")
    H = shapes["media"][-1]
    rows = np.zeros((T, feats.shape[1]), np.float32)
    rows[at] = feats
    inputs = {"tokens": np.asarray(prompt, np.int32).reshape(shapes["tokens"]),
              "media": rows[:, :H].reshape(shapes["media"])}
    if "positions" in shapes:
        inputs["positions"] = np.asarray(ref["mrope_position_ids"], np.int32).reshape(
            shapes["positions"])
    if "deepstack" in shapes:
        L = shapes["deepstack"][0]
        inputs["deepstack"] = np.stack([rows[:, H * (1 + l):H * (2 + l)] for l in range(L)]
                                       ).reshape(shapes["deepstack"])
    return inputs


def interpret(mlxcel, model, mlir, inputs, sig, work, tag):
    """The entry's first result on the reference interpreter, on these inputs."""
    out = work / f"interp_{tag}.npy"
    cmd = [mlxcel, "run", "--weights", model, "-o", str(out), str(mlir)]
    for name, _, shape, dtype in sig:
        if name in inputs and name != "tokens":
            f = work / f"{tag}_{name}.bin"
            f.write_bytes(np.ascontiguousarray(inputs[name], dtype).tobytes())
            cmd += ["--input", f"{name}={f}"]
    if "tokens" in inputs:
        cmd += ["--ids", ",".join(str(int(i)) for i in inputs["tokens"].reshape(-1))]
    t0 = time.time()
    port.run(cmd)
    return np.load(out), time.time() - t0


def consume(consumer, exe, sig, weights, inputs):
    """One call of a compiled entry: weights by name, the given inputs, zeros for the rest (the
    empty caches, pos0 = 0)."""
    args = []
    for name, role, shape, dtype in sig:
        if role == "weight":
            args.append(weights[name])
        elif name in inputs:
            args.append(consumer.put(np.ascontiguousarray(inputs[name], dtype).reshape(shape)))
        else:
            args.append(consumer.put(np.zeros(shape, dtype)))
    out, _ = consumer.call(exe, args)
    return np.asarray(out, np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlxcel", required=True)
    ap.add_argument("--model", required=True,
                    help="fixture directory (vision_reference.json, or Gemma 3n's "
                    "audio_reference.json)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--form", default="keep", choices=("keep", "inline"))
    ap.add_argument("--consumers", default="iree,xla")
    ap.add_argument("--vision-bound", type=float, required=True,
                    help="max |features (audio rows) - interpreter's| allowed")
    ap.add_argument("--logits-bound", type=float, required=True,
                    help="max |logits - interpreter's| allowed over every prompt position")
    ap.add_argument("--prompt", default="", choices=("", "two_image"),
                    help="two_image: the reference's prompt of the photograph twice with text "
                    "between (Molmo2: one block of both images' tokens, the text between unseen)")
    a = ap.parse_args()
    port.WORK = a.work
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    Path(work, "result.json").unlink(missing_ok=True)
    t_start = time.time()
    audio = Path(a.model, "audio_reference.json").exists()
    ref = json.loads(Path(a.model, "audio_reference.json" if audio else
                          "vision_reference.json").read_text())
    pre = a.prompt + "_" if a.prompt else ""  # two_image_prompt_ids, two_image_logits
    prompt = ref[pre + "prompt_ids"]
    T = len(prompt)
    tower = "audio" if audio else "vision"

    if audio:  # Gemma 3n: @audio on the reference's log-mel features (transformers' input)
        feats_in = np.asarray(ref["features"], np.float32)[None]
        vision_inputs = {"audio": feats_in, "audio_mask": np.asarray(ref["mask"], np.int32)[None]}
        emit_opts = ["--audio-frames", str(feats_in.shape[1])]
        with open(Path(a.model, "config.json")) as f:
            ref["image_token_index"] = json.load(f)["audio_token_id"]
    else:
        vision_inputs, emit_opts = preprocess(a.mlxcel, a.model, ROOT / ref["image"], work)
    emit_dir = work / a.form
    shutil.rmtree(emit_dir, ignore_errors=True)
    port.run([a.mlxcel, "emit", "-m", a.model, "-o", str(emit_dir), "--ctx", str(max(T, 64)),
              "--prefill-len", str(T), "--all-logits", "--main", "--params",
              str(emit_dir / "params.safetensors")] + emit_opts
             + (["--inline-composites"] if a.form == "inline" else []))
    entries = {}
    for e in (tower, "prefill_media"):
        path = emit_dir / f"{e}.mlir"
        if not path.exists():
            raise SystemExit(f"media: `mlxcel emit` wrote no {path.name} for {a.model}")
        port.check_portable_text(path)
        entries[e] = (path, port.entry_signature(path))

    # The interpreter: the features, then the prompt with those features at its image tokens.
    # Gemma 3n: the audio rows (padded to audio_soft_tokens_per_image) at its audio tokens.
    want_feats = (np.asarray(ref["audio_rows"], np.float32) if audio else
                  reference_features(ref))
    feats, t_vi = interpret(a.mlxcel, a.model, entries[tower][0], vision_inputs,
                            entries[tower][1], work, tower)
    feats = feats.reshape(want_feats.shape)
    # The two-image prompt: the same photograph's features for each image.
    pm_inputs = media_inputs(entries["prefill_media"][1], prompt, ref,
                             np.concatenate([feats, feats]) if a.prompt else feats)
    logits, t_pi = interpret(a.mlxcel, a.model, entries["prefill_media"][0], pm_inputs,
                             entries["prefill_media"][1], work, "prefill_media")
    logits = logits.reshape(T, -1)
    want_logits = np.asarray(ref["prompt_logits" if audio else pre + "logits"], np.float32)
    interp = {tower: feats, "prefill_media": logits}
    truth = {tower: want_feats, "prefill_media": want_logits}
    inputs = {tower: vision_inputs, "prefill_media": pm_inputs}
    bounds = {tower: a.vision_bound, "prefill_media": a.logits_bound}
    failures = []
    for e in entries:
        d = float(np.max(np.abs(interp[e] - truth[e])))
        log(f"interpreter @{e}: max |diff| to the reference {d:.3g} (bound {REF_BOUND:g}), "
            f"{t_vi if e == tower else t_pi:.1f} s")
        if d > REF_BOUND:
            failures.append(f"interpreter @{e}")

    weights = port.read_safetensors(emit_dir / "params.safetensors")
    consumers = {"iree": port.Iree, "xla": port.Xla}
    results = []
    for cname in a.consumers.split(","):
        consumer = consumers[cname]()
        dev_weights = {k: consumer.put(v) for k, v in weights.items()}
        for e, (path, sig) in entries.items():
            t0 = time.time()
            exe = consumer.compile(path)  # once: both comparisons read this run's result
            t_compile = time.time() - t0
            t0 = time.time()
            out = consume(consumer, exe, sig, dev_weights, inputs[e]).reshape(interp[e].shape)
            t_run = time.time() - t0
            err = float(np.max(np.abs(out - interp[e])))
            err_ref = float(np.max(np.abs(out - truth[e])))
            # Logits: every position's argmax is the interpreter's (features have no ids).
            same = (None if e == tower else
                    bool(np.all(np.argmax(out, -1) == np.argmax(interp[e], -1))))
            ok = err <= bounds[e] and err_ref <= REF_BOUND and same is not False
            results.append({"model": a.name, "entry": e, "form": a.form, "consumer": cname,
                            "precision": "f32", "quant": "none", "greedy_match": same,
                            "max_abs_err": err, "max_abs_err_transformers": err_ref,
                            "bound": bounds[e], "max_abs_logit": float(np.max(np.abs(interp[e]))),
                            "compile_s": round(t_compile, 2), "run_s": round(t_run, 2),
                            "ok": ok})
            log(f"{'PASS' if ok else 'FAIL'} {a.name} @{e} {a.form} {cname}: max |diff| to the "
                f"interpreter {err:.3g} (bound {bounds[e]:.3g}), to the reference {err_ref:.3g} "
                f"(bound {REF_BOUND:g}), "
                + ("" if same is None else
                   f"argmax {'equal' if same else 'DIFFERENT'} at the {T} positions, ")
                + f"compile {t_compile:.1f} s, run {t_run:.2f} s")
            if not ok:
                failures.append(f"{cname} @{e}")
    Path(work, "result.json").write_text(json.dumps(results, indent=1) + "\n")
    log(f"media {a.name}: {len(results)} cases ran, "
        f"{sum(r['ok'] for r in results)} passed; failed: {', '.join(failures) or 'none'} "
        f"({time.time() - t_start:.0f} s)")
    return 1 if failures or not results else 0


if __name__ == "__main__":
    sys.exit(main())
