"""What a request and its answer give the guard's check (:mod:`callscope.guard.check`): the
request's registry (:func:`functions_of`, one list per registry content), its evidence
(:func:`evidence_of`: the query and the context stage 3 may ground values in) and its size;
the answer's assistant message (:func:`message_of`; :func:`later_choices` for ``n > 1``), the final-answer calls left out of it
(:func:`split_final`) and the calls whose arguments are objects (:func:`object_arguments`)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from typing import Any

from callscope.parse.literals import json_size
from callscope.records.wire import ChatMessage, FunctionSpec, content_text
from callscope.saag.cascade import forget_registry

#: registries kept by their content (:func:`functions_of`), oldest out first
REGISTRY_CACHE_SIZE = 64
#: a registry whose JSON is longer than this is not kept (nor is anything the cascade makes of
#: it): at most 64 registries of 256 K characters, 16 M characters in all, stay in the process
REGISTRY_MAX_CHARS = 262_144
_registries: OrderedDict[str, list[FunctionSpec]] = OrderedDict()
_registries_lock = threading.Lock()


def functions_of(tools: Sequence[Any] | None) -> list[FunctionSpec]:
    """The registry of a request (:func:`registry_of`, without whether it is kept)."""
    return registry_of(tools)[0]


def registry_of(tools: Sequence[Any] | None) -> tuple[list[FunctionSpec], bool]:
    """The registry of a request: OpenAI ``tools`` (``{"type": "function", "function":
    {...}}``), bare function specs or the Responses API's flat ones, or Anthropic tools
    (``{"name", "input_schema"}``: their schema read as ``parameters``), as
    ``[{name, description, parameters}]``; entries without a string name are left out. And
    whether it is kept.

    One list per registry content, of the last :data:`REGISTRY_CACHE_SIZE`: an agent sends
    the same tools with every request, each time as new objects, and the cascade's caches
    (the registry index, the verdicts) are keyed by the list. Without this each request built
    its registry's index again, and every cached verdict held its own copy of the tools
    (issue 49 point 4). The list returned may be another request's: it is read, never
    changed.

    This cache owns the lifetime of the registries the cascade keeps for the guard: a
    registry it lets go (the oldest, past :data:`REGISTRY_CACHE_SIZE`) is forgotten by the
    cascade too (:func:`~callscope.saag.cascade.forget_registry`), and a registry it does not
    keep (over :data:`REGISTRY_MAX_CHARS` of JSON, or tools that are not JSON: a library
    caller's own objects) comes with ``False``: the check then runs
    :func:`~callscope.core.memo.transient`, so that distinct registries, one a request,
    never pile up in the process.
    """
    out: list[FunctionSpec] = []
    for tool in tools or ():
        if not isinstance(tool, dict):
            continue
        spec = tool["function"] if isinstance(tool.get("function"), dict) else tool
        if "parameters" not in spec and isinstance(spec.get("input_schema"), dict):
            spec = {**spec, "parameters": spec["input_schema"]}  # an Anthropic tool
        if isinstance(spec.get("name"), str) and spec["name"]:
            out.append(spec)
    try:
        key = json.dumps(out, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return out, False
    if len(key) > REGISTRY_MAX_CHARS:
        return out, False
    with _registries_lock:
        kept = _registries.get(key)
        if kept is not None:
            _registries.move_to_end(key)
            return kept, True
        _registries[key] = out
        gone = (
            _registries.popitem(last=False)[1] if len(_registries) > REGISTRY_CACHE_SIZE else None
        )
    if gone is not None:
        forget_registry(gone)
    return out, True


def still_kept(functions: list[FunctionSpec]) -> bool:
    """Whether the list ``functions`` (from :func:`registry_of`) is still kept: a check that
    ran while it was let go may have put its verdicts back, and then forgets them itself."""
    with _registries_lock:
        return any(kept is functions for kept in _registries.values())


def conversation_chars(messages: Sequence[Any]) -> int:
    """The characters of the messages' texts: what stage 3 reads, so what a check's time
    grows with (a host decides by it whether to check off its event loop)."""
    return sum(len(content_text(m.get("content"))) for m in messages or () if isinstance(m, dict))


#: a check of a request and answer of at most this many characters together runs where it is
#: asked for, in a host's event loop too (:func:`checks_inline`): stage 3 reads the request at
#: up to about 2 us a character for text dense with numbers, dates or fractions, so about
#: 10 ms here at worst; 64 K characters held a loop 60-260 ms
INLINE_CHECK_CHARS = 4096


def checks_inline(request_chars: int, answer_chars: int) -> bool:
    """Whether a check of a request of ``request_chars`` characters (what stage 3 reads: the
    conversation's text, or the whole request body where only its size is known) and an
    answer of ``answer_chars`` (its text and calls) is short enough to run in an event loop
    (:data:`INLINE_CHECK_CHARS`); a longer one goes to a thread or a worker process (the
    proxy, :mod:`callscope.guard.proxy.decide`; the host integrations,
    :func:`callscope.integrations.verdicts.off_the_loop`). The one rule of both. The answer
    counts as well as the request: each of its values is looked for in the request (1,000
    calls against 64 K characters took 3.6 s)."""
    return request_chars + answer_chars <= INLINE_CHECK_CHARS


def answer_chars(message: Any) -> int:
    """The characters of an assistant message's text and its calls' names and arguments (the
    answer's part of :func:`checks_inline`); arguments that are not a string count by their
    JSON size, bounded."""
    if not isinstance(message, dict):
        return 0
    total = len(content_text(message.get("content")))
    calls = message.get("tool_calls")
    for tc in calls if isinstance(calls, list) else ():
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            continue
        name, args = fn.get("name"), fn.get("arguments")
        total += len(name) if isinstance(name, str) else 0
        total += len(args) if isinstance(args, str) else json_size(args, INLINE_CHECK_CHARS)
        if total > INLINE_CHECK_CHARS:
            break  # (past the bound the exact count does not matter)
    return total


def evidence_of(messages: Sequence[Any]) -> tuple[str, list[str]]:
    """(query, context) of a request: the last user message's text, and the earlier user
    messages and tool results, in order."""
    texts: list[tuple[str, str]] = []
    for m in messages or ():
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role in ("user", "tool", "function"):
            text = content_text(m.get("content"))
            if text:
                texts.append((role, text))
    last_user = max((i for i, (role, _) in enumerate(texts) if role == "user"), default=None)
    if last_user is None:
        return "", [t for _, t in texts]
    return texts[last_user][1], [t for i, (_, t) in enumerate(texts) if i != last_user]


# --------------------------------------------------------------------------- the answer


def split_final(native_calls: Any, final_answer: Collection[str]) -> tuple[Any, tuple[str, ...]]:
    """``(the native calls to check, the names of the final-answer calls left out)``: the
    calls of an OpenAI-style ``tool_calls`` list whose ``function.name`` is one of
    ``final_answer`` are a host's final answer, not a tool call (module docstring). A list
    with none of them, or anything that is not a list, is returned as it is.

    >>> calls = [{"function": {"name": "get_weather"}}, {"function": {"name": "submit"}}]
    >>> kept, final = split_final(calls, {"submit"})
    >>> [c["function"]["name"] for c in kept], final
    (['get_weather'], ('submit',))
    """
    if not final_answer or not isinstance(native_calls, list):
        return native_calls, ()
    kept: list[Any] = []
    final: list[str] = []
    for tc in native_calls:
        fn = tc.get("function") if isinstance(tc, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if isinstance(name, str) and name in final_answer:
            final.append(name)
        else:
            kept.append(tc)
    return (kept, tuple(final)) if final else (native_calls, ())


def later_choices(completion: Any) -> list[tuple[int, ChatMessage]]:
    """``(position, message)`` of a chat completion's choices after the first (``n > 1``)
    that hold a message object: what the proxy and the LiteLLM guardrail check beside the
    first choice (:func:`message_of`).

    >>> later_choices({"choices": [{"message": {}}, {"message": {"role": "assistant"}}, 3]})
    [(1, {'role': 'assistant'})]
    """
    choices = completion.get("choices") if isinstance(completion, dict) else None
    return [
        (i, c["message"])
        for i, c in enumerate(choices[1:] if isinstance(choices, list) else [], 1)
        if isinstance(c, dict) and isinstance(c.get("message"), dict)
    ]


def message_of(response: Any) -> ChatMessage:
    """The assistant message of a response: a ``chat.completion`` (its first choice), a
    message dict, either as an SDK object (``openai``'s, LiteLLM's: read by its
    ``model_dump()``), a :class:`~callscope.types.ModelReply` or text. An Anthropic message or
    a Responses object is refused (``TypeError``), never read as a turn without calls: read
    it into the chat form first (:mod:`callscope.integrations.formats`)."""
    if isinstance(response, str):
        return {"role": "assistant", "content": response}
    if hasattr(response, "tool_calls") and hasattr(response, "text"):  # ModelReply
        return {"role": "assistant", "content": response.text, "tool_calls": response.tool_calls}
    if not isinstance(response, dict) and callable(getattr(response, "model_dump", None)):
        response = response.model_dump()  # an SDK's pydantic object
    if isinstance(response, dict) and (
        isinstance(response.get("output"), list)
        or (response.get("type") == "message" and isinstance(response.get("content"), list))
    ):
        raise TypeError(
            "an Anthropic message or a Responses object, not the chat form: read it with "
            "callscope.integrations.formats.format_of(response).message(response)"
        )
    if isinstance(response, dict):
        choices = response.get("choices")
        if isinstance(choices, list):
            first = choices[0] if choices and isinstance(choices[0], dict) else {}
            msg = first.get("message")
            return msg if isinstance(msg, dict) else {"role": "assistant", "content": None}
        return response
    raise TypeError(
        f"unsupported response type {type(response).__name__}: give an assistant message or a "
        "chat completion (a dict or an SDK object), a ModelReply or text"
    )


def object_arguments(native_calls: Any) -> tuple[int, ...]:
    """The positions of OpenAI-style native calls (``{"function": {"arguments": ...}}``)
    whose ``arguments`` is not a string: an object where the format wants its JSON text."""
    if not isinstance(native_calls, list):
        return ()
    return tuple(
        i
        for i, tc in enumerate(native_calls)
        if isinstance(tc, dict)
        and isinstance(fn := tc.get("function"), dict)
        and "arguments" in fn
        and not isinstance(fn["arguments"], str)
    )
