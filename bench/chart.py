#!/usr/bin/env python3
"""Draws docs/performance.md's Results table as an SVG: one row per table row, two bars each,
prefill and decode tok/s as a share of that row's own physical limit (the table's two
"% of limit" columns), on a common axis with the 100% line marked. Standard library only.

Usage: bench/chart.py PERFORMANCE_MD OUT_SVG   (bench/run.sh calls it after writing the page)
"""
import html
import sys

ROW_H, BAR_H, LABEL_W, PLOT_W, TOP, PAD = 26, 9, 430, 420, 58, 12
COLORS = {"prefill": "#4e79a7", "decode": "#f28e2b"}


def results_rows(md_text):
    """The Results table as dicts keyed by header; the two '% of limit' columns become
    'prefill %' and 'decode %' (they share a header name in the table)."""
    lines = md_text.splitlines()
    try:
        start = lines.index("## Results")
    except ValueError:
        raise SystemExit("bench/chart.py: no '## Results' section in the page")
    # The table ends at the first line after it that is not a table line.
    rows, header = [], None
    for l in lines[start + 1:]:
        if not l.startswith("|"):
            if header:
                break
            continue
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if header is None:
            header = cells
            pct = [i for i, h in enumerate(header) if h == "% of limit"]
            if len(pct) != 2:
                raise SystemExit("bench/chart.py: the Results table lacks its two '% of limit' "
                                 "columns")
            header[pct[0]], header[pct[1]] = "prefill %", "decode %"
        elif set(l) <= set("|-: "):
            continue
        else:
            if len(cells) != len(header):
                raise SystemExit(f"bench/chart.py: a row has {len(cells)} cells, the header "
                                 f"{len(header)}: {l}")
            rows.append(dict(zip(header, cells)))
    if not rows:
        raise SystemExit("bench/chart.py: the Results table has no rows")
    return rows


def percent(cell):
    return float(cell.rstrip("%"))


def label(r):
    shape = r["model shape"].split(":")[0]
    quant = "" if r["quant"] == "none" else " " + r["quant"]
    return (f"{shape} {r['dtype']}{quant}, {r['precision / KV']}, {r['backend']}, "
            f"{r['threads']} thr, ctx {r['ctx']}")


def svg(rows):
    top = max(110.0, max(max(percent(r["prefill %"]), percent(r["decode %"])) for r in rows))
    scale = PLOT_W / top
    width = LABEL_W + PLOT_W + 2 * PAD + 40
    height = TOP + ROW_H * len(rows) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{PAD}" y="20" font-size="14" font-weight="bold">Share of the physical '
           f'limit per row (docs/performance.md, Results)</text>']
    x0 = PAD + LABEL_W
    for name, y in (("prefill", 34), ("decode", 48)):
        out.append(f'<rect x="{x0}" y="{y - 8}" width="10" height="9" fill="{COLORS[name]}"/>')
        out.append(f'<text x="{x0 + 14}" y="{y}">{name} tok/s / its limit</text>')
    for p in range(0, int(top) + 1, 25):
        x = x0 + p * scale
        style = 'stroke="#333" stroke-width="1.5"' if p == 100 else 'stroke="#ddd"'
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" '
                   f'y2="{TOP + ROW_H * len(rows)}" {style}/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ROW_H * len(rows) + 14}" '
                   f'text-anchor="middle">{p}%</text>')
    for i, r in enumerate(rows):
        y = TOP + i * ROW_H
        out.append(f'<g class="row"><text x="{PAD}" y="{y + ROW_H / 2 + 4:.1f}">'
                   f'{html.escape(label(r))}</text>')
        for k, name in enumerate(("prefill", "decode")):
            v = percent(r[f"{name} %"])
            by = y + 3 + k * (BAR_H + 1)
            out.append(f'<rect class="{name}" x="{x0}" y="{by}" width="{v * scale:.1f}" '
                       f'height="{BAR_H}" fill="{COLORS[name]}"><title>{name} {v:.2f}% of '
                       f'the limit</title></rect>')
            out.append(f'<text x="{x0 + v * scale + 3:.1f}" y="{by + BAR_H - 1}" '
                       f'font-size="9">{v:.1f}%</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[-1])
    with open(argv[1], encoding="utf-8") as f:
        rows = results_rows(f.read())
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(svg(rows))
    print(f"bench/chart.py: {len(rows)} rows -> {argv[2]}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
