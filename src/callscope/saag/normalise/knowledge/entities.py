"""Which entity a name is, and of which kind: the tables the knowledge normalisers read,
as one lookup (issue 46).

A value that is itself a known entity (a country, a city, a US state, a ticker, an airport,
a currency) different from the entity the request states is an invented value, not a
spelling slip: "Austria" for "Australia", "Niger" for "Nigeria", "GOOG" for "GOOGL",
"Santa Clara" for "Santa Clarita". A slip is a string that is no entity ("Australa",
"Chcicago"). Three readers:

* :func:`other_entities_named`: the words of a text naming another entity of a kind the
  value is, for the soft/hard boundary (:func:`callscope.saag.grounding.soft_drift`: a
  value that reads as a spelling of such words is hard);
* :func:`another_entity`: whether the request's words a value would be a slip of name an
  entity the value is not (:mod:`.spellings`: then it is no slip);
* :func:`entity_swaps`: the entities of the same kind nearest to a value, from the same
  table (the audit's ``same_kind_entity`` probe, :mod:`callscope.saag.audit`).

:data:`ENTITY_TABLES` is the registry of tables (read-only), one per kind and form: a kind
has a table of names (looked up in any case, words spaced by one space) and one of codes
(looked up as written, in capitals). An entity is its kind and a key in its kind (a
country's ISO alpha-2 code, a state's postal code, a city's own name in lower case), so
"Germany" and "DE" are one entity, and so are a city and its GeoNames alternate names
("Shangai" for Shanghai). Each table is loaded once, on the first look-up of its kind of
name, from the library its normaliser reads.

Bounded: names longer than :data:`MAX_NAME_CHARS` are not looked up; a text is read up to
:data:`MAX_TEXT_WORDS` words, each the start of at most
:data:`~callscope.saag.normalise.knowledge.base.MAX_SPAN_WORDS` words of a name of at most
:data:`MAX_NAME_CHARS` characters (one dict look-up each), and up to as many code-shaped
tokens; at most :data:`MAX_OTHER_ENTITIES` other entities are returned for one value; the
nearest names are one RapidFuzz pass over a table.

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from callscope.core.memo import text_cache
from callscope.core.registry import Registry
from callscope.saag.normalise.knowledge import cities, tickers
from callscope.saag.normalise.knowledge.airports import airports
from callscope.saag.normalise.knowledge.base import MAX_SPAN_WORDS, long_lived
from callscope.saag.normalise.knowledge.countries import ISO_3166_1, US_STATES, country_names

#: names longer than this are not looked up
MAX_NAME_CHARS = 60
#: words of a text read for the entities it names
MAX_TEXT_WORDS = 4000
#: other entities of a value's kind returned for one text (the first ones, in text order)
MAX_OTHER_ENTITIES = 32
#: a code as written: 2-5 capitals and an optional class suffix ("LAX", "GOOGL", "BRK.B")
_CODE = re.compile(r"[A-Z]{2,5}(?:\.[A-Z])?")
_CODE_TOKEN = re.compile(r"(?<![A-Za-z0-9.])[A-Z]{2,5}(?:\.[A-Z])?(?![A-Za-z0-9])")
_WORD = re.compile(r"[^\W\d_][\w.'-]*")


class Entity(NamedTuple):
    """One entity: its kind ("country") and its key in that kind ("AU")."""

    kind: str
    key: str


class Index(NamedTuple):
    """A table read: look-up form -> the keys of the entities it names, and the table's own
    names (what a swap is drawn from), in table order, read when first asked for."""

    keys: Mapping[str, frozenset[str]]
    names: Callable[[], tuple[str, ...]]


@dataclass(frozen=True)
class EntityTable:
    """One table of one kind of entity: names or codes, from one library."""

    name: str
    kind: str
    source: str
    #: codes are looked up as written (capitals), names in any case
    codes: bool
    load: Callable[[], Index]

    def form(self, name: str) -> str | None:
        """``name`` as this table looks it up, or ``None`` when it cannot be in it."""
        return _code_form(name) if self.codes else _name_form(name)

    def keys(self, name: str) -> frozenset[str]:
        """The keys of the entities ``name`` names in this table (empty: none)."""
        form = self.form(name)
        return _index(self.name).keys.get(form, frozenset()) if form else frozenset()


def _indexed(pairs: list[tuple[str, str]], names: list[str]) -> Index:
    keys: dict[str, set[str]] = {}
    for form, key in pairs:
        keys.setdefault(form, set()).add(key)
    own = tuple(dict.fromkeys(names))
    return Index({k: frozenset(v) for k, v in keys.items()}, lambda: own)


def _lower(name: str) -> str:
    return " ".join(name.lower().split())


def _name_form(name: str) -> str | None:
    """``name`` as a table of names looks it up (small letters, single spaces; ``None``
    without a letter)."""
    return _lower(name) if any(c.isalpha() for c in name) else None


def _code_form(name: str) -> str | None:
    """``name`` as a table of codes looks it up (as written; ``None`` unless code-shaped)."""
    return name if _CODE.fullmatch(name) else None


class _CityKeys(Mapping[str, frozenset[str]]):
    """The city table's index read as keys (a city's own name in lower case), one look-up at
    a time: the table is indexed by name already (:func:`.cities.table`)."""

    def __init__(self, by_name: Mapping[str, tuple[cities.City, ...]]) -> None:
        self._by_name = by_name

    def __getitem__(self, form: str) -> frozenset[str]:
        return frozenset({c.name.lower() for c in self._by_name[form]})

    def get(self, form: str, default: frozenset[str] | None = None) -> frozenset[str] | None:  # type: ignore[override]
        """``Mapping.get`` without its ``KeyError``: most spans a text is read for name no
        city, and raising and catching one costs more than the look-up."""
        found = self._by_name.get(form)
        return default if found is None else frozenset({c.name.lower() for c in found})

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


def _city_names() -> Index:
    by_name = cities.table().by_name  # lower-case name or alternate name -> its cities

    def names() -> tuple[str, ...]:
        own = (c.name for form, found in by_name.items() for c in found if c.name.lower() == form)
        return tuple(dict.fromkeys(own))

    return Index(_CityKeys(by_name), names)


def _countries() -> list[object]:
    import pycountry  # lazy: the ISO tables load on the first country-shaped look-up

    return list(pycountry.countries)


def _country_names() -> Index:
    pairs, names = [], []
    for c in _countries():
        for name in country_names(c):
            pairs.append((_lower(name), c.alpha_2))  # type: ignore[attr-defined]
        common = getattr(c, "common_name", None) or c.name  # type: ignore[attr-defined]
        if "," not in common and "(" not in common:
            names.append(common)
    return _indexed(pairs, names)


def _country_codes() -> Index:
    pairs = [(code, c.alpha_2) for c in _countries() for code in (c.alpha_2, c.alpha_3)]  # type: ignore[attr-defined]
    return _indexed(pairs, [code for code, _ in pairs])


def _us_states() -> list[object]:
    import us  # lazy: only state-shaped look-ups load the table

    return list(us.states.STATES_AND_TERRITORIES)


def _state_names() -> Index:
    states = _us_states()
    pairs = [(_lower(s.name), s.abbr) for s in states]  # type: ignore[attr-defined]
    return _indexed(pairs, [s.name for s in states])  # type: ignore[attr-defined]


def _state_codes() -> Index:
    states = _us_states()
    return _indexed([(s.abbr, s.abbr) for s in states], [s.abbr for s in states])  # type: ignore[attr-defined]


def _tickers() -> Index:
    symbols = list(tickers.table()[1])
    return _indexed([(s, s) for s in symbols], symbols)


def _airports() -> Index:
    codes = [c for c in airports() if _CODE.fullmatch(c)]
    return _indexed([(c, c) for c in codes], codes)


def _currencies() -> list[object]:
    import pycountry  # lazy: see _countries

    return list(pycountry.currencies)


def _currency_codes() -> Index:
    codes = [c.alpha_3 for c in _currencies()]  # type: ignore[attr-defined]
    return _indexed([(c, c) for c in codes], codes)


def _currency_names() -> Index:
    found = _currencies()
    pairs = [(_lower(c.name), c.alpha_3) for c in found]  # type: ignore[attr-defined]
    return _indexed(pairs, [c.name for c in found])  # type: ignore[attr-defined]


_GEONAMES = "GeoNames"
_TICKERS = "the S&P 500 list"
_IATA = "airportsdata (IATA)"
_ISO_4217 = "pycountry (ISO 4217)"

#: the entity tables by name, in the order a name is looked up (read-only; module doc)
ENTITY_TABLES: Registry[EntityTable] = Registry(
    "entity table",
    entries={
        t.name: t
        for t in (
            EntityTable("city", "city", _GEONAMES, False, _city_names),
            EntityTable("country", "country", ISO_3166_1, False, _country_names),
            EntityTable("country code", "country", ISO_3166_1, True, _country_codes),
            EntityTable("us state", "us state", US_STATES, False, _state_names),
            EntityTable("us state code", "us state", US_STATES, True, _state_codes),
            EntityTable("ticker", "ticker", _TICKERS, True, _tickers),
            EntityTable("airport", "airport", _IATA, True, _airports),
            EntityTable("currency", "currency", _ISO_4217, False, _currency_names),
            EntityTable("currency code", "currency", _ISO_4217, True, _currency_codes),
        )
    },
    read_only=True,
)
_TABLES: tuple[EntityTable, ...] = tuple(ENTITY_TABLES[name] for name in ENTITY_TABLES)


@lru_cache(maxsize=16)
def _index(table: str) -> Index:
    """The table named ``table``, loaded once."""
    return long_lived(ENTITY_TABLES[table].load())


@text_cache(4096)
def entities_named(name: str) -> frozenset[Entity]:
    """Every entity ``name`` names, in any table ("Georgia": a country and a US state; empty
    for a name no table holds)."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        return frozenset()
    # EntityTable.keys of every table, its two look-up forms (names, codes) computed once
    named, code = _name_form(name), _code_form(name)
    out = []
    for t in _TABLES:
        form = code if t.codes else named
        if form:
            out += [Entity(t.kind, k) for k in _index(t.name).keys.get(form, ())]
    return frozenset(out)


def another_entity(name: str, value: str) -> bool:
    """``name`` names an entity and none that ``value`` names: "Austria" is another entity
    than "Australia", "Shangai" (a GeoNames alternate name) is Shanghai itself."""
    named = entities_named(name)
    return bool(named) and not named & entities_named(value)


@text_cache(256)
def _words(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for m in _WORD.finditer(text):
        out.append(m.group(0))
        if len(out) == MAX_TEXT_WORDS:
            break
    return tuple(out)


def _one_word(run: str) -> str:
    """A run of words as a name: trailing punctuation and a possessive cut ("Paris's")."""
    span = run.rstrip(".,'-")
    return span[:-2] if span.endswith("'s") else span


@lru_cache(maxsize=16)
def _first_words(table: str) -> frozenset[str]:
    """The first words of a name table's look-up forms: a run of a text's words names an
    entity of the table only when its first word is one of them (one look-up per word, not
    one per run), or, for a run of one word, when that word cut as a name is."""
    return long_lived(frozenset(form.split(" ", 1)[0] for form in _index(table).keys))


@text_cache(256)
def _named_in(table: str, text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The spans of ``text`` that name an entity of ``table``, each with its keys: runs of at
    most ``MAX_SPAN_WORDS`` words (names) or code-shaped tokens (codes); one linear scan."""
    t = ENTITY_TABLES[table]
    out: list[tuple[str, frozenset[str]]] = []
    if t.codes:
        seen: set[str] = set()
        for i, m in enumerate(_CODE_TOKEN.finditer(text)):
            if i == MAX_TEXT_WORDS:
                break
            code = m.group(0)
            keys = t.keys(code) if code not in seen else frozenset()
            seen.add(code)
            if keys:
                out.append((code, keys))
        return tuple(out)
    words = _words(text)
    index, none, first = _index(table).keys, frozenset[str](), _first_words(table)
    found: dict[str, frozenset[str]] = {}
    for i in range(len(words)):
        if words[i].lower() not in first and _one_word(words[i]).lower() not in first:
            continue  # no name starts with this word: no run from here names an entity
        run = ""
        for word in words[i : i + MAX_SPAN_WORDS]:
            run = f"{run} {word}" if run else word
            if len(run) > MAX_NAME_CHARS + 2:
                break  # no name is this long (and the runs only grow)
            span = _one_word(run)
            keys = found.get(span)
            if keys is None:  # t.keys(span), the table's index read once
                form = _name_form(span)
                keys = found[span] = index.get(form, none) if form else none
            if keys:
                out.append((span, keys))
    return tuple(dict.fromkeys(out))


def other_entities_named(value: str, text: str) -> tuple[str, ...]:
    """The words of ``text`` that name an entity of a kind ``value`` names, other than
    ``value``'s own ("Australia" for the country "Austria"; "Deutschland" is no other entity
    for "Germany" when a table holds both), in text order per table, at most
    :data:`MAX_OTHER_ENTITIES`; ``()`` when ``value`` is no entity."""
    mine = entities_named(value)
    if not mine:
        return ()
    kinds = {e.kind for e in mine}
    out: dict[str, None] = {}
    for t in _TABLES:
        if t.kind not in kinds:
            continue
        for span, keys in _named_in(t.name, text):
            if not any(Entity(t.kind, k) in mine for k in keys):
                out[span] = None
                if len(out) == MAX_OTHER_ENTITIES:
                    return tuple(out)
    return tuple(out)


@lru_cache(maxsize=16)
def _own(table: str) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """The table's own names, the same as it looks them up (in table order), and as a set."""
    t = ENTITY_TABLES[table]
    names = _index(table).names()
    forms = tuple(t.form(x) or "" for x in names)
    return names, forms, frozenset(forms)


class Swap(NamedTuple):
    """An entity's nearest others of the same kind, from the same table."""

    table: str
    names: tuple[str, ...]


def entity_swaps(value: str, limit: int = 8) -> Swap | None:
    """The names of the first table (in :data:`ENTITY_TABLES` order) that holds ``value`` as
    written (a name starting with a capital, a code in capitals) as one of its own names (a
    city's GeoNames name, not an alternate one: "Gold" is no city), which name other entities
    of its kind, nearest first (``rapidfuzz.fuzz.ratio`` of the names as the table looks
    them up, at most ``limit``); ``None`` for a value no table holds. What the audit swaps a
    value for."""
    from rapidfuzz import fuzz, process  # lazy: a compiled library

    value = value.strip()
    if not value[:1].isupper():
        return None
    for t in _TABLES:
        keys = t.keys(value)
        if not keys:
            continue
        names, forms, own = _own(t.name)
        if t.form(value) not in own:
            continue  # in this table only as another name of an entity
        found = process.extract(t.form(value), forms, scorer=fuzz.ratio, limit=limit * 4)
        out = [
            names[i]
            for _, _, i in found
            if not t.keys(names[i]) & keys  # another entity, not another name of this one
        ]
        if out:
            return Swap(t.name, tuple(out[:limit]))
    return None
