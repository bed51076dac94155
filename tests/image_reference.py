#!/usr/bin/env python3
"""`mlxcel image` against transformers' PIL image processors (tests/data/image, written by
tools/image_refs/generate.py; see its docstring for the reference format).

Checks, per input image: the decoded 8-bit RGB equals PIL's (PNG: exactly; JPEG: within
JPEG_DECODE_TOL levels, libjpeg-turbo builds may round the IDCT differently); per (image,
processor) case: pixel_values has the processor's shape and image_grid_thw, and equals it
exactly for PNG inputs (the resampling is PIL's fixed-point arithmetic, bit for bit) and within
JPEG_PIXEL_TOL levels of the processor's 8-bit image for JPEG inputs (a decode difference
carried through the resize). Molmo2's processor resizes through torch's bilinear interpolation in
f32 (with the fused multiply-adds of torch's x86 build) and rounds to 8 bits: the same bounds
hold, and its image_token_pooling and image_grids must be equal. (Hostile files:
tests/cli_image.sh.) Prints the largest differences measured.

Usage: image_reference.py MLXCEL SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# Decoded JPEG levels may differ by this much from PIL's libjpeg-turbo build (another build may
# round its SIMD colour conversion differently; measured 0 here: docs/adr/0009-image-decoders.md).
# Resampling is a weighted sum whose absolute weights add up to at most 1.25 per bicubic pass
# (Keys' kernel, a = -0.5), 1.5625 over both: a decode difference of 1 level moves the
# processor's 8-bit image by about 2 levels once each pass has rounded, which the test allows.
JPEG_DECODE_TOL = 1
JPEG_PIXEL_TOL = 2


def run(mlxcel, args):
    return subprocess.run([mlxcel, "image"] + args, capture_output=True, text=True)


def main():
    mlxcel, src = sys.argv[1], sys.argv[2]
    data = os.path.join(src, "tests", "data", "image")
    man_path = os.path.join(data, "manifest.json")
    if not os.path.exists(man_path):
        print("missing %s (tools/image_refs/generate.py writes it)" % man_path)
        return 77
    man = json.load(open(man_path))
    fails = []
    worst = {"png_decode": 0, "jpeg_decode": 0, "png_pixels": 0.0, "jpeg_pixels": 0.0,
             "cases": 0, "exact_cases": 0}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        for name in man["inputs"]:
            path = os.path.join(data, "inputs", name)
            r = run(mlxcel, ["--decoded-npy", out, path])
            if r.returncode != 0:
                fails.append("%s: exit %d: %s" % (name, r.returncode, r.stderr.strip()))
                continue
            ours = np.load(out).astype(np.int32)
            ref = np.load(os.path.join(data, "ref", name + ".decoded.npz"))["rgb"].astype(np.int32)
            if ours.shape != ref.shape:
                fails.append("%s: decoded shape %s, PIL %s" % (name, ours.shape, ref.shape))
                continue
            d = int(np.abs(ours - ref).max())
            jpeg = name.endswith(".jpg")
            key = "jpeg_decode" if jpeg else "png_decode"
            worst[key] = max(worst[key], d)
            if d > (JPEG_DECODE_TOL if jpeg else 0):
                fails.append("%s: decoded pixels differ from PIL's by %d levels (%d pixels)" %
                             (name, d, int((ours != ref).any(axis=2).sum())))
        for case in man["cases"]:
            name, cfg = case["input"], case["config"]
            label = "%s with %s" % (name, cfg)
            config = os.path.join(data, "configs", cfg, "preprocessor_config.json")
            pool_out = os.path.join(tmp, "pooling.npy")
            molmo2 = case.get("channels_last", False)
            extra = ["--pooling-npy", pool_out] if molmo2 else []
            r = run(mlxcel, ["--config", config, "--json", "--pixels-npy", out] + extra +
                    [os.path.join(data, "inputs", name)])
            if r.returncode != 0:
                fails.append("%s: exit %d: %s" % (label, r.returncode, r.stderr.strip()))
                continue
            info = json.loads(r.stdout)
            ref = np.load(os.path.join(data, "ref", "%s.%s.npz" % (name, cfg)))
            codes, table = ref["codes"], ref["table"]
            if molmo2:
                ch = np.broadcast_to(np.arange(codes.shape[2]) % 3, codes.shape)
            elif len(codes.shape) == 3:
                ch = np.broadcast_to(np.arange(3)[:, None, None], codes.shape)
            else:
                per = codes.shape[1] // 3
                ch = np.broadcast_to((np.arange(codes.shape[1]) // per)[None, :], codes.shape)
            want = table[ch, codes]
            ours = np.load(out)
            if list(ours.shape) != case["shape"]:
                fails.append("%s: pixel_values shape %s, processor %s" %
                             (label, list(ours.shape), case["shape"]))
                continue
            if "grid_thw" in case and info.get("image_grid_thw") != case["grid_thw"]:
                fails.append("%s: image_grid_thw %s, processor %s" %
                             (label, info.get("image_grid_thw"), case["grid_thw"]))
            if molmo2:
                if info.get("image_grids") != case["image_grids"]:
                    fails.append("%s: image_grids %s, processor %s" %
                                 (label, info.get("image_grids"), case["image_grids"]))
                pool = np.load(pool_out)
                if pool.shape != ref["pooling"].shape or not np.array_equal(pool, ref["pooling"]):
                    fails.append("%s: image_token_pooling %s differs from the processor's %s" %
                                 (label, pool.shape, ref["pooling"].shape))
            d = float(np.abs(ours.astype(np.float64) - want).max())
            jpeg = name.endswith(".jpg")
            step = float(np.max(np.diff(table, axis=1))) * 1.0001  # one level in pixel_values
            worst["cases"] += 1
            worst["exact_cases"] += int(d == 0)
            if jpeg:
                worst["jpeg_pixels"] = max(worst["jpeg_pixels"], d)
                bound = step * JPEG_PIXEL_TOL
                if d > bound:
                    fails.append("%s: pixel_values differ by %g (bound %g)" % (label, d, bound))
            else:
                worst["png_pixels"] = max(worst["png_pixels"], d)
                if d != 0:
                    n = int((ours != want).sum())
                    fails.append("%s: pixel_values differ by up to %g in %d values (exact "
                                 "expected)" % (label, d, n))
    print("measured: %s" % json.dumps(worst))
    for f in fails:
        print("FAIL " + f)
    n = len(man["inputs"]) + len(man["cases"])
    print("%d checks, %d failed" % (n, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
