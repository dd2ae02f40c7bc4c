"""Numbers a text states: digits, number words (text2num), scales, percentages, fractions,
coordinates with their hemisphere, years written '19.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`). The number grammar
("twenty five", "one hundred and twenty", "the third", "one point five") is text2num's
(MIT, a compiled library, loaded on the first request with letters); quantities in other
units ("5 minutes" as 300 seconds) are pint's (:mod:`.knowledge.quantities`). What is left
here are words no grammar reads ("a dozen", "half", "quarterly", "February") and the
written forms of a digit string."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from callscope.core.memo import text_cache

#: number words no number grammar reads: a word that means one number on its own
_SINGLE = {"dozen": 12, "half": 0.5, "quarter": 0.25, "twice": 2, "double": 2, "triple": 3}
#: a digit token with optional thousands separators, decimals, and what follows it
_NUM = re.compile(
    r"(?<![\w.])(-)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:e[-+]?\d{1,3})?|\.\d+)"
    r"(?:\s?(%|percent\b|k\b|m\b|bn\b|million\b|billion\b|thousand\b|hundred\b"
    r"|dozen\b))?"
)
_FRACTION = re.compile(r"(?<![\w.])(\d+)\s?/\s?(\d+)(?![\w.])")
WORD_TOKEN = re.compile(r"[a-z]+")
#: how often per year a compounding or payment frequency word means
_FREQUENCIES = {
    "annually": 1,
    "yearly": 1,
    "quarterly": 4,
    "monthly": 12,
    "weekly": 52,
    "daily": 365,
}
#: month names as numbers ("February" states 2); "may" and "march" are left out (common words)
_MONTH_NUMBERS = {
    m: i + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "",
            "april",
            "",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
    if m
}
_SUFFIX_SCALE = {
    "k": 1000,
    "thousand": 1000,
    "hundred": 100,
    "m": 10**6,
    "million": 10**6,
    "bn": 10**9,
    "billion": 10**9,
    "dozen": 12,
}


#: every word :func:`_word_numbers` reads
_NUMBER_WORDS = frozenset({*_SINGLE, *_FREQUENCIES, *_MONTH_NUMBERS})
#: a coordinate with its hemisphere: south and west are negative ("118.24 W" states -118.24)
_HEMISPHERE = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)\s?°?\s?([NSEW])\b")
#: what every :data:`_HEMISPHERE` match holds (its last digit and letter), without the
#: look-behind that slows a scan: tried first
_HEMISPHERE_SHAPE = re.compile(r"\d\s?°?\s?[NSEW]\b")
#: a number after a spaced minus sign ("y = 3x^2 + 2x - 4" states -4)
_SPACED_MINUS = re.compile(r"(?:^|[\s(=,])[-−]\s(\d+(?:\.\d+)?)(?![\d.])")
#: hyphens and quotes around words: spaces for text2num ("four-star", "'nine'")
_JOINERS = re.compile(r"(?<=[a-z])-(?=[a-z])|['\"‘’“”](?=[a-z])|(?<=[a-z])['\"‘’“”]")
#: the characters :data:`_JOINERS` replaces: a text without them is left as it is
_JOINER_CHARS = "-'\"‘’“”"
#: any digit: every pattern of digits here and in :mod:`.dates` needs one (a text without one
#: is not scanned for them)
ANY_DIGIT = re.compile(r"\d")
#: a year written with an apostrophe ("songs from '19")
_SHORT_YEAR = re.compile(r"(?<![\w'])['‘’](\d{2})(?![\w'])")


def _holds_any(text: str, needles: Iterable[str]) -> bool:
    """``text`` holds one of ``needles`` (a test before a scan that needs one)."""
    return any(x in text for x in needles)


def as_number(tok: str) -> int | float:
    clean = tok.replace(",", "")
    return float(clean) if "." in clean or "e" in clean.lower() else int(clean)


def _word_numbers(text: str) -> list[int | float]:
    """Numbers written as words no number grammar reads: "a dozen" -> 12, "half" -> 0.5,
    "quarterly" -> 4, "February" -> 2 (cardinals and ordinals in words, "a hundred" too, are
    text2num's: :func:`_in_digits`)."""
    out: list[int | float] = []
    if not _holds_any(text, _NUMBER_WORDS):
        return out
    for word in WORD_TOKEN.findall(text):
        if word not in _NUMBER_WORDS:
            continue
        for table in (_SINGLE, _FREQUENCIES, _MONTH_NUMBERS):
            if word in table:
                out.append(table[word])
                break
    return out


#: text2num's time grows with the square of the number words in one text ("one\n" repeated:
#: 0.14 s for 40,000 characters, so minutes for a few megabytes): a longer text is read in
#: pieces of at most this many characters (:func:`_pieces`), so the whole read is linear
TEXT2NUM_PIECE = 2048
#: where a piece may end: after a sentence's or a clause's mark and before its space, where
#: text2num never joins two numbers ("twenty. five" is "20. 5"; a line break it reads across:
#: "twenty\nfive" is "25")
_PIECE_END = re.compile(r"[.?!;,](?= )")


def _pieces(text: str, size: int = TEXT2NUM_PIECE) -> Iterable[str]:
    """``text`` cut into consecutive pieces of at most ``size`` characters, each ending at the
    last :data:`_PIECE_END` of its second half, else at its last space, else at ``size``:
    their concatenation is ``text``. Only a cut at a space can split a number in words, and
    only in a text without a mark for ``size / 2`` characters. Linear: each piece's window is
    scanned once."""
    start = 0
    while len(text) - start > size:
        window = text[start + size // 2 : start + size]
        end = None
        for m in _PIECE_END.finditer(window):
            end = m.end()
        if end is None:
            end = window.rfind(" ") + 1 or len(window)
        cut = start + size // 2 + end
        yield text[start:cut]
        start = cut
    yield text[start:]


@text_cache(2048)  # one a request: grounding.REQUEST_CACHE_SIZE
def _in_digits(lowered: str) -> str:
    """``lowered`` with its numbers in words written in digits by text2num ("twenty five" ->
    "25", "one hundred and twenty" -> "120", "the third" -> "the 3rd", "one point five" ->
    "1.5"); ``lowered`` itself when it holds no letters text2num could read. A text longer
    than :data:`TEXT2NUM_PIECE` is read piece by piece (:func:`_pieces`); a piece the library
    cannot read is kept as it is (its digits are still read)."""
    if WORD_TOKEN.search(lowered) is None:
        return lowered
    from text_to_num import alpha2digit  # lazy: a compiled library, loaded on first request

    joined = (  # "four-star", "'nine'": text2num reads words between spaces only
        _JOINERS.sub(" ", lowered) if any(c in lowered for c in _JOINER_CHARS) else lowered
    )
    out = []
    start = 0  # (each joiner is one character made one space: a piece's place in lowered)
    for piece in _pieces(joined):
        try:
            out.append(str(alpha2digit(piece, "en", threshold=0)))
        except Exception:  # a text the library cannot read: its digits are read as they are
            out.append(lowered[start : start + len(piece)])
        start += len(piece)
    return "".join(out)


def _digit_numbers(lowered: str, out: list[int | float]) -> None:
    """The digit tokens of ``lowered`` with what their suffix makes of them (a percentage
    as a fraction too, a scale word multiplied), appended to ``out``."""
    first = ANY_DIGIT.search(lowered)
    if first is None:
        return
    # a match starts at most two characters before a digit ("-.5"); the look-behind reads the
    # characters before the scan's start, so scanning from there finds the same matches
    for m in _NUM.finditer(lowered, max(0, first.start() - 2)):
        sign, body, suffix = m.group(1), m.group(2), m.group(3)
        try:
            n = as_number(body)
        except ValueError:  # pragma: no cover - the regex admits numbers only
            continue
        if sign:
            n = -n
        out.append(n)
        groups = body.split(",")
        if len(groups) >= 3 and len(groups[0]) == 3 and "." not in body:
            out.extend(int(part) for part in groups)  # "200,300,400" may be a list
        if suffix in ("%", "percent"):
            out.append(n / 100)
        elif suffix in _SUFFIX_SCALE:
            out.append(n * _SUFFIX_SCALE[suffix])


def number_evidence(
    text: str, blank: Callable[[str], str] | None = None
) -> tuple[int | float, ...]:
    """Every number ``text`` states, in the forms a call may carry it (see the module doc).
    Duplicates removed, order of first appearance kept. ``blank`` (a function of a text)
    first blanks what is not to be read (:func:`~callscope.saag.normalise.without_dates`),
    after number words are read as digits (one text2num pass per text, remembered)."""
    lowered = text.lower()
    out: list[int | float] = []
    converted = _in_digits(lowered)
    if blank is not None:
        text, lowered, converted = blank(text), blank(lowered), blank(converted)
    for source in (lowered, converted) if converted != lowered else (lowered,):
        _digit_numbers(source, out)
    # each pattern below needs a digit, and one of the characters it is tested for
    if ANY_DIGIT.search(text) is not None and _HEMISPHERE_SHAPE.search(text) is not None:
        for m in _HEMISPHERE.finditer(text):
            if m.group(2) in "SW":
                out.append(-as_number(m.group(1)))
    if ANY_DIGIT.search(lowered) is not None:
        for m in _SPACED_MINUS.finditer(lowered) if _holds_any(lowered, "-−") else ():
            out.append(-as_number(m.group(1)))
        for m in _SHORT_YEAR.finditer(lowered) if _holds_any(lowered, "'‘’") else ():
            y = int(m.group(1))
            out.append(2000 + y if y < 50 else 1900 + y)
        for m in _FRACTION.finditer(lowered) if "/" in lowered else ():
            num, den = int(m.group(1)), int(m.group(2))
            if den:
                out.append(num / den)
    out.extend(_word_numbers(lowered))
    seen: set[float | int] = set()
    uniq: list[int | float] = []
    for n in out:
        if n not in seen:
            seen.add(n)
            uniq.append(n)
    return tuple(uniq)


@text_cache(8192)
def parse_number_string(value: str) -> int | float | None:
    """The number a string value holds ("10", "1,000", "2.5"), else ``None``."""
    v = value.strip()
    if not v or len(v) > 40:
        return None
    try:
        return as_number(v) if re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", v) else None
    except ValueError:  # pragma: no cover
        return None
