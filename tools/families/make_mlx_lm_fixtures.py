#!/usr/bin/env python3
"""Tiny random-weight checkpoints of the text families transformers does not carry, with their
references computed by mlx-lm's modeling code (Apple's MLX, CPU build from PyPI).

MiniCPM and MiMo ship as remote code beside their checkpoints; transformers has no class for
them and the machines that write fixtures reach PyPI only. mlx-lm implements both (models/
minicpm.py, models/mimo.py), so it is the reference nobody here wrote: its ModelArgs read the
config, its Model gives the logits. The rest is as tools/families/make_family_fixtures.py: a
tiny model (hidden 64, 4 heads / 2 kv heads, vocab 256), deterministic random float32 weights
(the same per-tensor seeding), the forward in float64 on those weights without a cache, the
same reference.json layout (logits of every prompt position, 32 greedy ids with their top-2
margins, the logits of every continuation step).

Where mlx-lm and the authors' code differ, the fixture stays where they agree, and says so:
MiniCPM's authors divide the final hidden state by hidden_size / dim_model_base before the head
in every case; mlx-lm skips it with a tied head. The fixture's head is untied.

Run once on a developer machine (not part of CI):
    python3 -m venv /tmp/mlxenv && /tmp/mlxenv/bin/pip install "mlx[cpu]" mlx-lm numpy
    /tmp/mlxenv/bin/python tools/families/make_mlx_lm_fixtures.py [name ...]
"""
import importlib
import json
import os
import shutil
import struct
import sys

import mlx.core as mx
import mlx_lm
import numpy as np
from mlx.utils import tree_flatten

from fixture_reference import (MIN_MARGIN, N_GREEDY, N_PROMPT, WEIGHTS_SEED, f32, greedy, main,
                               random_values, report, write_reference)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                    "families")
COMMON = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
    hidden_act="silu",
    tie_word_embeddings=False,
)

# name -> (mlx-lm module, config overrides, architectures, what the checkpoint exercises,
#          extra tensors the engine must ignore)
FAMILIES = {
    "minicpm": ("minicpm",
                dict(model_type="minicpm", scale_emb=12.0, scale_depth=1.4, dim_model_base=16),
                ["MiniCPMForCausalLM"],
                "scale_emb 12, residuals x scale_depth / sqrt(layers) (1.4 / sqrt 2), hidden / "
                "(hidden_size / dim_model_base) = / 4 before the untied head",
                {}),
    "mimo": ("mimo",
             dict(model_type="mimo", num_nextn_predict_layers=1, use_sliding_window=False,
                  max_window_layers=2, attention_dropout=0.0),
             ["MiMoForCausalLM"],
             "Qwen2's layer (q/k/v biases) with one multi-token-prediction layer whose tensors "
             "(model.mtp_layers.0.*) generation does not read",
             {"model.mtp_layers.0.input_proj.weight": (64, 128),
              "model.mtp_layers.0.token_layernorm.weight": (64,),
              "model.mtp_layers.0.hidden_layernorm.weight": (64,),
              "model.mtp_layers.0.self_attn.q_proj.weight": (64, 64),
              "model.mtp_layers.0.mlp.down_proj.weight": (64, 128)}),
}


def forward(model, ids):
    return np.array(model(mx.array([ids]))[0].astype(mx.float64))


def pad_header(path):
    """Pads the file's JSON header with spaces to a multiple of 8 bytes, as the safetensors
    library writes it: mlx's writer does not, and tensor data at an odd offset would be read
    through misaligned pointers."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = f.read(n), f.read()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def make(name):
    module, overrides, archs, what, extra = FAMILIES[name]
    cfg = dict(COMMON)
    cfg.update(overrides)
    cfg["architectures"] = archs
    lib = importlib.import_module(f"mlx_lm.models.{module}")
    model = lib.Model(lib.ModelArgs.from_dict(cfg))
    weights = {k: random_values(k, tuple(v.shape), WEIGHTS_SEED)
               for k, v in tree_flatten(model.parameters())}
    stored = dict(weights)
    for k, shape in extra.items():
        stored[k] = random_values(k, shape, WEIGHTS_SEED)
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    mx.save_safetensors(os.path.join(out, "model.safetensors"),
                        {k: mx.array(stored[k]) for k in sorted(stored)},
                        metadata={"format": "pt"})
    pad_header(os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(dict(cfg, torch_dtype="float32"), f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}, f, indent=2)
        f.write("\n")
    # The reference: the checkpoint read back through mlx-lm's sanitize (which drops what
    # generation does not read), in float64.
    loaded = dict(mx.load(os.path.join(out, "model.safetensors")))
    model.load_weights(list(model.sanitize(loaded).items()), strict=True)
    model.set_dtype(mx.float64)
    best = None
    for prompt_seed in range(1, 41):
        g = np.random.default_rng(prompt_seed)
        prompt = [int(x) for x in g.integers(3, cfg["vocab_size"], N_PROMPT)]
        prompt[0] = cfg["bos_token_id"]
        ids, margins = greedy(lambda seq: forward(model, seq), prompt)
        if min(margins) < MIN_MARGIN:
            continue
        score = len(set(ids))
        if best is None or score > best[0]:
            best = (score, prompt_seed, prompt, ids, margins)
        if prompt_seed >= 20 and best is not None:
            break
    if best is None:
        raise SystemExit(f"{name}: no prompt with greedy margins >= {MIN_MARGIN}")
    _, prompt_seed, prompt, ids, margins = best
    full = forward(model, prompt + ids)
    fields = {
        "format": "hf-fixture-reference/1",
        "arch": cfg["model_type"],
        "model_type": cfg["model_type"],
        "architectures": archs,
        "exercises": what,
        "generator": "tools/families/make_mlx_lm_fixtures.py",
        "mlx_version": mx.__version__,
        "mlx_lm_version": mlx_lm.__version__,
        "reference_dtype": "float64 forward of mlx-lm's modeling code on the float32 weights",
        "weights_seed": WEIGHTS_SEED,
        "prompt_seed": prompt_seed,
        "layer_types": [],
        "n_prompt": N_PROMPT,
        "n_greedy": N_GREEDY,
        "prompt_ids": prompt,
        "greedy_ids": ids,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
    }
    write_reference(os.path.join(out, "reference.json"), fields, full[:N_PROMPT],
                    full[N_PROMPT:N_PROMPT + N_GREEDY - 1])
    report(name, out, prompt_seed, ids, margins)


if __name__ == "__main__":
    main(sys.argv, FAMILIES, make)
