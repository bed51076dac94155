#!/usr/bin/env bash
# bench/chart.py: the committed docs/performance.svg is what the script draws from the committed
# docs/performance.md (so the chart never goes stale beside the table), every Results row has
# its group with two bars whose lengths follow the table's two "% of limit" columns, and a page
# without a Results table is refused with a message.
# Usage: tests/bench_chart.sh PYTHON SOURCE_DIR
set -u
PY=$1 SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAILED: $*"; fails=$((fails + 1)); }
"$PY" "$SRC/bench/chart.py" "$SRC/docs/performance.md" "$TMP/chart.svg" || fail "chart.py failed"
cmp -s "$TMP/chart.svg" "$SRC/docs/performance.svg" ||
  fail "docs/performance.svg is not what bench/chart.py draws from docs/performance.md: rerun it"
"$PY" - "$SRC/docs/performance.md" "$TMP/chart.svg" <<'PYEOF' || fail "the chart does not match the table"
import sys
import xml.etree.ElementTree as ET
page = open(sys.argv[1], encoding="utf-8").read().splitlines()
start = page.index("## Results")
rows = []
for line in page[start + 1:]:
    if not line.startswith("|"):
        if rows:
            break
        continue
    rows.append([c.strip() for c in line.strip().strip("|").split("|")])
header, data = rows[0], rows[2:]
pct = [i for i, h in enumerate(header) if h == "% of limit"]
ns = {"s": "http://www.w3.org/2000/svg"}
groups = [g for g in ET.parse(sys.argv[2]).getroot().iter("{http://www.w3.org/2000/svg}g")
          if g.get("class") == "row"]
assert len(groups) == len(data), (len(groups), len(data))
pairs = []
for g, r in zip(groups, data):
    bars = {b.get("class"): float(b.get("width")) for b in g.findall("s:rect", ns)}
    pairs += [(bars["prefill"], float(r[pct[0]].rstrip("%"))),
              (bars["decode"], float(r[pct[1]].rstrip("%")))]
# One scale for every bar (widths are written to 0.1 px): the longest bar sets it.
width, percent = max(pairs, key=lambda p: p[1])
scale = width / percent
bad = [(w, p) for w, p in pairs if abs(w - p * scale) > 0.06]
assert not bad, bad[:3]
print(f"chart: {len(groups)} rows, bars on one scale")
PYEOF
printf '# Performance\n\nno table\n' >"$TMP/empty.md"
"$PY" "$SRC/bench/chart.py" "$TMP/empty.md" "$TMP/x.svg" 2>"$TMP/err" && fail "a page without Results was accepted"
grep -q "no '## Results' section" "$TMP/err" || fail "unclear error: $(cat "$TMP/err")"
[ "$fails" -eq 0 ] || exit 1
echo ok
