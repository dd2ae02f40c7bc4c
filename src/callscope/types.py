"""Core value types shared by every stage of the pipeline.

Data flows one way: dataset -> ``Case`` -> model (``ModelReply``) -> parse (``ParseResult``)
-> diagnose (``saag.Diagnosis``) -> store -> aggregate -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from callscope.errors import DataFormatError

#: The correction loop's feedback modes (SAAG paper, section 2.4).
Mode = Literal["direct", "binary", "structured"]
MODES: tuple[Mode, ...] = ("direct", "binary", "structured")
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
    """

    calls: tuple[ToolCall, ...] = ()
    error: str | None = None
    form: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.calls)

    @property
    def first(self) -> ToolCall | None:
        return self.calls[0] if self.calls else None


@dataclass
class Case:
    """One single-call evaluation case (the ``run`` cases format).

    ``functions`` are JSON-schema function specs ``{name, description, parameters}``.
    ``gold`` is ``{"name", "arguments"}``; a BFCL-derived gold may instead (or also) carry
    ``"acceptable": {param: [acceptable values...]}`` where ``""`` means "may be omitted".
    """

    id: str
    query: str
    functions: list[dict[str, Any]]
    gold: dict[str, Any] | None = None
    scale: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

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
        gold = d.get("gold")
        if gold is not None and not (isinstance(gold, dict) and isinstance(gold.get("name"), str)):
            raise DataFormatError("'gold' must be an object with a string 'name'")
        scale = d.get("scale")
        meta = d.get("meta") or {}
        return cls(
            id=str(d["id"]),
            query=query,
            functions=functions,
            gold=gold,
            scale=int(scale) if scale is not None else None,
            meta=dict(meta) if isinstance(meta, dict) else {},
        )


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
