"""A parameter's ``enum`` as the registry grounding reads it (:class:`EnumIndex`): read once
for all the leaves of one argument, whatever their number, and the members a request states.

Stage 3 asks two things of an ``enum`` for every leaf of a value
(:meth:`callscope.saag.groundings.RegistryGrounding._accept_leaf`): is the leaf a member (up to
form, :func:`~callscope.saag.value_rules.enum_member`), and which members does the request
state (rule 8, ``enum``: a member is accepted when the request states no other one; rule 9,
``default``, likewise). Asked of the enum's list for each leaf, each question walked the whole
list: an array of 4,000 members of a 40,000-member enum took 13.4 s (every leaf's look-up
weighed, hashed and copied the list). An :class:`EnumIndex` is built once per argument and
answers the first in constant time, the second once per request.

Which members a request states is each member tried by the request rules
(:meth:`~callscope.saag.groundings.RegistryGrounding._stated`, about 20-40 us a member: 12.6 s
for 300,000 members). For an enum of more than :data:`PREFILTER_MIN` members, a member made
only of ASCII letters, digits and spaces is tried only when it may be stated
(:func:`may_be_stated`, about 1-2 us): a test that no rule can pass otherwise, so the members
found are the same (``tests/test_hostile_registries.py`` compares the two on members and
requests of every rule). Every other member is tried as before.

The members a request states are kept per request (:attr:`Evidence.member_cache
<callscope.saag.evidence.Evidence.member_cache>`) for enums of at most
:data:`MEMBER_CACHE_CHARS` characters only, at most :data:`MEMBER_CACHE_ENTRIES` of them per
request: an Evidence is kept per request text, and many requests of one text with distinct
long enums grew it without end (28 requests with enums of 40,000 members: +82 MB).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from callscope.core.memo import text_size
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.evidence import Evidence
from callscope.saag.value_rules import _enum_strings, equal_values

#: an enum of at most this many characters (:func:`~callscope.core.memo.text_size`: a
#: number counts one) has the members a request states kept per request (BFCL's longest:
#: 29 members, 225 characters)
MEMBER_CACHE_CHARS = 1024
#: at most this many enums per request are kept so (:attr:`Evidence.member_cache`)
MEMBER_CACHE_ENTRIES = 32
#: an enum of more members than this has its plain members tried only when they may be
#: stated (:func:`may_be_stated`); a smaller one has every member tried
PREFILTER_MIN = 64

#: a member :func:`may_be_stated` judges: ASCII letters, digits and spaces only
_PLAIN = re.compile(r"[A-Za-z0-9 ]+")
_DIGIT = re.compile(r"[0-9]")
#: a flat note ("Eb"), the one musical note a plain member can hold
#: (:func:`~callscope.saag.normalise.spelled_notes`)
_FLAT_NOTE = re.compile(r"(?<![A-Za-z])[A-G]b(?![A-Za-z])")
_RUN = re.compile(r"\w+")
#: :func:`~callscope.saag.normalise.stem` itself, not its memo: 300,000 members' words
#: would push every other word out of it
_stem = getattr(n.stem, "__wrapped__", n.stem)
#: :meth:`EnumIndex.has`'s string index of an enum with an unhashable member (none: each
#: member is compared)
_UNHASHABLE: tuple[frozenset[str], tuple[Any, ...]] = (frozenset(), ())


class EnumIndex:
    """One parameter's ``enum`` list, read once for all the leaves of an argument (the items
    of an array share their schema): ``members`` (a tuple), membership up to form
    (:meth:`has`) and the members a request states (:meth:`stated`)."""

    __slots__ = ("members", "_exact", "_strings", "_numbers", "_last")

    def __init__(self, members: tuple[Any, ...]) -> None:
        self.members = members
        self._exact: frozenset[str] | None = None
        self._strings: tuple[frozenset[str], tuple[Any, ...]] | None = None
        self._numbers: tuple[g.NumberIndex, tuple[Any, ...]] | None = None
        self._last: tuple[Any, Evidence, tuple[Any, ...]] | None = None

    def has(self, value: Any) -> bool:
        """``value`` is a member up to form: the same answer as
        :func:`~callscope.saag.value_rules.enum_member` over :attr:`members`, each index
        built on first use."""
        cls = type(value)
        if cls is str:
            if len(self.members) > PREFILTER_MIN:
                if self._exact is None:
                    self._exact = frozenset(m for m in self.members if type(m) is str)
                if value in self._exact:  # (equal strings: equal word forms)
                    return True
            if self._strings is None:
                try:
                    self._strings = _enum_strings(self.members)
                except TypeError:  # an unhashable member (a list or an object in the enum)
                    self._strings = _UNHASHABLE
            if self._strings is _UNHASHABLE:
                return any(equal_values(value, m) for m in self.members)
            words, others = self._strings
            return n.norm_words(value) in words or any(value == m for m in others)
        if cls is int or cls is float:
            if self._numbers is None:
                self._numbers = _number_index(self.members)
            numbers, others = self._numbers
            return numbers.contains(value) or any(value == m for m in others)
        return any(equal_values(value, m) for m in self.members)

    def stated(
        self, disabled: frozenset[str], ev: Evidence, test: Callable[[Any, Evidence], bool]
    ) -> tuple[Any, ...]:
        """The members ``test`` (the request rules, ``disabled`` off) finds stated in
        ``ev``: once per request for this index, kept in :attr:`Evidence.member_cache` for a
        short enum (module doc)."""
        last = self._last
        if last is not None and last[0] == disabled and last[1] is ev:
            return last[2]
        key: Any = None
        if (
            len(self.members) <= MEMBER_CACHE_CHARS
            and text_size(self.members) <= MEMBER_CACHE_CHARS
        ):
            key = (disabled, self.members)
            try:
                hit = ev.member_cache.get(key)
            except TypeError:  # an unhashable member: not kept
                key, hit = None, None
            if hit is not None:
                self._last = (disabled, ev, hit)
                return hit
        members = self.members
        if len(members) > PREFILTER_MIN:
            check = _prefilter(ev)
            found = tuple(
                m
                for m in members
                if (type(m) is not str or _PLAIN.fullmatch(m) is None or check(m)) and test(m, ev)
            )
        else:
            found = tuple(m for m in members if test(m, ev))
        if key is not None and len(ev.member_cache) < MEMBER_CACHE_ENTRIES:
            ev.member_cache[key] = found
        self._last = (disabled, ev, found)
        return found


def enum_index(schema: dict[str, Any] | None) -> EnumIndex | None:
    """The :class:`EnumIndex` of the parameter ``schema``'s ``enum`` (``None`` when it has
    none, or an empty one)."""
    enum = schema.get("enum") if isinstance(schema, dict) else None
    if not isinstance(enum, list) or not enum:
        return None
    return EnumIndex(tuple(enum))


def _number_index(members: tuple[Any, ...]) -> tuple[g.NumberIndex, tuple[Any, ...]]:
    """What a number can equal in ``members`` (:func:`~callscope.saag.value_rules.equal_values`):
    its numbers and the numbers its strings hold, as one index, and the members that are
    neither (compared with ``==``)."""
    numbers: list[int | float] = []
    others: list[Any] = []
    for m in members:
        if g.is_number(m):
            numbers.append(m)
        elif isinstance(m, str):
            num = n.parse_number_string(m)
            if num is not None:
                numbers.append(num)
        else:
            others.append(m)
    return g.NumberIndex(tuple(numbers)), tuple(others)


def _prefilter(ev: Evidence) -> Callable[[str], bool]:
    """:func:`may_be_stated` over ``ev``, what it reads of the request read once."""
    runs = frozenset(_RUN.findall(g._lower(ev.query)))  # (the text string_in_query reads)
    stems = ev.stems
    numbers = bool(ev.numbers)
    dates = bool(ev.dates[0] or ev.dates[1] or ev.times or ev.month_years)
    units = bool(ev.units)
    return lambda m: may_be_stated(m, runs, stems, numbers, dates, units)


def may_be_stated(
    member: str,
    runs: frozenset[str],
    stems: frozenset[str],
    numbers: bool,
    dates: bool,
    units: bool,
) -> bool:
    """False only when no request rule (``stated`` to ``unit``, the rules
    :meth:`~callscope.saag.groundings.RegistryGrounding._stated` tries without ``knowledge``)
    can find the plain ``member`` (ASCII letters, digits and spaces) stated by a request with
    these word ``runs`` (``\\w+`` of its lower case), ``stems`` (:attr:`Evidence.stems`),
    and numbers, dates or times, units (whether it states any). For such a member:

    * ``stated`` (the member at word boundaries of the request) needs each of its words to be
      a run; words in another order or inflection (``normalised``) the stem of each to be
      one of ``stems``, and the member's words as words of the request too;
    * a flat note ("Eb") is spelled out ("E flat") and read again: always tried;
    * a number string (``normalised``) needs a number in the request, a date or time the
      request's dates or times (and to read as one); a unit (``unit``) has no digit and
      needs a unit in the request;
    * the math form (``compact``) of a plain member is alphanumeric: never a rule.
    """
    words = member.lower().split()
    if not words:
        return False  # a blank member is never stated
    if all(w in runs for w in words) or all(_stem(w) in stems for w in words):
        return True
    if _FLAT_NOTE.search(member) is not None:
        return True
    if _DIGIT.search(member) is None:
        return units
    if numbers and member.strip().isdigit():
        return True
    return dates and (n.may_state_date_time(member) or n.may_state_month_year(member))
