#!/usr/bin/env python3
"""A tiny random-weight Gemma 3 vision-language checkpoint and its references, by transformers.

transformers' own Gemma3Config / Gemma3ForConditionalGeneration (a 2-layer SigLIP vision tower,
image 64 px, patch 8: 64 patches, pooled by the multi-modal projector to mm_tokens_per_image 16
with Gemma's RMSNorm and a linear; a 2-layer Gemma 3 text model, one sliding layer with a window
smaller than the prompt and one full layer) and its own Gemma3Processor (Gemma3ImageProcessorPil
+ a byte-level BPE tokenizer with <start_of_image>, <end_of_image> and <image_soft_token>; the
processor replaces each <start_of_image> in the text by "\\n\\n<start_of_image>" + 16 x
<image_soft_token> + "<end_of_image>\\n\\n" and marks the soft tokens in token_type_ids) build,
save and run the model. Every parameter gets a deterministic random value (per-tensor seeds); the
reference is the same modeling code run in float64 on the saved float32 weights (eager attention,
no cache, token_type_ids given: causal attention, bidirectional inside the image block, in both
layer kinds): the processor's pixel_values (shape, sha256 of the float32 bytes, a few values),
the projected image features, the logits of every prompt position and a 16-token greedy
continuation with its top-2 margins, for one committed photograph
(tests/data/image/inputs/chelsea.png); also the chat template's prompt (Gemma 3's turn format,
content parts) and its greedy ids.

Output: tests/data/families/gemma3_vlm/{config.json, generation_config.json, model.safetensors,
preprocessor_config.json, processor_config.json, tokenizer.json, tokenizer_config.json (with the
chat template), vision_reference.json}.

Run once on a developer machine (needs torch, transformers, safetensors, numpy, pillow; not CI):
    /tmp/famenv/bin/python tools/vlm/make_gemma3_fixture.py
"""
import hashlib
import json
import os
import shutil
import sys
import zlib

import numpy as np
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor,
                          Gemma3TextConfig, PreTrainedTokenizerFast, SiglipVisionConfig)
from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests", "data", "families",
                                                         "gemma3_vlm")
PHOTO = os.path.join(REPO, "tests", "data", "image", "inputs", "chelsea.png")
SEED = 4321
N_GREEDY = 16
MM_TOKENS = 16
PROMPT = "<bos>Look: <start_of_image> What is in the picture?"
CHAT_USER = "What is in the picture?"
# Gemma 3's turn format with content parts (as google/gemma-3-4b-it's template, without the
# system-message folding).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] | trim }}{% else %}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<start_of_image>' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}")
SPECIALS = ["<bos>", "<eos>", "<pad>", "<start_of_image>", "<end_of_image>", "<image_soft_token>",
            "<start_of_turn>", "<end_of_turn>"]


def byte_tokenizer():
    """Byte-level BPE without merges (one token per byte, ids 0..255), then SPECIALS (256..263)."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, (chr(c) for c in cs)))
    vocab = {table[b]: b for b in range(256)}
    assert set(vocab) == set(alphabet)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>",
        extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                              "image_token": "<image_soft_token>"})


def fill_weights(model):
    """Norms N(0, 0.1) (Gemma's RMSNorm scales by 1 + w; SigLIP's LayerNorms get 1 + N(0, 0.1)),
    biases N(0, 0.03), position embeddings N(0, 0.5), the token embedding
    N(0, 0.3), the projector N(0, 0.2), the rest N(0, 0.05); float32."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = np.random.default_rng([SEED, zlib.crc32(name.encode())])
            shape = tuple(p.shape)
            siglip_ln = "vision_tower" in name and ("layer_norm" in name or "layernorm" in name)
            if "norm" in name and name.endswith("weight"):
                v = (1.0 if siglip_ln else 0.0) + g.normal(0.0, 0.1, shape)
            elif name.endswith("bias"):
                v = g.normal(0.0, 0.03, shape)
            elif "position_embedding" in name:
                v = g.normal(0.0, 0.5, shape)
            elif "patch_embedding" in name:
                v = g.normal(0.0, 0.1, shape)
            elif "mm_input_projection" in name:
                v = g.normal(0.0, 0.2, shape)
            elif "embed_tokens" in name:
                v = g.normal(0.0, 0.3, shape)
            else:
                v = g.normal(0.0, 0.05, shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))


def f32(x):
    return repr(float(np.float32(x)))


def rows(a):
    return "[" + ",\n".join("[" + ",".join(f32(v) for v in r) + "]" for r in a) + "]"


def greedy_run(model, ids, types, pv, n):
    seq, tt, out, margins = list(ids), list(types), [], []
    for _ in range(n):
        last = model(input_ids=torch.tensor([seq]), pixel_values=pv,
                     token_type_ids=torch.tensor([tt]), use_cache=False).logits[0, -1].numpy()
        order = np.argsort(-last, kind="stable")
        out.append(int(order[0]))
        margins.append(float(last[order[0]] - last[order[1]]))
        seq.append(int(order[0]))
        tt.append(0)
    return out, margins


def main():
    tokenizer = byte_tokenizer()
    image_processor = Gemma3ImageProcessorPil(size={"height": 64, "width": 64}, resample=2,
                                              image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer,
                                image_seq_length=MM_TOKENS, chat_template=CHAT_TEMPLATE)
    ids_of = tokenizer.convert_tokens_to_ids
    vision = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, image_size=64, patch_size=8,
                                hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
                                vision_use_head=False)
    text = Gemma3TextConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            head_dim=16, query_pre_attn_scalar=16, sliding_window=24,
                            layer_types=["sliding_attention", "full_attention"],
                            max_position_embeddings=256, bos_token_id=ids_of("<bos>"),
                            eos_token_id=ids_of("<eos>"), pad_token_id=ids_of("<pad>"),
                            rms_norm_eps=1e-6, tie_word_embeddings=False)
    config = Gemma3Config(vision_config=vision, text_config=text, mm_tokens_per_image=MM_TOKENS,
                          boi_token_index=ids_of("<start_of_image>"),
                          eoi_token_index=ids_of("<end_of_image>"),
                          image_token_index=ids_of("<image_soft_token>"),
                          tie_word_embeddings=False)
    config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).to(torch.float32).eval()
    fill_weights(model)
    shutil.rmtree(OUT, ignore_errors=True)
    model.save_pretrained(OUT, safe_serialization=True)
    processor.save_pretrained(OUT)
    image_processor.save_pretrained(OUT)  # preprocessor_config.json, what the engine reads
    tokenizer.save_pretrained(OUT)
    tc_path = os.path.join(OUT, "tokenizer_config.json")
    with open(tc_path) as f:
        tc = json.load(f)
    tc["chat_template"] = CHAT_TEMPLATE
    with open(tc_path, "w") as f:
        json.dump(tc, f, indent=2)

    back = Gemma3ForConditionalGeneration.from_pretrained(OUT, dtype=torch.float32)
    back.config._attn_implementation = "eager"
    back.config.text_config._attn_implementation = "eager"
    back.config.vision_config._attn_implementation = "eager"
    model = back.to(torch.float64).eval()
    image = Image.open(PHOTO)
    inputs = processor(images=image, text=PROMPT, add_special_tokens=False, return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    types = inputs["token_type_ids"][0].tolist()
    pv = inputs["pixel_values"].to(torch.float32)
    image_token = config.image_token_index
    n_img = sum(1 for i in ids if i == image_token)
    assert n_img == MM_TOKENS and sum(types) == MM_TOKENS, (n_img, types)
    pv64 = pv.to(torch.float64)
    with torch.no_grad():
        feats = model.model.get_image_features(pixel_values=pv64, return_dict=True).pooler_output
        feats = feats.reshape(-1, text.hidden_size).numpy()
        logits = model(input_ids=torch.tensor([ids]), pixel_values=pv64,
                       token_type_ids=torch.tensor([types]), use_cache=False).logits[0].numpy()
        # Without the image block's bidirectional mask (causal only), for the test to see that
        # it matters.
        causal = model(input_ids=torch.tensor([ids]), pixel_values=pv64,
                       use_cache=False).logits[0].numpy()
        greedy, margins = greedy_run(model, ids, types, pv64, N_GREEDY)
        chat_text = processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": CHAT_USER}]}],
            add_generation_prompt=True, tokenize=False)
        chat = processor(images=image, text=chat_text, add_special_tokens=False,
                         return_tensors="pt")
        chat_ids = chat["input_ids"][0].tolist()
        chat_greedy, _ = greedy_run(model, chat_ids, chat["token_type_ids"][0].tolist(), pv64,
                                    N_GREEDY)
    pvn = pv[0].numpy().astype("<f4")
    fields = {
        "format": "mlxcel-vlm-reference/1",
        "model_type": "gemma3",
        "generator": "tools/vlm/make_gemma3_fixture.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "reference_dtype": "float64 forward of transformers' modeling code on the float32 weights",
        "image": "tests/data/image/inputs/chelsea.png",
        "prompt": PROMPT,
        "image_token_index": image_token,
        "boi_token_index": config.boi_token_index,
        "eoi_token_index": config.eoi_token_index,
        "n_image_tokens": n_img,
        "pixel_values_shape": list(pvn.shape),
        "pixel_values_sha256": hashlib.sha256(pvn.tobytes()).hexdigest(),
        "pixel_values_first": [float(f32(v)) for v in pvn.reshape(-1)[:8]],
        "prompt_ids": ids,
        "token_type_ids": types,
        "greedy_ids": greedy,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
        "causal_only_max_logit_diff": float(np.abs(causal - logits).max()),
        "chat_user": CHAT_USER,
        "chat_text": chat_text,
        "chat_prompt_ids": chat_ids,
        "chat_greedy_ids": chat_greedy,
    }
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts.append(f'  "image_features": {rows(feats)}')
    parts.append(f'  "logits": {rows(logits)}')
    with open(os.path.join(OUT, "vision_reference.json"), "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"gemma3: {len(ids)} prompt ids ({n_img} image tokens), greedy {greedy}, "
          f"min margin {min(margins):.4g}, causal-only logits differ by "
          f"{fields['causal_only_max_logit_diff']:.3g}, {size / 1024:.0f} KiB, "
          f"files {sorted(os.listdir(OUT))}")


if __name__ == "__main__":
    main()
