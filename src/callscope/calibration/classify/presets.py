"""The named classifier configurations: :data:`CLASSIFIER_PRESETS` (name ->
:class:`ClassifierConfig`; ``PRESETS`` is the same registry under its old name).

Built in: :data:`DEFAULT` (the paper's main rule, callscope's cues), :data:`ASK_OVER_TOOL_CALL`
(App. E variant) and :data:`PAPER` (the paper's public code, reproduced). Extend with
:func:`register_preset`, or from another package with an entry point in the
``callscope.classifier_presets`` group whose object is a :class:`ClassifierConfig`; the
``--classifier`` help and :func:`preset` read the registry.
"""

from __future__ import annotations

from callscope.calibration.classify.config import ClassifierConfig
from callscope.calibration.classify.cues import (
    PAPER_ASK_CUES,
    PAPER_CONFIRM_CUES,
    PAPER_REFUSE_CUES,
)
from callscope.core.registry import Registry
from callscope.types import ASK, TOOL_CALL

#: The paper's main rule: TOOL_CALL > REFUSE > ASK > CONFIRM > OTHER.
DEFAULT = ClassifierConfig()
#: App. E variant: an emission that both calls a tool and asks the user counts as ASK.
ASK_OVER_TOOL_CALL = ClassifierConfig(overrides=((ASK, TOOL_CALL),), name="ask_over_tool_call")

#: The paper's public code, reproduced (:mod:`callscope.calibration.classify.paper`): its cues,
#: plain substrings, call syntax only at the start, no greeting / ``<think>`` removal, no
#: user-turn cut.
PAPER = ClassifierConfig(
    refuse_cues=PAPER_REFUSE_CUES,
    ask_cues=PAPER_ASK_CUES,
    confirm_cues=PAPER_CONFIRM_CUES,
    greeting_patterns=(),
    strip_think=False,
    cue_match="substring",
    call_syntax="paper",
    cut_user_turns=False,
    name="paper",
)

#: Named classifier configurations (name -> config), in registration order; extend with
#: :func:`register_preset`.
CLASSIFIER_PRESETS: Registry[ClassifierConfig] = Registry(
    "classifier preset",
    entries={c.name: c for c in (DEFAULT, ASK_OVER_TOOL_CALL, PAPER)},
    entry_point_group="callscope.classifier_presets",
)
#: the old name of :data:`CLASSIFIER_PRESETS` (kept importable; the experiment presets are
#: :data:`callscope.runs.presets.EXPERIMENT_PRESETS`)
PRESETS = CLASSIFIER_PRESETS


def register_preset(config: ClassifierConfig, *, replace: bool = False) -> ClassifierConfig:
    """Add ``config`` to :data:`CLASSIFIER_PRESETS` under ``config.name`` (``ConfigError``, a
    ``ValueError``, when the name is taken, unless ``replace``); returns it."""
    return CLASSIFIER_PRESETS.register(config.name, config, replace=replace)


def preset_names() -> list[str]:
    """The registered preset names, in registration order."""
    return list(CLASSIFIER_PRESETS.names())


def preset(name: str) -> ClassifierConfig:
    """A named configuration (:data:`CLASSIFIER_PRESETS`: ``default``, ``ask_over_tool_call``,
    ``paper``, ...); ``ConfigError`` (a ``ValueError``) listing the names otherwise."""
    return CLASSIFIER_PRESETS[name]
