"""callscope's classification rules: cue matching, the ``callscope`` variant, and the one class.

* :func:`cue_classes`: the cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose, after
  greeting formulas are removed (:attr:`ClassifierConfig.greeting_patterns`).
* :func:`callscope_classes`: every class that fires on an emission under the rules of
  :mod:`callscope.calibration.classify` (TOOL_CALL by syntax through the emission view of
  :mod:`callscope.calibration.classify.emission`, the others by cues on its prose);
  registered as the ``callscope`` variant of :data:`~callscope.calibration.classify.config.VARIANTS`.
* :func:`resolve`: one class out of the fired ones, overrides first, then the priority order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from callscope.calibration.classify.config import VARIANTS, ClassifierConfig
from callscope.calibration.classify.emission import view_emission
from callscope.core.text import normalize_text
from callscope.types import OTHER, TOOL_CALL


def _strip_greetings(text: str, config: ClassifierConfig) -> str:
    for pattern in config._greetings:
        text = pattern.sub(" ", text)
    return text


def cue_classes(text: str, config: ClassifierConfig) -> set[str]:
    """The cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose ``text``: lower-cased,
    curly quotes normalised, greeting formulas removed, then each cue of ``config`` matched
    (``cue_match``: word-boundary prefix or plain substring)."""
    norm = _strip_greetings(normalize_text(text), config)
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
