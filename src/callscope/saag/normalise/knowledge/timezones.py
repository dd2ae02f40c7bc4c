"""Time zones by their IANA names (the tz database through the standard library's
:mod:`zoneinfo`): "America/New_York" for "New York time", "Europe/London" for "London".

A zone name is stated when the request names its place (the name's last part, ``_`` read
as a space). Part of :mod:`callscope.saag.normalise.knowledge`; the zone list is read once,
on the first value with a ``/``."""

from __future__ import annotations

from functools import lru_cache

from callscope.saag.normalise.knowledge.base import Match, StatedText, long_lived, name_stated

TZ_DATABASE = "the IANA tz database (zoneinfo)"


@lru_cache(maxsize=1)
def zone_names() -> frozenset[str]:
    """Every IANA zone name this Python knows (``zoneinfo.available_timezones``)."""
    import zoneinfo  # lazy: only values with a "/" read the zone list

    return long_lived(frozenset(zoneinfo.available_timezones()))


class Timezones:
    """An IANA zone whose place the request names."""

    name = "timezones"

    def match(self, value: str | int | float, text: StatedText) -> Match | None:
        if not isinstance(value, str) or "/" not in value or " " in value or len(value) > 40:
            return None
        if value not in zone_names():
            return None
        place = value.rsplit("/", 1)[1].replace("_", " ")
        if name_stated(place, text):
            return Match(place, value, TZ_DATABASE)
        return None


TIMEZONES = Timezones()
