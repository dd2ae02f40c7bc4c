"""Currencies by their ISO 4217 codes, English names and symbols (Babel's CLDR data, with
pycountry's ISO 4217 names).

"CAD" for "Canadian dollars", "EUR" for "150 Euros" or "€150", "GBP" for "British pounds"
or "£20", "USD" for "US dollars", "United States Dollar" (a national code begins with its
country's ISO 3166 code) or "$5"; a currency's name for its code written as a code
("Canadian Dollar" for "CAD"). A symbol counts only next to a number ("$5", "5 €"); "$" is
the US dollar (CLDR's English symbol), "CA$" the Canadian one.

Part of :mod:`callscope.saag.normalise.knowledge`; Babel (BSD-3-Clause, the Unicode CLDR's
locale data) is imported on the first three-letter value or currency-like name (~20 ms)."""

from __future__ import annotations

import re
from functools import lru_cache

from callscope.core.memo import text_cache
from callscope.saag.normalise.knowledge.base import (
    Match,
    StatedText,
    long_lived,
    name_stated,
    upper_tokens,
)
from callscope.saag.normalise.knowledge.countries import country_names

ISO_4217 = "Babel (CLDR) / pycountry (ISO 4217)"
_CODE = re.compile(r"[A-Z]{3}|[a-z]{3}")


@text_cache(1024)
def currency_names(code: str) -> tuple[str, ...]:
    """The English names of the currency ``code`` (CLDR's singular and plural, ISO 4217's),
    ``()`` for no currency."""
    import pycountry  # lazy: see above
    from babel.numbers import get_currency_name  # lazy: only currency-shaped values

    code = code.upper()
    iso = pycountry.currencies.get(alpha_3=code)
    names = {get_currency_name(code, locale="en"), get_currency_name(code, count=2, locale="en")}
    if iso is not None:
        names.add(iso.name)
    names.discard(code)  # Babel answers an unknown code with the code itself
    country = pycountry.countries.get(alpha_2=code[:2])
    if names and country is not None:  # ISO 4217: a national code starts with its country's
        unit = min(names).split()[-1]  # "United States Dollar" for USD
        names |= {f"{name} {unit}" for name in country_names(country)}
    return tuple(sorted(names)) if (iso is not None or names) else ()


@text_cache(1024)
def currency_symbol(code: str) -> str | None:
    """CLDR's English symbol of ``code`` when it is not the code itself ("$", "€", "CA$")."""
    from babel.numbers import get_currency_symbol  # lazy: see currency_names

    symbol = str(get_currency_symbol(code.upper(), locale="en"))
    return None if symbol == code.upper() else symbol


@lru_cache(maxsize=1)
def _by_name() -> dict[str, str]:
    from babel import Locale  # lazy: see currency_names

    out: dict[str, str] = {}
    for code in Locale("en").currencies:
        for name in currency_names(code):
            out.setdefault(name.lower(), code)
    return long_lived(out)


def _symbol_stated(symbol: str, query: str) -> bool:
    """``symbol`` next to a number in ``query`` ("$5", "5 $", "€ 150")."""
    esc = re.escape(symbol)
    pattern = rf"(?<![A-Za-z$]){esc}\s?\d|\d\s?{esc}(?![A-Za-z])"
    return re.search(pattern, query[:4096]) is not None


class Currencies:
    """A currency code whose name the request states (up to inflection) or whose symbol it
    writes next to a number, or a currency's name whose code the request writes."""

    name = "currencies"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or not value[:1].isalpha():
            return None
        if len(value) == 3 and _CODE.fullmatch(value):
            names = currency_names(value)
            for name in names:
                if name_stated(name, text):
                    return Match(name, value, ISO_4217)
            symbol = currency_symbol(value) if names else None
            if symbol is not None and _symbol_stated(symbol, text.query):
                return Match(symbol, value, ISO_4217)
            return None
        if len(value) > 40:
            return None
        code = _by_name().get(value.lower())
        if code is not None and code in upper_tokens(text.query):
            return Match(code, value, ISO_4217)
        return None


CURRENCIES = Currencies()
