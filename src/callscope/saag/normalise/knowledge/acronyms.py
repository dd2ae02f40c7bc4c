"""Acronyms: a value that is the initials of words the request states ("ssn" for "social
security numbers", "SD" for "San Diego").

Not the other way round: words whose initials the request writes as an acronym ("San Diego"
for "from LA to SD") would also ground a cut value ("New Yo" for "NY", the audit's
``truncated_string``: 10 more of them passed on BFCL), so a stated acronym counts only
through a table that names it (:mod:`.cities`).

No table: the initials are read off the request's own words, so the match always starts
from the request. To keep chance initials out:

* an acronym of two letters must come from capitalised words ("San Diego"), one of three
  to five letters from any run of words that holds no stop word ("social security
  numbers"; not "in the" for "it", not "a big deal" for "abd").

The scan is linear: one pass over the request's words per value, bounded by
:data:`MAX_REQUEST_WORDS`.

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import NamedTuple

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import Match, StatedText

SOURCE = "initials of the request's words"
#: request words read (a longer request is read up to here)
MAX_REQUEST_WORDS = 4000
_ACRONYM = re.compile(r"[A-Za-z](?:\.?[A-Za-z]){1,4}\.?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
#: words whose initial no acronym takes
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "is",
        "are",
        "be",
        "my",
        "your",
        "our",
        "their",
        "this",
        "that",
        "it",
    ]
)


class Acronyms:
    """A value that is the initials of words the request states."""

    name = "acronyms"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or len(value) > 40:
            return None
        v = value.strip()
        if not _ACRONYM.fullmatch(v):
            return None
        letters = v.replace(".", "")
        k, target = len(letters), letters.lower()
        initials = _initials(text.query)
        for i in _runs_at(initials, target):
            run = initials.words[i : i + k]
            if any(w.lower() in _STOP for w in run):
                continue
            if k == 2 and not all(w[0].isupper() for w in run):
                continue
            return Match(" ".join(run), letters, SOURCE)
        return None


class _Initials(NamedTuple):
    words: tuple[str, ...]  # at most MAX_REQUEST_WORDS
    letters: str  # their first letters, lower case, one per word


@text_cache(512)
def _initials(query: str) -> _Initials:
    words = tuple(itertools.islice((m.group(0) for m in _WORD.finditer(query)), MAX_REQUEST_WORDS))
    return _Initials(words, "".join(w[0].lower() for w in words))


def _runs_at(initials: _Initials, target: str) -> Iterator[int]:
    """Where a run of the request's words has ``target`` as its initials (``str.find`` over
    the string of initials: linear)."""
    i = initials.letters.find(target)
    while i >= 0:
        yield i
        i = initials.letters.find(target, i + 1)


ACRONYMS = Acronyms()
