#!/usr/bin/env python3
"""Holds `mlxcel image`'s resize to PIL's Image.resize on random sizes and images (both filters,
growing and shrinking sides in every mix, so both orders of the two passes): exits 1 on any
difference. Run on a developer machine with the scratch environment of generate.py:
    /tmp/imgenv/bin/python tools/image_refs/resize_order.py build/mlxcel [COUNT]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image


def main():
    mlxcel = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rs = np.random.RandomState(7)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            iw, ih = rs.randint(1, 120, 2)
            ow, oh = rs.randint(1, 160, 2)
            if i % 10 == 0:
                ow, oh = iw * rs.randint(1, 3), ih * rs.randint(1, 3)  # ties of the ratio rule
            filt = [2, 3][i % 2]
            img = rs.randint(0, 256, (ih, iw, 3)).astype(np.uint8)
            src = os.path.join(tmp, "in.png")
            Image.fromarray(img).save(src)
            cfg = os.path.join(tmp, "c.json")
            json.dump({"image_processor_type": "SiglipImageProcessor", "resample": filt,
                       "size": {"height": int(oh), "width": int(ow)}}, open(cfg, "w"))
            out = os.path.join(tmp, "out.npy")
            subprocess.run([mlxcel, "image", "--config", cfg, "--resized-npy", out, src],
                           check=True, capture_output=True)
            ours = np.load(out)
            ref = np.asarray(Image.fromarray(img).resize((int(ow), int(oh)), filt))
            if not np.array_equal(ours, ref):
                bad += 1
                print("differs: %dx%d -> %dx%d filter %d: max %d" % (
                    iw, ih, ow, oh, filt, np.abs(ours.astype(int) - ref).max()))
    print("%d of %d resizes differ from PIL" % (bad, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
