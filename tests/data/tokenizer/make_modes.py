#!/usr/bin/env python3
"""Writes modes.jsonl: for the shared real tokenizers (../shared/tokenizers), the ids that
transformers' tokenizer gives in its three modes on a few texts that spell special tokens:
default (add_special_tokens=True), add_special_tokens=False, and split_special_tokens=True with
add_special_tokens=False. tests/tokenize_modes.py holds `mlxcel tokenize` (default,
--no-add-special, --no-special) to them. The other inputs of the check come from each
tokenizer's vectors.jsonl in ../shared (its `ids` and `ids_add_special`).

Needs transformers and tokenizers (not in tests/requirements.txt); run on a developer machine:
  /tmp/tf/bin/python tests/data/tokenizer/make_modes.py ../shared
"""
import json
import os
import sys

from transformers import PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZERS = ["qwen3", "llama3", "llama2", "mistral-7b-v0.1"]
TEXTS = [
    "Hello <|im_end|> world",
    "<|im_start|>user\nHi<|im_end|>\n",
    "<|begin_of_text|>Hi<|eot_id|>",
    "<s>[INST] Hi [/INST]</s>",
    "a</s>b<unk>c<s>",
    "<|endoftext|><|endoftext|>",
    "plain text, no specials",
]


def main():
    shared = sys.argv[1]
    out = []
    for name in TOKENIZERS:
        folder = os.path.join(shared, "tokenizers", name)
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"))
        split = PreTrainedTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"),
                                        split_special_tokens=True)
        for text in TEXTS:
            out.append({
                "tokenizer": name, "input": text,
                "ids_add_special": tok(text)["input_ids"],
                "ids": tok(text, add_special_tokens=False)["input_ids"],
                "ids_split_special": split(text, add_special_tokens=False)["input_ids"],
            })
    with open(os.path.join(HERE, "modes.jsonl"), "w", encoding="utf-8") as f:
        for line in out:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} lines")


if __name__ == "__main__":
    main()
