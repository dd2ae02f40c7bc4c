"""Stock ticker symbols of the S&P 500 by their companies' names, as a committed table
(``tickers.json``): "AAPL" for "Apple", "MSFT" for "Microsoft".

Only symbol -> name: a symbol-shaped value (capitals, at most five letters and one class
suffix: "BRK.B") whose company the request names. The table is built by
``benchmarks/build_ticker_table.py`` from the public-domain list of
github.com/datasets/s-and-p-500-companies (source and commit in its ``source`` field); a
symbol outside it (other exchanges, "GOOG" for "Google": the table names Alphabet) stays
flagged and is left to the judge layer. Read once, on the first symbol-shaped value the
request does not state (~1 ms).

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from callscope.saag.normalise.knowledge.base import Match, StatedText, long_lived, name_stated

_SYMBOL = re.compile(r"[A-Z]{1,5}(?:\.[A-Z])?")


@lru_cache(maxsize=1)
def table() -> tuple[str, dict[str, tuple[str, ...]]]:
    """The committed table: its source, and symbol -> the company's names (read once)."""
    raw = json.loads(Path(__file__).with_name("tickers.json").read_text(encoding="utf-8"))
    return long_lived((str(raw["source"]), {symbol: tuple(names) for symbol, names in raw["rows"]}))


class Tickers:
    """An S&P 500 ticker symbol whose company the request names."""

    name = "tickers"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or len(value) > 7 or _SYMBOL.fullmatch(value) is None:
            return None
        source, by_symbol = table()
        for name in by_symbol.get(value, ()):
            if name_stated(name, text):
                return Match(name, value, "the S&P 500 list (datasets/s-and-p-500-companies)")
        return None


TICKERS = Tickers()
