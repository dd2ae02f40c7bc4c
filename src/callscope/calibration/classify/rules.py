"""callscope's classification rules: cue matching, the ``callscope`` variant, and the one class.

* :func:`cue_classes`: the cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose, after
  greeting formulas (:attr:`ClassifierConfig.greeting_patterns`) and offers of further work
  (:data:`~callscope.calibration.classify.cues.DEFAULT_OFFER_PATTERNS`: "Would you like me
  to ...?" is not an ask) are removed.
* :func:`callscope_classes`: every class that fires on an emission under the rules of
  :mod:`callscope.calibration.classify` (TOOL_CALL by syntax through the emission view of
  :mod:`callscope.calibration.classify.emission`, the others by cues on its prose);
  registered as the ``callscope`` variant of :data:`~callscope.calibration.classify.config.VARIANTS`.
* :func:`resolve`: one class out of the fired ones, overrides first, then the priority order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from callscope.calibration.classify.config import VARIANTS, ClassifierConfig
from callscope.calibration.classify.cues import (
    DEFAULT_DONE_PATTERNS,
    DEFAULT_OFFER_PATTERNS,
    PERMISSION_WORDS,
)
from callscope.calibration.classify.emission import view_emission
from callscope.core.text import normalize_text
from callscope.types import OTHER, TOOL_CALL


def _strip_greetings(text: str, config: ClassifierConfig) -> str:
    for pattern in config._greetings:
        text = pattern.sub(" ", text)
    return text


#: the offer patterns, compiled once
_OFFERS = tuple(re.compile(p) for p in DEFAULT_OFFER_PATTERNS)
#: an offer that gives alternatives or asks leave to go on stays an ask
_PERMISSION = re.compile(PERMISSION_WORDS)
_DONE = tuple(re.compile(p) for p in DEFAULT_DONE_PATTERNS)


def _drop_offer(match: re.Match[str]) -> str:
    return match.group() if _PERMISSION.search(match.group()) else " "


def _strip_offers(text: str) -> str:
    """``text`` without its offers of further work (one sentence each; an offer with
    alternatives or asking leave to go on kept).

    >>> _strip_offers("i moved it. would you like me to sort them too?")
    'i moved it.  '
    >>> _strip_offers("would you like me to use 'a' or 'b'? would you like me to proceed?")
    "would you like me to use 'a' or 'b'? would you like me to proceed?"
    """
    for pattern in _OFFERS:
        text = pattern.sub(_drop_offer, text)
    return text


def _reports_done(text: str, config: ClassifierConfig) -> bool:
    """Whether prose ``text`` reports work done: a CONFIRM cue or a done statement."""
    return any(p.search(text) for p in (*config._compiled.get("CONFIRM", ()), *_DONE))


def cue_classes(text: str, config: ClassifierConfig) -> set[str]:
    """The cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose ``text``: lower-cased,
    curly quotes normalised, greeting formulas removed, offers of further work removed when
    the rest reports the work done (an offer after completed work is not an ask; see
    :data:`~callscope.calibration.classify.cues.DEFAULT_OFFER_PATTERNS`), then each cue of
    ``config`` matched (``cue_match``: word-boundary prefix or plain substring).

    >>> from callscope.calibration.classify import DEFAULT
    >>> sorted(cue_classes("I've saved it. Would you like me to create a backup as well?", DEFAULT))
    []
    >>> sorted(cue_classes("I can cancel it. Would you like me to cancel it?", DEFAULT))
    ['ASK']
    >>> sorted(cue_classes("I moved it. Which folder should the copy go to?", DEFAULT))
    ['ASK']
    """
    norm = _strip_greetings(normalize_text(text), config)
    without = _strip_offers(norm)
    if without != norm and _reports_done(without, config):
        norm = without
    return {cls for cls, pats in config._compiled.items() if any(p.search(norm) for p in pats)}


def callscope_classes(emission: Any, config: ClassifierConfig) -> set[str]:
    """Every class that fires on ``emission`` under callscope's rules: TOOL_CALL when its view
    has a call, the cue classes of its prose; ``{"OTHER"}`` when none fires, ``set()`` when
    the emission is empty. Raises ``TypeError`` on a shape the view does not read."""
    view = view_emission(emission, config)
    if view.blank and not view.has_call:
        return set()
    classes = cue_classes("\n".join(view.prose), config)
    if view.has_call:
        classes.add(TOOL_CALL)
    return classes or {OTHER}


def resolve(classes: Iterable[str], config: ClassifierConfig) -> str:
    """One class out of the fired ``classes``: overrides first, then the priority order."""
    fired = set(classes)
    for winner, loser in config.overrides:
        if winner in fired and loser in fired:
            fired.discard(loser)
    for cls in config.priority:
        if cls in fired:
            return cls
    return OTHER


VARIANTS.register("callscope", callscope_classes)
