"""What the family fixture generators share, free of any framework (numpy only): the sizes and
seeds of a reference, the deterministic random weights, the greedy continuation with its top-2
margins, and reference.json's layout (../shared/fixtures/README.md). Used by
make_family_fixtures.py (transformers) and make_mlx_lm_fixtures.py (mlx-lm)."""
import json
import os
import zlib

import numpy as np

N_PROMPT = 24
N_GREEDY = 32
MIN_MARGIN = 1e-3  # top-1 minus top-2 at every greedy step: float32 engines cannot flip it
WEIGHTS_SEED = 1234


def random_values(name, shape, seed):
    """A tensor from its own generator (seed and the name's CRC-32): norm weights 1 + N(0, 0.1),
    biases N(0, 0.03), everything else (DeepSeek-V3's e_score_correction_bias included)
    N(0, 0.05); drawn in float64, rounded to float32."""
    g = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if "norm" in name and name.endswith("weight"):
        v = 1.0 + g.normal(0.0, 0.1, shape)
    elif name.endswith("bias") and not name.endswith("e_score_correction_bias"):
        v = g.normal(0.0, 0.03, shape)
    else:
        v = g.normal(0.0, 0.05, shape)
    return v.astype(np.float32)


def greedy(forward, prompt):
    """N_GREEDY greedy ids after the prompt and each step's top-1 minus top-2 logit; forward(ids)
    gives the logits [len(ids), vocab] of a whole sequence."""
    seq = list(prompt)
    ids, margins = [], []
    for _ in range(N_GREEDY):
        last = forward(seq)[-1]
        order = np.argsort(-last, kind="stable")
        ids.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
    return ids, margins


def f32(x):
    return repr(float(np.float32(x))) if np.isfinite(x) else "null"


def rows(a):
    return "[" + ",\n".join("[" + ",".join(f32(v) for v in r) + "]" for r in a) + "]"


def write_reference(path, fields, logits, dlogits):
    """reference.json: the fields, then the prompt's logits and the decode steps' logits."""
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts.append(f'  "logits": {rows(logits)}')
    parts.append(f'  "decode_logits": {rows(dlogits)}')
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")


def report(name, out, prompt_seed, ids, margins):
    """The one line a generator prints per fixture written to the folder `out`."""
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"{name}: prompt seed {prompt_seed}, {len(set(ids))} distinct greedy ids, "
          f"min margin {min(margins):.4g}, {size / 1024:.0f} KiB")


def main(argv, families, make):
    """Writes the fixtures named in argv[1:] (all of `families` when none), refusing others."""
    for name in argv[1:] or list(families):
        if name not in families:
            raise SystemExit(f"unknown fixture {name} (known: {', '.join(families)})")
        make(name)
