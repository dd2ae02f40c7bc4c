"""Agent traces as they are: every tool call of the model spans in a trace file diagnosed.

A reader next to :mod:`callscope.guard.chatlog`: each model span becomes a one-turn
:class:`~callscope.guard.chatlog.ChatConversation` (its input messages, the output message
as the turn checked, its tools) whose id is the span's **trace** id, so that
:func:`~callscope.guard.chatlog.diagnose_conversations`, ``call_rows`` and
``summarize_turns`` give the rows and the per-trace summary of ``score --from-chat``.

Layouts read (the conventions' own attribute names; versions read are those of the packages
that wrote the test traces):

- **OTLP JSON** as the OpenTelemetry collector's file exporter writes it (one
  ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`` object per line, or one
  object for the file; ``snake_case`` keys accepted too; ids hex or base64, kept as text);
  span attributes ``[{"key", "value": AnyValue}]``.
- Spans as the SDK's ``ReadableSpan.to_json()`` / ``ConsoleSpanExporter`` write them
  (``{"context": {"trace_id", "span_id"}, "attributes": {dotted key: value}}``, one per line
  or concatenated), and spans whose ``attributes`` are nested objects (flattened to dotted
  keys; Phoenix's span export nests them, a layout read here from its documentation only).
- **OpenTelemetry GenAI** semantic conventions (gen-ai spans, semconv 1.37, as
  ``opentelemetry-instrumentation-openai-v2`` 2.4b0 / ``opentelemetry-util-genai`` write them
  with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and content capture on):
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON: ``{"role", "parts": [{"type":
  "text", "content"} | {"type": "tool_call", "id", "name", "arguments"} | {"type":
  "tool_call_response", "id", "response"}]}``), ``gen_ai.system_instructions``,
  ``gen_ai.tool.definitions``. The older event-based content (``gen_ai.user.message`` log
  events) is not on the span and is not read.
- **OpenInference** (``openinference-semantic-conventions`` 0.1.42, as
  ``openinference-instrumentation-openai`` 0.1.66 writes them): ``llm.input_messages.<i>.
  message.{role, content, contents.<k>.message_content.text, tool_call_id,
  tool_calls.<j>.tool_call.{id, function.name, function.arguments}}``, the same under
  ``llm.output_messages``, and ``llm.tools.<i>.tool.json_schema``.
- **LangSmith** runs (``run_type == "llm"``; documented run schema only, no real export was
  produced offline): ``inputs.messages`` (OpenAI-style dicts, or a list of such lists),
  tools from ``inputs.tools`` or ``extra.invocation_params.tools``, the output message from
  ``outputs.choices[0].message``, ``outputs.message`` or ``outputs.generations[0][0].message``
  (a LangChain serialized message's ``kwargs``); the trace is ``trace_id`` (else ``id``).

A span whose tools are not recorded (openai-v2 2.4b0 does not write
``gen_ai.tool.definitions``) is checked against ``default_tools`` (``--tools FILE``). Spans
that are not model calls (no output message) are skipped, not malformed. A GenAI model span
(``gen_ai.operation.name`` ``chat``, or a request / response model) without its messages is
what the instrumentations write by default (content capture off): it is reported as such,
naming :data:`CAPTURE_VARIABLE`, not skipped. Each row carries the call's ``arguments``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.core.jsonl import (
    JsonLimitError,
    NotARegularFile,
    raw_decode_bounded,
    read_bounded,
)
from callscope.guard.chatlog import ChatConversation
from callscope.guard.trace_values import (
    _arguments_text,
    _attributes,
    _hex_id,
    _json,
)

#: the layouts :func:`read_traces` recognises, as they appear in ``TraceSpan.convention``
CONVENTIONS = ("gen_ai", "openinference", "langsmith")

#: what a model span recorded without its messages is told (OpenTelemetry's GenAI
#: instrumentations leave content out unless this variable turns it on; ``EVENT_ONLY`` (and
#: the conventions before ``gen_ai_latest_experimental``) write it to log events, which a
#: trace does not hold: issue 46, measured with opentelemetry-instrumentation-openai-v2)
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURE_OFF = (
    "content capture was off where the trace was recorded, or it wrote the messages to log "
    "events only (EVENT_ONLY, or the GenAI conventions before gen_ai_latest_experimental), "
    f"which a trace does not hold; set {CAPTURE_VARIABLE}=SPAN_ONLY (or SPAN_AND_EVENT) with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, which puts the messages on "
    "the span, and record again"
)
NO_CONTENT = f"a model span without its messages: {CAPTURE_OFF}"
#: the GenAI operations that are a model's answer to messages
_GENAI_CHAT = ("chat", "text_completion", "generate_content")


def _genai_model_span(attrs: dict[str, Any]) -> bool:
    """A GenAI span of a model answering messages: its operation says so, or (no operation
    named) it names a request model."""
    op = attrs.get("gen_ai.operation.name")
    if op is not None:
        return op in _GENAI_CHAT
    return "gen_ai.request.model" in attrs


# --- OpenTelemetry GenAI -------------------------------------------------------------------


def _genai_message(m: Any) -> list[dict[str, Any]]:
    """One GenAI message (role + parts) as OpenAI chat messages (a tool role message with
    several responses becomes one message per response)."""
    if not isinstance(m, dict):
        return []
    role = m.get("role") or "user"
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for p in m.get("parts") or []:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text":
            texts.append(str(p.get("content", "")))
        elif kind == "tool_call":
            calls.append(
                {
                    "id": p.get("id"),
                    "type": "function",
                    "function": {
                        "name": p.get("name"),
                        "arguments": _arguments_text(p.get("arguments", {})),
                    },
                }
            )
        elif kind == "tool_call_response":
            r = p.get("response", p.get("result"))
            responses.append(
                {
                    "role": "tool",
                    "tool_call_id": p.get("id"),
                    "content": r if isinstance(r, str) else json.dumps(r, ensure_ascii=False),
                }
            )
    if responses:
        return responses
    msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    return [msg]


def _genai_tools(v: Any) -> list[Any] | None:
    tools = _json(v)
    if not isinstance(tools, list):
        return None
    out = []
    for t in tools:  # the convention's flat {"type": "function", "name", "parameters"}
        if isinstance(t, dict) and "function" not in t and "name" in t:
            out.append({"type": "function", "function": {k: t[k] for k in t if k != "type"}})
        else:
            out.append(t)
    return out


def _from_genai(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], Any]:
    messages: list[dict[str, Any]] = []
    system = _json(attrs.get("gen_ai.system_instructions"))
    if isinstance(system, list):
        text = "\n".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
        messages.append({"role": "system", "content": text})
    elif isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    for m in _json(attrs.get("gen_ai.input.messages")) or []:
        messages.extend(_genai_message(m))
    outputs = _json(attrs.get("gen_ai.output.messages")) or []
    out = [x for m in outputs for x in _genai_message(m)] if isinstance(outputs, list) else []
    response = out[0] if out else None
    return messages, response, _genai_tools(attrs.get("gen_ai.tool.definitions"))


# --- OpenInference -------------------------------------------------------------------------


def _indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``{i: {rest of the key: value}}`` for the keys ``<prefix>.<i>.<rest>``."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not isinstance(key, str) or not key.startswith(prefix + "."):
            continue
        head, _, rest = key[len(prefix) + 1 :].partition(".")
        if head.isdigit():
            out.setdefault(int(head), {})[rest] = value
    return dict(sorted(out.items()))


def _oi_message(fields: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": fields.get("message.role") or "user"}
    content = fields.get("message.content")
    if content is None:
        parts = _indexed(fields, "message.contents")
        texts = [p.get("message_content.text") for p in parts.values()]
        content = "\n".join(t for t in texts if isinstance(t, str)) or None
    msg["content"] = content
    if fields.get("message.tool_call_id") is not None:
        msg["tool_call_id"] = fields["message.tool_call_id"]
    calls = []
    for c in _indexed(fields, "message.tool_calls").values():
        calls.append(
            {
                "id": c.get("tool_call.id"),
                "type": "function",
                "function": {
                    "name": c.get("tool_call.function.name"),
                    "arguments": _arguments_text(c.get("tool_call.function.arguments", "{}")),
                },
            }
        )
    if calls:
        msg["tool_calls"] = calls
    return msg


def _from_openinference(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], Any, Any]:
    messages = [_oi_message(f) for f in _indexed(attrs, "llm.input_messages").values()]
    outputs = [_oi_message(f) for f in _indexed(attrs, "llm.output_messages").values()]
    tools = [_json(t.get("tool.json_schema")) for t in _indexed(attrs, "llm.tools").values()]
    return messages, (outputs[0] if outputs else None), [t for t in tools if t] or None


# --- LangSmith -----------------------------------------------------------------------------


def _lc_message(m: Any) -> Any:
    """A LangChain serialized message (``{"lc", "type": "constructor", "kwargs"}``) as its
    kwargs, with LangChain's ``tool_calls`` ({name, args, id}) made OpenAI-style."""
    if isinstance(m, dict) and "kwargs" in m and isinstance(m["kwargs"], dict):
        kw = dict(m["kwargs"])
        kw.setdefault("role", {"ai": "assistant", "human": "user"}.get(kw.get("type"), "assistant"))
        calls = kw.get("tool_calls")
        if isinstance(calls, list) and calls and "args" in calls[0]:
            kw["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "type": "function",
                    "function": {"name": c.get("name"), "arguments": _arguments_text(c["args"])},
                }
                for c in calls
            ]
        return kw
    return m


def _from_langsmith(run: dict[str, Any]) -> tuple[list[dict[str, Any]], Any, Any]:
    inputs = run.get("inputs") or {}
    outputs = run.get("outputs") or {}
    messages = inputs.get("messages") or []
    if messages and isinstance(messages[0], list):
        messages = messages[0]
    messages = [_lc_message(m) for m in messages if isinstance(m, dict)]
    tools = inputs.get("tools") or ((run.get("extra") or {}).get("invocation_params") or {}).get(
        "tools"
    )
    response = None
    if isinstance(outputs.get("choices"), list) and outputs["choices"]:
        response = outputs["choices"][0].get("message")
    elif isinstance(outputs.get("message"), dict):
        response = _lc_message(outputs["message"])
    elif isinstance(outputs.get("generations"), list) and outputs["generations"]:
        g = outputs["generations"][0]
        g = g[0] if isinstance(g, list) and g else g
        if isinstance(g, dict):
            response = _lc_message(g.get("message"))
    return messages, response, tools if isinstance(tools, list) else None


# --- files ---------------------------------------------------------------------------------


class UnreadableValue(ValueError):
    """A top-level value of a trace file that cannot be read: the ``line`` it is on, why."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line, self.reason = line, reason


def _objects(path: Path) -> Iterator[Any]:
    """Every top-level JSON value of a file: one document, JSON Lines, or concatenated
    objects (the ConsoleSpanExporter's pretty-printed spans), read by the one bounded reader
    (:func:`~callscope.core.jsonl.raw_decode_bounded`) from a regular file of at most
    :data:`~callscope.core.jsonl.MAX_FILE_BYTES` (:func:`~callscope.core.jsonl.read_bounded`:
    ``/dev/zero`` or a FIFO is refused, never read); :class:`UnreadableValue` for a value
    that cannot be read."""
    text = read_bounded(path).decode("utf-8")
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        try:
            value, i = raw_decode_bounded(text, i)
        except json.JSONDecodeError as exc:
            raise UnreadableValue(exc.lineno, f"not valid JSON ({exc.msg})") from None
        except JsonLimitError as exc:  # nested too deeply, an integer over the digit limit
            line = exc.line or text.count("\n", 0, i) + 1
            raise UnreadableValue(line, str(exc)) from None
        yield value


def _spans(obj: Any) -> Iterator[tuple[str, str, str, dict[str, Any] | None, dict[str, Any]]]:
    """``(trace, span, name, attrs, run)`` for every span or run in one top-level value."""
    if isinstance(obj, list):
        for x in obj:
            yield from _spans(x)
        return
    if not isinstance(obj, dict):
        return
    resource_spans = obj.get("resourceSpans", obj.get("resource_spans"))
    if isinstance(resource_spans, list):
        for rs in resource_spans:
            for ss in rs.get("scopeSpans", rs.get("scope_spans")) or []:
                for sp in ss.get("spans") or []:
                    yield (
                        _hex_id(sp.get("traceId", sp.get("trace_id"))),
                        _hex_id(sp.get("spanId", sp.get("span_id"))),
                        str(sp.get("name", "")),
                        _attributes(sp.get("attributes")),
                        sp,
                    )
        return
    if isinstance(obj.get("runs"), list):  # a LangSmith export holding several runs
        yield from _spans(obj["runs"])
        return
    if "run_type" in obj and ("inputs" in obj or "outputs" in obj):
        yield (
            str(obj.get("trace_id") or obj.get("id") or ""),
            str(obj.get("id") or ""),
            str(obj.get("name", "")),
            None,
            obj,
        )
        return
    if "attributes" in obj:  # the SDK's to_json(), or a span with nested attributes
        ctx = obj.get("context") or {}
        yield (
            _hex_id(ctx.get("trace_id", obj.get("trace_id", obj.get("traceId")))),
            _hex_id(ctx.get("span_id", obj.get("span_id", obj.get("spanId")))),
            str(obj.get("name", "")),
            _attributes(obj.get("attributes")),
            obj,
        )


@dataclass
class TraceConversation(ChatConversation):
    """A span's one turn, with where it came from (``id`` is the trace)."""

    span: str = ""
    convention: str = ""


def _conversation(
    trace: str,
    span: str,
    name: str,
    attrs: dict[str, Any] | None,
    run: dict[str, Any],
    default_tools: list[Any] | None,
) -> TraceConversation | str | None:
    """A span as a one-turn conversation, ``None`` when it is not a model call, or why it
    cannot be read."""
    if attrs is None:
        if run.get("run_type") != "llm":
            return None
        convention = "langsmith"
        messages, response, tools = _from_langsmith(run)
        model = ((run.get("extra") or {}).get("invocation_params") or {}).get("model")
    elif "gen_ai.output.messages" in attrs or "gen_ai.input.messages" in attrs:
        convention = "gen_ai"
        messages, response, tools = _from_genai(attrs)
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    elif any(isinstance(k, str) and k.startswith("llm.output_messages.") for k in attrs):
        convention = "openinference"
        messages, response, tools = _from_openinference(attrs)
        model = attrs.get("llm.model_name")
    elif _genai_model_span(attrs):  # a GenAI model span recorded without content
        return f"trace {trace} span {span or name}: {NO_CONTENT}"
    else:
        return None
    where = f"trace {trace} span {span or name}"
    if not isinstance(response, dict):
        return f"{where}: no output message"
    if tools is None:
        tools = default_tools
    if tools is None and response.get("tool_calls"):
        return f"{where}: the span records no tool definitions (pass --tools FILE)"
    return TraceConversation(
        trace,
        [*messages, response],
        list(tools or []),
        str(model or "traces"),
        [len(messages)],
        span=span,
        convention=convention,
    )


def read_traces(
    paths: Iterable[str | Path], default_tools: list[Any] | None = None
) -> tuple[list[TraceConversation], list[str]]:
    """Every model span (or LangSmith ``llm`` run) of ``paths`` as a one-turn conversation
    whose id is its trace, in file order, and what could not be read."""
    conversations: list[TraceConversation] = []
    errors: list[str] = []
    for path in paths:
        p = Path(path)
        try:
            objects = list(_objects(p))
        except UnreadableValue as e:
            errors.append(f"{p.name}:{e.line}: {e.reason}")
            continue
        except NotARegularFile:
            raise  # not a file to read: a usage error (exit 2), as a folder or a missing path
        except ValueError as e:  # not UTF-8, over MAX_FILE_BYTES
            errors.append(f"{p.name}: {e}")
            continue
        for obj in objects:
            for trace, span, name, attrs, run in _spans(obj):
                got = _conversation(trace, span, name, attrs, run, default_tools)
                if isinstance(got, str):
                    errors.append(f"{p.name}: {got}")
                elif got is not None:
                    conversations.append(got)
    return conversations, errors


def trace_rows(
    conversations: Iterable[TraceConversation], rows_by_turn: Iterable[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """``call_rows``' rows with the span and the convention it was read from added."""
    out: list[dict[str, Any]] = []
    for conv, rows in zip(conversations, rows_by_turn, strict=True):
        for r in rows:
            out.append({**r, "trace": conv.id, "span": conv.span, "convention": conv.convention})
    return out


__all__ = ["CONVENTIONS", "TraceConversation", "read_traces", "trace_rows"]
