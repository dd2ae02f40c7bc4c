"""The classifier's entry points: the classes of one emission under a config, and its one class.

:func:`fired_classes` hands the emission to the variant the config names
(``config.call_syntax``, a key of :data:`~callscope.calibration.classify.config.VARIANTS`:
``callscope`` or ``paper``); :func:`classify_emission` resolves what fired into one class
(:func:`~callscope.calibration.classify.rules.resolve`).
"""

from __future__ import annotations

from typing import Any

from callscope.calibration.classify.config import VARIANTS, ClassifierConfig
from callscope.calibration.classify.presets import DEFAULT
from callscope.calibration.classify.rules import resolve
from callscope.types import OTHER

#: the longest text a classifier scan reads: a longer text is read as its first and last half
#: of that. About 80 cue patterns cost ~8 ms per 1,000 characters of prose (a 20 MB
#: completion took 136 s in the proxy, issue 29 item 8); at this bound a text of any length
#: costs ~0.3 s. Well under the parser's own cap (:data:`~callscope.parse.MAX_INPUT_CHARS`):
#: a call or a closing question sits at one end of a long text, not in its middle
MAX_CLASSIFY_CHARS = 32_000


def bounded_text(text: str, limit: int = MAX_CLASSIFY_CHARS) -> str:
    """``text`` when it is at most ``limit`` characters, else its first and last
    ``limit // 2`` characters joined by a blank line (a call or a closing question at either
    end is still seen; the middle of a huge completion is not read): ``"abcdefgh"`` with
    ``limit=4`` is ``"ab\\n\\ngh"``."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n\n" + text[-half:]


def bounded_emission(emission: Any, limit: int = MAX_CLASSIFY_CHARS) -> Any:
    """``emission`` with every text in it cut by :func:`bounded_text`: the one length bound
    of every classifier scan, applied where an emission enters (:func:`fired_classes`). Reads
    the shapes :func:`~callscope.calibration.classify.emission.view_emission` reads (text, a
    message's ``content``/``text`` and its content parts, lists, a ``ModelReply``); anything
    else is returned as it is."""
    if isinstance(emission, str):
        return bounded_text(emission, limit)
    if hasattr(emission, "tool_calls") and hasattr(emission, "text"):  # ModelReply
        return bounded_emission(
            {"content": emission.text, "tool_calls": emission.tool_calls}, limit
        )
    if isinstance(emission, list | tuple):
        return [bounded_emission(item, limit) for item in emission]
    if isinstance(emission, dict):
        out = dict(emission)
        for key in ("content", "text"):
            value = out.get(key)
            if isinstance(value, str):
                out[key] = bounded_text(value, limit)
            elif isinstance(value, list):
                out[key] = [
                    {**part, "text": bounded_text(part["text"], limit)}
                    if isinstance(part, dict) and isinstance(part.get("text"), str)
                    else bounded_text(part, limit)
                    if isinstance(part, str)
                    else part
                    for part in value
                ]
        return out
    return emission


def fired_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """Every class that fires on ``emission`` (multi-label): ``{"OTHER"}`` when none does,
    ``set()`` when the emission is empty (nothing to classify: ``None``, blank text, ``[]``,
    a message with neither text nor calls). The variant of ``config.call_syntax`` reads it
    (``paper``: as the paper's code does,
    :func:`~callscope.calibration.classify.paper.paper_classes`).

    ``overrides`` are not applied here: this is the raw evidence. Every text is read within
    :data:`MAX_CLASSIFY_CHARS` (:func:`bounded_emission`).
    """
    return VARIANTS[config.call_syntax](bounded_emission(emission), config)


def emission_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """:func:`fired_classes`, with ``{"OTHER"}`` for an empty emission too (for callers that
    need one class per emission)."""
    return fired_classes(emission, config) or {OTHER}


def classify_emission(emission: Any, config: ClassifierConfig = DEFAULT) -> str:
    """The single action class of ``emission`` under ``config`` (see
    :mod:`callscope.calibration.classify`)."""
    return resolve(emission_classes(emission, config), config)
