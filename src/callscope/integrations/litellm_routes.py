"""How the LiteLLM guardrail sends an answer on, by route (chat completions, Anthropic
messages, OpenAI Responses): annotated with its ``callscope`` field (:func:`annotate`), a
repaired answer written back whole in the route's format (:func:`rewrite`), a held stream sent
on annotated or as the repaired answer streamed in the route's format (:func:`stream_out`),
and a stream the SDK hook read whole given back to iterate (:class:`GuardedStream`).

:mod:`callscope.integrations.litellm_guardrail` decides what to send (the check, the gate,
the mode); this module only writes it, reading the routes through
:mod:`callscope.integrations.formats`. LiteLLM itself is imported only where its types are
built (a chat response or chunk).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from callscope.guard.check import message_of
from callscope.integrations.format_writers import (
    annotate_anthropic_stream,
    anthropic_body,
    anthropic_stream,
    responses_output,
)
from callscope.integrations.formats import as_dict, format_of, sse_events
from callscope.records.wire import CallscopeNote, ChatCompletion, ChatMessage


class GuardedStream:
    """A stream the SDK hook checked (``CallscopeGuardrail.async_post_call_success_hook`` of
    :mod:`callscope.integrations.litellm_guardrail` on ``acompletion(stream=True)``): iterate it as the stream itself (``async for``); its
    ``callscope`` is the annotation (the verdict, a repair's record)."""

    def __init__(self, chunks: list[Any], note: CallscopeNote) -> None:
        self.chunks = chunks
        self.callscope = note

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        for item in self.chunks:
            yield item


def is_stream(response: Any) -> bool:
    """A response still to be read (the SDK's ``CustomStreamWrapper``): iterable
    asynchronously, with no whole answer of any format."""
    return hasattr(response, "__aiter__") and format_of(response) is None


def rewrite(route: str, response: Any, best: ChatCompletion) -> Any:
    """The whole answer of ``route``'s format holding the repaired chat completion
    ``best`` (:data:`_REWRITE`)."""
    return _REWRITE[route](response, best)


def _chat_whole(response: Any, best: ChatCompletion) -> Any:
    import litellm  # lazy: the host's response type

    return litellm.ModelResponse(**best)


def _anthropic_whole(response: Any, best: ChatCompletion) -> Any:
    return anthropic_body(message_of(best), as_dict(response))


def _responses_whole(response: Any, best: ChatCompletion) -> Any:
    body = {**as_dict(response), "output": responses_output(message_of(best))}
    try:
        return type(response).model_validate(body)
    except (AttributeError, TypeError, ValueError):
        return body


#: how a repaired answer is written back, by route
_REWRITE: dict[str, Callable[[Any, ChatCompletion], Any]] = {
    "chat": _chat_whole,
    "messages": _anthropic_whole,
    "responses": _responses_whole,
}


def stream_out(
    route: str, chunks: list[Any], best: ChatCompletion | None, note: CallscopeNote
) -> list[Any]:
    """The chunks to send: ``chunks`` annotated with ``note``, or the repaired answer
    ``best`` as a stream of ``route``'s format (:data:`_STREAM_OUT`)."""
    return _STREAM_OUT[route](chunks, best, note)


def _chat_stream(chunks: list[Any], best: ChatCompletion | None, note: CallscopeNote) -> list[Any]:
    """Chat chunks: the repaired answer as two chunks; the note on the chunk with the finish
    reason."""
    if best is not None:
        chunks = _as_stream(best, chunks[0] if chunks else None)
    if chunks:
        last = annotate(chunks[_last_choice(chunks)], note)
        # litellm 1.108's proxy writes a plain chunk by a fast path that keeps only the
        # known fields; a chunk with provider fields takes the full serializer, which keeps
        # ``callscope`` (measured: docs/hosts.md)
        if getattr(last, "provider_specific_fields", "") is None:
            with contextlib.suppress(AttributeError, TypeError, ValueError):
                last.provider_specific_fields = {}
    return chunks


def _anthropic_stream(
    chunks: list[Any], best: ChatCompletion | None, note: CallscopeNote
) -> list[Any]:
    """Anthropic events: the repaired answer as a stream of its own (the first message's
    id and model kept); the note on the ``message_delta`` event."""
    if best is None:
        return annotate_anthropic_stream(list(chunks), note)
    start = next((d.get("message") for e, d in sse_events(chunks) if e == "message_start"), None)
    return anthropic_stream(anthropic_body(message_of(best), as_dict(start)), note)


def _responses_stream(
    chunks: list[Any], best: ChatCompletion | None, note: CallscopeNote
) -> list[Any]:
    """A Responses event stream annotated (``note`` on the ``response.completed`` event's
    response), or, repaired, the stream's own ``response.created`` and a
    ``response.completed`` whose response holds the repaired output."""
    done = next((c for c in chunks if _completed(c)), None)
    if done is None:
        return chunks
    if best is not None:
        response = _responses_whole(done.response, best)
        done = type(done).model_validate({**as_dict(done), "response": as_dict(response)})
        chunks = [c for c in chunks if getattr(c, "type", None) and _created(c)] + [done]
    annotate(done.response, note)
    return chunks


#: how a held stream is sent on, by route
_STREAM_OUT: dict[str, Callable[[list[Any], ChatCompletion | None, CallscopeNote], list[Any]]] = {
    "chat": _chat_stream,
    "messages": _anthropic_stream,
    "responses": _responses_stream,
}


def _completed(chunk: Any) -> bool:
    return str(getattr(getattr(chunk, "type", None), "value", getattr(chunk, "type", ""))) == (
        "response.completed"
    ) and hasattr(chunk, "response")


def _created(chunk: Any) -> bool:
    return str(getattr(getattr(chunk, "type", None), "value", getattr(chunk, "type", ""))) == (
        "response.created"
    )


def _as_stream(response: ChatCompletion, first: Any) -> list[Any]:
    """A whole chat completion as stream chunks: one carrying the message, one closing it
    with the finish reason."""
    import litellm  # lazy: the host's chunk type

    choice = (response.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    delta: ChatMessage = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [
            {
                "index": i,
                "id": c.get("id"),
                "type": "function",
                "function": {
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments"),
                },
            }
            for i, c in enumerate(calls)
            if isinstance(c, dict)
        ]
    base = {
        "id": response.get("id") or getattr(first, "id", None),
        "model": response.get("model") or getattr(first, "model", None),
    }
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    return [
        litellm.ModelResponseStream(
            choices=[{"index": 0, "delta": delta, "finish_reason": None}], **base
        ),
        litellm.ModelResponseStream(
            choices=[{"index": 0, "delta": {}, "finish_reason": finish}], **base
        ),
    ]


def _last_choice(chunks: Sequence[Any]) -> int:
    """The position of the stream's last chunk with a finish reason (a trailing usage chunk
    is dropped by the proxy unless the client asked for usage)."""
    for i in range(len(chunks) - 1, -1, -1):
        choices = getattr(chunks[i], "choices", None) or ()
        if any(getattr(c, "finish_reason", None) for c in choices):
            return i
    return len(chunks) - 1


def annotate(response: Any, value: CallscopeNote) -> Any:
    """``response`` with ``value`` as its ``callscope`` field (a key of a dict, an attribute
    of an object; else kept in its ``_hidden_params``)."""
    if isinstance(response, dict):
        response["callscope"] = value
        return response
    try:
        response.callscope = value
    except (AttributeError, TypeError, ValueError):
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            hidden["callscope"] = value
    return response
