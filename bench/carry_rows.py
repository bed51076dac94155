#!/usr/bin/env python3
"""Carries the rows of an existing docs/performance.md into a partial bench/run.sh result.

Usage: bench/carry_rows.py OLD_PAGE NEW_DIR OUT_DIR
       bench/run.sh --render OUT_DIR [--out docs/performance.md]

NEW_DIR is a `bench/run.sh --keep --workdir NEW_DIR --run ...` result that re-measured some
of OLD_PAGE's runs (the same run strings, any number of rounds). OUT_DIR gets NEW_DIR's lines
for those runs and, for every other run of OLD_PAGE, its table row turned back into a result
line (round 1, only the fields the page shows), in OLD_PAGE's run order, plus NEW_DIR's machine
files; rendered, the carried rows print exactly as before and the re-measured ones replace theirs
(the page then says how many rows the last invocation ran). Use it when a change touches a few
rows of a page that takes hours to regenerate whole; the old result directory is not needed.
"""
import json
import os
import re
import shutil
import sys


def number(cell):
    return float(cell.replace('%', ''))


def row_line(run_index, cells):
    """The result line that renders as this table row (bench/run.sh's columns)."""
    m = re.match(r'(\S+): h(\d+) i(\d+) L(\d+) q(\d+)/kv(\d+) v(\d+)', cells[0])
    if not m:
        raise ValueError('unrecognised model shape cell: %r' % cells[0])
    precision, kv = [x.strip() for x in cells[4].split('/')]
    quant, bits = cells[3], 0
    if quant.startswith('mlx-q'):
        quant, bits = 'mlx', int(quant[5:])
    limits = re.match(r'([\d.]+) GB/s / ([\d.]+) GFLOP/s', cells[18])
    if not limits:
        raise ValueError('unrecognised limits cell: %r' % cells[18])
    return {
        'run': run_index, 'round': 1, 'model': '/carried/' + m.group(1),
        'hidden_size': int(m.group(2)), 'intermediate_size': int(m.group(3)),
        'num_layers': int(m.group(4)), 'num_heads': int(m.group(5)),
        'num_kv_heads': int(m.group(6)), 'vocab_size': int(m.group(7)), 'dtype': cells[2],
        'params': round(number(cells[1].rstrip('M')) * 1e6), 'backend': cells[5],
        'threads': int(cells[6]), 'precision': precision, 'kv_dtype': kv, 'quant': quant,
        'quant_bits': bits, 'ctx': int(cells[7]), 'prefill_chunk': int(cells[8]),
        'prompt_tokens': int(cells[9]), 'prefill_tok_s': number(cells[10]),
        'prefill_limit_tok_s': number(cells[11]), 'prefill_pct_of_limit': number(cells[12]),
        'gen_tokens': int(cells[13]), 'decode_tok_s': number(cells[14]),
        'decode_limit_tok_s': number(cells[15]), 'decode_pct_of_limit': number(cells[16]),
        'peak_rss_mib': number(cells[17].split()[0]), 'bandwidth_gbs': float(limits.group(1)),
        'peak_gflops': float(limits.group(2)), 'date': cells[19],
    }


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    old_page, new_dir, out_dir = argv[1:]
    text = open(old_page, encoding='utf-8').read()
    runs_match = re.search(r'^Runs: `([^`]*)`', text, re.M)
    if not runs_match or '## Results' not in text:
        sys.stderr.write('%s: no Results table and Runs line (not a bench/run.sh page)\n' % old_page)
        return 1
    runs = runs_match.group(1).split()
    table = text.split('## Results', 1)[1]
    rows = [l for l in table.splitlines() if l.startswith('| ') and not l.startswith('| model')]
    if len(rows) < len(runs):
        sys.stderr.write('%s: %d runs but %d table rows\n' % (old_page, len(runs), len(rows)))
        return 1
    new_runs = open(os.path.join(new_dir, 'runs.txt'), encoding='utf-8').read().split()
    new_lines = [json.loads(l) for l in open(os.path.join(new_dir, 'results.jsonl'),
                                              encoding='utf-8') if l.strip()]
    missing = [r for r in new_runs if r not in runs]
    if missing:
        sys.stderr.write('runs of %s not on %s: %s\n' % (new_dir, old_page, ' '.join(missing)))
        return 1
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(new_dir):
        path = os.path.join(new_dir, name)
        if os.path.isfile(path) and name not in ('results.jsonl', 'runs.txt'):
            shutil.copy(path, os.path.join(out_dir, name))
    out = []
    for i, (run, row) in enumerate(zip(runs, rows)):
        if run in new_runs:
            k = new_runs.index(run)
            out += [dict(j, run=i) for j in new_lines if j.get('run') == k]
        else:
            out.append(row_line(i, [c.strip() for c in row.strip().strip('|').split('|')]))
    with open(os.path.join(out_dir, 'results.jsonl'), 'w', encoding='utf-8') as f:
        f.writelines(json.dumps(j) + '\n' for j in out)
    with open(os.path.join(out_dir, 'runs.txt'), 'w', encoding='utf-8') as f:
        f.write(' '.join(runs) + '\n')
    carried = sum(1 for r in runs if r not in new_runs)
    print('%s: %d runs, %d re-measured, %d carried' % (out_dir, len(runs), len(runs) - carried,
                                                      carried))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
