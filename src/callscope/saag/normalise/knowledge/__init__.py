"""World knowledge of the registry grounding: a value the request states in other words,
recognised through well-kept libraries, each match kept as evidence.

Beyond the SAAG paper (its grounding is lexical). A *knowledge normaliser* knows one kind of
value (countries, currencies, languages, airports, cities, ticker symbols, time zones,
physical quantities, numbers stated as phrases, words with a typing slip, acronyms) through one library or public table, and answers one question: which words of the request name this value? Its
answer is a :class:`Match`: the request's words, the value, the library and the record that
joins them ("'Canadian Dollar' -> CAD by pycountry (ISO 4217)").

Rules every normaliser keeps:

* **the request names the value**: a match starts from words of the request (or of the
  stated context, through its own evidence), never from the value alone: "LAX" for a
  request about Boston is no match;
* **cheap when absent**: :meth:`Normaliser.match` first tests the value's shape with plain
  string checks and returns ``None`` for values of other types before the library is
  imported; a library is imported and its table loaded once per process, on the first value
  of its type (``import callscope`` never loads one);
* **bounded**: values longer than :data:`MAX_VALUE_CHARS` are not looked up; request scans
  are linear token scans over at most :data:`MAX_SPAN_WORDS`-word spans.

:data:`NORMALISERS` is the registry (name -> normaliser, in the order they are tried). It is
read-only and has no entry-point group on purpose: ``registry`` is the default grounding
mode, and its verdicts must not depend on which other packages happen to be installed (a
new kind of value is one module here and one entry below; a different grounding is a new
mode in :data:`callscope.saag.groundings.GROUNDINGS`).
"""

from __future__ import annotations

from callscope.core.registry import Registry
from callscope.saag.normalise.knowledge.acronyms import ACRONYMS
from callscope.saag.normalise.knowledge.airports import AIRPORTS
from callscope.saag.normalise.knowledge.base import (
    MAX_SPAN_WORDS,
    MAX_VALUE_CHARS,
    Match,
    Normaliser,
    StatedText,
    name_stated,
    stem_words,
    upper_tokens,
)
from callscope.saag.normalise.knowledge.cities import CITIES
from callscope.saag.normalise.knowledge.countries import COUNTRIES
from callscope.saag.normalise.knowledge.currencies import CURRENCIES
from callscope.saag.normalise.knowledge.languages import LANGUAGES
from callscope.saag.normalise.knowledge.phrases import PHRASES_NORMALISER
from callscope.saag.normalise.knowledge.quantities import QUANTITIES
from callscope.saag.normalise.knowledge.spellings import SPELLINGS
from callscope.saag.normalise.knowledge.tickers import TICKERS
from callscope.saag.normalise.knowledge.timezones import TIMEZONES

#: the knowledge normalisers by name, in the order they are tried (read-only, no plugins: see
#: the module doc)
NORMALISERS: Registry[Normaliser] = Registry(
    "knowledge normaliser",
    entries={
        n.name: n
        for n in (
            COUNTRIES,
            CURRENCIES,
            LANGUAGES,
            AIRPORTS,
            CITIES,
            TICKERS,
            TIMEZONES,
            QUANTITIES,
            PHRASES_NORMALISER,
            SPELLINGS,
            ACRONYMS,
        )
    },
    read_only=True,
)
_ORDER: tuple[Normaliser, ...] = tuple(NORMALISERS[name] for name in NORMALISERS)


def knowledge_match(value: str | int | float, text: StatedText) -> Match | None:
    """The first :class:`Match` of ``value`` (a string, or a number) in ``text`` by any
    normaliser of :data:`NORMALISERS` (``None``: no library links the value to the request's
    words)."""
    v = value.strip() if isinstance(value, str) else value
    if isinstance(v, str) and (not v or len(v) > MAX_VALUE_CHARS):
        return None
    for normaliser in _ORDER:
        found = normaliser.match(v, text)
        if found is not None:
            return found
    return None


__all__ = [
    "MAX_SPAN_WORDS",
    "MAX_VALUE_CHARS",
    "NORMALISERS",
    "Match",
    "Normaliser",
    "StatedText",
    "knowledge_match",
    "name_stated",
    "stem_words",
    "upper_tokens",
]
