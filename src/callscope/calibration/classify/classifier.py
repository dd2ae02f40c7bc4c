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


def fired_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """Every class that fires on ``emission`` (multi-label): ``{"OTHER"}`` when none does,
    ``set()`` when the emission is empty (nothing to classify: ``None``, blank text, ``[]``,
    a message with neither text nor calls). The variant of ``config.call_syntax`` reads it
    (``paper``: as the paper's code does,
    :func:`~callscope.calibration.classify.paper.paper_classes`).

    ``overrides`` are not applied here: this is the raw evidence.
    """
    return VARIANTS[config.call_syntax](emission, config)


def emission_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """:func:`fired_classes`, with ``{"OTHER"}`` for an empty emission too (for callers that
    need one class per emission)."""
    return fired_classes(emission, config) or {OTHER}


def classify_emission(emission: Any, config: ClassifierConfig = DEFAULT) -> str:
    """The single action class of ``emission`` under ``config`` (see
    :mod:`callscope.calibration.classify`)."""
    return resolve(emission_classes(emission, config), config)
