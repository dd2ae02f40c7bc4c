"""What a τ²-bench task says: the agent's expected actions, the gold class they imply, and the
user scenario text scanned for ASK cues.

**Gold classes** (calibration paper, section 4.2). TOOL_CALL when
``evaluation_criteria.actions`` holds an action for the agent (``requestor`` not ``"user"``),
REFUSE when it holds no action at all (the paper: ``actions == []``); no gold when ``actions``
is absent, and none when every expected action is the *user's* (telecom tasks where the user
toggles settings on their phone: the agent is to guide, not to refuse;
:func:`task_gold_class`, :func:`user_only_actions`).

**ASK candidates.** τ² tasks have no ASK label. A task's scenario text (``user_scenario``:
persona and instructions, :func:`scenario_text`) is scanned for phrases such as "if the agent
asks" or "withhold" (:data:`DEFAULT_ASK_SCENARIO_CUES`, :func:`ask_cue_hits`: whole-word cue
matching on lower-cased text with curly quotes normalised, :mod:`callscope.core.text`); the
hits are *candidates* for a person to check (how they become ASK gold is the diagnostic's choice,
:class:`callscope.calibration.tau2.Tau2Config`). A hit is *boilerplate* when every sentence it
occurs in is shared scenario text (:func:`boilerplate_sentences`: a sentence found in at least
3 of the run's tasks and in at least half of them, or one holding a phrase of
:data:`KNOWN_BOILERPLATE`, e.g. telecom's "If the agent asks what the status bar shows, always
ground your response on the results of ..." in every task); :func:`classify_cue_hits` splits
the hits.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
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


#: Phrases of stock τ² scenario boilerplate: a sentence holding one is not task-specific.
KNOWN_BOILERPLATE: tuple[str, ...] = ("always ground your response on the results of",)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def all_task_actions(task: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """Every expected action of the task (agent's and user's); ``None`` when the task has no
    ``evaluation_criteria.actions``."""
    actions = as_dict(task.get("evaluation_criteria")).get("actions")
    if not isinstance(actions, list):
        return None
    return [a for a in actions if isinstance(a, dict)]


def user_only_actions(task: Mapping[str, Any]) -> bool:
    """Whether the task expects actions and every one of them is the user's."""
    actions = all_task_actions(task)
    return bool(actions) and all(a.get("requestor") == "user" for a in actions or [])


def task_actions(task: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The task's expected agent actions (``requestor`` not ``"user"``); ``None`` when the
    task has no ``evaluation_criteria.actions``."""
    actions = as_dict(task.get("evaluation_criteria")).get("actions")
    if not isinstance(actions, list):
        return None
    return [a for a in actions if isinstance(a, dict) and a.get("requestor") != "user"]


def task_gold_class(task: Mapping[str, Any]) -> str | None:
    """TOOL_CALL when the task expects agent actions, REFUSE when it expects no action at
    all, ``None`` when its evaluation criteria say nothing about actions or every expected
    action is the user's."""
    actions = all_task_actions(task)
    if actions is None:
        return None
    if not actions:
        return REFUSE
    return TOOL_CALL if task_actions(task) else None


def task_domain(task: Mapping[str, Any]) -> str | None:
    """The domain a task names (``user_scenario.instructions.domain``), or ``None``."""
    instr = as_dict(as_dict(task.get("user_scenario")).get("instructions"))
    domain = instr.get("domain")
    return domain if isinstance(domain, str) and domain else None


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


def _sentences(text: str) -> list[str]:
    """``text`` lower-cased (quotes normalised), cut into sentences, whitespace collapsed."""
    norm = normalize_text(text)
    return [" ".join(p.split()) for p in _SENTENCE_END.split(norm) if p.strip()]


def boilerplate_sentences(texts: Iterable[str], min_tasks: int = 3) -> set[str]:
    """The sentences (as :func:`_sentences` cuts them) shared by at least ``min_tasks`` of
    ``texts`` and by at least half of them: the run's scenario boilerplate."""
    texts = list(texts)
    counts = Counter(s for t in texts for s in set(_sentences(t)))
    need = max(min_tasks, (len(texts) + 1) // 2)
    return {s for s, k in counts.items() if k >= need}


def classify_cue_hits(
    text: str,
    cues: Sequence[str] = DEFAULT_ASK_SCENARIO_CUES,
    boilerplate: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[str], list[str]]:
    """``(specific, boilerplate_only)``: the cues of ``cues`` found in ``text`` in a sentence
    that is not boilerplate, and those found only in boilerplate sentences (``boilerplate``,
    or a sentence holding a phrase of :data:`KNOWN_BOILERPLATE`), each in cue order."""
    sentences = _sentences(text)
    specific: list[str] = []
    only_boiler: list[str] = []
    for cue in cues:
        pat = cue_pattern(cue, whole_word=True) if cue else None
        if pat is None:
            continue
        where = [s for s in sentences if pat.search(s)]
        if not where:
            continue
        if any(s not in boilerplate and not any(k in s for k in KNOWN_BOILERPLATE) for s in where):
            specific.append(cue)
        else:
            only_boiler.append(cue)
    return specific, only_boiler
