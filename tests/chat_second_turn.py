#!/usr/bin/env python3
"""A chat's second turn continues the cached conversation (it prefills only what the turn adds);
its reply must equal a fresh run of the whole conversation: the first reply rendered back
through the chat template by `mlxcel template`, its ids generated from scratch by `mlxcel
generate`, as a server request holding the whole conversation would be. Greedy, so any
difference is the cache continuing a different token sequence than the template renders.

Usage: tests/chat_second_turn.py MLXCEL CHAT_MODEL_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

STATS = re.compile(r"^\[\d+ prompt tokens.*finish: \w+\]\n", re.M)
TURNS = [("Once upon a time", "The end"), ("Lily and Tom", "They played"),
         ("The sun", "Mom said"), ("Once upon a time, there was a dog", "It ran")]


def chat_replies(mlxcel, model, first, second):
    """The two replies of a piped two-turn chat. The chat flushes stdout after every token and
    before its --stats line on stderr, so on one pipe each reply comes ahead of the stats line
    that delimits it (a reply may hold newlines)."""
    out = subprocess.run([mlxcel, "chat", "-m", model, "-n", "16", "--temp", "0", "--stats"], input=f"{first}\n{second}\n", stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        raise AssertionError(f"chat exited {out.returncode}: {out.stdout}")
    text = out.stdout.split("\n", 1)[1]  # after the banner
    parts = STATS.split(text)
    if len(parts) != 3:
        raise AssertionError(f"expected two replies with their stats lines, got: {text!r}")
    # Each reply is followed by one newline before its stats line.
    return parts[0].removesuffix("\n"), parts[1].removesuffix("\n")


def fresh_reply(mlxcel, model, conversation, tmp):
    path = os.path.join(tmp, "conversation.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(conversation, f)
    ids = subprocess.run([mlxcel, "template", "-m", model, "--messages", path,
                          "--add-generation-prompt", "--ids"], capture_output=True, text=True,
                         check=True).stdout.split()
    return subprocess.run([mlxcel, "generate", "-m", model, "--prompt-ids", ",".join(ids), "-n",
                           "16", "--temp", "0", "--no-echo", "-q"], capture_output=True,
                          text=True, check=True).stdout.removesuffix("\n")


def main():
    mlxcel, model = sys.argv[1], sys.argv[2]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for first, second in TURNS:
            reply1, reply2 = chat_replies(mlxcel, model, first, second)
            fresh = fresh_reply(mlxcel, model, [
                {"role": "user", "content": first}, {"role": "assistant", "content": reply1},
                {"role": "user", "content": second}], tmp)
            same = fresh == reply2
            bad += not same
            print(f"{'ok' if same else 'FAILED'}: {first!r} -> {reply1!r}; {second!r} -> "
                  f"{reply2!r}; a fresh run of the whole conversation: {fresh!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
