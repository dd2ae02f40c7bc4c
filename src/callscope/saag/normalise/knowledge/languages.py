"""Languages by their ISO 639 codes (pycountry): "fr" for "French", "en-US" for "English".

Only code -> name: a two- or three-letter value whose language the request names. The
other way round (a language name for a code the request writes) is left out on purpose:
two-letter codes are common English words ("in", "it", "as", "be").

Part of :mod:`callscope.saag.normalise.knowledge`; pycountry is imported on the first
value shaped like a language code."""

from __future__ import annotations

import re
from typing import Any

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import Match, StatedText, name_stated

ISO_639 = "pycountry (ISO 639)"
#: a language code in small letters, optionally with a region in capitals ("fr", "fra",
#: "en-US", "pt_BR"); "Ita" is a cut word, not Italian
_CODE = re.compile(r"([a-z]{2,3})(?:[-_]([A-Z]{2}))?")


@text_cache(1024)
def language_by_code(code: str) -> Any:
    """The language with ISO 639-1 (two letters) or 639-2/3 (three) code ``code``, else
    ``None``."""
    import pycountry  # lazy: only values shaped like a language code load the ISO tables

    key = "alpha_2" if len(code) == 2 else "alpha_3"
    return pycountry.languages.get(**{key: code.lower()})


def language_names(record: Any) -> tuple[str, ...]:
    """The English names of a language ("Spanish; Castilian" is two)."""
    names = [x.strip() for x in str(record.name).split(";")]
    common = getattr(record, "common_name", None)
    if common:
        names.append(common)
    return tuple(x for x in names if x)


class Languages:
    """A language code (with an optional region) whose language the request names."""

    name = "languages"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or len(value) > 6:
            return None
        m = _CODE.fullmatch(value)
        if m is None:
            return None
        lang = language_by_code(m.group(1))
        if lang is None:
            return None
        for name in language_names(lang):
            if name_stated(name, text):
                return Match(name, value, ISO_639)
        return None


LANGUAGES = Languages()
