"""Build ``callscope/saag/normalise/knowledge/tickers.json``: the S&P 500 constituents'
ticker symbols with the names a request calls their companies by.

Provenance: ``data/constituents.csv`` of github.com/datasets/s-and-p-500-companies
(ODC-PDDL-1.0, public domain; from Wikipedia's "List of S&P 500 companies"); the commit is
an argument and is written into the table. The table is small and committed; a symbol
outside it is left to the judge layer (``--judge``).

Names kept for a symbol: the ``Security`` column as written ("Apple Inc.") and without its
legal or class suffix ("Apple"; "Alphabet" for "Alphabet Inc. (Class A)"; "Coca-Cola" for
"Coca-Cola Company (The)").

    python benchmarks/build_ticker_table.py constituents.csv COMMIT
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/callscope/saag/normalise/knowledge/tickers.json"
_SUFFIX = re.compile(
    r"(?:,?\s+(?:Inc\.?|Incorporated|Corporation|Corp\.?|Company|Co\.|Ltd\.?|Limited|plc|PLC"
    r"|N\.V\.|S\.A\.|SA|AG|Holdings|Group|Class [A-Z]))+$|\s*\((?:The|Class [A-Z])\)$"
)


def short_name(security: str) -> str:
    """``security`` without its legal or class suffix (repeatedly: "Alphabet Inc. (Class
    A)" -> "Alphabet")."""
    name = security.strip()
    while True:
        shorter = _SUFFIX.sub("", name).strip().rstrip(",")
        if shorter == name or not shorter:
            return name
        name = shorter


def main(path: str, commit: str) -> None:
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            names = sorted({rec["Security"].strip(), short_name(rec["Security"])})
            rows.append([rec["Symbol"].strip(), names])
    table = {
        "source": "github.com/datasets/s-and-p-500-companies data/constituents.csv "
        f"(ODC-PDDL-1.0) at {commit}",
        "columns": ["symbol", "names"],
        "rows": rows,
    }
    OUT.write_text(json.dumps(table, ensure_ascii=True, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {len(rows)} symbols")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
