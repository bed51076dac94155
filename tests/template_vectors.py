#!/usr/bin/env python3
"""`mlxcel template` against transformers' apply_chat_template: every line of
../shared/tokenizers/qwen3/chat-vectors.jsonl (text, ids, or the template's own error) and the
lines of tests/data/chat/vectors.jsonl whose family has a tokenizer in ../shared (their template
passed with --template, or the shared tokenizer's own). Exits 77 (skipped) without ../shared.

Usage: tests/template_vectors.py MLXCEL SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def render(mlxcel, folder, line, template, tmp):
    path = os.path.join(tmp, "messages.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(line["messages"], f, ensure_ascii=False)
    args = [mlxcel, "template", "-m", folder, "--messages", path, "--json"]
    if line.get("add_generation_prompt"):
        args.append("--add-generation-prompt")
    if line.get("extra"):
        args += ["--extra", json.dumps(line["extra"])]
    if template:
        args += ["--template", template]
    return subprocess.run(args, capture_output=True, text=True)


def check(label, out, line):
    """An error message, or None when the command did what transformers did."""
    if line.get("error"):
        if out.returncode != 1 or line["error"] not in out.stderr:
            return f"{label}: expected exit 1 with the template's error {line['error']!r}, got " \
                   f"{out.returncode}: {out.stderr.strip() or out.stdout.strip()}"
        return None
    if out.returncode != 0:
        return f"{label}: exit {out.returncode}: {out.stderr.strip()}"
    got = json.loads(out.stdout)
    if got["text"] != line["rendered"]:
        return f"{label}: text\n  {got['text']!r}\nwant\n  {line['rendered']!r}"
    if line.get("ids") is not None and got["ids"] != line["ids"]:
        return f"{label}: ids\n  {got['ids']}\nwant\n  {line['ids']}"
    return None


def main():
    mlxcel, src = sys.argv[1], sys.argv[2]
    shared = os.environ.get("MX_SHARED") or os.path.join(src, "..", "shared")
    tokenizers = os.path.join(shared, "tokenizers")
    if not os.path.isdir(os.path.join(tokenizers, "qwen3")):
        print(f"SKIP: {tokenizers}/qwen3 not found (set MX_SHARED)")
        return 77
    cases = []
    with open(os.path.join(tokenizers, "qwen3", "chat-vectors.jsonl"), encoding="utf-8") as f:
        for i, raw in enumerate(f):
            cases.append((f"qwen3 chat-vectors line {i + 1}", "qwen3", None, json.loads(raw)))
    chat = os.path.join(src, "tests", "data", "chat")
    with open(os.path.join(chat, "vectors.jsonl"), encoding="utf-8") as f:
        for raw in f:
            v = json.loads(raw)
            if not v["tokenizer"]:
                continue  # rendered without a real tokenizer: unit_chat_vectors checks those
            tmpl = None if v["template"].startswith("shared:") else \
                os.path.join(chat, "templates", v["template"])
            label = f"{v['family']} {v['conversation']} agp={v['add_generation_prompt']}"
            cases.append((label, v["tokenizer"], tmpl, v))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, tok, tmpl, line in cases:
            out = render(mlxcel, os.path.join(tokenizers, tok), line, tmpl, tmp)
            problem = check(label, out, line)
            if problem:
                failures.append(problem)
    for p in failures:
        print("FAILED:", p)
    print(f"{len(cases) - len(failures)} of {len(cases)} conversations as transformers renders "
          f"them")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
