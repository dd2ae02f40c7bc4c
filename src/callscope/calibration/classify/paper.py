"""The paper's classifier variant: emission classes as the calibration paper's public code
assigns them.

Reproduced from its documented behaviour (github.com/fbj2333/tool-calling-calibration @
5c9ec3d, Apache-2.0, ``bfcl_calibration/analysis/action_classifier.py``, ``gar.py``,
``emission_normalization/_core.py``): call syntax recognised only at the start of the text by
four patterns plus its normalisation of structured emissions, cues on the whole text (no
greeting or ``<think>`` removal, no user-turn cut), empty emissions no class. Registered as
the ``paper`` variant of :data:`~callscope.calibration.classify.config.VARIANTS`; the
``paper`` preset (:data:`callscope.calibration.classify.presets.PAPER`) chooses it with the
paper's cue tables (:mod:`callscope.calibration.classify.cues`) matched as plain substrings.
Its literals are read by :mod:`callscope.parse` (``ast``, never evaluated, else JSON).
"""

from __future__ import annotations

import re
from typing import Any

from callscope.calibration.classify.config import VARIANTS, ClassifierConfig
from callscope.calibration.classify.emission import MESSAGE_KEYS
from callscope.calibration.classify.rules import cue_classes
from callscope.parse import MAX_INPUT_CHARS, parse_expression
from callscope.parse.literals import json_loads
from callscope.parse.python_calls import literal
from callscope.types import OTHER, TOOL_CALL

#: the paper's code also maps these to ASCII quotes (besides the four curly quotes)
_PAPER_QUOTES = str.maketrans(
    {"\u201a": "'", "\u201b": "'", "\u201e": '"', "\u201f": '"', "\u00b4": "'", "\u02bc": "'"}
)
# its four call patterns: Python call list, <tool_call> anywhere, JSON list of {"name"...},
# one JSON object with "name" then "arguments"/"parameters" (re.match: start of text only)
_PAPER_PY_CALL = re.compile(r"\s*\[\s*[A-Za-z_][A-Za-z0-9_]*\s*\(")
_PAPER_XML_CALL = re.compile(r"<tool_call\b", re.I)
_PAPER_JSON_LIST = re.compile(r"\s*\[\s*\{\s*[\"']name[\"']\s*:")
_PAPER_JSON_ONE = re.compile(
    r"\s*\{\s*[\"']name[\"']\s*:\s*[\"'][A-Za-z_][A-Za-z0-9_]*[\"']\s*,"
    r".*[\"'](?:arguments|parameters)[\"']\s*:",
    re.S,
)


def _paper_is_call_text(text: str) -> bool:
    """The paper code's four call patterns (three at the start only, ``<tool_call`` anywhere)."""
    return bool(
        text
        and (
            _PAPER_PY_CALL.match(text)
            or _PAPER_XML_CALL.search(text)
            or _PAPER_JSON_LIST.match(text)
            or _PAPER_JSON_ONE.match(text)
        )
    )


def _paper_named(name: Any, arguments: Any) -> bool:
    return isinstance(name, str) and isinstance(arguments, dict)


def _paper_call_object(value: Any) -> bool:
    """The paper's ``_call_from_dict``: ``{name, arguments}``, ``{name, parameters}``,
    ``{tool_call, arguments}``, ``{action, arguments}`` or ``{name: {arguments}}``."""
    if not isinstance(value, dict):
        return False
    keys = set(value)
    for name_key, args_key in (
        ("name", "arguments"),
        ("name", "parameters"),
        ("tool_call", "arguments"),
        ("action", "arguments"),
    ):
        if keys == {name_key, args_key}:
            return _paper_named(value[name_key], value[args_key])
    if len(value) == 1:
        ((name, arguments),) = value.items()
        return _paper_named(name, arguments)
    return False


def _paper_calls(value: Any) -> bool:
    """The paper's ``_calls_from_value`` is not ``None``."""
    if isinstance(value, list):
        return bool(value) and all(_paper_call_object(v) for v in value)
    if not isinstance(value, dict):
        return False
    if _paper_call_object(value):
        return True
    if set(value) != {"tools", "arguments"}:
        return False
    tools, by_tool = value["tools"], value["arguments"]
    if not isinstance(tools, list) or not isinstance(by_tool, dict) or not tools:
        return False
    return all(isinstance(t, str) and t in by_tool and _paper_named(t, by_tool[t]) for t in tools)


def _paper_literal(text: str) -> Any:
    """The paper's literal reading of a ``{...}`` / ``[{...}]`` payload: a Python literal (via
    :mod:`ast`, never evaluated), else JSON; ``None`` when neither reads it."""
    if len(text) > MAX_INPUT_CHARS:
        return None
    try:
        return literal(parse_expression(text))
    except ValueError:
        pass
    try:
        return json_loads(text)
    except ValueError:
        return None


def _paper_fence_body(text: str) -> str | None:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return None
    body = stripped.splitlines()[1:]
    if body and body[-1].strip().startswith("```"):
        body = body[:-1]
    return "\n".join(body).strip() if body else None


def paper_classes(emission: Any, config: ClassifierConfig) -> set[str]:
    """The class of ``emission`` as the paper's public code assigns it (``gar.emission_action``
    after ``normalize_emission``), as a set: ``set()`` where it gives none.

    * Text: TOOL_CALL when it starts with a Python call list ``[f(``, a JSON list whose first
      object starts with ``"name"``, or one JSON object ``{"name": "f", ..."arguments"|
      "parameters":``, or holds ``<tool_call`` anywhere; or when the whole text (or the body
      of a whole fenced block) is a ``{...}`` / ``[{...}]`` literal of call objects. Else no
      class when blank, else the cues (``config``) on the whole text, quotes normalised by
      the paper's wider table (the cue tables are ``config``'s: the ``paper`` preset's).
    * Anything else: TOOL_CALL when it is a non-empty object, or a list of objects with at
      least one key (BFCL's ``[{tool_name: arguments}]``), else no class (``None``, ``[]``, a
      list of strings). A message ``{"content", "tool_calls"}`` (callscope's own runs) is
      read as BFCL saves it: its calls, else its text.
    """
    if hasattr(emission, "tool_calls") and hasattr(emission, "text"):  # ModelReply
        emission = {"content": emission.text, "tool_calls": emission.tool_calls}
    if isinstance(emission, dict) and emission and set(emission) <= MESSAGE_KEYS:
        if emission.get("tool_calls"):
            return {TOOL_CALL}
        emission = emission.get("content", emission.get("text"))
    if isinstance(emission, str):
        if _paper_is_call_text(emission):
            return {TOOL_CALL}
        body = _paper_fence_body(emission)
        body = emission.strip() if body is None else body
        if body.startswith("{") and _paper_calls(_paper_literal(body)):
            return {TOOL_CALL}
        if not emission.strip():
            return set()
        return cue_classes(emission.translate(_PAPER_QUOTES), config) or {OTHER}
    items = [emission] if isinstance(emission, dict) else emission
    if not isinstance(items, list | tuple) or not all(isinstance(i, dict) for i in items):
        return set()
    return {TOOL_CALL} if any(items) else set()


VARIANTS.register("paper", paper_classes)
