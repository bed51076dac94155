#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json (no merges) for the gemma3n-audio fixture's 288 ids:
the fixture's special tokens at their config ids (pad 0, bos 1, eos 2, <start_of_image> 249,
<start_of_audio> 250, <end_of_image> 256, <image_soft_token> 257, <end_of_audio> 272,
<audio_soft_token> 273), one token per byte on 256 of the other ids and unused specials on the
rest, so that cli_audio.sh can run generate on the checkpoint (its own fixture has no tokenizer).
Usage: cli_audio_tokenizer.py OUT_DIR"""
import json
import os
import sys

SPECIAL = {0: "<pad>", 1: "<bos>", 2: "<eos>", 249: "<start_of_image>", 250: "<start_of_audio>",
           256: "<end_of_image>", 257: "<image_soft_token>", 272: "<end_of_audio>",
           273: "<audio_soft_token>"}


def byte_chars():
    """GPT-2's byte-to-character table of the ByteLevel pre-tokenizer."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def main():
    out = sys.argv[1]
    free = [i for i in range(288) if i not in SPECIAL]
    vocab = {c: free[b] for b, c in enumerate(byte_chars())}
    special = dict(SPECIAL)
    for k, i in enumerate(free[256:]):
        special[i] = f"<unused{k}>"
    for i, s in special.items():
        vocab[s] = i
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in sorted(special.items())]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                             "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": vocab, "merges": []}}
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
                   "add_bos_token": True}, f)


if __name__ == "__main__":
    main()
