"""Classify one model emission into an action class: TOOL_CALL, REFUSE, ASK, CONFIRM or OTHER.

(Over 500 lines on purpose: the whole rule set a user relies on, syntax for TOOL_CALL, the cue
lists, their priority and the presets, reads top to bottom in one module.)

This is the per-emission step of the action-class diagnostic (paper "Calibration is the
Bottleneck", §3.1 and App. E). The rule a user relies on:

* **TOOL_CALL is decided by syntax**, never by words: the emission carries a native tool call
  (an OpenAI/Ollama ``tool_calls`` list, a ``{"name", "arguments"}`` object, BFCL's
  ``[{tool_name: arguments}]`` list), or its text is one that :func:`callscope.parse.parse_text`
  turns into calls (a Python call list ``[f(a=1)]``, ``<tool_call>`` blocks, Glaive's
  ``<functioncall>``, fenced code blocks, a JSON list of ``{"name": ...}`` objects, one JSON
  object with ``name`` and ``arguments``/``parameters``, ...), or its whole text is a Python
  call list with positional literal arguments (``[sort('a.txt')]``, as in BFCL's gold; see
  :func:`is_python_call_list`). A native call with a string
  name counts even when its arguments are malformed: the model chose to call.
* **REFUSE, ASK and CONFIRM are decided by cues** (phrases, see :class:`ClassifierConfig`) on
  the emission's prose, lower-cased after curly quotes are normalised (``’ ‘ “ ”`` to ``' "``).
  The prose excludes the call syntax itself (a ``?`` inside a call's argument is not a
  question), ``<think>...</think>`` blocks, and greeting formulas such as "How can I help you
  today?" (a greeting is not an ask). A cue matches where it starts at a word boundary, as a
  word prefix (:func:`callscope.core.text.cue_pattern`, ``whole_word=False``: "cannot" does
  not fire inside "pecannot"; "no function" fires in "no functions"); a cue written
  ``re:<regex>`` is a regular expression (the default ASK cues use one for a sentence that
  starts with "which").
* **One class per emission**: the first class of ``priority`` among those that fire, default
  TOOL_CALL > REFUSE > ASK > CONFIRM > OTHER (REFUSE before ASK because refusals often contain
  a question mark). ``overrides`` lists ``(winner, loser)`` pairs applied before the priority:
  the preset :data:`ASK_OVER_TOOL_CALL` credits an emission that both calls a tool and asks
  the user to ASK (the paper's App. E variant). OTHER is the residual class.

Every result should report :meth:`ClassifierConfig.to_dict` so the rule used is on record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from callscope.core.text import cue_pattern, normalize_text, strip_think
from callscope.parse import MAX_INPUT_CHARS, balanced_end, parse_text, read_python_calls
from callscope.types import ACTION_CLASSES, ASK, CONFIRM, OTHER, REFUSE, TOOL_CALL

#: Inability or unavailability of a tool, a permission or an action.
DEFAULT_REFUSE_CUES: tuple[str, ...] = (
    "cannot",
    "can't",
    "can not",
    "unable to",
    "not able to",
    "no such function",
    "no such tool",
    "no function",
    "no tool",
    "no available function",
    "no available tool",
    "none of the available",
    "not available",
    "isn't available",
    "aren't available",
    "unavailable",
    "don't have access",
    "do not have access",
    "don't have the ability",
    "do not have the ability",
    "don't have a function",
    "do not have a function",
    "don't have a tool",
    "do not have a tool",
    "not permitted",
    "not allowed to",
    "isn't possible",
    "is not possible",
    "not possible",
    "not supported",
    "doesn't support",
    "does not support",
    "beyond my capabilities",
    "outside my capabilities",
    "lack the necessary",
)

#: A question mark, or a request that the user supply information.
DEFAULT_ASK_CUES: tuple[str, ...] = (
    "?",
    "could you",
    "can you tell me",
    "can you provide",
    "can you specify",
    "can you confirm",
    "would you",
    "please provide",
    "please specify",
    "please tell me",
    "please let me know",
    "please confirm",
    "please clarify",
    "kindly provide",
    "i need the",
    "i need to know",
    "i need more information",
    "i'll need the",
    "i will need the",
    "need more information",
    "need more details",
    "let me know which",
    "let me know the",
    "which one",
    r"re:(?:^|[.!:;\n]\s*)which\b",
)

#: Claims that the task is finished.
DEFAULT_CONFIRM_CUES: tuple[str, ...] = (
    "task complete",
    "task is complete",
    "task has been completed",
    "tasks have been completed",
    "all done",
    "has been successfully",
    "have been successfully",
    "was successfully",
    "were successfully",
    "successfully",
    "has been completed",
    "have been completed",
    "is now complete",
    "are now complete",
    "i have completed",
    "i've completed",
    "no further action",
    "nothing else to do",
)

#: Greeting and sign-off formulas removed before the cues are matched (regular expressions on
#: the normalised lower-case text): "How can I help you today?" is not an ask.
DEFAULT_GREETING_PATTERNS: tuple[str, ...] = (
    r"\b(?:how|what)\s+(?:else\s+)?(?:can|may|could|shall)\s+i\s+(?:help|assist|do for)"
    r"(?:\s+you)?(?:\s+(?:today|further|with(?:\s+anything)?(?:\s+else)?|now))*\s*\??",
    r"\bis\s+there\s+anything\s+else\s+(?:i\s+can|you\s+(?:need|want|would like))"
    r"[^.?!\n]*\??",
    r"\banything\s+else\s+(?:i\s+can\s+(?:help|assist|do)[^.?!\n]*)?\?",
    r"\b(?:feel\s+free\s+to|don't\s+hesitate\s+to)\s+(?:ask|let\s+me\s+know)[^.?!\n]*[.!]?",
    r"\blet\s+me\s+know\s+if\s+(?:you\s+need|there's|there\s+is)[^.?!\n]*[.!?]?",
)

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S)
_FUNCTIONCALL_BLOCK = re.compile(r"<functioncall>.*?(?:<\|endoftext\|>|$)", re.S)
_FENCE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
_PY_CALL_START = re.compile(r"\[?\s*[A-Za-z_][\w.]*\s*\(")
_NATIVE_KEYS = frozenset({"name", "function", "arguments", "parameters", "type", "id"})
_MESSAGE_KEYS = frozenset({"content", "text", "tool_calls", "role"})


@dataclass(frozen=True)
class ClassifierConfig:
    """The classification rule. Frozen and hashable; :meth:`to_dict` is what results record.

    ``priority`` orders the five classes (all five, each once). ``overrides`` are
    ``(winner, loser)`` pairs: when both fire, ``loser`` is dropped before the priority is
    applied. ``strip_think`` removes ``<think>...</think>`` reasoning before cue matching.
    """

    priority: tuple[str, ...] = ACTION_CLASSES
    refuse_cues: tuple[str, ...] = DEFAULT_REFUSE_CUES
    ask_cues: tuple[str, ...] = DEFAULT_ASK_CUES
    confirm_cues: tuple[str, ...] = DEFAULT_CONFIRM_CUES
    greeting_patterns: tuple[str, ...] = DEFAULT_GREETING_PATTERNS
    overrides: tuple[tuple[str, str], ...] = ()
    strip_think: bool = True
    name: str = "default"

    def __post_init__(self) -> None:
        if sorted(self.priority) != sorted(ACTION_CLASSES):
            raise ValueError(
                f"priority must list each of {', '.join(ACTION_CLASSES)} once, got {self.priority}"
            )
        for pair in self.overrides:
            if len(pair) != 2 or not set(pair) <= set(ACTION_CLASSES) or pair[0] == pair[1]:
                raise ValueError(f"override must be a (winner, loser) pair of classes: {pair!r}")
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
            name=str(d.get("name", "custom")),
        )

    @cached_property
    def _compiled(self) -> dict[str, tuple[re.Pattern[str], ...]]:
        def patterns(cues: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
            # one pattern per cue: a ``re:`` cue keeps its own groups
            return tuple(p for c in cues if (p := cue_pattern(c)) is not None)

        return {
            REFUSE: patterns(self.refuse_cues),
            ASK: patterns(self.ask_cues),
            CONFIRM: patterns(self.confirm_cues),
        }

    @cached_property
    def _greetings(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p) for p in self.greeting_patterns)


#: The paper's main rule: TOOL_CALL > REFUSE > ASK > CONFIRM > OTHER.
DEFAULT = ClassifierConfig()
#: App. E variant: an emission that both calls a tool and asks the user counts as ASK.
ASK_OVER_TOOL_CALL = ClassifierConfig(overrides=((ASK, TOOL_CALL),), name="ask_over_tool_call")

PRESETS: dict[str, ClassifierConfig] = {
    DEFAULT.name: DEFAULT,
    ASK_OVER_TOOL_CALL.name: ASK_OVER_TOOL_CALL,
}


def preset(name: str) -> ClassifierConfig:
    """A named configuration (``default``, ``ask_over_tool_call``); ``ValueError`` otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown classifier preset {name!r}; known: {sorted(PRESETS)}") from None


# --------------------------------------------------------------------------- emission reading


@dataclass
class EmissionView:
    """What the classifier sees of one emission: whether it calls a tool, and its prose."""

    has_call: bool = False
    prose: list[str] = field(default_factory=list)

    def merge(self, other: EmissionView) -> None:
        self.has_call = self.has_call or other.has_call
        self.prose.extend(other.prose)


def _native_item_is_call(item: Any) -> bool:
    """A native tool-call object with a non-empty string name (OpenAI, Ollama or bare)."""
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name")
    return isinstance(name, str) and bool(name.strip())


def _is_bfcl_call(item: Any) -> bool:
    """BFCL's API-model form ``{tool_name: arguments}`` (arguments a JSON string or object)."""
    if not isinstance(item, dict) or len(item) != 1:
        return False
    ((key, value),) = item.items()
    return (
        isinstance(key, str)
        and bool(key.strip())
        and key not in _NATIVE_KEYS | _MESSAGE_KEYS
        and isinstance(value, dict | str)
    )


def _strip_json_calls(text: str) -> str:
    """``text`` without the JSON values in it that parse as calls."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    i = last = 0
    while i < len(text):
        if text[i] not in "{[":
            i += 1
            continue
        try:
            value, end = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            i += 1
            continue
        if parse_text(json.dumps(value)).ok:
            out.append(text[last:i])
            i = last = end
        else:
            i += 1
    out.append(text[last:])
    return "".join(out)


def _strip_python_calls(text: str) -> str:
    """``text`` without the Python call expressions in it that parse as calls."""
    out: list[str] = []
    pos = last = 0
    while True:
        m = _PY_CALL_START.search(text, pos)
        if not m:
            break
        start = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        opener = start if text[start] == "[" else text.find("(", start)
        end = balanced_end(text, opener)
        if end > 0 and parse_text(text[start:end]).ok:
            out.append(text[last:start])
            pos = last = end
        else:
            pos = m.end()
    out.append(text[last:])
    return "".join(out)


def _prose_without_calls(text: str) -> str:
    """The prose of a text emission that parses as calls: call syntax removed."""
    for block in (_TOOL_CALL_BLOCK, _FUNCTIONCALL_BLOCK, _FENCE_BLOCK):
        text = block.sub(" ", text)
    return _strip_python_calls(_strip_json_calls(text))


def is_python_call_list(text: str) -> bool:
    """Whether the whole of ``text`` is ``f(...)`` or ``[f(...), g(...)]`` with literal
    arguments, positional ones included (``[sort('a.txt')]``: BFCL's gold and its decoder use
    them; :func:`callscope.parse.parse_text` does not accept them). Read by
    :func:`callscope.parse.read_python_calls` (:mod:`ast`, never evaluated)."""
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_INPUT_CHARS:
        return False
    try:
        read_python_calls(stripped, positional=True)
    except ValueError:
        return False
    return True


def _view_text(text: str, config: ClassifierConfig) -> EmissionView:
    if config.strip_think:
        text = strip_think(text)
    if parse_text(text).ok:
        return EmissionView(has_call=True, prose=[_prose_without_calls(text)])
    if is_python_call_list(text):
        return EmissionView(has_call=True)
    return EmissionView(prose=[text])


def view_emission(emission: Any, config: ClassifierConfig = DEFAULT) -> EmissionView:
    """Read any supported emission shape into an :class:`EmissionView`.

    Shapes: ``None`` (nothing emitted); text; a message object ``{"content"|"text",
    "tool_calls"}``; a :class:`~callscope.types.ModelReply`; a single call object
    (``{"name", "arguments"}`` or BFCL's ``{tool_name: arguments}``); a list of any of these
    (BFCL API models save ``[{tool_name: arguments}, ...]``; a list of Python call strings
    ``["f(a=1)", ...]`` is read element by element). Raises ``TypeError`` on other types.
    """
    if emission is None:
        return EmissionView()
    if isinstance(emission, str):
        return _view_text(emission, config)
    if hasattr(emission, "tool_calls") and hasattr(emission, "text"):  # ModelReply
        return view_emission({"content": emission.text, "tool_calls": emission.tool_calls}, config)
    if isinstance(emission, list | tuple):
        view = EmissionView()
        for item in emission:
            view.merge(view_emission(item, config))
        return view
    if isinstance(emission, dict):
        if _native_item_is_call(emission) or _is_bfcl_call(emission):
            return EmissionView(has_call=True)
        view = EmissionView()
        calls = emission.get("tool_calls")
        if isinstance(calls, list) and any(
            _native_item_is_call(c) or _is_bfcl_call(c) for c in calls
        ):
            view.has_call = True
        content = emission.get("content", emission.get("text"))
        if isinstance(content, str):
            view.merge(_view_text(content, config))
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    view.merge(_view_text(part["text"], config))
                elif isinstance(part, str):
                    view.merge(_view_text(part, config))
        elif content is not None:
            raise TypeError(f"message content of type {type(content).__name__}")
        elif not set(emission) & _MESSAGE_KEYS:
            raise TypeError("object emission is neither a message nor a call")
        return view
    raise TypeError(f"unsupported emission type {type(emission).__name__}")


# --------------------------------------------------------------------------- classification


def _strip_greetings(text: str, config: ClassifierConfig) -> str:
    for pattern in config._greetings:
        text = pattern.sub(" ", text)
    return text


def cue_classes(text: str, config: ClassifierConfig = DEFAULT) -> set[str]:
    """The cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose ``text``."""
    norm = _strip_greetings(normalize_text(text), config)
    return {cls for cls, pats in config._compiled.items() if any(p.search(norm) for p in pats)}


def emission_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """Every class that fires on ``emission`` (multi-label); ``{"OTHER"}`` when none does.

    ``overrides`` are not applied here: this is the raw evidence.
    """
    view = view_emission(emission, config)
    classes = cue_classes("\n".join(view.prose), config)
    if view.has_call:
        classes.add(TOOL_CALL)
    return classes or {OTHER}


def resolve(classes: Iterable[str], config: ClassifierConfig = DEFAULT) -> str:
    """One class out of the fired ``classes``: overrides first, then the priority order."""
    fired = set(classes)
    for winner, loser in config.overrides:
        if winner in fired and loser in fired:
            fired.discard(loser)
    for cls in config.priority:
        if cls in fired:
            return cls
    return OTHER


def classify_emission(emission: Any, config: ClassifierConfig = DEFAULT) -> str:
    """The single action class of ``emission`` under ``config`` (see the module docstring)."""
    return resolve(emission_classes(emission, config), config)


# --------------------------------------------------------------------------- JSONL


def classify_row(row: Any, config: ClassifierConfig = DEFAULT) -> dict[str, Any]:
    """Classify one ``{"id", "emission"}`` row; a malformed row gets an ``error`` instead."""
    if not isinstance(row, dict):
        return {"id": None, "error": "row is not a JSON object", "config": config.to_dict()}
    rid = row.get("id")
    if "emission" not in row:
        return {"id": rid, "error": "row has no 'emission'", "config": config.to_dict()}
    try:
        classes = emission_classes(row["emission"], config)
    except TypeError as exc:
        return {"id": rid, "error": f"unsupported emission: {exc}", "config": config.to_dict()}
    return {
        "id": rid,
        "class": resolve(classes, config),
        "classes": [c for c in ACTION_CLASSES if c in classes],
        "config": config.to_dict(),
    }


def classify_jsonl(
    in_path: str | Path, out_path: str | Path, config: ClassifierConfig = DEFAULT
) -> dict[str, Any]:
    """Classify every row of a JSONL file of ``{"id", "emission"}`` into ``out_path``.

    Each output line is ``{"id", "class", "classes", "config"}`` (``classes`` = every class
    that fired, in :data:`ACTION_CLASSES` order), or ``{"id", "line", "error", "config"}`` for
    a malformed input line (not JSON, not an object, no ``emission``, unsupported shape).
    Blank lines are skipped. Returns a summary: ``rows``, ``errors``, ``counts`` per class
    and ``config``.
    """
    counts = {c: 0 for c in ACTION_CLASSES}
    rows = errors = 0
    with open(in_path, encoding="utf-8") as src, open(out_path, "w", encoding="utf-8") as dst:
        for lineno, line in enumerate(src, start=1):
            if not line.strip():
                continue
            rows += 1
            try:
                row: Any = json.loads(line)
            except json.JSONDecodeError as exc:
                row = None
                out = {
                    "id": None,
                    "error": f"not valid JSON ({exc.msg})",
                    "config": config.to_dict(),
                }
            else:
                out = classify_row(row, config)
            if "error" in out:
                errors += 1
                out = {
                    "id": out["id"],
                    "line": lineno,
                    "error": out["error"],
                    "config": out["config"],
                }
            else:
                counts[out["class"]] += 1
            dst.write(json.dumps(out, ensure_ascii=False) + "\n")
    return {"rows": rows, "errors": errors, "counts": counts, "config": config.to_dict()}
