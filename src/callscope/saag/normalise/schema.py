"""A parameter's default and enum, read from its JSON schema and description.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re
from typing import Any

from callscope.core.memo import text_cache
from callscope.saag.normalise.numbers import as_number

_DEFAULT_IN_DESCRIPTION = re.compile(
    r"default(?:s|ed)?(?:\s+value)?(\s+(?:is|to|of|will\s+be|being)|\s*[:=])?\s*"
    r"(?:'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`|(-?\d+(?:\.\d+)?)(?!\w|\.\d)"
    r"|([A-Za-z][\w.-]{0,40}))",
    re.I,
)
_NOT_A_DEFAULT = frozenset(
    {"if", "the", "a", "an", "is", "to", "value", "none", "null", "not", "when", "and", "or"}
)


def schema_defaults(schema: dict[str, Any] | None) -> tuple[Any, ...]:
    """The parameter's defaults: ``schema["default"]`` when present, then every value a
    description states as the default ("Default is 'units'", "defaults to 9.81", "(default:
    celsius)"). Numbers in descriptions are returned as numbers."""
    if not isinstance(schema, dict):
        return ()
    desc = schema.get("description")
    found = _described_defaults(desc) if isinstance(desc, str) else ()
    return (schema["default"], *found) if "default" in schema else found


@text_cache(4096)
def _described_defaults(desc: str) -> tuple[Any, ...]:
    """The defaults a description states (:func:`schema_defaults`), read once per description."""
    out: list[Any] = []
    if "default" in desc.lower():
        for m in _DEFAULT_IN_DESCRIPTION.finditer(desc[:4000]):
            connector, number, word = m.group(1), m.group(5), m.group(6)
            quoted = m.group(2) or m.group(3) or m.group(4)
            if quoted is not None:
                out.append(quoted)
            elif number is not None:
                out.append(as_number(number))
            elif word is not None and connector and word.lower() not in _NOT_A_DEFAULT:
                out.append(word.rstrip("."))  # a bare word only after "is" / "to" / ":" ...
    return tuple(out)


def schema_enum(schema: dict[str, Any] | None) -> tuple[Any, ...]:
    """The parameter's ``enum`` members (``()`` when it has none)."""
    if not isinstance(schema, dict):
        return ()
    enum = schema.get("enum")
    return tuple(enum) if isinstance(enum, list) else ()
