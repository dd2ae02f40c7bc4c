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
Nothing in a file is assumed to be of its layout's shape: a span that is not (or that raises
while it is read) is one unreadable span with the reason, the other spans are read; a span
id read twice is read once (:func:`_read_file`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.core.jsonl import NotARegularFile, loads_bounded
from callscope.guard.chatlog import ChatConversation
from callscope.guard.trace_values import (
    LANGSMITH,
    BadSpan,
    UnreadableValue,
    _arguments_text,
    _attributes,
    _found,
    _ids,
    _json,
    _objects,
    kind_of,
    list_of,
    obj_at,
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


def _genai_message(m: Any, where: str) -> list[dict[str, Any]]:
    """One GenAI message (role + parts) as OpenAI chat messages (a tool role message with
    several responses becomes one message per response); :class:`BadSpan` when its
    ``parts`` is not a list."""
    if not isinstance(m, dict):
        return []
    role = m.get("role") or "user"
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for p in list_of(m.get("parts"), f"{where}.parts"):
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


def _json_list(attrs: dict[str, Any], key: str) -> list[Any]:
    """The JSON list of messages an attribute holds (``[]`` when absent); :class:`BadSpan`
    for text that does not read as JSON within callscope's limits, or JSON that is not a
    list."""
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            value = loads_bounded(value)
        except ValueError as e:
            raise BadSpan(f"{key} is not JSON ({e})") from None
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadSpan(f"{key} is not a JSON list of messages ({kind_of(value)})")
    return value


def _from_genai(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], Any]:
    messages: list[dict[str, Any]] = []
    system = _json(attrs.get("gen_ai.system_instructions"))
    if isinstance(system, list):
        text = "\n".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
        messages.append({"role": "system", "content": text})
    elif isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    for i, m in enumerate(_json_list(attrs, "gen_ai.input.messages")):
        messages.extend(_genai_message(m, f"gen_ai.input.messages[{i}]"))
    outputs = _json_list(attrs, "gen_ai.output.messages")
    out = [
        x for i, m in enumerate(outputs) for x in _genai_message(m, f"gen_ai.output.messages[{i}]")
    ]
    response = out[0] if out else None
    return messages, response, _genai_tools(attrs.get("gen_ai.tool.definitions"))


# --- OpenInference -------------------------------------------------------------------------


#: the most digits an OpenInference list index is read with (a billion entries)
MAX_INDEX_DIGITS = 9


def _indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """``{i: {rest of the key: value}}`` for the keys ``<prefix>.<i>.<rest>``;
    :class:`BadSpan` for a key whose index is not ASCII digits (at most
    :data:`MAX_INDEX_DIGITS` of them)."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not isinstance(key, str) or not key.startswith(prefix + "."):
            continue
        head, _, rest = key[len(prefix) + 1 :].partition(".")
        if not (0 < len(head) <= MAX_INDEX_DIGITS and head.isascii() and head.isdigit()):
            shown = head if len(head) <= 20 else f"{head[:20]}... ({len(head):,} characters)"
            raise BadSpan(
                f"attribute {prefix}.{shown}: the index {shown!r} is not a number of at most "
                f"{MAX_INDEX_DIGITS} ASCII digits"
            )
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


def _lc_message(m: Any, where: str) -> Any:
    """A LangChain serialized message (``{"lc", "type": "constructor", "kwargs"}``) as its
    kwargs, with LangChain's ``tool_calls`` ({name, args, id}) made OpenAI-style;
    :class:`BadSpan` for such a call that is not an object."""
    if isinstance(m, dict) and "kwargs" in m and isinstance(m["kwargs"], dict):
        kw = dict(m["kwargs"])
        kind = kw.get("type")
        roles = {"ai": "assistant", "human": "user"}
        kw.setdefault(
            "role", roles.get(kind, "assistant") if isinstance(kind, str) else "assistant"
        )
        calls = kw.get("tool_calls")
        if isinstance(calls, list) and calls:
            for i, c in enumerate(calls):
                if not isinstance(c, dict):
                    raise BadSpan(f"{where}.kwargs.tool_calls[{i}] is not an object ({kind_of(c)})")
            if "args" in calls[0]:
                kw["tool_calls"] = [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {
                            "name": c.get("name"),
                            "arguments": _arguments_text(c.get("args")),
                        },
                    }
                    for c in calls
                ]
        return kw
    return m


def _ls_response(outputs: dict[str, Any]) -> Any:
    """The output message of a LangSmith ``llm`` run's ``outputs`` (``None`` without one)."""
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices:
        first = choices[0]
        if not isinstance(first, dict):
            raise BadSpan(f"outputs.choices[0] is not an object ({kind_of(first)})")
        return first.get("message")
    if isinstance(outputs.get("message"), dict):
        return _lc_message(outputs["message"], "outputs.message")
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        g = generations[0]
        g = g[0] if isinstance(g, list) and g else g
        if isinstance(g, dict):
            return _lc_message(g.get("message"), "outputs.generations[0][0].message")
    return None


def _from_langsmith(run: dict[str, Any]) -> tuple[list[dict[str, Any]], Any, Any]:
    inputs = obj_at(run, "inputs", "inputs")
    outputs = obj_at(run, "outputs", "outputs")
    messages = list_of(inputs.get("messages"), "inputs.messages")
    where = "inputs.messages"
    if messages and isinstance(messages[0], list):
        messages, where = messages[0], "inputs.messages[0]"
    messages = [
        _lc_message(m, f"{where}[{i}]") for i, m in enumerate(messages) if isinstance(m, dict)
    ]
    invocation = obj_at(
        obj_at(run, "extra", "extra"), "invocation_params", "extra.invocation_params"
    )
    tools = inputs.get("tools") or invocation.get("tools")
    return messages, _ls_response(outputs), tools if isinstance(tools, list) else None


# --- files ---------------------------------------------------------------------------------


@dataclass
class TraceConversation(ChatConversation):
    """A span's one turn, with where it came from (``id`` is the trace)."""

    span: str = ""
    convention: str = ""


def _conversation(
    trace: str,
    span: str,
    where: str,
    layout: str,
    run: dict[str, Any],
    default_tools: list[Any] | None,
) -> TraceConversation | str | None:
    """A span as a one-turn conversation, ``None`` when it is not a model call, or why it
    cannot be read, after ``where`` (:class:`BadSpan` for a value that is not of its
    layout's shape)."""
    if layout == LANGSMITH:
        if run.get("run_type") != "llm":
            return None
        convention = "langsmith"
        messages, response, tools = _from_langsmith(run)
        invocation = obj_at(run, "extra", "extra").get("invocation_params")
        model = invocation.get("model") if isinstance(invocation, dict) else None
    else:
        attrs = _attributes(run.get("attributes"))
        if "gen_ai.output.messages" in attrs or "gen_ai.input.messages" in attrs:
            convention = "gen_ai"
            messages, response, tools = _from_genai(attrs)
            model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
        elif any(k.startswith("llm.output_messages.") for k in attrs):
            convention = "openinference"
            messages, response, tools = _from_openinference(attrs)
            model = attrs.get("llm.model_name")
        elif _genai_model_span(attrs):  # a GenAI model span recorded without content
            return f"{where}: {NO_CONTENT}"
        else:
            return None
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
        model if isinstance(model, str) and model else "traces",
        [len(messages)],
        span=span,
        convention=convention,
    )


#: what reading a span whose values are not of the shape its layout writes may raise: the
#: span is counted as unreadable with the error, the file's other spans are read
_SPAN_ERRORS = (AttributeError, TypeError, ValueError, KeyError, IndexError, RecursionError)


def _read_file(
    p: Path,
    objects: list[tuple[int, Any]],
    default_tools: list[Any] | None,
    seen: set[tuple[str, str]],
) -> tuple[list[TraceConversation], list[str]]:
    """The model spans of one file's values and what could not be read (each span on its
    own: one that raises is an unreadable span with the error); a span whose (trace, span)
    id was already read (in this file or an earlier one) is dropped, the repeats said once."""
    conversations: list[TraceConversation] = []
    errors: list[str] = []
    repeated: list[str] = []
    for line, obj in objects:
        for path, layout, sp in _found(obj):
            if not layout:  # an entry of an OTLP document that is not a span, or a value
                errors.append(
                    f"{p.name}:{line}: {path}: {sp}" if path else f"{p.name}:{line}: {sp}"
                )
                continue  # that is not an object (a number, a string, null: no span)
            trace, span, name = _ids(layout, sp)
            if span:
                if (trace, span) in seen:
                    repeated.append(f"trace {trace} span {span}")
                    continue
                seen.add((trace, span))
            # a span without ids is named by where it is: its line and its path in the value
            named = trace or span or name
            where = f"trace {trace} span {span or name}" if named else path or "a span without ids"
            at = f"{p.name}: " if named else f"{p.name}:{line}: "
            try:
                got = _conversation(trace, span, where, layout, sp, default_tools)
            except BadSpan as e:
                got = f"{where}: unreadable span: {e}"
            except _SPAN_ERRORS as e:
                got = f"{where}: unreadable span ({type(e).__name__}: {e})"
            if isinstance(got, str):
                errors.append(f"{at}{got}")
            elif got is not None:
                conversations.append(got)
    if repeated:
        errors.append(
            f"{p.name}: {len(repeated)} span(s) repeat a span id already read (e.g. "
            f"{repeated[0]}); dropped, the first of each kept"
        )
    return conversations, errors


def read_traces(
    paths: Iterable[str | Path], default_tools: list[Any] | None = None
) -> tuple[list[TraceConversation], list[str]]:
    """Every model span (or LangSmith ``llm`` run) of ``paths`` as a one-turn conversation
    whose id is its trace, in file order, and what could not be read: a value that is not
    JSON, an entry or a span that is not of its layout's shape (one each; the other spans are
    read), the repeats of a span id."""
    conversations: list[TraceConversation] = []
    errors: list[str] = []
    seen: set[tuple[str, str]] = set()
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
        convs, errs = _read_file(p, objects, default_tools, seen)
        conversations.extend(convs)
        errors.extend(errs)
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
