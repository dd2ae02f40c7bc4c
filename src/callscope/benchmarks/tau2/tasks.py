"""What a τ²-bench task says: the agent's expected actions, the gold class they imply, and the
user scenario text scanned for ASK cues.

**Gold classes** (calibration paper, section 4.2). TOOL_CALL when
``evaluation_criteria.actions`` holds an action for the agent (``requestor`` not ``"user"``),
REFUSE when it holds none (the paper: ``actions == []``); no gold when ``actions`` is absent
(:func:`task_gold_class`).

**ASK candidates.** τ² tasks have no ASK label. A task's scenario text (``user_scenario``:
persona and instructions, :func:`scenario_text`) is scanned for phrases such as "if the agent
asks" or "withhold" (:data:`DEFAULT_ASK_SCENARIO_CUES`, :func:`ask_cue_hits`: whole-word cue
matching on lower-cased text with curly quotes normalised, :mod:`callscope.core.text`); the
hits are *candidates* for a person to check (how they become ASK gold is the diagnostic's choice,
:class:`callscope.calibration.tau2.Tau2Config`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from callscope.benchmarks.tau2.reader import as_dict
from callscope.core.text import cue_pattern, normalize_text
from callscope.types import REFUSE, TOOL_CALL

#: Scenario phrases that suggest the agent must ask for something (ASK candidates).
DEFAULT_ASK_SCENARIO_CUES: tuple[str, ...] = (
    "if the agent asks",
    "unless the agent asks",
    "wait for the agent to ask",
    "if asked",
    "when asked",
    "only when asked",
    "unless asked",
    "withhold",
    "do not volunteer",
    "don't volunteer",
    "not volunteer",
    "do not provide",
    "don't provide",
    "do not reveal",
    "don't reveal",
    "do not mention",
    "don't mention",
    "only provide",
    "only share",
)


def task_actions(task: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The task's expected agent actions (``requestor`` not ``"user"``); ``None`` when the
    task has no ``evaluation_criteria.actions``."""
    actions = as_dict(task.get("evaluation_criteria")).get("actions")
    if not isinstance(actions, list):
        return None
    return [a for a in actions if isinstance(a, dict) and a.get("requestor") != "user"]


def task_gold_class(task: Mapping[str, Any]) -> str | None:
    """TOOL_CALL when the task expects agent actions, REFUSE when it expects none, ``None``
    when its evaluation criteria say nothing about actions."""
    actions = task_actions(task)
    if actions is None:
        return None
    return TOOL_CALL if actions else REFUSE


def scenario_text(task: Mapping[str, Any]) -> str:
    """The text of ``user_scenario``: persona and instructions (structured instructions
    joined field by field, the ``domain`` field left out), or the scenario itself when it is
    a string."""
    scenario = task.get("user_scenario")
    if isinstance(scenario, str):
        return scenario
    scenario = as_dict(scenario)
    parts: list[str] = []
    if isinstance(scenario.get("persona"), str):
        parts.append(scenario["persona"])
    instr = scenario.get("instructions")
    if isinstance(instr, str):
        parts.append(instr)
    elif isinstance(instr, dict):
        for key, value in instr.items():
            if key != "domain" and isinstance(value, str):
                parts.append(value)
    return "\n".join(parts)


def ask_cue_hits(text: str, cues: Sequence[str] = DEFAULT_ASK_SCENARIO_CUES) -> list[str]:
    """The cues of ``cues`` found in ``text`` (lower-cased, curly quotes normalised, whole
    words: :func:`callscope.core.text.cue_pattern`), in cue order."""
    norm = normalize_text(text)
    return [c for c in cues if c and (pat := cue_pattern(c, whole_word=True)) and pat.search(norm)]


def cue_snippet(text: str, cue: str, width: int = 80) -> str:
    """``text`` around the first match of ``cue`` (``width`` characters each side, whitespace
    collapsed, ``...`` where cut); ``""`` when the cue is not found."""
    pat = cue_pattern(cue, whole_word=True)
    m = pat.search(normalize_text(text)) if pat else None
    if not m:
        return ""
    start, end = max(0, m.start() - width), min(len(text), m.end() + width)
    return (
        ("..." if start else "")
        + " ".join(text[start:end].split())
        + ("..." if end < len(text) else "")
    )
