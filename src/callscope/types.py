"""Core value types shared by every stage of the pipeline.

Data flows one way: dataset -> ``Case`` -> model (``ModelReply``) -> parse (``ParseResult``)
-> diagnose (``saag.Diagnosis``) -> store -> aggregate -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from callscope.errors import DataFormatError

#: The correction loop's feedback modes: the SAAG paper's three (section 2.4) and callscope's
#: ``gated`` (issue 17, :mod:`callscope.saag.gated`), then the gated ablations (one
#: ingredient off each; run them by naming them, they are not in :data:`MODES`).
Mode = Literal[
    "direct",
    "binary",
    "structured",
    "gated",
    "gated-ungated",
    "gated-nokeep",
    "gated-nobest",
    "gated-norepeat",
    "gated-noparse",
]
MODES: tuple[Mode, ...] = ("direct", "binary", "structured", "gated")
#: the SAAG paper's three modes
PAPER_MODES: tuple[Mode, ...] = ("direct", "binary", "structured")
#: the gated loop modes, the full one first (settings: ``callscope.saag.gated.GATED_VARIANTS``)
GATED_MODES: tuple[Mode, ...] = (
    "gated",
    "gated-ungated",
    "gated-nokeep",
    "gated-nobest",
    "gated-norepeat",
    "gated-noparse",
)
#: every mode a loop runs
LOOP_MODES: tuple[Mode, ...] = (*MODES, *GATED_MODES[1:])
#: How the registry reaches a model: the backend's native ``tools`` field, or rendered into the
#: system prompt (SAAG paper, Fig. 5).
Style = Literal["native", "prompt"]

#: The action classes of one emission (calibration paper, section 3.1).
TOOL_CALL = "TOOL_CALL"
REFUSE = "REFUSE"
ASK = "ASK"
CONFIRM = "CONFIRM"
OTHER = "OTHER"
#: every action class, in the default priority order
ACTION_CLASSES: tuple[str, ...] = (TOOL_CALL, REFUSE, ASK, CONFIRM, OTHER)


@dataclass(frozen=True)
class ToolCall:
    """One parsed tool call. ``arguments`` only ever holds JSON-like literals."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ParseResult:
    """What the parser made of one model emission.

    ``calls`` keeps every call found, in order (the cascade scores the first).
    ``error`` says why nothing was parsed; it is ``None`` whenever ``calls`` is non-empty.
    ``form`` names the syntax that matched (``json``, ``fenced``, ``tool_call_tag``,
    ``functioncall``, ``python``, ``native``), for diagnostics.

    ``unreadable`` lists the call attempts of the answer that could not be read, each with its
    position among *all* the answer's calls (readable and not) and the parser's reason: a
    native ``tool_calls`` entry whose arguments are not JSON, a call cut off after readable
    ones. The readable calls keep their order in ``calls``; the position of the ``i``-th
    readable call is the ``i``-th position not taken by an unreadable one
    (:meth:`positions`).

    ``attempts``: for text read as prose (``error`` is
    :data:`~callscope.parse.text.NO_CALL_FOUND`), the names it writes as ``name(`` that did
    not parse, with the parser's reason: whether one of them is a registered function (a
    broken call, not prose) is decided where the registry is known
    (:func:`callscope.saag.answer.no_call_kind`).
    """

    calls: tuple[ToolCall, ...] = ()
    error: str | None = None
    form: str | None = None
    unreadable: tuple[tuple[int, str], ...] = ()
    attempts: tuple[tuple[str, str], ...] = ()

    def positions(self) -> tuple[int, ...]:
        """The position in the whole answer of each readable call, in ``calls`` order.

        >>> ParseResult((ToolCall("a"), ToolCall("b")), unreadable=((1, "cut off"),)).positions()
        (0, 2)
        """
        taken = {pos for pos, _ in self.unreadable}
        out: list[int] = []
        pos = 0
        for _ in self.calls:
            while pos in taken:
                pos += 1
            out.append(pos)
            pos += 1
        return tuple(out)

    @property
    def ok(self) -> bool:
        return bool(self.calls)

    @property
    def first(self) -> ToolCall | None:
        return self.calls[0] if self.calls else None


@dataclass
class Case:
    """One evaluation case (the ``run`` cases format): a request, a registry and its gold.

    ``functions`` are JSON-schema function specs ``{name, description, parameters}``.
    ``gold`` is the expected *answer*, in one of three forms:

    * one gold call ``{"name", "arguments"}``; a BFCL-derived gold call may instead (or also)
      carry ``"acceptable": {param: [acceptable values...]}`` where ``""`` means "may be
      omitted" (the single-call cases of every earlier version);
    * a list of gold calls, for an answer of several calls (BFCL's parallel categories),
      matched to the model's calls in any order;
    * ``[]``: no call is the right answer (BFCL's irrelevance categories).

    ``None``: no gold (intrinsic metrics only).

    ``meta`` keys callscope reads: ``expects_call`` (see :attr:`expects_call`) and
    ``answer_format``: ``"calls"`` asks the prompt to allow an answer of several calls or
    of none (:func:`callscope.models.prompting.initial_messages`); the cases of BFCL's
    parallel and relevance categories carry it, every case of such a build alike, so the
    prompt never tells how many calls the gold has.
    """

    id: str
    query: str
    functions: list[dict[str, Any]]
    gold: dict[str, Any] | list[dict[str, Any]] | None = None
    scale: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def gold_calls(self) -> tuple[dict[str, Any], ...] | None:
        """The gold answer as a tuple of gold calls (one, several, or none for a no-call case);
        ``None`` without gold."""
        if self.gold is None:
            return None
        return tuple(self.gold) if isinstance(self.gold, list) else (self.gold,)

    @property
    def expects_call(self) -> bool | None:
        """Whether the right answer makes a call: ``True`` for call gold, ``False`` for a
        no-call case (gold ``[]``), ``None`` without gold. The loop and the answer cascade
        read this (not the gold's content): an answer with no call is a stage-1 failure when
        a call is expected, an abstention otherwise."""
        calls = self.gold_calls
        if calls is None:
            expected = self.meta.get("expects_call")
            return expected if isinstance(expected, bool) else None
        return bool(calls)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "query": self.query, "functions": self.functions}
        if self.gold is not None:
            d["gold"] = self.gold
        if self.scale is not None:
            d["scale"] = self.scale
        if self.meta:
            d["meta"] = self.meta
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        """Build a case from a row; raises ``DataFormatError`` (a ``ValueError``) with a clear reason when malformed."""
        if not isinstance(d, dict):
            raise DataFormatError("row is not a JSON object")
        if "id" not in d:
            raise DataFormatError("row has no 'id'")
        query = d.get("query")
        if not isinstance(query, str):
            raise DataFormatError("'query' must be a string")
        functions = d.get("functions")
        if not isinstance(functions, list) or not all(
            isinstance(f, dict) and isinstance(f.get("name"), str) for f in functions
        ):
            raise DataFormatError("'functions' must be a list of objects with a string 'name'")
        for f in functions:
            if f.get("parameters") is not None and not isinstance(f["parameters"], dict):
                raise DataFormatError(
                    f"'parameters' of function {_shown(f['name'])} must be an object"
                )
        gold = d.get("gold")
        if gold is not None:
            _check_gold(gold)
        meta = d.get("meta") or {}
        try:
            case_id = str(d["id"])
        except ValueError as exc:  # an integer over Python's int/str digit limit
            raise DataFormatError(f"'id' cannot be read as text: {exc}") from None
        return cls(
            id=case_id,
            query=query,
            functions=functions,
            gold=gold,
            scale=_scale(d.get("scale")),
            meta=dict(meta) if isinstance(meta, dict) else {},
        )


def _scale(value: Any) -> int | None:
    """A row's ``scale``: ``None``, an integer, or text / a number ``int`` reads exactly."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DataFormatError(f"'scale' must be an integer, got {type(value).__name__}")
    try:
        scale = int(value)
    except (ValueError, OverflowError):
        raise DataFormatError(f"'scale' must be an integer, got {str(value)[:40]!r}") from None
    if isinstance(value, float) and scale != value:
        raise DataFormatError(f"'scale' must be an integer, got {value!r}")
    return scale


#: a name an error message quotes is cut to this many characters (a 1 MB tool name made a
#: 1 MB line of the terminal)
MAX_NAME_SHOWN = 80


def _shown(name: str) -> str:
    """``name`` as an error message quotes it: its ``repr``, cut to :data:`MAX_NAME_SHOWN`
    characters, with how many more it holds.

    >>> _shown("get_weather")
    "'get_weather'"
    >>> shown = _shown("x" * 1_000_000)
    >>> len(shown), shown[80:]
    (111, "x'... (999,920 more characters)")
    """
    if len(name) <= MAX_NAME_SHOWN:
        return repr(name)
    return f"{name[:MAX_NAME_SHOWN]!r}... ({len(name) - MAX_NAME_SHOWN:,} more characters)"


def _check_gold(gold: Any) -> None:
    """A gold answer: one gold call, or a list of them (``[]``: no call); a gold call is
    ``{"name": str, "arguments"?: object, "acceptable"?: {param: [values]}}``."""
    if isinstance(gold, list):
        for i, call in enumerate(gold):
            try:
                _check_gold_call(call)
            except DataFormatError as exc:
                raise DataFormatError(f"'gold' item {i}: {exc}") from None
        return
    _check_gold_call(gold)


def _check_gold_call(gold: Any) -> None:
    if not (isinstance(gold, dict) and isinstance(gold.get("name"), str)):
        raise DataFormatError(
            "'gold' must be an object with a string 'name', or a list of such objects "
            "([] for a case whose right answer is no call)"
        )
    if gold.get("arguments") is not None and not isinstance(gold["arguments"], dict):
        raise DataFormatError("'gold.arguments' must be an object")
    acceptable = gold.get("acceptable")
    if acceptable is not None:
        if not isinstance(acceptable, dict):
            raise DataFormatError("'gold.acceptable' must be an object of lists")
        for key, values in acceptable.items():
            if not isinstance(values, list):
                raise DataFormatError(f"'gold.acceptable' value of {_shown(key)} must be a list")


@dataclass
class ModelReply:
    """One answer from a model backend.

    ``text`` is the assistant message content; ``tool_calls`` the backend's native tool
    calls, normalised to ``[{"name": str, "arguments": dict | str}]`` (``arguments`` stays a
    string when the backend sent one that is not valid JSON, so the parser can report it).
    ``prompt_tokens_evaluated`` is how many prompt tokens the engine actually computed
    (less than ``prompt_tokens`` when a KV-cache prefix was reused); ``None`` if unknown.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_evaluated: int | None = None
    latency_s: float = 0.0
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": self.tool_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "prompt_tokens_evaluated": self.prompt_tokens_evaluated,
            "latency_s": self.latency_s,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelReply:
        return cls(
            text=d.get("text") or "",
            tool_calls=d.get("tool_calls"),
            prompt_tokens=d.get("prompt_tokens"),
            completion_tokens=d.get("completion_tokens"),
            prompt_tokens_evaluated=d.get("prompt_tokens_evaluated"),
            latency_s=float(d.get("latency_s") or 0.0),
            cached=bool(d.get("cached", False)),
        )
