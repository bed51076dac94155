#!/usr/bin/env python3
"""A tiny random-weight LLaVA checkpoint and its references, written by transformers itself.

transformers' own LlavaConfig / LlavaForConditionalGeneration (a 3-layer CLIP vision tower, image
56 px, patch 14: 16 patches, vision_feature_layer -2, strategy "default"; a 2-layer Llama text
model) and its own LlavaProcessor (CLIPImageProcessor + a byte-level BPE tokenizer with the
"<image>" special token, which the processor expands to one token per patch) build, save and run
the model. Every parameter gets a deterministic random value (per-tensor seeds); the reference is
the same modeling code run in float64 on the saved float32 weights (eager attention, no cache):
the processor's pixel_values (shape, sha256 of the float32 bytes, a few values), the projected
image features, the logits of every prompt position and a 16-token greedy continuation with its
top-2 margins, for one committed photograph (tests/data/image/inputs/chelsea.png).

Also the chat template's prompt for one user message with one image and its greedy ids.
Output: tests/data/families/llava/{config.json, generation_config.json, model.safetensors,
preprocessor_config.json, processor_config.json, tokenizer.json, tokenizer_config.json (with the
chat template), vision_reference.json}. Not reference.json: the text-only family tests must not pick it up.

Run once on a developer machine (needs torch, transformers, safetensors, numpy, pillow; not CI):
    /tmp/famenv/bin/python tools/vlm/make_llava_fixture.py
"""
import hashlib
import json
import os
import shutil
import zlib

import numpy as np
import torch
import transformers
from PIL import Image
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                          LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
OUT = os.path.join(REPO, "tests", "data", "families", "llava")
PHOTO = os.path.join(REPO, "tests", "data", "image", "inputs", "chelsea.png")
SEED = 1234
N_GREEDY = 16
PROMPT = "USER: <image>\nWhat is in the picture? ASSISTANT:"
CHAT_USER = "What is in the picture?"
# LLaVA 1.5's prompt format with string contents (the engine's messages are strings): the user
# message starts with one "<image>\n" per image.
CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ message['role'].upper() + ': ' + "
                 "message['content'] + ' ' }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def byte_tokenizer():
    """Byte-level BPE without merges (one token per byte, ids 0..255), then <s>, </s>, <pad>,
    <image> (256..259); BOS added by the post-processor."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    # ids in byte order: GPT-2's byte -> unicode map
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
    tok.add_special_tokens(["<s>", "</s>", "<pad>", "<image>"])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 256)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", extra_special_tokens={"image_token": "<image>"})


def fill_weights(model):
    """Norms 1 + N(0, 0.1), biases N(0, 0.03), embeddings N(0, 0.5) (CLIP's class and position
    embeddings matter as much as the patches), the rest N(0, 0.05); float64 rounded to float32."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = np.random.default_rng([SEED, zlib.crc32(name.encode())])
            shape = tuple(p.shape)
            if ("norm" in name or "layrnorm" in name) and name.endswith("weight"):
                v = 1.0 + g.normal(0.0, 0.1, shape)
            elif name.endswith("bias"):
                v = g.normal(0.0, 0.03, shape)
            elif "class_embedding" in name or "position_embedding" in name:
                v = g.normal(0.0, 0.5, shape)
            elif "patch_embedding" in name:
                v = g.normal(0.0, 0.1, shape)
            else:
                v = g.normal(0.0, 0.05, shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))


def f32(x):
    return repr(float(np.float32(x)))


def rows(a):
    return "[" + ",\n".join("[" + ",".join(f32(v) for v in r) + "]" for r in a) + "]"


def main():
    tokenizer = byte_tokenizer()
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}, resample=3,
        do_center_crop=True, image_mean=[0.48145466, 0.4578275, 0.40821073],
        image_std=[0.26862954, 0.26130258, 0.27577711])
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=14,
                               vision_feature_select_strategy="default", image_token="<image>",
                               num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE)
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                              num_attention_heads=4, image_size=56, patch_size=14,
                              projection_dim=32, hidden_act="quick_gelu", layer_norm_eps=1e-5)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=256, bos_token_id=256, eos_token_id=257,
                       pad_token_id=258, tie_word_embeddings=False)
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=image_token,
                         projector_hidden_act="gelu", vision_feature_layer=-2,
                         vision_feature_select_strategy="default", image_seq_length=16,
                         tie_word_embeddings=False)
    config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).to(torch.float32).eval()
    fill_weights(model)
    shutil.rmtree(OUT, ignore_errors=True)
    model.save_pretrained(OUT, safe_serialization=True)
    processor.save_pretrained(OUT)
    image_processor.save_pretrained(OUT)  # preprocessor_config.json, what the engine reads
    tokenizer.save_pretrained(OUT)
    # transformers 5 writes the template to chat_template.jinja; tokenizer_config.json keeps it
    # too, where the engine (and transformers 4) read it.
    tc_path = os.path.join(OUT, "tokenizer_config.json")
    with open(tc_path) as f:
        tc = json.load(f)
    tc["chat_template"] = CHAT_TEMPLATE
    with open(tc_path, "w") as f:
        json.dump(tc, f, indent=2)

    back = LlavaForConditionalGeneration.from_pretrained(OUT, dtype=torch.float32)
    back.config._attn_implementation = "eager"
    model = back.to(torch.float64).eval()
    image = Image.open(PHOTO)
    inputs = processor(images=image, text=PROMPT, return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    pv = inputs["pixel_values"].to(torch.float32)
    n_img = sum(1 for i in ids if i == image_token)
    assert n_img == 16, n_img
    pv64 = pv.to(torch.float64)
    with torch.no_grad():
        feats = model.model.get_image_features(pixel_values=pv64).pooler_output
        feats = torch.cat(list(feats), dim=0) if isinstance(feats, (list, tuple)) else feats
        feats = feats.reshape(-1, text.hidden_size).numpy()
        logits = model(input_ids=torch.tensor([ids]), pixel_values=pv64,
                       use_cache=False).logits[0].numpy()
        seq, greedy, margins = list(ids), [], []
        for _ in range(N_GREEDY):
            last = model(input_ids=torch.tensor([seq]), pixel_values=pv64,
                         use_cache=False).logits[0, -1].numpy()
            order = np.argsort(-last, kind="stable")
            greedy.append(int(order[0]))
            margins.append(float(last[order[0]] - last[order[1]]))
            seq.append(int(order[0]))
        # The chat template's prompt: what `generate --chat --image` must reproduce.
        chat_text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "<image>\n" + CHAT_USER}], chat_template=CHAT_TEMPLATE,
            add_generation_prompt=True, tokenize=False)
        chat_ids = processor(images=image, text=chat_text, add_special_tokens=False,
                             return_tensors="pt")["input_ids"][0].tolist()
        seq, chat_greedy = list(chat_ids), []
        for _ in range(N_GREEDY):
            last = model(input_ids=torch.tensor([seq]), pixel_values=pv64,
                         use_cache=False).logits[0, -1].numpy()
            chat_greedy.append(int(np.argmax(last)))
            seq.append(chat_greedy[-1])
    pvn = pv[0].numpy().astype("<f4")
    fields = {
        "format": "mlxcel-vlm-reference/1",
        "model_type": "llava",
        "generator": "tools/vlm/make_llava_fixture.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "reference_dtype": "float64 forward of transformers' modeling code on the float32 weights",
        "image": "tests/data/image/inputs/chelsea.png",
        "prompt": PROMPT,
        "image_token_index": image_token,
        "n_image_tokens": n_img,
        "pixel_values_shape": list(pvn.shape),
        "pixel_values_sha256": hashlib.sha256(pvn.tobytes()).hexdigest(),
        "pixel_values_first": [float(f32(v)) for v in pvn.reshape(-1)[:8]],
        "prompt_ids": ids,
        "greedy_ids": greedy,
        "greedy_top2_margins": [float(f32(m)) for m in margins],
        "chat_user": CHAT_USER,
        "chat_prompt_ids": chat_ids,
        "chat_greedy_ids": chat_greedy,
    }
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in fields.items()]
    parts.append(f'  "image_features": {rows(feats)}')
    parts.append(f'  "logits": {rows(logits)}')
    with open(os.path.join(OUT, "vision_reference.json"), "w") as f:
        f.write("{\n" + ",\n".join(parts) + "\n}\n")
    size = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"llava: {len(ids)} prompt ids ({n_img} image tokens), greedy {greedy}, "
          f"min margin {min(margins):.4g}, {size / 1024:.0f} KiB, files {sorted(os.listdir(OUT))}")


if __name__ == "__main__":
    main()
