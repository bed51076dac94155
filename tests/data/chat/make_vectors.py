#!/usr/bin/env python3
"""Writes vectors.jsonl: chat templates rendered by transformers' apply_chat_template, the
reference test_chat_vectors.c holds our Jinja renderer to, and, where ../shared has the family's
tokenizer, the ids transformers' tokenizer gives for that text (add_special_tokens=False, as
apply_chat_template(tokenize=True) encodes).

The templates in templates/ are written here in each family's published format; llama3's is
the one in ../shared/tokenizers/llama3/tokenizer_config.json. What is checked is that our
renderer gives exactly what transformers gives for the same template text and conversation.

Needs transformers and tokenizers (not torch), which are not in tests/requirements.txt: run it
on a developer machine, e.g.
  python3 -m venv /tmp/tf && /tmp/tf/bin/pip install transformers tokenizers jinja2
  /tmp/tf/bin/python tests/data/chat/make_vectors.py ../shared
"""
import json
import os
import sys

from transformers import PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))

# family: (template file or shared tokenizer folder, tokenizer folder for ids or None, bos, eos)
FAMILIES = {
    "llama3": ("shared:llama3", "llama3", "<|begin_of_text|>", "<|eot_id|>"),
    "gemma": ("gemma.jinja", None, "<bos>", "<eos>"),
    "gemma3": ("gemma3.jinja", None, "<bos>", "<eos>"),
    "mistral": ("mistral.jinja", "mistral-7b-v0.1", "<s>", "</s>"),
    "phi3": ("phi3.jinja", None, "<s>", "<|endoftext|>"),
    "qwen2": ("qwen2.jinja", "qwen3", None, "<|im_end|>"),
}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello! Who are you?"}],
    "system-user": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a colour."},
    ],
    "multi-turn": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ],
    "whitespace": [{"role": "user", "content": "  padded text \n\n"}],
    "unicode": [{"role": "user", "content": "Grüße, 世界! 🙂 — «ok»"}],
    "special-text": [{"role": "user", "content": "say <|im_end|> or </s> or <end_of_turn>"}],
    "not-alternating": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
    ],
    "assistant-last": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello there."},
    ],
    "parts": [
        {"role": "user", "content": [{"type": "text", "text": " Describe "},
                                     {"type": "text", "text": "this. "}]},
    ],
}


def template_text(source, shared):
    if source.startswith("shared:"):
        path = os.path.join(shared, "tokenizers", source[7:], "tokenizer_config.json")
        with open(path, encoding="utf-8") as f:
            return json.load(f)["chat_template"]
    with open(os.path.join(HERE, "templates", source), encoding="utf-8") as f:
        return f.read()


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../../../shared")
    any_tok = os.path.join(shared, "tokenizers", "llama2", "tokenizer.json")
    out = []
    for family, (source, tok_name, bos, eos) in FAMILIES.items():
        template = template_text(source, shared)
        tok_file = os.path.join(shared, "tokenizers", tok_name or "llama2", "tokenizer.json")
        tok = PreTrainedTokenizerFast(tokenizer_file=tok_file, bos_token=bos, eos_token=eos)
        for name, messages in CONVERSATIONS.items():
            if name == "parts" and family != "gemma3":
                continue  # only gemma3's template reads content parts
            for agp in (False, True):
                line = {"family": family, "template": source, "tokenizer": tok_name,
                        "bos_token": bos, "eos_token": eos, "conversation": name,
                        "messages": messages, "add_generation_prompt": agp,
                        "rendered": None, "ids": None, "error": None}
                try:
                    text = tok.apply_chat_template(messages, chat_template=template,
                                                   tokenize=False, add_generation_prompt=agp)
                    line["rendered"] = text
                    if tok_name:
                        line["ids"] = tok.encode(text, add_special_tokens=False)
                except Exception as e:  # the template's raise_exception, as transformers reports it
                    line["error"] = str(e)
                out.append(line)
    with open(os.path.join(HERE, "vectors.jsonl"), "w", encoding="utf-8") as f:
        for line in out:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(out)} vectors")


if __name__ == "__main__":
    main()
