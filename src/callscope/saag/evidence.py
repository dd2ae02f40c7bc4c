"""The text one call may be grounded in: the request and the conversation before it, with each
derived form (words, numbers, units, dates...) computed once per request and shared by every
call scored against it (:class:`Evidence`), plus the bounded memo of per-scalar findings.

Stage 3's grounding modes (:mod:`callscope.saag.groundings`) read it; the cascade builds it
once per call (:meth:`Evidence.of`, cached per request)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from callscope.core.memo import text_cache
from callscope.saag import grounding as g
from callscope.saag import normalise as n


class Evidence:
    """The text one call may be grounded in, each derived form computed once per call:
    ``query`` (the request) and ``context`` (what the conversation said before it)."""

    def __init__(self, query: str, context: Iterable[str] = ()) -> None:
        self.query = query
        self.context = tuple(c for c in context if c)
        #: (rules off, enum) -> the members the request states, for short enums only and at
        #: most a few of them (:meth:`callscope.saag.enums.EnumIndex.stated`)
        self.member_cache: dict[Any, tuple[Any, ...]] = {}
        #: (mode's rule key, :func:`scalar_key` of a value) -> what a mode found for that
        #: scalar in this text (a verdict, a reason): the attempts of one case repeat most of
        #: their values; at most :data:`MEMO_SIZE` entries, values that depend on nothing else
        self.memo: dict[Any, Any] = {}
        #: :func:`scalar_key` of a value -> the evidence line of the knowledge match that
        #: grounded it ("'Canadian Dollar' → CAD by pycountry (ISO 4217)"), at most
        #: :data:`MEMO_SIZE` entries
        self.notes: dict[Any, str] = {}

    @staticmethod
    def of(query: str, context: Iterable[str] = ()) -> Evidence:
        """The :class:`Evidence` of ``query`` and ``context``, shared by every call scored
        against the same text (the attempts and modes of one case): derived forms are then
        computed once per request, not once per call."""
        if not context:
            return _evidence(query, ())
        return _evidence(query, tuple(c for c in context if c))

    def remember(self, key: Any, value: Any) -> None:
        """Keep ``value`` in :attr:`memo` under ``key`` unless it is full (bounded memory)."""
        if len(self.memo) < MEMO_SIZE:
            self.memo[key] = value

    @cached_property
    def all_text(self) -> str:
        return "\n".join((*self.context, self.query)) if self.context else self.query

    @cached_property
    def words(self) -> str:
        return n.norm_words(self.query)

    @cached_property
    def compact(self) -> str:
        return n.compact(self.query)

    @cached_property
    def stems(self) -> frozenset[str]:
        return n.stems(self.words)

    @cached_property
    def stemmed(self) -> str:
        return n.stem_words(self.query)

    @cached_property
    def numbers(self) -> tuple[int | float, ...]:
        """The numbers the request states (:func:`~callscope.saag.normalise.number_evidence`),
        and the hour of each time of day it states on the 24-hour clock ("11 PM" states 23)."""
        found = n.number_evidence(self.query)
        hours = tuple(h for h, minute in self.times if minute == 0 and h not in found)
        return found + hours if hours else found

    @cached_property
    def number_index(self) -> g.NumberIndex:
        return g.NumberIndex(self.numbers)

    @cached_property
    def free_numbers(self) -> tuple[int | float, ...]:
        """The numbers the request states outside its full dates and times of day
        (:func:`~callscope.saag.normalise.without_dates`: not the 6 and 2024 of "March 6,
        2024", nor the 3 of "3pm"; "four people on April 23" states 4): the numbers that may
        contradict a parameter's numeric default."""
        if not self.numbers:
            return ()
        if n.without_dates(self.query) == self.query:
            return self.numbers
        return n.number_evidence(self.query, blank=n.without_dates)

    @cached_property
    def span_index(self) -> g.NumberIndex:
        """The lengths of the periods the request states between two of its dates or times
        (:func:`~callscope.saag.normalise.spans`): read only for a number nothing else
        states."""
        return g.NumberIndex(n.spans(*self.written_dates, self.times))

    @cached_property
    def units(self) -> frozenset[str]:
        return n.unit_groups_stated(self.query)

    @cached_property
    def written_dates(self) -> tuple[frozenset[n.Date], frozenset[int]]:
        """The dates and years the request writes (:func:`~callscope.saag.normalise.date_evidence`)."""
        return n.date_evidence(self.query)

    @cached_property
    def dates(self) -> tuple[frozenset[n.Date], frozenset[int]]:
        """:attr:`written_dates` and the dates the request states relative to them."""
        dates, years = self.written_dates
        return dates | n.relative_dates(self.query, dates, self.month_years), years

    @cached_property
    def month_years(self) -> frozenset[tuple[int, int]]:
        return n.month_year_evidence(self.query)

    @cached_property
    def times(self) -> frozenset[tuple[int, int]]:
        return n.time_evidence(self.query)

    def dates_state(self, value: str) -> bool:
        """The request states the date, time or month of a year ``value`` names
        (:func:`~callscope.saag.normalise.date_time_stated`,
        :func:`~callscope.saag.normalise.month_year_stated`). The value is read first: one
        that names none (``may_state_...``) is stated by no text, and the request's dates and
        times are then not read."""
        return (
            n.may_state_date_time(value) and n.date_time_stated(value, *self.dates, self.times)
        ) or (
            n.may_state_month_year(value)
            and n.month_year_stated(value, self.month_years, self.dates[0])
        )

    @cached_property
    def context_evidence(self) -> Evidence | None:
        return Evidence("\n".join(self.context)) if self.context else None


#: at most this many scalars are remembered per :class:`Evidence` (see :attr:`Evidence.memo`)
MEMO_SIZE = 512
#: strings longer than this are not remembered (the memo stays small however long the values)
MEMO_MAX_CHARS = 256


def scalar_key(value: Any) -> tuple[Any, ...] | None:
    """A key that only equal scalars of one exact type share (``-0.0`` apart from ``0.0``):
    what a mode finds for such a value depends on the value alone. ``None`` (not remembered)
    for containers, ``bool``, ``None``, subclasses, long strings and huge integers."""
    cls = type(value)
    if cls is str:
        return (str, value) if len(value) <= MEMO_MAX_CHARS else None
    if cls is int:
        return (int, value) if -(2**64) < value < 2**64 else None
    if cls is float:
        return (float, value, math.copysign(1.0, value)) if value == 0 else (float, value)
    return None


@text_cache(g.REQUEST_CACHE_SIZE)
def _evidence(query: str, context: tuple[str, ...]) -> Evidence:
    return Evidence(query, context)
