"""Grounding modes: how stage 3 decides that an argument value is grounded.

One read-only registry, :data:`GROUNDINGS` (name -> factory of a :class:`Grounding`; a
:class:`~callscope.core.registry.Registry`, extended by entry points in the
``callscope.groundings`` group), read by every command that runs the cascade
(``--grounding NAME``; ``grounding = "NAME"`` in an experiment file):

* ``lexical``: the SAAG paper's definition exactly (section 2.3, eqs. 6-9): a value is
  grounded when it occurs verbatim in the query (:func:`callscope.saag.grounding.exact_match`);
  its h(v) is :func:`callscope.saag.grounding.hallucination`. Kept so the paper's tables can
  be reproduced.
* ``registry`` (the default): beyond the paper. A value outside the parameter's ``enum`` is
  never grounded (the registry itself rules it out). Otherwise a value is grounded when, in
  this order,

  1. ``stated``: the paper's exact match in the request;
  2. ``normalised``: the request states it after the rules of :mod:`callscope.saag.normalise`
     (words, word order and inflection, math notation, numbers in words / percent /
     fractions / scale words / durations, a number string as a number, dates and times in
     any format, also relative to a date the request states, a month of a year ("04-2022"
     for "April 2022") and its first day);
  3. ``unit``: the value names a unit the request states in another spelling ("km" for
     "kilometers"; "Fahrenheit" is *not* stated by "Celsius");
  4. ``knowledge``: a library links the value to words of the request
     (:mod:`callscope.saag.normalise.knowledge`: "CAD" for "Canadian dollars" and "JP" for
     "Japan" by pycountry, "LAX" for "Los Angeles airport" and "California" for "San
     Francisco" by airportsdata, "America/New_York" for "New York" by the tz database,
     "0.05" for "50mH" by pint, 0 for "started from rest" by callscope's phrase table,
     "Chicago" for "Chcicago" by RapidFuzz, "ssn" for "social security numbers"); the match
     is the value's evidence (:attr:`ArgVerdict.note`).
     The words come from the request, never from the value alone: "LAX" for a request
     about Boston stays flagged;
  5. ``context``: the conversation before the request states it (earlier user turns, tool
     results), by rules 1-4;
  6. ``format``: the request states the leading part and the parameter's description shows
     the format that completes it ("Berkeley" -> "Berkeley, CA" for ``'City, State'``;
     "track:Friends artist:Marshmello" for a description showing the ``key:value`` syntax
     ``'track:SongName artist:ArtistName'``, every field stated), or the value follows a
     template the description shows with every placeholder filled by a stated value
     ("https://192.0.2.7/api/nodes" for ``'https://{ip}/api/nodes'``); an array's items
     without a description are read with the array's;
  7. ``described``: the description maps the value to words the request states ("1 for
     Bangkok", also inside "Example: 1 for Bangkok, 2 for Chiang Mai"; up to inflection);
  8. ``enum``: the value is a member of the parameter's ``enum`` that the request names as
     the start of a longer word ("postgres" for "PostgreSQL"), or a member and the request
     states no other member;
  9. ``default``: the value is the parameter's default (schema ``default`` or the
     description's "defaults to ...") and the request does not state a different one: no
     other enum member, and for numbers no number of the request outside its dates and
     times (:attr:`Evidence.free_numbers`), nor one in words just before a word of the
     parameter's name ("three rooms" for ``number_of_rooms``), that no other argument of
     the call uses (a percentage is used by its fraction).

  A blank string (``""``) for a parameter the schema does not require is how a caller
  leaves it out (BFCL's answers write ``""`` for "may be omitted"): assumed, like ``None``,
  neither grounded nor flagged. For a required parameter it is flagged.

  A value that none of these accepts keeps the paper's h(v) over the request and context,
  except that it is always flagged: a number when the request states numbers only in words,
  and a string the request holds only as a fragment of a word (the paper's h is 0 there,
  see :data:`FRAGMENT_H`). Rules 8 and 9 keep detecting values taken from elsewhere: a
  member or default the request contradicts is still flagged.

Every accepted value carries its reason, and a value accepted through a library its
evidence line; :class:`ArgVerdict` is the verdict on one argument.
A *judge* (any callable ``(param, value, query) -> bool``, e.g. a model) may be consulted
for values the rules still flag; an accepted value then has reason ``judge``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from callscope.core.registry import Registry
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.enums import EnumIndex, enum_index
from callscope.saag.evidence import MEMO_SIZE, Evidence, scalar_key
from callscope.saag.value_rules import (  # noqa: F401 (enum_member: importable from here)
    MAX_COUNTED_HITS,
    MAX_COUNTED_WORDS,
    counted_numbers,
    enum_member,
    equal_values,
    named_in_word,
    number_stated,
    numbers_claimed,
    schema_leaves,
)

#: the reasons an accepted value may carry, from the most to the least direct
REASONS: tuple[str, ...] = (
    "stated",
    "normalised",
    "unit",
    "knowledge",
    "context",
    "format",
    "described",
    "enum",
    "default",
    "judge",
)
_RANK = {r: i for i, r in enumerate(REASONS)}

#: h of an ungrounded string the request holds only as a fragment of a word ("San Fra" in "San
#: Francisco"): the paper's h(v) is 0 there (PartialRatio 100); the registry mode flags it as a
#: soft drift with this small h instead
FRAGMENT_H = 0.05

_DIGIT = re.compile(r"\d")

#: at most this many distinct ungrounded leaves of one argument get the paper's h (a
#: PartialRatio over the whole request each); the argument is flagged either way, and the
#: leaves beyond score h = 1, as in the lexical mode (``grounding.MAX_RATIO_LEAVES``), so a
#: 10,000-element hallucinated list costs what 32 do
MAX_SCORED_LEAVES = 32

#: a judge: is ``value`` of parameter ``param`` stated or directly implied by ``query``?
Judge = Callable[[str, Any, str], bool]


@dataclass(frozen=True)
class ArgVerdict:
    """Stage 3's verdict on one argument: ``h`` its hallucination score (``None``: assumed, no
    grounding context), ``reason`` why it is grounded (``None``: not grounded), ``leaf`` the
    worst leaf (the value itself for scalars; ``None`` for a value too deep to score),
    ``note`` the evidence of a ``knowledge`` match (which library matched which words of the
    request to the value; ``None`` otherwise)."""

    h: float | None
    reason: str | None
    leaf: Any
    note: str | None = None

    @property
    def grounded(self) -> bool:
        return self.reason is not None


class Grounding(Protocol):
    """A grounding mode: the verdict on one argument value (``required``: the function's
    schema lists ``param`` as required)."""

    name: str

    def ground(
        self,
        param: str,
        value: Any,
        schema: dict[str, Any] | None,
        evidence: Evidence,
        arguments: Mapping[str, Any],
        required: bool = True,
    ) -> ArgVerdict: ...


_MISSING = object()
_SCALARS = (str, int, float)

#: the verdicts on ``None``, ``True`` and ``False``: assumed (h ``None``), not grounded
_ASSUMED = {v: ArgVerdict(None, None, v) for v in (None, True, False)}


class LexicalGrounding:
    """The SAAG paper's grounding (section 2.3, eqs. 6-9), unchanged."""

    name = "lexical"

    def ground(
        self,
        param: str,
        value: Any,
        schema: dict[str, Any] | None,
        evidence: Evidence,
        arguments: Mapping[str, Any],
        required: bool = True,
    ) -> ArgVerdict:
        if value is None or value is True or value is False:
            return _ASSUMED[value]  # no grounding context (what grounding_of finds for them)
        key = scalar_key(value)
        if key is not None:
            hit = evidence.memo.get(("lexical", key))
            if hit is not None:
                return hit  # type: ignore[no-any-return]
        matched, h, leaf = g.grounding_of(value, evidence.query)  # EM, h(v), worst leaf at once
        verdict = (
            ArgVerdict(0.0, "stated", value)
            if matched
            else ArgVerdict(h, None, leaf if h else value)
        )
        if key is not None:
            evidence.remember(("lexical", key), verdict)
        return verdict


@dataclass
class RegistryGrounding:
    """The registry-aware grounding (the default; see the module doc for its rules)."""

    name: str = "registry"
    #: rules switched off (for ablation): any of ``normalised unit knowledge context format
    #: described enum default``
    disabled: frozenset[str] = field(default_factory=frozenset)

    # ------------------------------------------------------------------ stated in a text

    def _stated(self, value: Any, ev: Evidence, knowledge: bool = True) -> str | None:
        """``stated`` / ``normalised`` / ``unit`` / ``knowledge`` (not tried when
        ``knowledge`` is false) when ``ev.query`` states the scalar (remembered per request:
        :attr:`Evidence.memo`)."""
        key = scalar_key(value)
        if key is None:
            return self._stated_in(value, ev, knowledge)
        # no rule off: None, so that the key holds atomic values only (the collector untracks it)
        off = self.disabled or None
        hit = ev.memo.get(("stated", off, knowledge, key), _MISSING)
        if hit is _MISSING:
            # the rules with knowledge are those without it, then knowledge: each answer gives
            # the other ("knowledge" is None without it; None without it leaves knowledge only)
            other = ev.memo.get(("stated", off, not knowledge, key), _MISSING)
            if other is _MISSING:
                hit = self._stated_in(value, ev, knowledge)
            elif not knowledge:
                hit = None if other == "knowledge" else other
            else:
                hit = other if other is not None else self._known(value, ev)
            ev.remember(("stated", off, knowledge, key), hit)
        return hit  # type: ignore[no-any-return]

    def _stated_in(self, value: Any, ev: Evidence, knowledge: bool = True) -> str | None:
        if g.exact_match(value, ev.query):
            return "stated"
        on = "normalised" not in self.disabled
        if g.is_number(value):
            if on and (
                number_stated(value, ev.number_index) or number_stated(value, ev.span_index)
            ):
                return "normalised"
        elif not isinstance(value, str):
            return None
        elif on:
            if n.words_state(value, ev.words):
                return "normalised"
            digits = _DIGIT.search(value) is not None
            num = n.parse_number_string(value) if digits else None
            if num is not None and number_stated(num, ev.number_index):
                return "normalised"
            c = n.compact(value)
            if len(c) >= 2 and not c.isalnum() and c in ev.compact:
                return "normalised"
            notes = n.spelled_notes(value)
            if notes is not None and n.words_state(notes, ev.words):
                return "normalised"  # "C#" for "C sharp major"
            if digits and ev.dates_state(value):
                return "normalised"
            words = n.norm_words(value).split()
            if words and all(n.stem(w) in ev.stems for w in words):
                return "normalised"  # the same words, in another order or inflection
        if "unit" not in self.disabled and not g.is_number(value):
            unit = n.unit_group(value)
            if unit is not None and unit in ev.units:
                return "unit"
        return self._known(value, ev) if knowledge else None

    def _known(self, value: Any, ev: Evidence) -> str | None:
        """``knowledge`` when a library links the scalar to the request's words (the last rule)."""
        if "knowledge" not in self.disabled:
            found = n.knowledge_match(value, ev)
            if found is not None:
                key = scalar_key(value)
                if key is not None and len(ev.notes) < MEMO_SIZE:
                    ev.notes[key] = found.note()
                return "knowledge"
        return None

    def _note(self, value: Any, ev: Evidence) -> str | None:
        """The evidence line of the knowledge match behind ``value``'s acceptance (or behind
        the stated part of a formatted value: "Los Angeles" of "Los Angeles, CA")."""
        for text in (ev, ev.context_evidence):
            if text is None or not text.notes:
                continue
            key = scalar_key(value)
            note = text.notes.get(key) if key is not None else None
            if note is None and isinstance(value, str) and "," in value:
                note = text.notes.get(scalar_key(value.split(",", 1)[0].strip()))
            if note is not None:
                return note
        return None

    def _stated_members(self, enum: EnumIndex | None, ev: Evidence) -> tuple[Any, ...]:
        """The members of ``enum`` the request states (:meth:`EnumIndex.stated`); one a library
        only links to it ("California" for "San Francisco") does not count: the user did not
        say it."""
        return () if enum is None else enum.stated(self.disabled, ev, self._stated_member)

    def _stated_member(self, member: Any, ev: Evidence) -> bool:
        return self._stated(member, ev, knowledge=False) is not None

    def _accept_leaf(
        self,
        param: str,
        value: Any,
        schema: dict[str, Any] | None,
        enum: EnumIndex | None,
        ev: Evidence,
        arguments: Mapping[str, Any],
        siblings: frozenset[Any] = frozenset(),
    ) -> str | None:
        """Why the rules accept the scalar ``value`` (``enum``: ``schema``'s :class:`EnumIndex`)."""
        member = enum is not None and enum.has(value)
        if enum and not member and "enum" not in self.disabled:
            return None  # outside the parameter's enum: the registry itself rules it out
        reason = self._stated(value, ev)
        if reason:
            return reason
        ctx = ev.context_evidence
        if ctx is not None and "context" not in self.disabled and self._stated(value, ctx):
            return "context"
        if isinstance(value, str) and "format" not in self.disabled:
            parts = [x.strip() for x in value.split(",")]
            if (
                len(parts) >= 2
                and all(parts)
                and all(len(x.split()) <= 3 for x in parts[1:])
                and n.comma_format(schema)
                and self._stated(parts[0], ev)
            ):
                return "format"
            words = n.norm_words(value).split()
            if len(words) >= 2 and "format" not in self.disabled:
                told = [n.stem(w) in ev.stems for w in words]
                fmt = n.description_words(schema)
                if (
                    told[0]
                    and 2 * sum(told) >= len(words)
                    and all(t or n.stem(w) in fmt for t, w in zip(told, words, strict=True))
                ):
                    return "format"  # stated words in the description's template
            fills = n.key_value_fills(value, n.description_keys(schema))
            if fills and all(self._stated(f, ev) for f in fills):
                return "format"  # the description's search syntax, every field stated
            for parts in n.description_templates(schema):
                fills = n.template_fills(value, parts)
                if fills and all(self._stated(f, ev) for f in fills):
                    return "format"  # the description's template, its placeholders stated
        if "described" not in self.disabled:
            for phrase in n.described_phrases(value, schema):
                if all(f" {w}" in ev.words or n.stem(w) in ev.stems for w in phrase[:2]):
                    return "described"
        if member and "enum" not in self.disabled and named_in_word(value, ev.words):
            return "enum"  # "postgres" of "PostgreSQL": the request names this member
        others_stated = [
            m
            for m in self._stated_members(enum, ev)
            if not equal_values(value, m)
            and not (isinstance(m, str | int | float) and m in siblings)
        ]
        if member and not others_stated and "enum" not in self.disabled:
            return "enum"
        if "default" not in self.disabled and not others_stated:
            defaults = n.schema_defaults(schema)
            if any(equal_values(value, d) for d in defaults):
                if g.is_number(value) and not enum:  # (with an enum, no number vetoes it)
                    claimed = numbers_claimed(arguments, param)
                    claimed += [x * 100 for x in claimed]  # "4%" is claimed by 0.04
                    stated = (*ev.free_numbers, *counted_numbers(param, ev.words))
                    free = [x for x in stated if not number_stated(x, claimed)]
                    if free:  # the request writes a number no argument uses
                        return None
                return "default"
        return None

    def ground(
        self,
        param: str,
        value: Any,
        schema: dict[str, Any] | None,
        evidence: Evidence,
        arguments: Mapping[str, Any],
        required: bool = True,
    ) -> ArgVerdict:
        """Accept each leaf by the rules; a container is grounded when every scored leaf is
        (its reason the least direct of theirs); otherwise h is the paper's h(v) of the worst
        ungrounded leaf, over the request and the context. A blank string for an optional
        parameter is the parameter left out: assumed, like ``None`` (see the module doc)."""
        if not required and type(value) is str and not value.strip():
            return ArgVerdict(None, None, value)
        scalar = isinstance(value, _SCALARS) and not isinstance(value, bool)
        if scalar:
            enum = enum_index(schema)
            reason = self._accept_leaf(param, value, schema, enum, evidence, arguments)
            if reason:
                return ArgVerdict(0.0, reason, value, self._note(value, evidence))
            key = scalar_key(value)
            if key is not None:  # the rest depends on the value and the text only
                hit = evidence.memo.get(("scalar", key))
                if hit is None:
                    hit = self._score_leaves(
                        value, schema, [(value, schema)], True, evidence, arguments, param
                    )
                    evidence.remember(("scalar", key), hit)
                return hit  # type: ignore[no-any-return]
            return self._score_leaves(
                value, schema, [(value, schema)], True, evidence, arguments, param
            )
        return self._score_leaves(
            value, schema, list(schema_leaves(value, schema)), False, evidence, arguments, param
        )

    def _score_leaves(
        self,
        value: Any,
        schema: dict[str, Any] | None,
        leaves: list[tuple[Any, dict[str, Any] | None]],
        scalar: bool,
        evidence: Evidence,
        arguments: Mapping[str, Any],
        param: str,
    ) -> ArgVerdict:
        """The verdict from ``value``'s leaves: accepted ones give their reasons (a scalar's
        one leaf was tried by the caller), the worst ungrounded one its h."""
        worst: ArgVerdict | None = None
        reasons: list[str] = []
        notes: list[str] = []
        siblings = frozenset(
            leaf for leaf, _ in leaves if isinstance(leaf, str | int | float) and len(leaves) > 1
        )
        seen: set[tuple[Any, ...]] = set()  # a repeated leaf is scored once
        enums: dict[int, EnumIndex | None] = {}  # each leaf schema's enum, read once
        ungrounded = 0
        for leaf, leaf_schema in leaves:
            if isinstance(leaf, bool) or leaf is None:
                continue  # assumed: no grounding context (as in the paper)
            key = (type(leaf), leaf, id(leaf_schema))
            if key in seen:
                continue
            seen.add(key)
            if not scalar:  # (a scalar was tried above)
                if (enum := enums.get(id(leaf_schema), _MISSING)) is _MISSING:
                    enum = enums[id(leaf_schema)] = enum_index(leaf_schema)
                reason = self._accept_leaf(
                    param, leaf, leaf_schema, enum, evidence, arguments, siblings
                )
                if reason:
                    reasons.append(reason)
                    note = self._note(leaf, evidence) if evidence.notes else None
                    if note is not None and note not in notes:
                        notes.append(note)
                    continue
            ungrounded += 1
            if ungrounded > MAX_SCORED_LEAVES:  # bounded cost: the rest score h = 1
                worst = ArgVerdict(1.0, None, leaf)
                break
            h = g.hallucination(leaf, evidence.all_text)
            if h is None and g.is_number(leaf) and evidence.numbers:
                h = 1.0  # the request states numbers (perhaps in words), not this one
            if h is None:
                continue
            if h == 0.0:  # the paper's h is 0 for a fragment inside a word ("San Fra")
                h = FRAGMENT_H
            if worst is None or (worst.h is not None and h > worst.h):
                worst = ArgVerdict(h, None, leaf)
        if worst is not None:
            return worst
        if not reasons:
            lex = g.hallucination(value, evidence.query)
            return ArgVerdict(lex if lex is None else 0.0, None, value)
        return ArgVerdict(0.0, max(reasons, key=_RANK.__getitem__), value, "; ".join(notes) or None)


#: the grounding modes by name (read-only; plugins: the ``callscope.groundings`` entry points,
#: each a factory of a :class:`Grounding`)
GROUNDINGS: Registry[Callable[[], Grounding]] = Registry(
    "grounding",
    entries={"lexical": LexicalGrounding, "registry": RegistryGrounding},
    entry_point_group="callscope.groundings",
    read_only=True,
)
#: the mode every command uses unless told otherwise
DEFAULT_GROUNDING = "registry"


def get_grounding(mode: str | Grounding | None = None) -> Grounding:
    """The grounding named ``mode`` (:data:`DEFAULT_GROUNDING` for ``None``); a
    :class:`Grounding` object is returned as is. Unknown names raise ``ConfigError``."""
    if mode is None:
        mode = DEFAULT_GROUNDING
    if not isinstance(mode, str):
        return mode
    return GROUNDINGS[mode]()


def grounding_help() -> str:
    """One line for ``--grounding`` options."""
    return f"stage-3 grounding: {' | '.join(GROUNDINGS)} (default {DEFAULT_GROUNDING}; lexical = the SAAG paper's)"
