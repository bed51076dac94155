#!/usr/bin/env python3
"""Tiny random-weight checkpoints of the text families, written by transformers itself.

For each model_type below: the family's own config and modeling classes from the installed
transformers build a tiny model (hidden 64, 4 heads / 2 kv heads, vocab 256), its parameters get
deterministic random values, save_pretrained writes it (safetensors, float32), and the same
modeling code, run in float64 on those float32 weights (eager attention, no cache), gives the
reference: logits of every prompt position, a 32-token greedy continuation with its top-2
margins, and the logits of every continuation step (what a KV-cached decode must reproduce).
Output: tests/data/families/<name>/{config.json, generation_config.json,
model.safetensors, reference.json}, the reference in the layout of the shared fixtures
(../shared/fixtures/README.md) with 32 greedy ids.

Run once on a developer machine (needs torch + transformers; not part of CI):
    python3 -m venv /tmp/famenv && /tmp/famenv/bin/pip install torch transformers safetensors numpy
    /tmp/famenv/bin/python tools/families/make_family_fixtures.py [model_type ...]
Deterministic for a given transformers / torch version: the weights come from per-tensor seeds.
"""
import json
import os
import shutil
import sys
import zlib

import numpy as np
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

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
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)

# model_type -> (config overrides, what the checkpoint exercises)
FAMILIES = {
    "granite": (dict(embedding_multiplier=3.0, residual_multiplier=0.5, attention_multiplier=0.3,
                     logits_scaling=2.0, tie_word_embeddings=True),
                "embedding / residual / attention multipliers, logits_scaling, tied head"),
    "smollm3": (dict(no_rope_layer_interval=2),
                "NoPE layer 1 (no_rope_layers from no_rope_layer_interval 2), tied head"),
    "olmo2": (dict(bos_token_id=None),
              "post-norms only, q/k RMSNorm over the whole projection, separate head"),
    "olmo3": (dict(bos_token_id=None, sliding_window=8,
                   layer_types=["sliding_attention", "full_attention"],
                   rope_parameters={
                       "full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                       "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
              "olmo2's layer, window 8 on layer 0, a RoPE base per layer type"),
    "exaone4": (dict(bos_token_id=1, sliding_window=8, sliding_window_pattern=2),
                "post-norms, per-head q/k RMSNorm, window 8 on layer 0 (sliding_window_pattern 2), "
                "no RoPE on the full layer 1"),
    "seed_oss": (dict(head_dim=16),
                 "q/k/v biases (attention_bias true by default), no o_proj bias"),
    "starcoder2": (dict(sliding_window=8),
                   "LayerNorm with bias, biases on every projection (use_bias), plain "
                   "gelu_pytorch_tanh MLP c_fc / c_proj, window 8 on every layer, tied head"),
    "stablelm": (dict(use_qkv_bias=True),
                 "LayerNorm with bias, partial_rotary_factor 0.25 (default), q/k/v biases, "
                 "sequential residual"),
    "cohere": (dict(logit_scale=0.25),
               "bias-free LayerNorm, parallel block, interleaved RoPE, logit_scale, tied head"),
    "internlm3": (dict(head_dim=16, attention_bias=True, mlp_bias=True),
                  "Llama's layer with biases on q/k/v/o and gate/up/down, head_dim 16"),
    "exaone": (dict(head_dim=16),
               "Llama's layer in EXAONE 3's original tensor names (transformer.h.<l>.attn."
               "attention.*, ln_1 / ln_2, mlp.c_fc_0 / c_fc_1 / c_proj), read back by "
               "transformers' own renaming"),
    "cohere2": (dict(logit_scale=0.25, sliding_window=8, sliding_window_pattern=2),
                "cohere's layer, window 8 and RoPE on layer 0 only (pattern 2), tied head"),
    "phi4_multimodal": (dict(partial_rotary_factor=0.75, num_key_value_heads=2,
                             vision_config=dict(hidden_size=16, intermediate_size=32,
                                                num_hidden_layers=1, num_attention_heads=2,
                                                image_size=28, crop_size=28),
                             audio_config=dict(hidden_size=16, intermediate_size=32, num_blocks=1,
                                               num_attention_heads=2, ext_pw_out_channel=16,
                                               depthwise_separable_out_channel=16,
                                               nemo_conv_channels=16)),
                        "Phi-4-multimodal's text model (Phi-3's layer, partial rotary 0.75) beside "
                        "its image / audio embedders, which text does not read"),
    "phi4mm": (dict(model_type="phi4_multimodal", partial_rotary_factor=0.75,
                    num_key_value_heads=2,
                    vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, image_size=28, crop_size=28),
                    audio_config=dict(hidden_size=16, intermediate_size=32, num_blocks=1,
                                      num_attention_heads=2, ext_pw_out_channel=16,
                                      depthwise_separable_out_channel=16, nemo_conv_channels=16)),
               "the same model in the released checkpoint's remote-code layout (model_type "
               "phi4mm): each adapted projection as <proj>.base_layer.weight beside random "
               "vision / speech LoRA tensors, which text (adapters off) does not read"),
    # Gemma 3n's text model: AltUp over 4 streams, Laurel, per-layer embeddings (a table of 128
    # rows: ids from 128 on take row 0, as transformers clamps them), the gaussian top-k on the
    # first two layers' MLPs, layers 2 and 3 reading layers 0 and 1's KV (num_kv_shared_layers).
    "gemma3n_text": (dict(num_hidden_layers=4, head_dim=16, intermediate_size=[128, 96, 128, 96],
                          hidden_size_per_layer_input=8, vocab_size_per_layer_input=128,
                          laurel_rank=8, num_kv_shared_layers=2, sliding_window=8,
                          layer_types=["sliding_attention", "full_attention"] * 2,
                          activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0]),
                     "AltUp (4 streams, predict / correct, scaled output), Laurel, per-layer "
                     "inputs (table of 128 rows, ids above clamped to 0), activation sparsity "
                     "0.95 on layers 0-1, per-layer intermediate sizes, KV sharing of layers "
                     "2-3, window 8 on even layers, v_norm, attention scale 1, softcap 30"),
    # The same model in the layout of the full Gemma 3n checkpoint (model_type gemma3n: the text
    # config nested as text_config, the tensors under model.language_model.), whose text part is
    # this Gemma3nTextModel (its audio / vision towers, which need timm, are not written).
    "gemma3n": (dict(model_type="gemma3n_text", num_hidden_layers=4, head_dim=16,
                     intermediate_size=[128, 96, 128, 96], hidden_size_per_layer_input=8,
                     vocab_size_per_layer_input=128, laurel_rank=8, num_kv_shared_layers=2,
                     sliding_window=8, layer_types=["sliding_attention", "full_attention"] * 2,
                     activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0]),
                "gemma3n_text's model as the full checkpoint lays out its text part "
                "(text_config, model.language_model.*)"),
    # RoPE scaling variants (the directory names the variant; model_type says the family).
    "llama-yarn": (dict(model_type="llama",
                        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0,
                                         "factor": 4.0, "original_max_position_embeddings": 32}),
                   "YaRN with its defaults (betas 32 / 1, truncated correction range, "
                   "attention factor 0.1 ln(4) + 1 on cos and sin)"),
    "qwen3-yarn": (dict(model_type="qwen3", head_dim=16,
                        rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0,
                                         "factor": 8.0, "original_max_position_embeddings": 64,
                                         "beta_fast": 8.0, "beta_slow": 2.0, "truncate": False,
                                         "mscale": 1.0, "mscale_all_dim": 0.5}),
                   "YaRN with betas 8 / 2, an untruncated correction range and the attention "
                   "factor from mscale / mscale_all_dim"),
    "internlm3-dynamic": (dict(model_type="internlm3", head_dim=16, attention_bias=True,
                               mlp_bias=True,
                               rope_parameters={"rope_type": "dynamic", "factor": 6.0,
                                                "rope_theta": 50000000.0}),
                          "dynamic NTK scaling as released InternLM3 files carry it: the plain "
                          "frequencies for sequences within max_position_embeddings"),
    "phi3-longrope": (dict(model_type="phi3", partial_rotary_factor=0.75,
                           original_max_position_embeddings=16,
                           rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                            "short_factor": [1.0, 1.1, 1.3, 1.7, 2.3, 3.1],
                                            "long_factor": [1.0, 1.5, 2.5, 4.5, 8.0, 14.0]}),
                      "LongRoPE's long factors (every sequence is longer than the original 16), "
                      "attention factor sqrt(1 + ln(128 / 16) / ln(16)), partial rotary 0.75"),
    "phi3-longrope-short": (dict(model_type="phi3", partial_rotary_factor=0.75,
                                 original_max_position_embeddings=64,
                                 rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0,
                                                  "short_factor": [1.0, 1.1, 1.3, 1.7, 2.3, 3.1],
                                                  "long_factor": [1.0, 1.5, 2.5, 4.5, 8.0, 14.0]}),
                            "LongRoPE's short factors (every sequence fits the original 64), "
                            "attention factor sqrt(1 + ln(2) / ln(64))"),
    # Mixtures of experts: 8 experts, top-2, per-expert tensors as save_pretrained writes them.
    "mixtral": (dict(num_local_experts=8, num_experts_per_tok=2, intermediate_size=32),
                "8 experts of intermediate 32, top-2 of a softmax, always renormalized"),
    "qwen2_moe": (dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                       shared_expert_intermediate_size=48, mlp_only_layers=[1]),
                  "8 experts, top-2 not renormalized (norm_topk_prob false), shared expert "
                  "with a sigmoid gate, layer 1 dense (mlp_only_layers), q/k/v biases"),
    "qwen3_moe": (dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                       norm_topk_prob=True, head_dim=16),
                  "8 experts, top-2 renormalized (norm_topk_prob), per-head q/k RMSNorm"),
    "olmoe": (dict(num_experts=8, num_experts_per_tok=2, intermediate_size=32,
                   bos_token_id=None),
              "8 experts, top-2 not renormalized, q/k RMSNorm over the whole projection"),
    # Multi-latent attention (DeepSeek-V2 / V3), every layer dense (first_k_dense_replace):
    # the keys and values come from a compressed latent and one shared rope key per position.
    "deepseek_v2": (dict(num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
                         qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12,
                         first_k_dense_replace=2, n_routed_experts=8, num_experts_per_tok=2,
                         moe_intermediate_size=32),
                    "MLA with a low-rank query (q_a_proj, q_a_layernorm, q_b_proj), latent 16, "
                    "nope 16 + interleaved rope 8 per query head, values of 12, dense layers"),
    "deepseek_v3": (dict(num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16,
                         qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                         first_k_dense_replace=2, n_routed_experts=8, num_experts_per_tok=2,
                         n_group=2, topk_group=1, moe_intermediate_size=32,
                         rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                       "original_max_position_embeddings": 32,
                                       "mscale": 1.0, "mscale_all_dim": 0.8}),
                    "MLA with a full query projection (q_proj), rope_interleave's permuted "
                    "pairs, YaRN with mscale_all_dim (softmax scale x mscale^2), dense layers"),
    # Youtu-LLM: DeepSeek-V3's attention on every layer of a dense model (no expert fields).
    "youtu": (dict(num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16, qk_nope_head_dim=16,
                   qk_rope_head_dim=8, v_head_dim=12, rms_norm_eps=1e-5,
                   rope_parameters={"rope_type": "default", "rope_theta": 100000.0}),
              "MLA with a low-rank query, latent 16, nope 16 + rope_interleave's permuted pairs "
              "of 8, values of 12, rms_norm_eps 1e-5 beside the latent norms' fixed 1e-6, "
              "dense SwiGLU layers, tied head (YoutuConfig's default)"),
    # DeepSeek's mixtures of experts (layer 0 dense: first_k_dense_replace), shared experts summed
    # without a gate, routed_scaling_factor on the routing weights.
    "deepseek_v2-moe": (dict(model_type="deepseek_v2", num_key_value_heads=4, q_lora_rank=24,
                             kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                             v_head_dim=12, first_k_dense_replace=1, n_routed_experts=16,
                             num_experts_per_tok=3, moe_intermediate_size=16, n_shared_experts=1,
                             topk_method="group_limited_greedy", n_group=4, topk_group=2,
                             routed_scaling_factor=1.5),
                        "MLA, 16 experts in 4 groups: softmax, the 2 groups of the largest "
                        "maximum, top-3 among their experts (group_limited_greedy: with more "
                        "experts chosen than groups kept, the limit changes choices), weights "
                        "x 1.5, one shared expert"),
    "deepseek_v2-greedy": (dict(model_type="deepseek_v2", num_key_value_heads=4, q_lora_rank=None,
                                kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                                v_head_dim=16, first_k_dense_replace=1, n_routed_experts=8,
                                num_experts_per_tok=3, moe_intermediate_size=32,
                                n_shared_experts=2, topk_method="greedy"),
                           "MLA, 8 experts: softmax, top-3 of all (greedy), two shared experts "
                           "as one MLP of twice the width"),
    "deepseek_v3-moe": (dict(model_type="deepseek_v3", num_key_value_heads=4, q_lora_rank=24,
                             kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                             v_head_dim=16, first_k_dense_replace=1, n_routed_experts=16,
                             num_experts_per_tok=3, moe_intermediate_size=16, n_shared_experts=1,
                             n_group=4, topk_group=2, norm_topk_prob=True,
                             routed_scaling_factor=2.5),
                        "MLA, 16 experts in 4 groups: sigmoid scores plus e_score_correction_bias "
                        "for the choice only, the 2 groups of the largest top-2 sums, top-3 "
                        "among their experts, weights renormalized x 2.5, one shared expert"),
    # gpt-oss: sinks, alternating sliding / full layers, YaRN (truncate false), a router with a
    # bias (top-k of the logits, softmax over the k), experts with biases and the clamped SwiGLU
    # (a limit small enough to clamp here), stacked expert tensors as save_pretrained writes them.
    "gpt_oss": (dict(num_local_experts=8, num_experts_per_tok=2, intermediate_size=32,
                     head_dim=16, sliding_window=8, swiglu_limit=0.3, bos_token_id=None,
                     rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0,
                                      "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                                      "original_max_position_embeddings": 32}),
                "attention sinks, sliding window 8 on even layers, YaRN x4 (truncate false), "
                "router bias with softmax over the top-2 logits, experts with biases, clamped "
                "SwiGLU (alpha 1.702, limit 0.3, up + 1), q/k/v/o biases"),
    # The same with its experts in MXFP4 as the released checkpoints store them (*_blocks,
    # *_scales, quantization_config mxfp4): quantized here (transformers cannot write MXFP4
    # without its GPU kernels), the reference the model of transformers' own dequantization.
    "gpt_oss-mxfp4": (dict(model_type="gpt_oss", num_local_experts=8, num_experts_per_tok=2,
                           intermediate_size=32, head_dim=16, sliding_window=8, swiglu_limit=0.3,
                           bos_token_id=None,
                           rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0,
                                            "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                            "truncate": False,
                                            "original_max_position_embeddings": 32}),
                      "gpt_oss's fixture with MXFP4 experts (e2m1 pairs per byte, e8m0 scales per "
                      "32 values), the reference transformers' dequantized model"),
}

MIN_ROUTE_MARGIN = 1e-4  # k-th minus (k+1)-th router probability at every token and layer


def gap(scores, k):
    """Smallest k-th minus (k+1)-th value per row (inf where the (k+1)-th is -inf)."""
    if k >= scores.shape[-1]:
        return float("inf")
    top = torch.topk(scores, k + 1, dim=-1).values
    d = top[:, -2] - top[:, -1]
    return float(torch.where(torch.isinf(top[:, -1]), torch.inf, d).min())


def deepseek_choice(module, logits):
    """DeepSeek's routers (transformers' DeepseekV2TopkRouter / DeepseekV3TopkRouter): the
    scores the top-k is taken over, after the group limit, and the group choice's own gap."""
    v3 = hasattr(module, "e_score_correction_bias")
    if v3:
        scores = torch.sigmoid(logits) + module.e_score_correction_bias.to(torch.float64)
    else:
        scores = torch.softmax(logits, dim=-1)
        if module.topk_method != "group_limited_greedy":
            return scores, float("inf")
    g = module.num_group
    grouped = scores.view(-1, g, scores.shape[-1] // g)
    gs = grouped.topk(2, dim=-1)[0].sum(-1) if v3 else grouped.max(dim=-1).values
    group_gap = gap(gs, module.topk_group)
    idx = torch.topk(gs, module.topk_group, dim=-1)[1]
    mask = torch.zeros_like(gs).scatter_(1, idx, 1).bool()
    mask = mask.unsqueeze(-1).expand_as(grouped).reshape(scores.shape)
    return scores.masked_fill(~mask, -torch.inf), group_gap


class RouteMargins:
    """Forward hooks on the routers (modules named *TopKRouter) recording the smallest gap
    between the k-th and the (k+1)-th score the experts are chosen by (softmax probabilities;
    DeepSeek's group scores and masked choice scores too): a float32 engine cannot pick
    another expert set where the gap is larger than its rounding."""

    def __init__(self, model):
        self.min = float("inf")
        self.handles = [m.register_forward_hook(self.hook) for m in model.modules()
                        if type(m).__name__.endswith("TopkRouter")
                        or type(m).__name__.endswith("TopKRouter")]

    def hook(self, module, args, out):
        logits = out[0].to(torch.float64)
        if type(module).__name__.startswith("Deepseek"):
            scores, group_gap = deepseek_choice(module, logits)
            self.min = min(self.min, group_gap)
        else:
            scores = torch.softmax(logits, dim=-1)
        self.min = min(self.min, gap(scores, module.top_k))

    def reset(self):
        self.min = float("inf")


def fill_weights(model, seed):
    """Every parameter from its own generator (fixture_reference.random_values). DeepSeek-V3's
    e_score_correction_bias (a buffer, zeros at init) gets N(0, 0.05) too, so that the
    choice-only bias changes which experts are chosen."""
    tensors = list(model.named_parameters()) + [
        (n, b) for n, b in model.named_buffers() if n.endswith("e_score_correction_bias")]
    with torch.no_grad():
        for name, p in tensors:
            p.copy_(torch.from_numpy(random_values(name, tuple(p.shape), seed)))


# save_pretrained writes Llama's names; released EXAONE 3 files keep their original ones, which
# transformers renames on load (conversion_mapping.py): write those, and check that transformers
# reads them back to the same model.
EXAONE_ORIGINAL = [
    ("model.embed_tokens.", "transformer.wte."), ("model.layers.", "transformer.h."),
    ("model.norm.", "transformer.ln_f."), (".self_attn.o_proj.", ".attn.attention.out_proj."),
    (".self_attn.", ".attn.attention."), (".input_layernorm.", ".ln_1."),
    (".post_attention_layernorm.", ".ln_2."), (".mlp.gate_proj.", ".mlp.c_fc_0."),
    (".mlp.up_proj.", ".mlp.c_fc_1."), (".mlp.down_proj.", ".mlp.c_proj."),
]


def readback_diff(model, back):
    """Largest |logit difference| of a model and the one transformers read back from its file,
    on a fixed 16-token input."""
    ids = torch.arange(3, 19).unsqueeze(0)
    with torch.no_grad():
        a = model(ids, use_cache=False).logits
        b = back(ids, use_cache=False).logits
    return float((a - b).abs().max())


def to_original_names(out, model):
    from safetensors.torch import load_file, save_file
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    renamed = {}
    for name, t in tensors.items():
        for a, b in EXAONE_ORIGINAL:
            name = name.replace(a, b, 1)
        renamed[name] = t
    save_file(dict(sorted(renamed.items())), path, metadata={"format": "pt"})
    back = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32,
                                                attn_implementation="eager")
    diff = readback_diff(model, back)
    if diff > 1e-6:
        raise SystemExit(f"exaone: transformers reads the original names back differently "
                         f"(max |dlogit| {diff:.3g})")


# The released Phi-4-multimodal files come from its remote code (model_type phi4mm): each of
# qkv_proj, o_proj, gate_up_proj and down_proj is a peft LoRA wrapper whose frozen weight is
# <proj>.base_layer.weight, with lora_A / lora_B for the "vision" and "speech" adapters, which
# language-only input leaves off (transformers' own conversion keeps base_layer and drops the
# LoRA tensors). transformers cannot read this layout back, so the reference stays the native
# model's.
PHI4MM_ADAPTED = (".self_attn.qkv_proj.", ".self_attn.o_proj.", ".mlp.gate_up_proj.",
                  ".mlp.down_proj.")


def to_remote_code_layout(out, model):
    from safetensors.torch import load_file, save_file
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    laid = {}
    for name, t in tensors.items():
        adapted = next((a for a in PHI4MM_ADAPTED if a in name), None)
        if adapted is None or not name.endswith(".weight"):
            laid[name] = t
            continue
        stem = name[:-len(".weight")]
        laid[stem + ".base_layer.weight"] = t
        for mode in ("vision", "speech"):
            g = np.random.default_rng([7, zlib.crc32((stem + mode).encode())])
            rank = 4
            laid[f"{stem}.lora_A.{mode}.weight"] = torch.from_numpy(
                g.normal(0, 0.05, (rank, t.shape[1])).astype(np.float32))
            laid[f"{stem}.lora_B.{mode}.weight"] = torch.from_numpy(
                g.normal(0, 0.05, (t.shape[0], rank)).astype(np.float32))
    save_file(dict(sorted(laid.items())), path, metadata={"format": "pt"})
    cpath = os.path.join(out, "config.json")
    with open(cpath) as f:
        cfg = json.load(f)
    cfg["model_type"] = "phi4mm"
    cfg["architectures"] = ["Phi4MMForCausalLM"]
    with open(cpath, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


# MXFP4 by the OCP Microscaling spec's rule: per block of 32 values the shared scale 2^e with
# e = floor(log2(max |v|)) - 2 (e2m1's largest exponent), stored as the e8m0 byte e + 127; each
# value v / 2^e rounded to the nearest e2m1 value (0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives,
# saturating at 6), the lower of two equally near ones; codes 0..7 the magnitudes, + 8 when
# negative; two codes per byte, element 2i in the low nibble. The experts' [E, K, N] parameters
# are quantized along K as [E, N, K] rows, as the released checkpoints store them.
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def mxfp4_quantize(w):
    """w [E, N, K] float -> blocks u8 [E, N, K / 32, 16], scales u8 [E, N, K / 32]."""
    e_, n_, k_ = w.shape
    b = w.astype(np.float64).reshape(e_, n_, k_ // 32, 32)
    amax = np.abs(b).max(-1)
    exp = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - 2, -127)
    exp = np.clip(exp, -127, 127)
    q = b / np.exp2(exp)[..., None]
    mag = np.argmin(np.abs(np.abs(q)[..., None] - E2M1), axis=-1)
    codes = (mag + np.where((q < 0) & (mag > 0), 8, 0)).astype(np.uint8)
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
    return blocks, (exp + 127).astype(np.uint8)


MXFP4_PACKED = {}  # tensor name -> (blocks, scales) of the model being written


def to_mxfp4_experts(model):
    """Replaces the experts' weights by transformers' own dequantization of their MXFP4 form
    (integrations.mxfp4.convert_moe_packed_tensors), keeping the packed form for the file."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    MXFP4_PACKED.clear()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                continue
            blocks, scales = mxfp4_quantize(p.detach().transpose(1, 2).numpy())
            deq = convert_moe_packed_tensors(torch.from_numpy(blocks), torch.from_numpy(scales),
                                             dtype=torch.float32)
            p.copy_(deq)
            MXFP4_PACKED[name] = (blocks, scales)


def to_mxfp4_file(out, model):
    """The saved float experts become *_blocks / *_scales, config.json gets quantization_config
    mxfp4, and transformers must read the file back (dequantize=True) to the same logits."""
    from safetensors.torch import load_file, save_file
    from transformers import Mxfp4Config
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    for name, (blocks, scales) in MXFP4_PACKED.items():
        del tensors[name]
        tensors[name + "_blocks"] = torch.from_numpy(np.ascontiguousarray(blocks))
        tensors[name + "_scales"] = torch.from_numpy(np.ascontiguousarray(scales))
    save_file(dict(sorted(tensors.items())), path, metadata={"format": "pt"})
    cpath = os.path.join(out, "config.json")
    with open(cpath) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {"quant_method": "mxfp4"}
    with open(cpath, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    back = AutoModelForCausalLM.from_pretrained(
        out, dtype=torch.float32, attn_implementation="eager",
        quantization_config=Mxfp4Config(dequantize=True))
    back.config._experts_implementation = "eager"
    diff = readback_diff(model, back)
    if diff > 1e-5:
        raise SystemExit(f"gpt_oss-mxfp4: transformers reads the MXFP4 file back differently "
                         f"(max |dlogit| {diff:.3g})")
    print(f"gpt_oss-mxfp4: transformers' MXFP4 loader gives the same logits ({diff:.3g})")


def to_full_checkpoint_layout(out, model):
    """Gemma3nForConditionalGeneration's layout of the text part: model.<x> becomes
    model.language_model.<x> and config.json nests the text config as text_config."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(out, "model.safetensors")
    tensors = {k.replace("model.", "model.language_model.", 1): v
               for k, v in load_file(path).items()}
    save_file(dict(sorted(tensors.items())), path, metadata={"format": "pt"})
    cpath = os.path.join(out, "config.json")
    with open(cpath) as f:
        text = json.load(f)
    cfg = {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
           "dtype": text.pop("dtype"), "text_config": text,
           "transformers_version": text.pop("transformers_version")}
    text.pop("architectures")
    with open(cpath, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


PRE_SAVE = {"gpt_oss-mxfp4": to_mxfp4_experts}
POST_SAVE = {"exaone": to_original_names, "phi4mm": to_remote_code_layout,
             "gemma3n": to_full_checkpoint_layout,
             "gpt_oss-mxfp4": to_mxfp4_file}


def forward(model, ids):
    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].to(torch.float64).numpy()


def make(name):
    overrides, what = FAMILIES[name]
    kw = dict(COMMON)
    kw.update(overrides)
    model_type = kw.pop("model_type", name)
    config = AutoConfig.for_model(model_type, **kw)
    config._attn_implementation = "eager"
    # The experts' per-expert loop (the grouped matmul has no float64 kernel).
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.eval()
    fill_weights(model, WEIGHTS_SEED)
    if name in PRE_SAVE:
        PRE_SAVE[name](model)
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, safe_serialization=True)
    if name in POST_SAVE:
        POST_SAVE[name](out, model)
    model = model.to(torch.float64)
    vocab = config.vocab_size
    bos = getattr(config, "bos_token_id", None)
    best = None
    routes = RouteMargins(model)
    for prompt_seed in range(1, 41):
        g = np.random.default_rng(prompt_seed)
        prompt = [int(x) for x in g.integers(3, vocab, N_PROMPT)]
        if bos is not None:
            prompt[0] = int(bos)
        routes.reset()
        ids, margins = greedy(lambda seq: forward(model, seq), prompt)
        if min(margins) < MIN_MARGIN or routes.min < MIN_ROUTE_MARGIN:
            continue
        score = len(set(ids))
        if best is None or score > best[0]:
            best = (score, prompt_seed, prompt, ids, margins)
        if prompt_seed >= 20 and best is not None:
            break
    if best is None:
        raise SystemExit(f"{name}: no prompt with greedy margins >= {MIN_MARGIN} "
                         f"and router margins >= {MIN_ROUTE_MARGIN}")
    _, prompt_seed, prompt, ids, margins = best
    full = forward(model, prompt + ids)
    logits = full[:N_PROMPT]
    dlogits = full[N_PROMPT:N_PROMPT + N_GREEDY - 1]
    with open(os.path.join(out, "config.json")) as f:
        saved = json.load(f)
    fields = {
        "format": "hf-fixture-reference/1",
        "arch": saved["model_type"],
        "model_type": saved["model_type"],
        "architectures": saved.get("architectures") or [type(model).__name__],
        "exercises": what,
        "generator": "tools/families/make_family_fixtures.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "reference_dtype": "float64 forward of transformers' modeling code on the float32 weights",
        "weights_seed": WEIGHTS_SEED,
        "prompt_seed": prompt_seed,
        "layer_types": list(getattr(config, "layer_types", None) or []),
        "n_prompt": N_PROMPT,
        "n_greedy": N_GREEDY,
        "prompt_ids": prompt,
        "greedy_ids": ids,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
    }
    if routes.handles:
        routes.reset()
        forward(model, prompt + ids)
        fields["min_router_margin"] = float(f32(routes.min))
    write_reference(os.path.join(out, "reference.json"), fields, logits, dlogits)
    report(name, out, prompt_seed, ids, margins)


if __name__ == "__main__":
    main(sys.argv, FAMILIES, make)
