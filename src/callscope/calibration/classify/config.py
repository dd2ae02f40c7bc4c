"""The classification rule as a value (:class:`ClassifierConfig`), and the registry of the
classifier variants a rule can choose (:data:`VARIANTS`, keyed by ``call_syntax``).

A variant is a function ``(emission, config) -> set of fired classes`` (``set()`` for an empty
emission): ``callscope`` (:mod:`callscope.calibration.classify.rules`) and ``paper``
(:mod:`callscope.calibration.classify.paper`) register themselves here; another package adds
one with an entry point in the ``callscope.classifier_variants`` group. A config names its
variant, so :meth:`ClassifierConfig.to_dict` records which reading produced a result.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from callscope.calibration.classify.cues import (
    DEFAULT_ASK_CUES,
    DEFAULT_CONFIRM_CUES,
    DEFAULT_GREETING_PATTERNS,
    DEFAULT_REFUSE_CUES,
)
from callscope.core.registry import Registry
from callscope.core.text import cue_pattern
from callscope.types import ACTION_CLASSES, ASK, CONFIRM, REFUSE

#: the ways :class:`ClassifierConfig` can match cues
CUE_MATCHES = ("word", "substring")

#: a classifier variant: every class that fires on an emission under a config (``set()`` when
#: the emission is empty, ``{"OTHER"}`` when nothing else fires; overrides not applied)
ClassifierVariant = Callable[[Any, "ClassifierConfig"], set[str]]

#: ``call_syntax`` -> the variant that reads emissions under it (``callscope``, ``paper``)
VARIANTS: Registry[ClassifierVariant] = Registry(
    "classifier call syntax",
    builtin_modules=(
        "callscope.calibration.classify.rules",
        "callscope.calibration.classify.paper",
    ),
    entry_point_group="callscope.classifier_variants",
)


@dataclass(frozen=True)
class ClassifierConfig:
    """The classification rule. Frozen and hashable; :meth:`to_dict` is what results record.

    ``priority`` orders the five classes (all five, each once). ``overrides`` are
    ``(winner, loser)`` pairs: when both fire, ``loser`` is dropped before the priority is
    applied. ``strip_think`` removes ``<think>...</think>`` reasoning before cue matching.
    ``cue_match``: ``"word"`` (a cue starts at a word boundary,
    :func:`callscope.core.text.cue_pattern`) or ``"substring"`` (plain ``cue in text``, as
    the paper's code). ``call_syntax``: the classifier variant of :data:`VARIANTS` that reads the
    emission: ``"callscope"`` (:func:`callscope.calibration.classify.rules.callscope_classes`,
    the package docstring's rules) or ``"paper"`` (the paper code's reading,
    :func:`callscope.calibration.classify.paper.paper_classes`). ``cut_user_turns``: text
    after a hallucinated user turn is not read.
    """

    priority: tuple[str, ...] = ACTION_CLASSES
    refuse_cues: tuple[str, ...] = DEFAULT_REFUSE_CUES
    ask_cues: tuple[str, ...] = DEFAULT_ASK_CUES
    confirm_cues: tuple[str, ...] = DEFAULT_CONFIRM_CUES
    greeting_patterns: tuple[str, ...] = DEFAULT_GREETING_PATTERNS
    overrides: tuple[tuple[str, str], ...] = ()
    strip_think: bool = True
    cue_match: str = "word"
    call_syntax: str = "callscope"
    cut_user_turns: bool = True
    name: str = "default"

    def __post_init__(self) -> None:
        if sorted(self.priority) != sorted(ACTION_CLASSES):
            raise ValueError(
                f"priority must list each of {', '.join(ACTION_CLASSES)} once, got {self.priority}"
            )
        for pair in self.overrides:
            if len(pair) != 2 or not set(pair) <= set(ACTION_CLASSES) or pair[0] == pair[1]:
                raise ValueError(f"override must be a (winner, loser) pair of classes: {pair!r}")
        if self.cue_match not in CUE_MATCHES:
            raise ValueError(f"cue_match must be one of {CUE_MATCHES}, got {self.cue_match!r}")
        if self.call_syntax not in VARIANTS:
            raise ValueError(
                f"call_syntax must be one of {VARIANTS.names()}, got {self.call_syntax!r}"
            )
        for pattern in self.greeting_patterns:
            re.compile(pattern)  # raises re.error on a bad pattern
        for cue in (*self.refuse_cues, *self.ask_cues, *self.confirm_cues):
            cue_pattern(cue)  # raises re.error on a bad ``re:`` cue

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "priority": list(self.priority),
            "overrides": [list(p) for p in self.overrides],
            "refuse_cues": list(self.refuse_cues),
            "ask_cues": list(self.ask_cues),
            "confirm_cues": list(self.confirm_cues),
            "greeting_patterns": list(self.greeting_patterns),
            "strip_think": self.strip_think,
            "cue_match": self.cue_match,
            "call_syntax": self.call_syntax,
            "cut_user_turns": self.cut_user_turns,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClassifierConfig:
        """Inverse of :meth:`to_dict`; missing keys take the defaults."""
        base = cls()
        return cls(
            priority=tuple(d.get("priority", base.priority)),
            refuse_cues=tuple(d.get("refuse_cues", base.refuse_cues)),
            ask_cues=tuple(d.get("ask_cues", base.ask_cues)),
            confirm_cues=tuple(d.get("confirm_cues", base.confirm_cues)),
            greeting_patterns=tuple(d.get("greeting_patterns", base.greeting_patterns)),
            overrides=tuple(tuple(p) for p in d.get("overrides", base.overrides)),  # type: ignore[misc]
            strip_think=bool(d.get("strip_think", base.strip_think)),
            cue_match=str(d.get("cue_match", base.cue_match)),
            call_syntax=str(d.get("call_syntax", base.call_syntax)),
            cut_user_turns=bool(d.get("cut_user_turns", base.cut_user_turns)),
            name=str(d.get("name", "custom")),
        )

    @cached_property
    def _compiled(self) -> dict[str, tuple[re.Pattern[str], ...]]:
        def patterns(cues: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
            # one pattern per cue: a ``re:`` cue keeps its own groups; in substring mode a
            # plain cue is its escaped lower-case text, matched anywhere
            if self.cue_match == "substring":
                return tuple(
                    re.compile(c[3:]) if c.startswith("re:") else re.compile(re.escape(c.lower()))
                    for c in cues
                    if c
                )
            return tuple(p for c in cues if (p := cue_pattern(c)) is not None)

        return {
            REFUSE: patterns(self.refuse_cues),
            ASK: patterns(self.ask_cues),
            CONFIRM: patterns(self.confirm_cues),
        }

    @cached_property
    def _greetings(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in self.greeting_patterns)
