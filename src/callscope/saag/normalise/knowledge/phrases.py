"""Numbers a request states as a phrase, not as a number: "started from rest" states an
initial velocity of 0, "duplicates every hour" a frequency of 1 per hour, "from 0 to 2 pi" an
end of 6.2832.

No library holds these; they are callscope's own small table (:data:`PHRASES`), each row a
phrase pattern, the number it states and why, and each match is evidence like a library's
("'from rest' -> 0 by callscope's phrase table (a body at rest has velocity 0)"). The table is
kept to phrases whose number is their meaning in any domain, not an inference about one
problem: "a deck of 52 cards" stating 13 hearts is left to the judge.

Only number values are looked up; the request is scanned at most once per phrase (linear, its first
:data:`MAX_SCAN` characters) and what it holds is kept per request. Multiples of pi match at the
decimals the value itself has (at most 4, as pint's conversions do): 6.2832 for "2 pi".

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import math
import re

from callscope.core.memo import text_cache
from callscope.core.text import may_hold
from callscope.saag.normalise.knowledge.base import Match, StatedText
from callscope.saag.normalise.knowledge.quantities import same_number

SOURCE = "callscope's phrase table"

#: (pattern, number, why, needles): phrases that state a number in any domain, each with the
#: words one of which every match holds (a text without them is not scanned: ``may_hold``)
PHRASES: tuple[tuple[re.Pattern[str], float, str, tuple[str, ...]], ...] = (
    (
        re.compile(
            r"\b(?:(?:starts?|started|starting|from|at) rest|(?:from )?(?:a )?standstill"
            r"|(?:is|was|are|were|be|being|gets?|got) dropped|dropped from)\b",
            re.I,
        ),
        0,
        "a body at rest, or dropped, has velocity 0",
        ("rest", "standstill", "dropped"),
    ),
    (
        re.compile(
            r"\b(?:every|each|once an?|once per|per) (?:second|minute|hour|day|week|month|year)\b",
            re.I,
        ),
        1,
        "once per unit of time",
        ("every", "each", "once", "per"),
    ),
)
#: the request is read up to here (the parser's scan bound)
MAX_SCAN = 20_000
#: a multiple of pi ("2 pi", "2π", "pi/2" is not read)
_PI = re.compile(r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s?\*?\s?)?(?:pi|π)(?![\w/])", re.I)


class Phrases:
    """A number the request states as a phrase of :data:`PHRASES`, or as a multiple of pi."""

    name = "phrases"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        try:
            number = float(value)
        except OverflowError:  # an integer no float holds is no phrase's number
            return None
        if not math.isfinite(number):
            return None
        for words, stated, why in _stated(text.query):
            if number == stated if why else same_number(number, stated):
                return Match(words, str(value), f"{SOURCE} ({why or f'π = {math.pi:.6f}'})")
        return None


@text_cache(512)
def _stated(query: str) -> tuple[tuple[str, float, str], ...]:
    """``(words, number, why)`` for every phrase of :data:`PHRASES` the request holds (its
    first occurrence) and every multiple of pi (``why`` empty), in the first
    :data:`MAX_SCAN` characters: one scan per pattern per request, whatever the number of
    values looked up."""
    head = query[:MAX_SCAN]
    out = []
    for pattern, stated, why, needles in PHRASES:
        m = pattern.search(head) if may_hold(head, needles) else None
        if m is not None:
            out.append((m.group(0), float(stated), why))
    for m in _PI.finditer(head) if may_hold(head, ("pi",)) else ():  # (or "π": not ASCII)
        times = float(m.group(1)) if m.group(1) else 1.0
        if times > 0:
            out.append((m.group(0), times * math.pi, ""))
    return tuple(out)


PHRASES_NORMALISER = Phrases()
