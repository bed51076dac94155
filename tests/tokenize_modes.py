#!/usr/bin/env python3
"""`mlxcel tokenize` in transformers' three encoding modes, against references it did not write:
  default            == tokenizer(text)                               (`ids_add_special`)
  --no-add-special   == tokenizer(text, add_special_tokens=False)     (`ids`)
  --no-special       == the same with split_special_tokens=True       (`ids_split_special`)
on the shared real tokenizers: every "special" case of their vectors.jsonl plus every seventh
other case (the rest are covered by unit_tokenizer_vectors through the library), and
tests/data/tokenizer/modes.jsonl (texts spelling special tokens, written by transformers:
make_modes.py there). Exits 77 (skipped) when ../shared's tokenizers are missing.

Usage: tests/tokenize_modes.py MLXCEL SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

MODES = {"ids_add_special": [], "ids": ["--no-add-special"],
         "ids_split_special": ["--no-special"]}


def tokenize(mlxcel, folder, text, flags, tmp):
    path = os.path.join(tmp, "input.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    out = subprocess.run([mlxcel, "tokenize", "-m", folder, "--json", *flags, "-f", path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError(f"tokenize {flags} failed: {out.stderr}")
    return json.loads(out.stdout)


def main():
    mlxcel, src = sys.argv[1], sys.argv[2]
    shared = os.environ.get("MX_SHARED") or os.path.join(src, "..", "shared")
    tokenizers = os.path.join(shared, "tokenizers")
    if not os.path.isdir(tokenizers):
        print(f"SKIP: {tokenizers} not found (set MX_SHARED)")
        return 77
    cases = []
    for name in ("qwen3", "llama3", "llama2", "mistral-7b-v0.1"):
        with open(os.path.join(tokenizers, name, "vectors.jsonl"), encoding="utf-8") as f:
            for i, line in enumerate(f):
                v = json.loads(line)
                if v["category"] == "special" or i % 7 == 0:
                    cases.append((name, v["input"], {k: v[k] for k in MODES if k in v}))
    with open(os.path.join(src, "tests", "data", "tokenizer", "modes.jsonl"),
              encoding="utf-8") as f:
        for line in f:
            v = json.loads(line)
            cases.append((v["tokenizer"], v["input"], {k: v[k] for k in MODES}))
    failed = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, want in cases:
            for key, ids in want.items():
                got = tokenize(mlxcel, os.path.join(tokenizers, name), text, MODES[key], tmp)
                checked += 1
                if got != ids:
                    failed += 1
                    print(f"FAILED: {name} {MODES[key] or 'default'} {text!r}:\n"
                          f"  got  {got}\n  want {ids}")
    print(f"{checked - failed} of {checked} encodings equal transformers' "
          f"({len(cases)} texts, 4 tokenizers)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
