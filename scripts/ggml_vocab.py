"""Fetches llama.cpp's tokenizer test vectors into the test environment (scripts/venv.sh runs it).

llama.cpp keeps, for each tokenizer it supports, a vocabulary-only GGUF file converted from the
model's Hugging Face tokenizer and two files of cases made with transformers' AutoTokenizer:
ggml-vocab-NAME.gguf.inp (texts separated by "\\n__ggml_vocab_test__\\n") and .gguf.out (the ids
of each, encoded without special tokens, one line each). The llama-cpp-python source
distribution on PyPI carries them under vendor/llama.cpp/models; this script downloads that
pinned archive once, checks its SHA-256, and extracts the files of VOCABS into
DEST (default: <sys.prefix>/share/ggml-vocab). tests/unit/test_tokenizer_gguf_vocab.c reads
them. Nothing here runs in the engine.

Usage: python scripts/ggml_vocab.py [DEST]
"""

import hashlib
import json
import os
import sys
import tarfile
import tempfile
import urllib.request

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"
SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# Phi-3 and Llama 2 (SentencePiece), Llama 3 and Qwen2 (byte-level BPE): the tokenizer types
# the GGUF loader converts (src/model/gguf_tokenizer.c).
VOCABS = ("phi-3", "llama-spm", "llama-bpe", "qwen2")


def wanted():
    return [f"ggml-vocab-{v}.gguf{ext}" for v in VOCABS for ext in ("", ".inp", ".out")]


def sdist_url():
    """The archive's address from PyPI's simple index (PEP 691's JSON form)."""
    req = urllib.request.Request(f"https://pypi.org/simple/{PACKAGE}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        index = json.load(r)
    name = f"{PACKAGE.replace('-', '_')}-{VERSION}.tar.gz"
    for f in index["files"]:
        if f["filename"] == name:
            return f["url"]
    raise SystemExit(f"ggml_vocab.py: PyPI's index of {PACKAGE} lists no {name}")


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(sys.prefix, "share", "ggml-vocab")
    if all(os.path.isfile(os.path.join(dest, f)) for f in wanted()):
        return 0
    os.makedirs(dest, exist_ok=True)
    url = sdist_url()
    print(f"ggml_vocab.py: downloading {url}", file=sys.stderr)
    with tempfile.TemporaryFile() as tmp:
        h = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=600) as r:
            while chunk := r.read(1 << 20):
                h.update(chunk)
                tmp.write(chunk)
        if h.hexdigest() != SHA256:
            raise SystemExit(f"ggml_vocab.py: {url} has SHA-256 {h.hexdigest()}, expected {SHA256}")
        tmp.seek(0)
        prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/models/"
        names = set(wanted())
        with tarfile.open(fileobj=tmp, mode="r:gz") as tar:
            for m in tar:
                base = m.name[len(prefix):] if m.name.startswith(prefix) else None
                if base in names and m.isfile():
                    with tar.extractfile(m) as src, open(os.path.join(dest, base), "wb") as out:
                        out.write(src.read())
                    names.discard(base)
        if names:
            raise SystemExit(f"ggml_vocab.py: the archive lacks {', '.join(sorted(names))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
