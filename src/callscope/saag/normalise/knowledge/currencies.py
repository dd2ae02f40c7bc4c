"""Currencies by their ISO 4217 codes and names (pycountry).

"CAD" for "Canadian dollars", "EUR" for "150 Euros", "USD" for "US dollars"; a currency's
name for its code written as a code ("Canadian Dollar" for "CAD").

Part of :mod:`callscope.saag.normalise.knowledge`; pycountry is imported on the first
three-letter value or currency-like name."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from callscope.saag.normalise.knowledge.base import Match, StatedText, name_stated, upper_tokens

ISO_4217 = "pycountry (ISO 4217)"


@lru_cache(maxsize=1024)
def currency_by_code(code: str) -> Any:
    """The currency with ISO 4217 code ``code`` (in capitals), else ``None``."""
    if not (len(code) == 3 and code.isascii() and code.isalpha() and code.isupper()):
        return None
    import pycountry  # lazy: only three-letter values load the ISO tables

    return pycountry.currencies.get(alpha_3=code.upper())


@lru_cache(maxsize=1)
def _by_name() -> dict[str, Any]:
    import pycountry  # lazy: see currency_by_code

    return {c.name.lower(): c for c in pycountry.currencies}


@lru_cache(maxsize=4096)
def currency_by_name(name: str) -> Any:
    """The currency named ``name`` (ISO 4217's English name, any case), else ``None``."""
    if len(name) > 40 or len(name) < 3:
        return None
    return _by_name().get(name.lower())


class Currencies:
    """A currency code whose name the request states (up to inflection), or a currency's
    name whose code the request writes."""

    name = "currencies"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or not value[:1].isalpha():
            return None
        if len(value) == 3:
            cur = currency_by_code(value)
            if cur is not None and name_stated(cur.name, text):
                return Match(cur.name, value, ISO_4217)
            return None
        cur = currency_by_name(value)
        if cur is not None and cur.alpha_3 in upper_tokens(text.query):
            return Match(cur.alpha_3, value, ISO_4217)
        return None


CURRENCIES = Currencies()
