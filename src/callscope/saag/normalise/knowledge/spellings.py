"""Words the request writes with a typing slip or other spacing: "Chicago" for "Chcicago",
"Berkeley" for "Berkley", "McDonald's" for "mc donalds".

A string value's words must run in the request in the same order, each either the same word
(up to inflection) or the request's word misspelled: at most one edit for a word of 5-8
letters and two for longer ones, by optimal string alignment (RapidFuzz, MIT: an insertion,
deletion, substitution or swap of two neighbours is one edit), with the same first letter.
Words under five letters must be the same. Which side slipped: the value must be a place's
own name in a table (the GeoNames city table, pycountry, us): "Chicago" is, so "Chcicago"
is the request's slip; "Londn" for "London" is not, so it is the model's slip and stays
flagged (a soft drift, issue 40), and so does "artificial intelligence" for "airtificial
intelligence" (no table knows the phrase; the judge may). And the request's words must be
no entity themselves (issue 46, :func:`.entities.another_entity`): "Austria" is a country,
so "Australia" for it is another country, not a slip (flagged, and hard:
:func:`callscope.saag.grounding.soft_drift`). A value that is the start of the
request's word ("Chicag" for "Chicago") is a cut, not a slip, and stays flagged: that is
what the audit's ``truncated_string`` probes. A value may also be the request's words run
together or split apart ("mc donalds" for "McDonald's"), letters and digits only: the same
letters, whichever side spaced them.

Only string values whose words the request does not hold as written are looked up; the scan
is bounded by :data:`MAX_REQUEST_WORDS` request words and :data:`MAX_VALUE_WORDS` value
words, and starts only at request words with the value's first letter (indexed once per
request); one RapidFuzz call per pair at most.

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import Match, StatedText
from callscope.saag.normalise.knowledge.cities import table
from callscope.saag.normalise.knowledge.countries import place_named
from callscope.saag.normalise.knowledge.entities import another_entity
from callscope.saag.normalise.words import norm_words, stem

SOURCE = "RapidFuzz (optimal string alignment)"
#: request words read (a longer request is read up to here)
MAX_REQUEST_WORDS = 4000
#: values of more words are not looked up
MAX_VALUE_WORDS = 6


def _edits_allowed(word: str) -> int:
    return 0 if len(word) < 5 else 1 if len(word) <= 8 else 2


def _slip(value_word: str, request_word: str) -> int | None:
    """The edits from ``request_word`` to ``value_word`` when it is a slip (see the module
    doc): 0 for the same word, ``None`` when it is not."""
    if value_word == request_word or stem(value_word) == stem(request_word):
        return 0
    allowed = _edits_allowed(value_word)
    if (
        not allowed
        or value_word[0] != request_word[0]
        or request_word.startswith(value_word)  # a cut, not a slip
        or abs(len(value_word) - len(request_word)) > allowed
    ):
        return None
    from rapidfuzz.distance import OSA  # lazy: a compiled library

    d = OSA.distance(value_word, request_word, score_cutoff=allowed)
    return d if d <= allowed else None


@text_cache(512)
def _request_words(words: str) -> tuple[tuple[str, ...], dict[str, tuple[int, ...]]]:
    """The request's words (at most :data:`MAX_REQUEST_WORDS`) and, by first letter, where
    they are."""
    rw = tuple(words.split()[:MAX_REQUEST_WORDS])
    starts: dict[str, list[int]] = {}
    for i, w in enumerate(rw):
        starts.setdefault(w[0], []).append(i)
    return rw, {k: tuple(v) for k, v in starts.items()}


@text_cache(1024)
def _known_name(value: str) -> str | None:
    """Which table knows ``value`` as a place's own name ("Chicago": GeoNames; "Germany":
    pycountry), else ``None``: only a name spelled right in a table is read as the request's
    slip; a value that is a slip of the request's word ("Londn" for "London") is the
    model's, a soft drift (:func:`callscope.saag.grounding.soft_drift`)."""
    if any(c.name.lower() == value.lower() for c in table().by_name.get(value.lower(), ())):
        return "a GeoNames city"
    if len(value) > 3:
        state, country = place_named(value)
        if state is not None or country is not None:
            return "a US state (us)" if state is not None else "a country (pycountry)"
    return None


def _slipped(vw: list[str], rw: tuple[str, ...], i: int, value: str, known: str) -> Match | None:
    """The request's words from ``i`` on as a slip of the value's words ``vw`` (at least one
    edit; ``known``: the table that knows ``value``), unless they name another entity."""
    edits = 0
    for j, word in enumerate(vw):
        d = _slip(word, rw[i + j]) if i + j < len(rw) else None
        if d is None:
            return None
        edits += d
    if not edits:
        return None
    words = " ".join(rw[i : i + len(vw)])
    if another_entity(words, value):  # "Austria" is no slip
        return None
    return Match(words, value, f"{SOURCE}, {edits} edit{'s' * (edits > 1)}; {known}")


class Spellings:
    """A string value the request writes with a slip of the keyboard or other spacing."""

    name = "spellings"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str):
            return None
        vw = norm_words(value).split()
        if not vw or len(vw) > MAX_VALUE_WORDS or not any(c.isalpha() for c in value):
            return None
        rw, starts = _request_words(text.words)
        joined = "".join(vw)
        # a slip is read only into a name a table knows: for any other value the slip scan
        # cannot match, and only the same letters with other spacing (6 or more) are looked for
        known = _known_name(value)
        if known is None and len(joined) < 6:
            return None
        for i in starts.get(vw[0][0], ()):  # a slip keeps the first letter
            if known is not None:
                found = _slipped(vw, rw, i, value, known)
                if found is not None:
                    return found
            if len(joined) >= 6:  # the same letters with other spacing: 2-3 request words
                run = rw[i]
                for k in range(i + 1, min(i + 3, len(rw))):
                    run += rw[k]
                    if len(run) > len(joined):
                        break
                    if run == joined:
                        return Match(" ".join(rw[i : k + 1]), value, "the same letters, spaced")
                if len(vw) > 1 and rw[i] == joined:
                    return Match(rw[i], value, "the same letters, spaced")
        return None


SPELLINGS = Spellings()
