#!/usr/bin/env python3
"""A tiny random-weight Gemma 3n checkpoint with its audio tower, and the audio references,
written by transformers itself.

transformers' own Gemma3nConfig / Gemma3nForConditionalGeneration build, save and run the model:
a 4-layer Gemma 3n text model (the gemma3n family fixture's shape), the audio tower
(Gemma3nAudioEncoder: the two-block convolutional sub-sampler with cumulative group norms, two
conformer blocks with chunked local attention of chunk 3, left context 3, right context 1,
relative position logits and a logit cap, light convolutions of kernel 3, reduction factor 2)
and embed_audio / embed_vision (Gemma3nMultimodalEmbedder). The vision tower is a timm model,
which is not installed and not needed here: it is replaced by an empty module while the model is
built, and its weights are not written (the text model reads no vision tensor).

Tiny vocabulary as the released one is laid out: text ids 0..255 (vocab_size_per_layer_input),
vision 256..271 (boi 249, eoi 256, image 257), audio 272..287 (boa 250, eoa 272, audio 273);
vocab_size 288, audio_soft_tokens_per_image 6.

Every parameter gets a deterministic random value (tools/families/fixture_reference.py); the
reference runs the same modeling code in float64 on the saved float32 weights.
Input: tests/data/audio/pluck-pcm16.wav, resampled to 16 kHz as tools/audio/make_mel_reference.py
does, then transformers' Gemma3nAudioFeatureExtractor with its Hann window computed as mlxcel's
host code does (f32 steps, correctly rounded cos; the extractor's NumPy f32 cos differs in the
last bit of some values, which moves near-empty mel bins by up to 1.7e-4: see test_audio.c), so
that the features the test computes on the host are these within rounding.
Output: tests/data/families/gemma3n-audio/{config.json, model.safetensors, audio_reference.json}:
the features (28 frames), get_audio_features' rows padded as Gemma3nModel pads them to
audio_soft_tokens_per_image ([6, 64]), for the recording's own mask (every frame real) and for the
same features with the last 10 frames masked. Not reference.json: the text-only family tests must
not pick it up.

Run once on a developer machine (needs torch, transformers, safetensors, numpy; not CI):
    /tmp/famenv/bin/python tools/audio/make_gemma3n_audio_fixture.py
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from torch import nn
from transformers import Gemma3nAudioFeatureExtractor, Gemma3nConfig
from transformers.models.gemma3n import modeling_gemma3n

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(REPO, "tools", "families"))
sys.path.insert(0, HERE)
from fixture_reference import random_values  # noqa: E402
from make_mel_reference import resample  # noqa: E402

OUT = os.path.join(REPO, "tests", "data", "families", "gemma3n-audio")
WAV = os.path.join(REPO, "tests", "data", "audio", "pluck-pcm16.wav")
SEED = 4321
MASKED_TAIL = 10

TEXT = dict(vocab_size=288, vocab_size_per_layer_input=256, hidden_size=64,
            intermediate_size=[128, 96, 128, 96], num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
            hidden_size_per_layer_input=8, laurel_rank=8, num_kv_shared_layers=2,
            sliding_window=8, layer_types=["sliding_attention", "full_attention"] * 2,
            activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.0], bos_token_id=1, eos_token_id=2,
            pad_token_id=0)
AUDIO = dict(vocab_size=16, vocab_offset=272, input_feat_size=128, hidden_size=32,
             rms_norm_eps=1e-6, gradient_clipping=3.0, conf_attention_chunk_size=3,
             conf_attention_context_left=3, conf_attention_context_right=1,
             conf_attention_logit_cap=5.0, conf_num_attention_heads=4, conf_num_hidden_layers=2,
             conf_conv_kernel_size=3, conf_reduction_factor=2, conf_residual_weight=0.5,
             sscp_conv_channel_size=[8, 4], sscp_conv_group_norm_eps=1e-3,
             sscp_conv_kernel_size=[[3, 3], [3, 3]], sscp_conv_stride_size=[[2, 2], [2, 2]])
VISION = dict(hidden_size=16, vocab_size=16, vocab_offset=256)
TOKENS = dict(audio_soft_tokens_per_image=6, vision_soft_tokens_per_image=4, boi_token_id=249,
              eoi_token_id=256, image_token_id=257, boa_token_id=250, eoa_token_id=272,
              audio_token_id=273)


class NoVisionTower:
    """Stands in for AutoModel while Gemma3nModel builds its towers: an empty module for the
    (timm) vision config, transformers' own model for the others."""

    @staticmethod
    def from_config(config, **kw):
        if config.model_type == "gemma3n_vision":
            return nn.Module()
        return transformers.AutoModel.from_config(config, **kw)


def features(samples):
    fe = Gemma3nAudioFeatureExtractor()
    L = fe.frame_length
    t = (np.float32(2.0 * np.pi) * np.arange(L, dtype=np.float32)) / np.float32(L)
    c = np.cos(t.astype(np.float64)).astype(np.float32)
    fe.window = (np.float32(0.5) * (np.float32(1.0) - c)).astype(np.float32)
    out = fe(samples, return_tensors="np")
    return out["input_features"][0], out["input_features_mask"][0]


def audio_rows(model, feats, mask):
    """get_audio_features' rows, masked rows and the padding to audio_soft_tokens_per_image as
    Gemma3nModel.forward places them."""
    m = model.model
    with torch.no_grad():
        x = torch.from_numpy(feats).to(torch.float64)[None]
        valid = torch.from_numpy(mask.astype(bool))[None]
        out = m.get_audio_features(x, ~valid, return_dict=True)
        rows, invalid = out.pooler_output, out.audio_mel_mask
        pad_id = torch.tensor([[m.vocab_size - 1]], dtype=torch.long)
        pad = m.embed_audio(input_ids=pad_id)
        rows = torch.where(invalid.unsqueeze(-1), pad, rows)
        extra = model.config.audio_soft_tokens_per_image - rows.shape[1]
        rows = torch.cat((rows, pad.expand(1, extra, rows.shape[2])), dim=1)
    return rows[0].numpy(), int((~invalid).sum())


# A prompt as the processor lays one audio out (ids only; "\n\n" around it is text): bos, text,
# <start_of_audio>, audio_soft_tokens_per_image audio tokens, <end_of_audio> (the audio
# vocabulary's first id: embed_audio's hard embedding), text with <end_of_image> (the vision
# vocabulary's first id: embed_vision's), text.
PROMPT = [1, 10, 20, 30, 250] + [273] * 6 + [272, 40, 50, 256, 60]
N_GREEDY = 16


def merged_logits(model, ids, feats, mask):
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]),
                    input_features=torch.from_numpy(feats).to(torch.float64)[None],
                    input_features_mask=torch.from_numpy(mask.astype(bool))[None],
                    use_cache=False)
    return out.logits[0].numpy()


def greedy_ids(model, feats, mask):
    seq, ids = list(PROMPT), []
    for _ in range(N_GREEDY):
        last = merged_logits(model, seq, feats, mask)[-1]
        ids.append(int(np.argmax(last)))
        seq.append(ids[-1])
    return ids


def main():
    import wave
    with wave.open(WAV) as w:
        ch, rate, n = w.getnchannels(), w.getframerate(), w.getnframes()
        pcm = np.frombuffer(w.readframes(n), dtype="<i2").reshape(n, ch)
    mono = (pcm.astype(np.float64) / 32768.0).mean(axis=1).astype(np.float32)
    samples = resample(mono, rate, 16000)
    feats, mask = features(samples)

    config = Gemma3nConfig(text_config=TEXT, audio_config=AUDIO, vision_config=VISION, **TOKENS)
    config.text_config._attn_implementation = "eager"
    saved = modeling_gemma3n.AutoModel
    modeling_gemma3n.AutoModel = NoVisionTower
    try:
        torch.manual_seed(0)
        model = modeling_gemma3n.Gemma3nForConditionalGeneration(config).to(torch.float32)
    finally:
        modeling_gemma3n.AutoModel = saved
    model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            v = random_values(name, tuple(p.shape), SEED)
            if name.endswith("per_dim_scale"):  # zeros at init: softplus(0) would be all alike
                v = (np.random.default_rng(SEED).normal(0.0, 0.5, p.shape)).astype(np.float32)
            p.copy_(torch.from_numpy(v))
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    from safetensors.torch import save_file
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()
               if not k.startswith("model.vision_tower.")}
    tensors.pop("lm_head.weight", None)  # tied to the text embedding
    save_file(dict(sorted(tensors.items())), os.path.join(OUT, "model.safetensors"),
              metadata={"format": "pt"})
    cfg = config.to_dict()
    cfg["architectures"] = ["Gemma3nForConditionalGeneration"]
    cfg["dtype"] = "float32"
    cfg["transformers_version"] = transformers.__version__
    for sub in ("text_config", "audio_config", "vision_config"):
        cfg[sub].pop("dtype", None)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")

    model = model.to(torch.float64)
    rows, n_valid = audio_rows(model, feats, mask)
    tail = mask.copy()
    tail[-MASKED_TAIL:] = False
    rows_tail, n_valid_tail = audio_rows(model, feats, tail)
    ref = {
        "generator": "tools/audio/make_gemma3n_audio_fixture.py",
        "transformers_version": transformers.__version__,
        "source": "tests/data/audio/pluck-pcm16.wav at 16 kHz (tools/audio/make_mel_reference.py)",
        "frames": int(feats.shape[0]), "n_mels": int(feats.shape[1]),
        "features": [[float(v) for v in r] for r in feats],
        "mask": [int(v) for v in mask],
        "audio_rows": [[float(v) for v in r] for r in rows], "audio_valid": n_valid,
        "masked_tail": MASKED_TAIL,
        "audio_rows_masked": [[float(v) for v in r] for r in rows_tail],
        "audio_valid_masked": n_valid_tail,
        # Step 2's references: the merged prompt's logits at every position and greedy ids.
        "prompt_ids": PROMPT,
        "prompt_logits": [[float(v) for v in r] for r in merged_logits(model, PROMPT, feats, mask)],
        "greedy_ids": greedy_ids(model, feats, mask),
    }
    with open(os.path.join(OUT, "audio_reference.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")
    print(f"{feats.shape[0]} frames -> {rows.shape} rows ({n_valid} real; masked tail: "
          f"{n_valid_tail}), rows {rows.min():.3f} .. {rows.max():.3f}")


if __name__ == "__main__":
    main()
