"""Stage 3 primitives of the SAAG paper (section 2.3): ExactMatch(v, Q) of eq. 6, the
PartialRatio of eq. 7, the hallucination score h(v, Q) of eq. 8, and the hard-drift boundary.

These are the paper's definitions, and exactly what the ``lexical`` grounding mode uses; the
``registry`` mode (:mod:`callscope.saag.groundings`) calls them first and accepts more values
after (its reasons other than ``stated``). All functions are pure and total: any JSON-like
value in, a number / bool / ``None`` out.
"""

from __future__ import annotations

import bisect
import math
import re
from typing import Any

from rapidfuzz import fuzz, process

from callscope.core.memo import text_cache
from callscope.core.text import occurrences
from callscope.saag.normalise.knowledge.entities import other_entities_named
from callscope.saag.normalise.numbers import ANY_DIGIT

#: a number token of the query: ``84.50``, ``1,000``, ``-3``, ``.5``; the minus sign counts
#: only when no word character precedes it (so ``5-3`` holds 5 and 3, not -3).
NUMBER_TOKEN = re.compile(r"(?:(?<!\w)-)?(?:\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)")
_WORD = re.compile(r"\w")
_INT_TOKEN = re.compile(r"-?\d+")

#: partial_ratio below this (0-100) makes a string a *hard* drift (SAAG paper, section 2.3 after
#: Eq. 9, and App. A: "the hard-drift boundary for Stage 3 correction is PartialRatio < 0.6")
HARD_DRIFT_BELOW = 60.0


def is_number(v: Any) -> bool:
    """An int or float, not a bool (num(v) of eq. 8).

    >>> is_number(3), is_number(2.5), is_number(True), is_number("3")
    (True, True, False, False)
    """
    return isinstance(v, int | float) and not isinstance(v, bool)


#: how many distinct requests (query texts) the per-request caches of stage 3 keep their
#: results for (here, :mod:`callscope.saag.evidence`, :mod:`callscope.saag.normalise.numbers`):
#: sized to the work (BFCL's 1,911 single-call requests, a leaderboard's 1,240 cases, a
#: correction loop's few) so that a second pass over a case set finds every request's
#: evidence (larger costs a first pass more in garbage collection than it saves); requests over
#: 8,192 characters are kept apart, 1 M characters of them (:func:`~callscope.core.memo.text_cache`)
REQUEST_CACHE_SIZE = 2048


@text_cache(REQUEST_CACHE_SIZE)
def _lower(text: str) -> str:
    return text.lower()


@text_cache(REQUEST_CACHE_SIZE)
def _number_tokens(query: str) -> tuple[float | int, ...]:
    return tuple(number_tokens(query))


@text_cache(REQUEST_CACHE_SIZE)
def _has_digit(text: str) -> bool:
    return any(map(str.isdigit, text))


class NumberIndex:
    """A set of numbers that answers "does it hold one :func:`numbers_equal` to ``v``?" in
    O(log n): finite values sorted as floats, each query checked against the few in its
    tolerance window (and exactly, by :func:`numbers_equal`); values a float cannot hold are
    checked one by one."""

    #: tuples of numbers in slots: one object the collector walks per index, not five (an
    #: index is kept per request, two or three of them)
    __slots__ = ("_keys", "_other", "_values")

    def __init__(self, numbers: tuple[float | int, ...]) -> None:
        pairs: list[tuple[float, float | int]] = []
        other: list[float | int] = []
        for x in numbers:
            try:
                f = float(x)
            except OverflowError:
                other.append(x)
                continue
            if math.isfinite(f):
                pairs.append((f, x))
            else:
                other.append(x)
        pairs.sort(key=lambda p: p[0])
        self._other = tuple(other)
        self._keys = tuple(p[0] for p in pairs)
        self._values = tuple(p[1] for p in pairs)

    def contains(self, value: float | int) -> bool:
        try:
            f = float(value)
        except OverflowError:
            f = math.nan
        if math.isfinite(f):
            tol = abs(f) * 2e-9 + 1e-300
            i = bisect.bisect_left(self._keys, f - tol)
            while i < len(self._keys) and self._keys[i] <= f + tol:
                if numbers_equal(value, self._values[i]):
                    return True
                i += 1
            return any(numbers_equal(value, x) for x in self._other)
        return any(numbers_equal(value, x) for x in (*self._values, *self._other))


@text_cache(REQUEST_CACHE_SIZE)
def _token_index(query: str) -> NumberIndex:
    return NumberIndex(_number_tokens(query))


def number_tokens(query: str) -> list[float | int]:
    """The numbers written in ``query`` (commas dropped): the floating-point tokens a numeric
    value must match (SAAG paper, section 2.3, after eq. 6). A minus sign counts only when no
    word character precedes it.

    >>> number_tokens("a 15% tip on $1,084.50, 5-3 and -2")
    [15, 1084.5, 5, 3, -2]
    """
    out: list[float | int] = []
    first = ANY_DIGIT.search(query)
    if first is None:  # every token holds a digit (a fast scan first)
        return out
    # a token starts at most two characters before its first digit ("-.5"), and the
    # look-behind reads what precedes the scan's start: the same tokens, the prefix unscanned
    for tok in NUMBER_TOKEN.findall(query, max(0, first.start() - 2)):
        clean = tok.replace(",", "")
        try:
            out.append(int(clean) if _INT_TOKEN.fullmatch(clean) else float(clean))
        except ValueError:  # pragma: no cover - the regex only admits numbers
            continue
    return out


def numbers_equal(a: float | int, b: float | int, rel: float = 1e-9) -> bool:
    """Equality within ``rel`` relative tolerance, ``|a - b| <= rel max(|a|, |b|)``; exact
    for two ints; never raises (a non-finite or too large value equals nothing).

    >>> numbers_equal(84.5, 84.50000000001), numbers_equal(84, 85), numbers_equal(10**400, 1.0)
    (True, False, False)
    """
    if isinstance(a, int) and isinstance(b, int):  # exact arithmetic, no float overflow
        return a == b or abs(a - b) * round(1 / rel) <= max(abs(a), abs(b))
    try:
        fa, fb = float(a), float(b)
    except OverflowError:
        return False
    if not (math.isfinite(fa) and math.isfinite(fb)):
        return False
    if fa == fb:
        return True
    return abs(fa - fb) <= rel * max(abs(fa), abs(fb))


def string_in_query(value: str, query: str) -> bool:
    """Lower-cased, stripped ``value`` occurs in lower-cased ``query`` with no word character
    immediately before or after it (eq. 6's string case: case-insensitive, at word
    boundaries). The empty string never matches.

    >>> string_in_query(" Paris", "Weather in PARIS?"), string_in_query("Par", "Paris")
    (True, False)
    """
    needle = value.strip().lower()
    if not needle:
        return False
    hay = _lower(query)
    start = hay.find(needle)
    if start < 0:
        return False
    if len(needle) <= 64 and hay.count(needle, start) > 64:
        # many occurrences: one C-level regex scan instead of a Python step per occurrence
        return _bounded(needle).search(hay, start) is not None
    # each occurrence in turn, overlapping ones included (linear time: a long periodic value
    # in a long run of its period occurs at almost every position)
    for at in occurrences(hay, needle, start):
        end = at + len(needle)
        before_ok = at == 0 or not _WORD.match(hay[at - 1])
        after_ok = end == len(hay) or not _WORD.match(hay[end])
        if before_ok and after_ok:
            return True
    return False


@text_cache(4096)
def _bounded(needle: str) -> re.Pattern[str]:
    """``needle`` with no word character immediately before or after it (the rule of
    :func:`string_in_query`)."""
    return re.compile(rf"(?<!\w){re.escape(needle)}(?!\w)")


def exact_match(value: Any, query: str) -> bool:
    """ExactMatch(v, Q) (SAAG paper, section 2.3, eq. 6; EM of eq. 8), type-aware: a string
    at word boundaries, case-insensitive (:func:`string_in_query`); a number equal to a number
    token of ``Q`` (:func:`number_tokens`, :func:`numbers_equal`); a non-empty list or object
    when every element / leaf matches; bool and null never match.

    >>> exact_match("paris", "Weather in Paris?"), exact_match(84.5, "a tip on $84.50")
    (True, True)
    >>> exact_match(["a", "b"], "a or b"), exact_match([], "a"), exact_match(True, "true")
    (True, False, False)
    """
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return string_in_query(value, query)
    if is_number(value):
        return _token_index(query).contains(value)
    if isinstance(value, list | tuple):
        return bool(value) and all(exact_match(v, query) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(exact_match(v, query) for v in value.values())
    return False


#: the work a PartialRatio may take, in units of ``s * s * l`` (shorter string ``s``
#: characters, longer ``l``: rapidfuzz's time grows so; 0.04 s for 256 in 1,000,000, 23 s for
#: 10,000 in 100,000; at most 64 is one bit-parallel pass). Past it: 0 (:func:`partial_ratio`)
MAX_RATIO_WORK = 256 * 256 * 1_000_000


@text_cache(REQUEST_CACHE_SIZE)
def partial_ratio(value: str, query: str) -> float:
    """PartialRatio(v, Q) of eqs. 7-8: ``rapidfuzz.fuzz.partial_ratio`` of the lower-cased
    strings, 0-100, the score of the best contiguous alignment of ``value`` within ``query``
    (pure; remembered, bounded in size: :func:`~callscope.core.memo.text_cache`).
    Bounded (issue 49): when the shorter string is over 64 characters and the alignment would
    take more than :data:`MAX_RATIO_WORK`, the score is 0 (h(v) = 1, a hard drift: as for a
    value the request does not state). Every BFCL pair is scored exactly.

    >>> partial_ratio("Paris", "weather in paris?"), partial_ratio("celsius", "Weather in Paris?")
    (100.0, 40.0)
    >>> partial_ratio("x" * 5_000, "y" * 50_000)  # over the bound: not aligned
    0.0
    """
    short, long = sorted((len(value), len(query)))
    if short > 64 and short * short * long > MAX_RATIO_WORK:
        return 0.0
    return float(fuzz.partial_ratio(value.lower(), _lower(query)))


#: a word of a value this close to a word of the text (``rapidfuzz.fuzz.ratio``, 0-100) is a
#: spelling of it: one slip in a five-letter word ("Pariss", "Londn") scores 80-91, another
#: word of the same kind ("Berlin" for "Paris", "Jane" for "John") 50 or less
NEAR_SPELLING_AT = 80.0
#: a word shorter than this counts only when the text states it (or, as a prefix of at
#: least this many letters, a text word starts with it)
NEAR_SPELLING_MIN = 4
#: a value of this many words or more is a phrase, not a name: one word in four may be
#: unstated ("Museum of Modern Art" for "Metropolitan Museum of Art" may not)
LOOSE_FROM_WORDS = 6
#: a word longer than this is spelled only as itself (no prefix or near-spelling search)
MAX_SPELLED_WORD = 64
#: at most this many words of one value are compared (the rest count as not stated)
MAX_SPELLING_WORDS = 64
#: a word: a run of letters or a run of digits ("7pm" is "7" and "pm", "SK123" "sk" and "123")
_WORD_TOKEN = re.compile(r"[^\W\d_]+|\d+")


@text_cache(REQUEST_CACHE_SIZE)
def _text_words(text: str) -> frozenset[str]:
    return frozenset(_WORD_TOKEN.findall(_lower(text)))


@text_cache(REQUEST_CACHE_SIZE)
def _sorted_words(text: str) -> list[str]:
    return sorted(_text_words(text))


def _starts_a_word(word: str, text: str) -> bool:
    """A word of ``text`` starts with ``word`` (O(log n): the words sorted)."""
    ordered = _sorted_words(text)
    i = bisect.bisect_left(ordered, word)
    return i < len(ordered) and ordered[i].startswith(word)


def _word_spelled(word: str, text: str) -> bool:
    """``word`` (lower case: a run of letters or of digits) is a word of ``text``, a near
    spelling of one, or (four letters or more) the start of one; digits only as a number the
    text states, or zeros (a date, an id or a time that differs in one digit names another
    thing)."""
    words = _text_words(text)
    if word in words:
        return True
    if word.isdigit():  # a number stated in any form, or zeros that pad one ("7:00")
        return not word.strip("0") or (len(word) <= 30 and _token_index(text).contains(int(word)))
    if len(word) < NEAR_SPELLING_MIN:
        return False
    if len(word) > MAX_SPELLED_WORD:
        return False  # no spelling of a word this long is compared (bounded cost)
    if _starts_a_word(word, text) or any(
        word[:k] in words for k in range(NEAR_SPELLING_MIN, len(word))
    ):
        return True  # a stated word cut short, or the whole of one the text cuts short
    near = process.extractOne(word, words, scorer=fuzz.ratio, score_cutoff=NEAR_SPELLING_AT)
    return near is not None


def soft_drift(value: str, text: str) -> bool:
    """Whether an ungrounded string ``value`` is a *soft* drift of ``text`` (a slip in what
    the text states) rather than a *hard* one (a value the text does not state).

    The paper's boundary (section 2.3 after eq. 9, App. A: hard when PartialRatio(v, Q) <
    0.6, :data:`HARD_DRIFT_BELOW`) is kept as a necessary condition; callscope adds a second
    one (issue 40), because PartialRatio aligns a short value with any stretch of a long text
    ("Berlin" against "weather in Paris?" scores 67): every word of the value must be a word
    of the text, a near spelling of one (``fuzz.ratio`` >= :data:`NEAR_SPELLING_AT`, words of
    :data:`NEAR_SPELLING_MIN` letters or more), the start of one, or a word a stated one
    starts ("Francisco" for "San Fran"); a run of digits only as a number the text states
    ("03" for "3") or zeros ("7:00" for "7pm"): "XY123" is not "SK123", "2024-03-06" not
    "2024-03-05".
    Only the part before a first comma is compared ("Orlando, FL": the qualifier is not the
    entity). A value of :data:`LOOSE_FROM_WORDS` words or more (a phrase, not a name) may
    leave one word in four out. So a value that names a different entity of the same kind
    (another city, person, date, ticker, id) is never soft; nor is a known entity that
    reads as a spelling of another one of its kind the text names ("Austria" for
    "Australia", :func:`swapped_entity`, issue 46)::

        soft(v, Q) = PartialRatio(v, Q) >= 60  and  |{w in words(v): not spelled(w, Q)}|
                                                    <= floor(|words(v)| / 4)  (0 below 6 words)
                                                    and no run of digits among them
                                                    and not swapped_entity(v, Q)

    >>> soft_drift("Pariss", "Weather in Paris?"), soft_drift("Berlin", "Weather in Paris?")
    (True, False)
    >>> soft_drift("2024-03-06", "on 2024-03-05"), soft_drift("Jane Doe", "email John Doe")
    (False, False)
    >>> soft_drift("Australa", "in Australia?"), soft_drift("Austria", "in Australia?")
    (True, False)
    """
    if partial_ratio(value, text) < HARD_DRIFT_BELOW:
        return False
    head = value.split(",", 1)[0] if "," in value else value
    words = _WORD_TOKEN.findall(head.lower())
    if not words:
        return True  # nothing to compare word by word: the paper's boundary decides
    allowed = len(words) // 4 if len(words) >= LOOSE_FROM_WORDS else 0
    missing = 0
    for w in words[:MAX_SPELLING_WORDS]:
        if _word_spelled(w, text):
            continue
        if w.isdigit():
            return False
        missing += 1
        if missing > allowed:
            return False
    if missing + max(0, len(words) - MAX_SPELLING_WORDS) > allowed:
        return False
    return swapped_entity(head, text) is None


def swapped_entity(value: str, text: str) -> str | None:
    """The words of ``text`` naming another entity of the kind ``value`` is, which ``value``
    reads as a spelling of (every word of ``value`` spelled by them, as :func:`soft_drift`
    reads a word), or ``None``: "Australia" for "Austria", "Nigeria" for "Niger", "GOOGL"
    for "GOOG", "Santa Clarita" for "Santa Clara". A value that is itself a known entity is
    invented, not a slip (issue 46; the tables:
    :mod:`callscope.saag.normalise.knowledge.entities`); "Australa" (no entity) and
    "Chicago" for "Chcicago" (the text's word is none) are slips. Only that way round:
    "San Francisco" for "San Fran" is no spelling of the city "San" (Mali) the text holds.

    >>> swapped_entity("Austria", "the population of Australia")
    'Australia'
    >>> swapped_entity("Australa", "the population of Australia") is None
    True
    """
    words = _WORD_TOKEN.findall(value.lower())[:MAX_SPELLING_WORDS]
    for span in other_entities_named(value, text):
        if all(_word_spelled(w, span) for w in words):
            return span
    return None


#: h(v) returns this for arguments with no grounding context (bool, null, empty containers,
#: numbers when the query has no digit): they are excluded from VHR and from the pass test.
ASSUMED = None


def hallucination(value: Any, query: str) -> float | None:
    """h(v, Q) (SAAG paper, section 2.3, eq. 8)::

        h(v, Q) = 0                          if ExactMatch(v, Q)
                  1 - PartialRatio(v, Q)/100  if v is a string
                  1                          if v is a number and Q holds a digit
                  excluded (None, assumed)   otherwise

    A non-empty container scores the max h over its non-assumed leaves (the paper does not
    define containers). A string too long to align within its text's work bound scores 1
    (:func:`partial_ratio`). The arguments with an h form eq. 9's contextual subset ``G``; this is
    the ``lexical`` mode's h, and the ``registry`` mode's for a value it does not accept (over
    the request and its context, never 0: see :mod:`callscope.saag.groundings`).

    >>> hallucination("Paris", "Weather in Paris?"), hallucination("celsius", "Weather in Paris?")
    (0.0, 0.6)
    >>> hallucination(3, "a 15% tip"), hallucination(3, "a tip"), hallucination(True, "yes")
    (1.0, None, None)
    >>> hallucination(["Paris", "Lyon"], "Weather in Paris?")
    0.75
    """
    if exact_match(value, query):
        return 0.0
    if isinstance(value, str):
        return 1.0 - partial_ratio(value, query) / 100.0
    if is_number(value):
        return 1.0 if _has_digit(query) else ASSUMED
    if isinstance(value, list | tuple | dict):
        leaves = value.values() if isinstance(value, dict) else value
        scores = [h for h in (hallucination(v, query) for v in leaves) if h is not None]
        return max(scores) if scores else ASSUMED
    return ASSUMED


def worst_leaf(value: Any, query: str) -> Any:
    """The leaf of ``value`` with the highest h (first one on ties); the value itself for
    scalars. What a stage-3 failure names, and what decides a numeric, hard or soft drift.

    >>> worst_leaf(["Paris", "Lyon"], "Weather in Paris?")
    'Lyon'
    """
    if not isinstance(value, list | tuple | dict):
        return value
    leaves = list(value.values() if isinstance(value, dict) else value)
    best, best_h = None, -1.0
    for leaf in leaves:
        candidate = worst_leaf(leaf, query)
        h = hallucination(candidate, query)
        if h is not None and h > best_h:
            best, best_h = candidate, h
    return best


#: at most this many distinct unmatched strings of one argument get a PartialRatio over the
#: whole query (each costs O(len(query))); further ones score h = 1. The paper's h(v) is
#: unchanged for every argument with fewer; a 10,000-string list costs what 32 do.
MAX_RATIO_LEAVES = 32


def grounding_of(
    value: Any, query: str, _budget: list[int] | None = None, _memo: dict[Any, Any] | None = None
) -> tuple[bool, float | None, Any]:
    """``(exact_match(value, query), hallucination(value, query), worst_leaf(value, query))``
    in one pass over ``value``: each leaf is matched and scored once (the three functions
    above call each other again per leaf), a repeated scalar leaf once per argument. The same
    values as calling the three, except beyond :data:`MAX_RATIO_LEAVES` (see there).

    >>> grounding_of(["Paris", "Lyon"], "Weather in Paris?")
    (False, 0.75, 'Lyon')
    """
    if not isinstance(value, list | tuple | dict):
        key = (type(value), value) if isinstance(value, str | int | float) else None
        if _memo is not None and key is not None and key in _memo:
            return _memo[key]
        if exact_match(value, query):
            out: tuple[bool, float | None, Any] = (True, 0.0, value)
        elif isinstance(value, str):
            if _budget is not None and _budget[0] <= 0:
                out = (False, 1.0, value)
            else:
                if _budget is not None:
                    _budget[0] -= 1
                out = (False, 1.0 - partial_ratio(value, query) / 100.0, value)
        elif is_number(value):
            out = (False, (1.0 if _has_digit(query) else ASSUMED), value)
        else:
            out = (False, ASSUMED, value)
        if _memo is not None and key is not None:
            _memo[key] = out
        return out
    if _budget is None:
        _budget, _memo = [MAX_RATIO_LEAVES], {}
    leaves = value.values() if isinstance(value, dict) else value
    matched = True
    scores: list[float] = []
    best, best_h = None, -1.0
    for leaf in leaves:
        em, h, candidate = grounding_of(leaf, query, _budget, _memo)
        matched = matched and em
        if h is not None:
            scores.append(h)
            if h > best_h:
                best, best_h = candidate, h
    if matched and len(value):
        return True, 0.0, best
    return False, (max(scores) if scores else ASSUMED), best
