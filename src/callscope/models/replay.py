"""``replay:<file>``: answer from recorded outputs, for offline and reproducible runs.

The file is JSON lines; three row shapes may be mixed:

* ``{"case_id", "attempt", "output", "mode"?}``: the answer for one case at one attempt
  (1-based); a row with ``mode`` only matches that mode: the SAAG loop sets the feedback mode
  (``first`` for the shared attempt 1, then ``binary``/``structured``), the multi-turn conversation driver
  sets the prompt style (``native``/``prompt``);
* ``{"case_id", "outputs": [out1, out2, ...], "mode"?}``: answers consumed by attempt
  (``outputs[attempt - 1]``), used when no exact ``attempt`` row exists;
* ``{"request_hash", "output", "spec"?}``: the answer for one exact request, hashed with
  :func:`callscope.models.cache.request_key` using the row's ``spec`` (or the
  ``source_spec`` option), as written by :meth:`CachedModel.export_replay`.

An ``output`` is either the reply text or an object ``{"text", "tool_calls", ...}``
(any :class:`ModelReply` field). Case rows need a context: the caller passes it with the
request, ``chat(messages, tools, decoding, context=RequestContext(case_id=..., mode=...,
attempt=...))`` (:class:`callscope.models.base.RequestContext`), so concurrent workers never
share one. Case rows are tried first, then request hashes; with neither, ``chat`` raises
``ModelError(kind="replay_missing")``.

Every row is read and checked when the file is opened, by the bounded JSON reader
(:func:`~callscope.core.jsonl.loads_bounded`) and :func:`reply_from_output`: a row that is
not JSON, nests too deeply, or has a field of the wrong type (``"latency_s": "slow"``) is a
``ValueError`` naming the file and line before the run starts, never a traceback partway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from callscope.core.jsonl import loads_bounded, read_lines
from callscope.errors import ModelError
from callscope.models.base import BackendOptions, ChatModel, ChatRequest
from callscope.models.cache import request_key
from callscope.types import ModelReply

_OutputKey = tuple[str, int, str | None]


#: the type each :class:`ModelReply` field of a recorded output must have (``None`` allowed)
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "text": str,
    "tool_calls": list,
    "prompt_tokens": int,
    "completion_tokens": int,
    "prompt_tokens_evaluated": int,
    "latency_s": (int, float),
    "cached": bool,
}


def reply_from_output(output: Any) -> ModelReply:
    """A recorded ``output`` (text, or an object of :class:`ModelReply` fields) as a reply;
    ``ValueError`` naming the field when one has the wrong type."""
    if isinstance(output, str):
        return ModelReply(text=output)
    if isinstance(output, dict):
        for name, kind in _FIELD_TYPES.items():
            value = output.get(name)
            if value is not None and (
                not isinstance(value, kind) or (kind is int and isinstance(value, bool))
            ):
                raise ValueError(
                    f"output field {name!r} must be {_type_words(kind)}, not {type(value).__name__}"
                )
        reply = ModelReply.from_dict(output)
        reply.cached = False
        return reply
    raise ValueError(f"output must be a string or an object, not {type(output).__name__}")


def _type_words(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list", int: "an integer", bool: "true or false"}
    return "a number" if isinstance(kind, tuple) else names[kind]


def _checked(output: Any, where: str) -> Any:
    """``output`` once :func:`reply_from_output` accepts it; else ``ValueError`` at ``where``."""
    try:
        reply_from_output(output)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return output


class ReplayModel(ChatModel):
    """Answers from a replay file; never touches the network."""

    def __init__(
        self,
        path: str | Path,
        *,
        source_spec: str | None = None,
        native_tools: bool = False,
        max_concurrency: int = 8,
    ) -> None:
        self.path = Path(path)
        self.spec = f"replay:{path}"
        self.supports_native_tools = bool(native_tools)
        self.max_concurrency = max(1, int(max_concurrency))
        self._by_attempt: dict[_OutputKey, Any] = {}
        self._by_list: dict[tuple[str, str | None], list[Any]] = {}
        self._by_hash: dict[str, Any] = {}
        self._hash_specs: list[str] = [source_spec] if source_spec else []
        self._load()

    @classmethod
    def from_spec(cls, path: str, options: BackendOptions) -> ReplayModel:
        """``replay:<file.jsonl>``; options ``source_spec`` (the spec request hashes were
        made with) and ``native_tools``."""
        return cls(
            Path(path).expanduser(),
            source_spec=options.extra.get("source_spec"),
            native_tools=bool(options.extra.get("native_tools", False)),
        )

    def _load(self) -> None:
        if not self.path.is_file():
            raise ValueError(f"replay file not found: {self.path}")
        for lineno, line in read_lines(self.path):  # the one bounded line reader
            try:
                if isinstance(line, ValueError):
                    raise line
                row = loads_bounded(line)
            except ValueError as exc:
                raise ValueError(f"{self.path}:{lineno}: not JSON ({exc})") from None
            self._add_row(row, f"{self.path}:{lineno}")

    def _add_row(self, row: Any, where: str) -> None:
        if not isinstance(row, dict):
            raise ValueError(f"{where}: row is not a JSON object")
        mode = row.get("mode")
        if "request_hash" in row:
            if "output" not in row:
                raise ValueError(f"{where}: request_hash row has no 'output'")
            self._by_hash[str(row["request_hash"])] = _checked(row["output"], where)
            spec = row.get("spec")
            if isinstance(spec, str) and spec not in self._hash_specs:
                self._hash_specs.append(spec)
        elif "case_id" in row and "outputs" in row:
            if not isinstance(row["outputs"], list):
                raise ValueError(f"{where}: 'outputs' must be a list")
            outputs = [_checked(o, f"{where}: outputs[{i}]") for i, o in enumerate(row["outputs"])]
            self._by_list[(str(row["case_id"]), mode)] = outputs
        elif "case_id" in row and "output" in row:
            attempt = row.get("attempt", 1)
            if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
                raise ValueError(f"{where}: 'attempt' must be a positive integer")
            self._by_attempt[(str(row["case_id"]), attempt, mode)] = _checked(row["output"], where)
        else:
            raise ValueError(
                f"{where}: row needs 'case_id' with 'output' or 'outputs', or 'request_hash'"
            )

    def _case_output(self, case_id: str, attempt: int, mode: str | None) -> tuple[bool, Any]:
        for m in (mode, None) if mode is not None else (None,):
            key = (case_id, attempt, m)
            if key in self._by_attempt:
                return True, self._by_attempt[key]
        for m in (mode, None) if mode is not None else (None,):
            outputs = self._by_list.get((case_id, m))
            if outputs is not None and 1 <= attempt <= len(outputs):
                return True, outputs[attempt - 1]
        return False, None

    def answer(self, request: ChatRequest) -> ModelReply:
        messages, tools, decoding, context = request
        case_id = context.case_id if context is not None else None
        attempt = int(context.attempt or 1) if context is not None else 1
        mode = context.mode if context is not None else None
        if case_id is not None:
            found, output = self._case_output(str(case_id), attempt, mode)
            if found:
                return self.counted(reply_from_output(output))
        for spec in self._hash_specs:
            key = request_key(spec, messages, tools, decoding)
            if key in self._by_hash:
                return self.counted(reply_from_output(self._by_hash[key]))
        where = (
            f"case {case_id!r} attempt {attempt}" + (f" mode {mode}" if mode else "")
            if case_id is not None
            else "this request (no case context set)"
        )
        raise ModelError(
            f"replay file {self.path} has no answer for {where}, nor for the request hash",
            kind="replay_missing",
        )
