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

* **Intended calls count**: a Python call list at the start of the text or of a line
  (``[setCruiseControl(speed=65.0, activate=true)]``, a call cut off mid-argument) is a
  TOOL_CALL even when its arguments are not literals (its *execution* may still reject it);
  its text is not prose. **Regurgitated documentation is not a call**: JSON objects that
  describe a function (``name`` + ``description`` + a ``parameters`` schema, no
  ``arguments``) and pretty-printed schema lines are removed before calls and cues are read.
  **A hallucinated user turn** (a line ``user`` / ``human`` inside the emission) ends the
  model's own text: what follows is not read.
* **Empty emissions get no class** (``None``, blank text, ``[]``, a message with neither text
  nor calls): :func:`fired_classes` returns ``set()`` for them, so that the diagnostics can
  count them apart (a BFCL FC file records text replies as ``""``/``[]``).
  :func:`classify_emission` still answers OTHER for them (it must answer one class).

Presets (:data:`PRESETS`, :func:`register_preset`): ``default`` (the rules above),
``ask_over_tool_call`` (App. E variant) and ``paper``: the rules of the paper's public code
(github.com/fbj2333/tool-calling-calibration @ 5c9ec3d, Apache-2.0,
``bfcl_calibration/analysis/action_classifier.py``, ``gar.py``,
``emission_normalization/_core.py``), reproduced from its documented behaviour: its own cue
lists matched as plain substrings (``cue_match="substring"``), call syntax recognised only at
the start of the text by four patterns plus its normalisation of structured emissions
(``call_syntax="paper"``, see :func:`paper_classes`), no greeting or ``<think>`` removal, no
user-turn cut, empty emissions no class.

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
from callscope.parse import (
    MAX_INPUT_CHARS,
    balanced_end,
    parse_expression,
    parse_text,
    read_python_calls,
)
from callscope.parse.literals import MAX_CANDIDATES, json_loads
from callscope.parse.python_calls import literal
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

# The paper's public code (fbj2333/tool-calling-calibration @ 5c9ec3d,
# bfcl_calibration/analysis/action_classifier.py): its phrase tables, taken as facts.
#: REFUSE phrases of the paper's code.
PAPER_REFUSE_CUES: tuple[str, ...] = (
    "cannot",
    "can't",
    "unable to",
    "not able to",
    "no such function",
    "no function",
    "function is not available",
    "no such tool",
    "not available in",
    "is not provided",
    "is not supported",
    "do not have access",
    "don't have access",
    "no available function",
    "no matching function",
    "not authorized",
    "not permitted",
    "not possible",
    "i don't have a tool",
    "i do not have a tool",
    "no tool available",
)
#: ASK phrases of the paper's code, after its "any question mark" rule.
PAPER_ASK_CUES: tuple[str, ...] = (
    "?",
    "could you",
    "please provide",
    "please specify",
    "please tell",
    "please confirm",
    "i need to know",
    "i need the",
    "what is the",
    "what's the",
    "kindly provide",
    "would you provide",
    "i'll need",
    "could you confirm",
    "could you let me know",
    "could you tell",
    "please clarify",
    "please share",
    "please indicate",
)
#: CONFIRM phrases of the paper's code.
PAPER_CONFIRM_CUES: tuple[str, ...] = (
    "task complete",
    "all tasks",
    "all set",
    "all done",
    "fully done",
    "wrapped up",
    "completed successfully",
    "successfully completed",
    "successfully moved",
    "successfully created",
    "successfully deleted",
    "has been successfully",
    "have been successfully",
    "no further actions",
    "no further action",
    "no additional actions",
    "everything is",
    "everything's",
    "i have completed",
    "i've completed",
    "i have finished",
    "i've finished",
    "all the requested",
)
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
#: the ways :class:`ClassifierConfig` can match cues and read call syntax
CUE_MATCHES = ("word", "substring")
CALL_SYNTAXES = ("callscope", "paper")

# a Python call list opening at the start of the text or of a line: an intended call
_INTENDED_CALL = re.compile(r"(?m)^[ \t]*\[[ \t]*[A-Za-z_][\w.]*[ \t]*\(")
# a line that starts a user turn the model wrote itself ("\nuser\n", "<|im_start|>user")
_USER_TURN = re.compile(
    r"\n[ \t]*(?:<\|im_start\|>[ \t]*)?(?:user|human)[ \t]*:?[ \t]*(?=\n|$)", re.I
)
# JSON-schema keys that only function documentation carries together
_SCHEMA_DESCRIPTION = re.compile(r'"description"[ \t]*:')
_SCHEMA_SHAPE = re.compile(r'"properties"[ \t]*:[ \t]*\{|"type"[ \t]*:[ \t]*"(?:dict|object)"')
# one line of pretty-printed JSON: a member, a bare string/number/literal element, brackets
_JSON_LINE = re.compile(
    r'[ \t]*(?:"(?:[^"\\\n]|\\.)*"[ \t]*:.*|"(?:[^"\\\n]|\\.)*"[ \t]*,?'
    r"|[\[\]{}]+[ \t]*,?|-?[\d.eE+-]+[ \t]*,?|(?:true|false|null)[ \t]*,?)[ \t]*"
)

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S)
_FUNCTIONCALL_BLOCK = re.compile(r"<functioncall>.*?(?:<\|endoftext\|>|$)", re.S)
_FENCE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
_IDENT_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _py_call_start(text: str, pos: int) -> tuple[int, int] | None:
    """``(start, end)`` of the leftmost match at or after ``pos`` of
    ``\\[?\\s*[A-Za-z_][\\w.]*\\s*\\(`` (an optional ``[``, blanks, a name, blanks, ``(``), or
    ``None``. Linear time: each ``(`` is found by ``str.find`` and the text before it is read
    backwards at most to the previous ``(`` (a regex search retries the name at every start
    position: quadratic on a long word with no ``(``). ``\\s`` and ``\\w`` as :mod:`re` reads
    them (``str.isspace``; ``str.isalnum`` or ``_``)."""
    while True:
        paren = text.find("(", pos)
        if paren < 0:
            return None
        j = paren
        while j > pos and text[j - 1].isspace():
            j -= 1
        name_end = j
        while j > pos and (text[j - 1].isalnum() or text[j - 1] in "_."):
            j -= 1
        # the name starts at its first ASCII letter or underscore
        k = j
        while k < name_end and text[k] not in _IDENT_FIRST:
            k += 1
        if k == name_end:
            pos = paren + 1
            continue
        if k > j:
            return k, paren + 1  # a word character before the name: nothing to its left
        start = k
        while start > pos and text[start - 1].isspace():
            start -= 1
        if start > pos and text[start - 1] == "[":
            start -= 1
        return start, paren + 1


_NATIVE_KEYS = frozenset({"name", "function", "arguments", "parameters", "type", "id"})
_MESSAGE_KEYS = frozenset({"content", "text", "tool_calls", "role"})


@dataclass(frozen=True)
class ClassifierConfig:
    """The classification rule. Frozen and hashable; :meth:`to_dict` is what results record.

    ``priority`` orders the five classes (all five, each once). ``overrides`` are
    ``(winner, loser)`` pairs: when both fire, ``loser`` is dropped before the priority is
    applied. ``strip_think`` removes ``<think>...</think>`` reasoning before cue matching.
    ``cue_match``: ``"word"`` (a cue starts at a word boundary,
    :func:`callscope.core.text.cue_pattern`) or ``"substring"`` (plain ``cue in text``, as
    the paper's code). ``call_syntax``: ``"callscope"`` (the module docstring's rules) or
    ``"paper"`` (the paper code's reading, :func:`paper_classes`). ``cut_user_turns``: text
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
        if self.call_syntax not in CALL_SYNTAXES:
            raise ValueError(
                f"call_syntax must be one of {CALL_SYNTAXES}, got {self.call_syntax!r}"
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


#: The paper's main rule: TOOL_CALL > REFUSE > ASK > CONFIRM > OTHER.
DEFAULT = ClassifierConfig()
#: App. E variant: an emission that both calls a tool and asks the user counts as ASK.
ASK_OVER_TOOL_CALL = ClassifierConfig(overrides=((ASK, TOOL_CALL),), name="ask_over_tool_call")

#: The paper's public code, reproduced (module docstring): its cues, plain substrings, call
#: syntax only at the start, no greeting / ``<think>`` removal, no user-turn cut.
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

#: Named classifier configurations (name -> config); extend with :func:`register_preset`.
PRESETS: dict[str, ClassifierConfig] = {
    DEFAULT.name: DEFAULT,
    ASK_OVER_TOOL_CALL.name: ASK_OVER_TOOL_CALL,
    PAPER.name: PAPER,
}


def register_preset(config: ClassifierConfig, *, replace: bool = False) -> ClassifierConfig:
    """Add ``config`` to :data:`PRESETS` under ``config.name`` (``ValueError`` when the name
    is taken, unless ``replace``); the ``--classifier`` help and :func:`preset` read it."""
    if config.name in PRESETS and not replace:
        raise ValueError(f"classifier preset {config.name!r} already registered")
    PRESETS[config.name] = config
    return config


def preset_names() -> list[str]:
    """The registered preset names, in registration order."""
    return list(PRESETS)


def preset(name: str) -> ClassifierConfig:
    """A named configuration (:data:`PRESETS`: ``default``, ``ask_over_tool_call``,
    ``paper``, ...); ``ValueError`` otherwise."""
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
    #: nothing was emitted: no call and no non-blank text (``None``, ``""``, ``[]``, ...)
    blank: bool = True

    def merge(self, other: EmissionView) -> None:
        self.has_call = self.has_call or other.has_call
        self.prose.extend(other.prose)
        self.blank = self.blank and other.blank


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
        m = _py_call_start(text, pos)
        if m is None:
            break
        start = m[0] + (len(text[m[0] : m[1]]) - len(text[m[0] : m[1]].lstrip()))
        opener = start if text[start] == "[" else text.find("(", start)
        end = balanced_end(text, opener)
        if end > 0 and parse_text(text[start:end]).ok:
            out.append(text[last:start])
            pos = last = end
        else:
            pos = m[1]
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


def cut_user_turn(text: str) -> str:
    """``text`` up to the first line that opens a user turn the model wrote itself (a line
    ``user``, ``User:``, ``human`` or ``<|im_start|>user`` after some text): what follows is
    the model imagining the user, not its own action."""
    m = _USER_TURN.search(text)
    return text[: m.start()] if m else text


def is_documentation(value: Any) -> bool:
    """Whether a decoded JSON value describes functions instead of calling one: an object
    (or a non-empty list of objects) with a string ``name``, a ``description`` and a
    ``parameters`` object but no ``arguments`` (OpenAI's ``{"type": "function", "function":
    {...}}`` wrapper included)."""
    items = value if isinstance(value, list) else [value]
    if not items:
        return False
    for item in items:
        if not isinstance(item, dict):
            return False
        if item.get("type") == "function" and isinstance(item.get("function"), dict):
            item = item["function"]
        if not (
            isinstance(item.get("name"), str)
            and "description" in item
            and isinstance(item.get("parameters"), dict)
            and "arguments" not in item
        ):
            return False
    return True


def _odd_quotes(line: str) -> bool:
    return (line.count('"') - line.count('\\"')) % 2 == 1


def _documentation_line(line: str) -> bool:
    """A whole line of JSON that is function documentation (one-line schemas)."""
    stripped = line.strip().rstrip(",")
    if stripped[:1] not in ("{", "["):
        return False
    try:
        return is_documentation(json_loads(stripped))
    except (ValueError, RecursionError):
        return False


def strip_documentation(text: str) -> str:
    """``text`` without regurgitated function documentation.

    Applies only to text that carries a JSON ``"description":`` key and a schema shape
    (``"properties": {`` or ``"type": "dict"``/``"object"``): then every line of
    pretty-printed JSON (members, bare strings and literals, brackets), every line that is a
    whole JSON documentation value (:func:`is_documentation`), and a first or last line that
    is a fragment of a string cut at the emission's edge (an odd number of ``"``) are removed.
    One pass over the lines."""
    if not (_SCHEMA_DESCRIPTION.search(text) and _SCHEMA_SHAPE.search(text)):
        return text
    lines = text.split("\n")
    last = len(lines) - 1
    keep = [
        line
        for i, line in enumerate(lines)
        if not (
            _JSON_LINE.fullmatch(line)
            or _documentation_line(line)
            or (i in (0, last) and _odd_quotes(line))
        )
    ]
    return "\n".join(keep)


def intended_call_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each Python call list that opens at the start of the text or of a
    line (``[name(``), to its closing bracket, or to the end of the text when it never closes
    (cut off mid-argument); at most ``MAX_CANDIDATES`` openings are tried. Its arguments need not be literals: the model meant a call. The
    first call's parentheses must be followed by ``,`` or ``]`` (or be cut off): ``[f(x).g()]``
    is an expression, not a call list."""
    spans: list[tuple[int, int]] = []
    pos = tries = 0
    while tries < MAX_CANDIDATES and (m := _INTENDED_CALL.search(text, pos)) is not None:
        tries += 1
        start = text.index("[", m.start())
        paren_end = balanced_end(text, m.end() - 1)
        after = text[paren_end:].lstrip()[:1] if paren_end > 0 else ""
        if paren_end > 0 and after not in ("", ",", "]"):
            pos = m.end()
            continue
        end = balanced_end(text, start)
        if end < 0:
            spans.append((start, len(text)))
            break
        spans.append((start, end))
        pos = end
    return spans


def _view_text(text: str, config: ClassifierConfig) -> EmissionView:
    blank = not text.strip()
    if config.strip_think:
        text = strip_think(text)
    if config.cut_user_turns:
        text = cut_user_turn(text)
    text = strip_documentation(text)
    spans = intended_call_spans(text)
    if spans:
        pieces, last = [], 0
        for start, end in spans:
            pieces.append(text[last:start])
            last = end
        pieces.append(text[last:])
        text = " ".join(pieces)
    if parse_text(text).ok:
        return EmissionView(has_call=True, prose=[_prose_without_calls(text)], blank=False)
    if is_python_call_list(text):
        return EmissionView(has_call=True, blank=False)
    return EmissionView(has_call=bool(spans), prose=[text], blank=blank and not spans)


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
            return EmissionView(has_call=True, blank=False)
        view = EmissionView()
        calls = emission.get("tool_calls")
        if isinstance(calls, list) and any(
            _native_item_is_call(c) or _is_bfcl_call(c) for c in calls
        ):
            view.has_call = True
            view.blank = False
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


# --------------------------------------------------------------------------- the paper's reading


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
    except (ValueError, RecursionError):
        return None


def _paper_fence_body(text: str) -> str | None:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return None
    body = stripped.splitlines()[1:]
    if body and body[-1].strip().startswith("```"):
        body = body[:-1]
    return "\n".join(body).strip() if body else None


def paper_classes(emission: Any, config: ClassifierConfig = PAPER) -> set[str]:
    """The class of ``emission`` as the paper's public code assigns it (``gar.emission_action``
    after ``normalize_emission``), as a set: ``set()`` where it gives none.

    * Text: TOOL_CALL when it starts with a Python call list ``[f(``, a JSON list whose first
      object starts with ``"name"``, or one JSON object ``{"name": "f", ..."arguments"|
      "parameters":``, or holds ``<tool_call`` anywhere; or when the whole text (or the body
      of a whole fenced block) is a ``{...}`` / ``[{...}]`` literal of call objects. Else no
      class when blank, else the cues (``config``) on the whole text, quotes normalised by
      the paper's wider table.
    * Anything else: TOOL_CALL when it is a non-empty object, or a list of objects with at
      least one key (BFCL's ``[{tool_name: arguments}]``), else no class (``None``, ``[]``, a
      list of strings). A message ``{"content", "tool_calls"}`` (callscope's own runs) is
      read as BFCL saves it: its calls, else its text.
    """
    if hasattr(emission, "tool_calls") and hasattr(emission, "text"):  # ModelReply
        emission = {"content": emission.text, "tool_calls": emission.tool_calls}
    if isinstance(emission, dict) and emission and set(emission) <= _MESSAGE_KEYS:
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


# --------------------------------------------------------------------------- classification


def _strip_greetings(text: str, config: ClassifierConfig) -> str:
    for pattern in config._greetings:
        text = pattern.sub(" ", text)
    return text


def cue_classes(text: str, config: ClassifierConfig = DEFAULT) -> set[str]:
    """The cue classes (REFUSE, ASK, CONFIRM) whose cues fire on prose ``text``."""
    norm = _strip_greetings(normalize_text(text), config)
    return {cls for cls, pats in config._compiled.items() if any(p.search(norm) for p in pats)}


def fired_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """Every class that fires on ``emission`` (multi-label): ``{"OTHER"}`` when none does,
    ``set()`` when the emission is empty (nothing to classify: ``None``, blank text, ``[]``,
    a message with neither text nor calls). ``config.call_syntax == "paper"`` reads it as
    the paper's code does (:func:`paper_classes`).

    ``overrides`` are not applied here: this is the raw evidence.
    """
    if config.call_syntax == "paper":
        return paper_classes(emission, config)
    view = view_emission(emission, config)
    if view.blank and not view.has_call:
        return set()
    classes = cue_classes("\n".join(view.prose), config)
    if view.has_call:
        classes.add(TOOL_CALL)
    return classes or {OTHER}


def emission_classes(emission: Any, config: ClassifierConfig = DEFAULT) -> set[str]:
    """:func:`fired_classes`, with ``{"OTHER"}`` for an empty emission too (for callers that
    need one class per emission)."""
    return fired_classes(emission, config) or {OTHER}


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
