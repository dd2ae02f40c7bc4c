"""What a parameter's description says: formats, described values, URL templates.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re
from typing import Any

from callscope.core.memo import text_cache
from callscope.saag.normalise.words import norm_words, stems

_COMMA_FORMAT = re.compile(r"[A-Za-z][\w.]*, [A-Za-z][\w.]*")


def comma_format(schema: dict[str, Any] | None) -> bool:
    """The parameter's description shows a comma-separated format ("'City, State'", "such as
    'New York, NY'")."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    return isinstance(desc, str) and _COMMA_FORMAT.search(desc[:4000]) is not None


_STOP = frozenset(
    {"a", "an", "the", "of", "for", "to", "and", "or", "is", "in", "service", "services"}
)


def description_words(schema: dict[str, Any] | None) -> frozenset[str]:
    """The stems of the words of the parameter's description (its format and examples)."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    return _description_stems(desc[:4000]) if isinstance(desc, str) else frozenset()


@text_cache(4096)
def _description_stems(desc: str) -> frozenset[str]:
    return stems(norm_words(desc))


_DESCRIBED = re.compile(
    r"(?<![\w.])['\"]?([\w.-]{1,20})['\"]?\s*(?:for|represents|means|corresponds\s+to|=|:|is)\s+"
    r"((?:an?\s+|the\s+)?[\w-]+(?:\s+[\w-]+){0,3})",
    re.I,
)


@text_cache(4096)
def _described_table(desc: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    table: dict[str, list[tuple[str, ...]]] = {}
    pos = 0
    while (m := _DESCRIBED.search(desc, pos)) is not None:
        words = [w for w in m.group(2).lower().replace("-", " ").split() if w not in _STOP]
        if words:
            table.setdefault(m.group(1).lower(), []).append(tuple(words[:3]))
        # the next scan starts at the phrase: in "Example: 1 for Bangkok" the phrase of
        # "Example" holds the pair "1 for Bangkok" (a phrase is at most four words long, so
        # every character is read at most a bounded number of times)
        pos = m.start(2) if m.start(2) > m.start() else m.end()
    return {k: tuple(v) for k, v in table.items()}


def described_phrases(value: Any, schema: dict[str, Any] | None) -> tuple[tuple[str, ...], ...]:
    """What the description says ``value`` stands for: ``1 for Bangkok``, ``'2' represents an
    ironing service``, ``2 = ironing`` -> the content words of each phrase (at most three,
    stop words dropped). One scan of the description, cached."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(desc, str) or isinstance(value, bool):
        return ()
    return _described_table(desc[:4000]).get(str(value).strip().lower(), ())


#: a ``key:`` of a search syntax the description shows ("'track:SongName artist:ArtistName'",
#: "'brand:Nike' or 'country:USA'"): a word directly before a colon and a non-space
_SYNTAX_KEY = re.compile(r"(?<![\w:/])([A-Za-z_][\w-]{0,30}):(?=[^\s/:])")


def description_keys(schema: dict[str, Any] | None) -> frozenset[str]:
    """The ``key:`` words of a search syntax the parameter's description shows, lower case
    ("track", "artist" for "in the format 'track:SongName artist:ArtistName'")."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(desc, str) or ":" not in desc:
        return frozenset()
    return _keys(desc[:4000])


@text_cache(4096)
def _keys(desc: str) -> frozenset[str]:
    return frozenset(k.lower() for k in _SYNTAX_KEY.findall(desc))


def key_value_fills(value: str, keys: frozenset[str]) -> list[str] | None:
    """What ``value`` gives each key of a ``key:value`` search syntax whose keys are all in
    ``keys`` ("track:Dil Nu artist:Maninder Buttar" -> ``["Dil Nu", "Maninder Buttar"]``), or
    ``None`` when it is not such a value (no key, a key outside ``keys``, text before the
    first key, an empty fill). One regex scan."""
    if not keys or len(value) > MAX_TEMPLATE_VALUE:
        return None
    found = list(_SYNTAX_KEY.finditer(value))
    if not found or found[0].start() != 0:
        return None
    fills = []
    for i, m in enumerate(found):
        if m.group(1).lower() not in keys:
            return None
        end = found[i + 1].start() if i + 1 < len(found) else len(value)
        fill = value[m.end() : end].strip().strip("'\"").strip()
        if not fill:
            return None
        fills.append(fill)
    return fills


_PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w-]{0,40}\}|<[A-Za-z_][\w-]{0,40}>")
#: template matching reads at most this many characters of a value (bounded cost)
MAX_TEMPLATE_VALUE = 2048


def description_templates(schema: dict[str, Any] | None) -> tuple[tuple[str, ...], ...]:
    """The templates the parameter's description shows, each a whitespace-free token with
    ``{name}`` or ``<name>`` placeholders ("e.g., 'https://{ip}/api/v1/nodes?fabric={fabric}'")
    as its literal parts: ``("https://", "/api/v1/nodes?fabric=", "")``. Templates with two
    adjacent placeholders or no literal text are left out (they cannot be split)."""
    desc = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(desc, str) or ("{" not in desc and "<" not in desc):
        return ()
    return _templates(desc[:4000])


@text_cache(4096)
def _templates(desc: str) -> tuple[tuple[str, ...], ...]:
    out = []
    for token in desc.split():
        token = token.strip("'\"`()[],;:.")
        parts = tuple(_PLACEHOLDER.split(token))
        if len(parts) >= 2 and any(parts) and all(parts[1:-1]):
            out.append(parts)
    return tuple(out)


def template_fills(value: str, parts: tuple[str, ...]) -> list[str] | None:
    """What ``value`` puts in each placeholder of the template ``parts``
    (:func:`description_templates`), or ``None`` when it does not follow the template. Each
    literal is taken at its first occurrence after the previous one (one left-to-right scan);
    every fill is non-empty."""
    first, *middle, last = parts
    if len(value) > MAX_TEMPLATE_VALUE or not value.startswith(first) or not value.endswith(last):
        return None
    pos, end = len(first), len(value) - len(last)
    fills = []
    for literal in middle:
        i = value.find(literal, pos + 1, end)
        if i < 0:
            return None
        fills.append(value[pos:i])
        pos = i + len(literal)
    if end <= pos:
        return None
    fills.append(value[pos:end])
    return fills


#: one option of a description that is only a list of choices: a word or a quoted value
_OPTION = r"(?:'[^'\n]{1,40}'|\"[^\"\n]{1,40}\"|[\w-]{1,40})"
#: a description that is a list of choices, after an optional label ("Temperature unit:"),
#: "either"/"one of": "celsius or fahrenheit", "Unit: 'c', 'f' or 'k'"; possessive, linear
_OPTIONS = re.compile(
    rf"(?:[\w ()-]{{0,60}}?[:,(-]\s*+)?(?:(?:either|one of|must be)\s++)?+"
    rf"({_OPTION}(?:(?:\s*+,\s*+(?:or\s++)?+|\s*+/\s*+|\s++or\s++){_OPTION}){{1,19}})"
    r"\s*+\)?\.?",
    re.IGNORECASE,
)
_OPTION_ITEM = re.compile(_OPTION)
#: words an option list is joined with, never options themselves
_JOINERS = frozenset({"or"})


def described_options(schema: dict[str, Any] | None) -> tuple[str, ...]:
    """The closed set of values a parameter's schema offers: its ``enum`` members (as text),
    or the choices of a description that is nothing but a list of them ("celsius or
    fahrenheit", "Temperature unit: 'c' or 'f'"; quotes removed, lower case); ``()`` when
    the parameter is open (a description that says more than the list, "The city or town
    name", offers no closed set). At most 20 options; the description's first 200
    characters are read.

    >>> described_options({"type": "string", "description": "celsius or fahrenheit"})
    ('celsius', 'fahrenheit')
    >>> described_options({"description": "The city or town name"})
    ()
    >>> described_options({"enum": ["c", "f"]})
    ('c', 'f')
    """
    if not isinstance(schema, dict):
        return ()
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return tuple(str(m).lower() for m in enum[:20] if isinstance(m, str | int | float))
    desc = schema.get("description")
    if not isinstance(desc, str) or len(desc) > 200:
        return ()
    return _options(desc.strip())


@text_cache(4096)
def _options(desc: str) -> tuple[str, ...]:
    m = _OPTIONS.fullmatch(desc)
    if m is None:
        return ()
    joined = m.group(1).lower()
    if " or " not in joined and "/" not in joined and "one of" not in desc.lower():
        return ()  # "Paris, France": an example, not a choice
    items = (i.strip("'\"").strip().lower() for i in _OPTION_ITEM.findall(m.group(1)))
    return tuple(i for i in items if i and i not in _JOINERS)
