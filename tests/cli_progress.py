#!/usr/bin/env python3
"""The load progress line (issue 29 item 1) under a pseudo-terminal, and its absence elsewhere.

On a terminal, a model command draws one line on stderr while the model loads and the cpu
backend packs its weights ("<stage> weights: DONE / TOTAL (RATE/s)", rewritten in place with
"\\r\\033[K"), and erases it before anything else is printed. Nothing when stderr is not a
terminal (stdout still is), with -q, or with --json. The models are written by `mlxcel mkmodel`
(tiny presets: the line is drawn at least at the start and the end of each stage).

Usage: tests/cli_progress.py MLXCEL
"""
import os
import pty
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"\r\x1b\[K(mapping|quantizing|dequantizing|converting|packing) weights: "
                  r"([\d.]+ [kMG]B) / ([\d.]+ [kMG]B) \(([\d.]+ [kMG]B)/s\)")
ERASE = "\r\x1b[K"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what)


def run(argv, stderr_tty, stdout_tty=True):
    """Runs argv with stdout and/or stderr on a pseudo-terminal; returns (rc, tty text, pipe
    text): what the terminal received and what went to the pipe."""
    master, slave = pty.openpty()
    pipe_out = subprocess.PIPE
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=slave if stdout_tty else pipe_out,
                            stderr=slave if stderr_tty else pipe_out)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal's slave side has closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    piped = b""
    if not (stdout_tty and stderr_tty):
        piped = (proc.stdout or proc.stderr).read()
    rc = proc.wait()
    return rc, b"".join(chunks).decode("utf-8", "replace"), piped.decode("utf-8", "replace")


def stages(text):
    return {m.group(1) for m in LINE.finditer(text)}


def main():
    mlxcel = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny")
        subprocess.run([mlxcel, "mkmodel", "--arch", "llama", "--preset", "tiny", "-o", model,
                        "-q"], check=True)
        gen = [mlxcel, "generate", "-m", model, "--prompt-ids", "1,2,3", "-n", "2"]

        # A terminal: the load (mapping) and the cpu backend's packing, then the line is erased
        # before the output; the numbers end at done == total.
        rc, tty, _ = run(gen, stderr_tty=True)
        check(rc == 0, f"generate on a terminal exited {rc}: {tty!r}")
        check({"mapping", "packing"} <= stages(tty), f"generate: stages {stages(tty)} in {tty!r}")
        last = {}
        for m in LINE.finditer(tty):
            last[m.group(1)] = m
        for st, m in last.items():
            check(m.group(2) == m.group(3), f"{st}: the last line is {m.group(0)!r}, not done")
        lines = list(LINE.finditer(tty))
        if lines:
            after = tty[lines[-1].end():]
            check(after.startswith(ERASE), f"the line is not erased after the last report: "
                                           f"{after[:40]!r}")

        # Quantizing and converting are stages of their own.
        rc, tty, _ = run(gen + ["--quant", "int8"], stderr_tty=True)
        check(rc == 0 and "quantizing" in stages(tty), f"--quant int8: stages {stages(tty)}")
        rc, tty, _ = run(gen + ["--precision", "f16"], stderr_tty=True)
        check(rc == 0 and "converting" in stages(tty), f"--precision f16: stages {stages(tty)}")
        # Other model commands draw it too.
        rc, tty, _ = run([mlxcel, "logits", "-m", model, "--ids", "1,2", "-o",
                          os.path.join(tmp, "l.npy")], stderr_tty=True)
        check(rc == 0 and {"mapping", "packing"} <= stages(tty), f"logits: stages {stages(tty)}")
        rc, tty, _ = run([mlxcel, "emit", "-m", model, "-o", os.path.join(tmp, "emit")],
                         stderr_tty=True)
        check(rc == 0 and "mapping" in stages(tty), f"emit: stages {stages(tty)}")

        # Not a terminal (stdout still is one), -q, --json: no line, nothing erased.
        rc, tty, err = run(gen, stderr_tty=False)
        check(rc == 0 and "weights:" not in err and ERASE not in err and "weights:" not in tty,
              f"stderr not a terminal: {err!r}")
        rc, tty, _ = run(gen + ["-q"], stderr_tty=True)
        check(rc == 0 and "weights:" not in tty and ERASE not in tty, f"-q: {tty!r}")
        rc, tty, _ = run(gen + ["--json"], stderr_tty=True)
        check(rc == 0 and "weights:" not in tty and ERASE not in tty, f"--json: {tty!r}")
        rc, tty, _ = run([mlxcel, "bench", "-m", model, "--machine-file", write_machine(tmp),
                          "--prompt", "4", "--gen", "2", "--reps", "1", "--json"], stderr_tty=True)
        check(rc == 0 and "weights:" not in tty, f"bench --json: {tty!r}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok: the progress line on a terminal, none without one, with -q or --json")
    return 0


def write_machine(tmp):
    path = os.path.join(tmp, "machine.json")
    with open(path, "w") as f:
        f.write('{"bandwidth_gbs": 10, "peak_gflops": 100}')
    return path


if __name__ == "__main__":
    sys.exit(main())
