"""A LiteLLM guardrail: the tool calls of every response checked after the call (extra
``litellm``; callscope is not on the package index: install it from its checkout,
``pip install "/path/to/callscope[litellm]"``, ``docs/hosts.md``).

:class:`CallscopeGuardrail` is a ``litellm.integrations.custom_guardrail.CustomGuardrail``
whose ``async_post_call_success_hook`` (a whole response) and
``async_post_call_streaming_iterator_hook`` (a ``stream: true`` response: its chunks are
held, assembled and checked before the first one is sent) run :func:`callscope.guard_check`
on the response against the request's tools and messages, on every route the proxy serves
(issue 46): ``/v1/chat/completions``, ``/v1/messages`` (Anthropic's format: ``tool_use``
blocks, its event stream) and ``/v1/responses`` (``function_call`` items, its typed events),
each read by :mod:`callscope.integrations.formats`. Then, by ``callscope_mode``:

- ``annotate`` (default): the response goes through unchanged, with the verdict under its
  ``callscope`` field (``TurnVerdict.to_dict()``): the JSON body; on a stream, the chunk with
  the finish reason (chat), the ``message_delta`` event (messages), the
  ``response.completed`` event's response (responses);
- ``repair``: a response the gate acts on is re-asked with the gated correction
  (:func:`callscope.guard_repair`, as ``callscope serve`` does, as a chat completion through
  the proxy's router when it runs in the proxy, else ``litellm.acompletion`` with the
  caller's own parameters: ``api_base``, ``api_key`` and the rest) and the best answer is
  returned in the route's own format (a stream as a stream), annotated with the repair's
  record; a re-ask that fails is logged and named in the annotation (``error``), never
  passed off as a repair;
- ``block``: a response the gate acts on is refused before any chunk of a stream is sent:
  :class:`CallscopeBlocked` from the SDK; in the proxy an HTTP 400 whose body carries the
  correction and the verdict (``error.provider_specific_fields.callscope``) for a whole
  response, and the correction in its message for a stream (a streamed ``/v1/responses``
  ends in a ``response.failed`` event: the proxy's own stream error).

From the SDK, the hook also takes what ``litellm.acompletion(stream=True)`` returns: the
stream is read whole, checked, and given back as a :class:`GuardedStream` to iterate (its
``callscope`` the annotation), or refused (``block``) before the caller sees a chunk.
A request's final-answer tool (``final_answer: [submit]``) is not checked (none by default).

The gate is every integration's (:func:`callscope.integrations.verdicts.acts_on`): with
``gated: true`` (default) a call whose only failure is a soft drift (a slip in a stated
value) is let through, annotated, in every mode, as the Inspect approver and the Agents SDK
guardrail let it through; ``gated: false`` acts on every failing call.

Proxy ``config.yaml`` (the proxy wants a master key: here from ``LITELLM_MASTER_KEY``; clients
send it as their API key)::

    model_list:
      - model_name: gpt-4o
        litellm_params:
          model: openai/gpt-4o
          api_key: os.environ/OPENAI_API_KEY
    general_settings:
      master_key: os.environ/LITELLM_MASTER_KEY
    guardrails:
      - guardrail_name: callscope
        litellm_params:
          guardrail: callscope.integrations.litellm_guardrail.CallscopeGuardrail
          mode: post_call
          default_on: true
          callscope_mode: repair      # annotate | repair | block

What each route, mode and stream gives the client, measured on litellm 1.108.7 and 1.110.2:
``docs/hosts.md``. This module decides (the check, the gate, the mode, the re-ask); how the
answer is written back in each route's format, whole or streamed, and :class:`GuardedStream`
are :mod:`callscope.integrations.litellm_routes`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.guardrails import GuardrailEventHooks

from callscope.core.text import utf8_safe
from callscope.guard.check import TurnVerdict, check, content_text
from callscope.guard.inputs import answer_chars, conversation_chars
from callscope.guard.repair import (
    DEFAULT_REPAIR_ATTEMPTS,
    MAX_REPAIR_ATTEMPTS,
    RepairResult,
    repair,
)
from callscope.integrations.formats import (
    as_dict,
    chat_tools,
    format_of,
    request_messages,
    stream_format_of,
)
from callscope.integrations.litellm_routes import (
    GuardedStream,
    annotate,
    is_stream,
    rewrite,
    stream_out,
)
from callscope.integrations.verdicts import acts_on, off_the_loop, turn_correction
from callscope.records.wire import CallscopeNote, ChatCompletion, ChatMessage, ChatRequest
from callscope.saag.gated import GATED_DEFAULT
from callscope.saag.groundings import get_grounding

MODES = ("annotate", "repair", "block")
#: request keys never sent again with a re-ask from the SDK: the stream switches (a re-ask
#: is one whole answer) and what the re-ask replaces
_NOT_REASKED = frozenset({"messages", "stream", "stream_options"})
#: the request keys a re-ask through the proxy's router sends again (the rest of the proxy's
#: request data is its own bookkeeping; credentials are the router's)
_ROUTER_KEYS = (
    "model",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
)

log = logging.getLogger("callscope.integrations.litellm")

#: threads that run repairs, callscope's own: a repair blocks its thread until its re-ask
#: (a coroutine on the event loop) is answered, and litellm runs part of every
#: ``acompletion`` on the loop's default executor. Repairs on that executor took every one of
#: its workers at (CPUs + 4) concurrent repairs, and their re-asks then waited for a worker
#: forever, the host's other requests with them. More repairs than this wait their turn.
REPAIR_THREADS = 32
_repair_pool: ThreadPoolExecutor | None = None
_repair_pool_lock = threading.Lock()


def _repair_threads() -> ThreadPoolExecutor:
    global _repair_pool
    with _repair_pool_lock:
        if _repair_pool is None:
            _repair_pool = ThreadPoolExecutor(REPAIR_THREADS, thread_name_prefix="callscope-repair")
        return _repair_pool


class CallscopeBlocked(Exception):
    """A response whose tool calls the gate acts on, refused in ``block`` mode, from the SDK
    and the proxy alike; ``status_code`` 400 is what the proxy answers with, ``detail`` the
    error body (``error``, ``correction``, ``verdict``). The proxy puts an exception's
    ``provider_specific_fields`` in its error body: they carry ``callscope`` (the
    correction and the verdict), so a client reads them from the 400 (issue 46)."""

    status_code = 400

    def __init__(self, verdict: TurnVerdict, correction: str | None = None) -> None:
        # what the host writes as JSON carries no lone surrogate (no UTF-8 text can)
        fix = utf8_safe(correction or verdict.correction or "a tool call failed")
        self.message = f"callscope: tool call failed: {fix}"
        super().__init__(self.message)
        self.verdict = verdict
        self.detail = {
            "error": "callscope: tool call failed",
            "correction": fix,
            "verdict": utf8_safe(verdict.to_dict()),
        }
        self.provider_specific_fields = {"callscope": self.detail}

    def for_proxy(self) -> Exception:
        """What the proxy is given to raise: the guardrail convention of LiteLLM's proxy, a
        fastapi ``HTTPException`` (400) whose ``detail`` is ``{"error": message,
        "callscope": {"correction", "verdict"}}``, which the proxy puts whole in its error
        body, streamed or not (``provider_specific_fields``); this exception itself where
        fastapi is not installed."""
        try:  # lazy: fastapi comes with the proxy, not with the SDK
            from fastapi import HTTPException
        except ImportError:
            return self
        detail = {"error": self.message, "callscope": self.detail}
        return HTTPException(status_code=self.status_code, detail=detail)


class CallscopeGuardrail(CustomGuardrail):
    """callscope's post-call check of tool calls (see the module docstring)."""

    def __init__(
        self,
        callscope_mode: str = "annotate",
        attempts: int = DEFAULT_REPAIR_ATTEMPTS,
        grounding: str | None = None,
        gated: bool = True,
        final_answer: Sequence[str] | str | None = None,
        **kwargs: Any,
    ) -> None:
        # a mistake in config.yaml is refused here, where the guardrail is made (LiteLLM's
        # proxy logs it at its start, naming the fault, and starts without the guardrail),
        # never met per request: a misspelt option, an unknown grounding or a pre_call mode
        # let every answer through unchecked, with an error logged per request at most
        if callscope_mode not in MODES:
            raise ValueError(f"callscope_mode must be one of {MODES}, not {callscope_mode!r}")
        unknown = sorted(k for k in kwargs if k.startswith("callscope"))
        if unknown:
            raise ValueError(
                f"unknown callscope option(s) {', '.join(unknown)}: the guardrail takes "
                "callscope_mode, attempts, grounding, gated and final_answer"
            )
        try:
            attempts = int(attempts)
        except (TypeError, ValueError):
            raise ValueError(f"attempts must be an integer, not {attempts!r}") from None
        if not 0 <= attempts <= MAX_REPAIR_ATTEMPTS:
            raise ValueError(f"attempts must be 0 to {MAX_REPAIR_ATTEMPTS}, not {attempts}")
        get_grounding(grounding)  # an unknown name: ConfigError, naming the modes
        if kwargs.get("run_in_parallel") and callscope_mode != "block":
            raise ValueError(
                f"run_in_parallel: LiteLLM discards what a parallel guardrail returns, so "
                f"callscope_mode {callscope_mode} would change nothing; use block, or run it "
                "in sequence"
            )
        self.callscope_mode = callscope_mode
        self.attempts = attempts
        self.grounding = grounding
        self.settings = GATED_DEFAULT if _switch(gated, "gated") else None
        if isinstance(final_answer, str):
            final_answer = [final_answer]
        self.final_answer = frozenset(final_answer or ())
        # the guardrail checks answers: LiteLLM itself then refuses ``mode: pre_call`` (or
        # any other hook) at the proxy's start
        kwargs.setdefault("supported_event_hooks", [GuardrailEventHooks.post_call])
        super().__init__(**kwargs)

    def check_response(self, data: ChatRequest, response: Any) -> TurnVerdict:
        """The guard's verdict on ``response`` (a whole answer of any route's format, or its
        assistant message in the chat form) to the request ``data``."""
        fmt = format_of(response)
        message = fmt.message(response) if fmt is not None else None
        return self._check(data, message if message is not None else as_dict(response))

    def _check(
        self,
        data: ChatRequest,
        message: ChatMessage,
        messages: list[ChatMessage] | None = None,
    ) -> TurnVerdict:
        """:func:`check` of ``message`` against the request ``data`` (``messages``: its
        messages, when already read)."""
        return check(
            message,
            chat_tools(data.get("tools")),
            request_messages(data) if messages is None else messages,
            self.grounding,
            self.final_answer,
        )

    async def _reask(self, data: ChatRequest, in_proxy: bool = False) -> Any:
        """One re-ask of ``data`` (its ``messages`` the conversation with the correction):
        inside the proxy through its router (the model names of config.yaml), from the SDK
        through ``litellm.acompletion`` with every parameter the caller gave."""
        if in_proxy:
            try:  # lazy: inside the proxy, its router serves the model names of config.yaml
                from litellm.proxy.proxy_server import llm_router
            except ImportError:
                llm_router = None
            if llm_router is not None:
                kwargs = {k: data[k] for k in _ROUTER_KEYS if data.get(k) is not None}
                return await llm_router.acompletion(messages=data["messages"], **kwargs)
        import litellm  # lazy: the host package, only when re-asking from the SDK

        kwargs = {k: v for k, v in data.items() if k not in _NOT_REASKED}
        return await litellm.acompletion(messages=data["messages"], **kwargs)

    async def _guard(
        self,
        data: ChatRequest,
        message: ChatMessage,
        in_proxy: bool,
        stream: bool = False,
        others: Sequence[ChatMessage] = (),
    ) -> tuple[ChatCompletion | None, CallscopeNote, TurnVerdict]:
        """``(the repaired answer as a chat completion, or None to send the one given; its
        annotation; the first verdict)`` for the assistant ``message`` by the mode, or
        :class:`CallscopeBlocked`: in the proxy, a whole response's as
        :meth:`CallscopeBlocked.for_proxy` (its body then carries the correction and the
        verdict); a stream's as it is (the proxy's stream error path turns a dict detail
        into its text: measured, ``docs/hosts.md``), its message carrying the correction."""
        messages = request_messages(data)  # a long request: checked on a thread
        verdict = await off_the_loop(
            conversation_chars(messages),
            answer_chars(message),
            self._check,
            data,
            message,
            messages,
        )
        # the other choices of an answer with several (n > 1): each checked; one acted on
        # refuses the answer in block and in repair alike (a re-ask gives one answer, and
        # cannot repair n without dropping the others)
        more = [
            await off_the_loop(
                conversation_chars(messages), answer_chars(m), self._check, data, m, messages
            )
            for m in others
        ]
        acting = [v for v in (verdict, *more) if acts_on(v, self.settings)]
        note: CallscopeNote = {"verdict": utf8_safe(verdict.to_dict())}
        if more:
            note["choices"] = [utf8_safe(v.to_dict()) for v in more]
        if self.callscope_mode == "annotate" or not acting:
            return None, note, verdict
        if self.callscope_mode == "block" or more:
            worst = acting[0]
            blocked = CallscopeBlocked(worst, turn_correction(worst, self.settings))
            if in_proxy and not stream:
                raise blocked.for_proxy() from blocked
            raise blocked
        loop = asyncio.get_running_loop()
        base = _chat_request(data)
        tools = base.get("tools")

        def chat_fn(messages: list[ChatMessage], tools: Sequence[Any] | None) -> Any:
            ask = {**base, "messages": [*_system(data), *messages]}
            fut = asyncio.run_coroutine_threadsafe(self._reask(ask, in_proxy), loop)
            return as_dict(fut.result())

        run = functools.partial(
            repair,
            chat_fn,
            base["messages"],
            tools,
            k=self.attempts,
            grounding=self.grounding,
            first=message,
            settings=self.settings,
        )
        # on callscope's own threads: a repair waits on its re-ask, and the re-ask needs the
        # loop's default executor (litellm runs part of acompletion there)
        result = await loop.run_in_executor(_repair_threads(), contextvars.copy_context().run, run)
        best = result.response if result.best_attempt > 1 else None
        return (utf8_safe(best) if isinstance(best, dict) else None), _repair_note(result), verdict

    async def async_post_call_success_hook(
        self, data: dict, user_api_key_dict: Any, response: Any
    ) -> Any:
        """A whole response of any route (chat completions, Anthropic messages, Responses),
        checked and annotated, repaired or refused by the mode; from the SDK, a stream
        (``acompletion(stream=True)``) too: held, checked, and returned as a
        :class:`GuardedStream` to iterate (or refused before any chunk). A check that fails
        (a bug, an answer no reader expected) lets the answer through as it came, logged and
        annotated with ``error``: callscope never breaks the call it guards."""
        if not data.get("tools"):
            return response
        in_proxy = user_api_key_dict is not None
        if is_stream(response):
            chunks = [item async for item in response]
            try:
                out, note = await self._guard_stream(data, chunks, in_proxy)
            except Exception as exc:
                if _refusal(exc):
                    raise
                return GuardedStream(chunks, _failed(exc))
            return GuardedStream(out, note)
        try:
            fmt = format_of(response)
            message = fmt.message(response) if fmt is not None else None
            if fmt is None or message is None:
                return response
            best, note, _ = await self._guard(data, message, in_proxy, others=fmt.others(response))
            out = response if best is None else rewrite(fmt.name, response, best)
            return annotate(out, note)
        except Exception as exc:
            if _refusal(exc):
                raise
            note = _failed(exc)
        with contextlib.suppress(Exception):  # a response that cannot take the note either
            return annotate(response, note)
        return response

    async def _guard_stream(
        self, data: ChatRequest, chunks: list[Any], in_proxy: bool
    ) -> tuple[list[Any], CallscopeNote]:
        """The chunks to send for a held stream (the same ones annotated, or the repaired
        answer as a stream of the same format) and the annotation; unchecked chunks are
        returned with an empty annotation."""
        fmt = stream_format_of(chunks)
        if fmt is None:
            return chunks, {}
        message = fmt.stream_message(chunks)
        if message is None:
            return chunks, {}
        others = fmt.stream_others(chunks)
        best, note, _ = await self._guard(data, message, in_proxy, stream=True, others=others)
        return stream_out(fmt.name, chunks, best, note), note

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict
    ) -> AsyncGenerator[Any, None]:
        """A ``stream: true`` response of any route: held whole (a call's arguments arrive
        in pieces), assembled and checked as :meth:`async_post_call_success_hook` checks a
        response; then its own chunks are sent (annotate, or a call the gate lets through:
        the verdict on the chunk that ends it), the repaired answer as a stream of the same
        format, or nothing (:class:`CallscopeBlocked` before the first chunk)."""
        if not request_data.get("tools"):
            async for item in response:
                yield item
            return
        chunks = [item async for item in response]
        try:
            out, _ = await self._guard_stream(
                request_data, chunks, in_proxy=user_api_key_dict is not None
            )
        except Exception as exc:
            if _refusal(exc):
                raise
            _failed(exc)
            out = chunks  # as they came, as without callscope
        for item in out:
            yield item


def _chat_request(data: ChatRequest) -> ChatRequest:
    """The request ``data`` of any route as a chat-completions request to re-ask: its
    ``messages`` (chat form), ``tools`` (OpenAI chat tools) and the sampling keys a re-ask
    sends again."""
    tools = [
        t if isinstance(t.get("function"), dict) else {"type": "function", "function": t}
        for t in chat_tools(data.get("tools"))
    ]
    keep = {k: v for k, v in data.items() if k not in ("messages", "input", "tools", "system")}
    keep.pop("instructions", None)
    return {**keep, "tools": tools, "messages": request_messages(data)}


def _system(data: ChatRequest) -> list[ChatMessage]:
    """The system prompt of an Anthropic (``system``) or Responses (``instructions``)
    request, as the re-ask's first message (a chat request keeps its own in
    ``messages``)."""
    text = content_text(data.get("system")) or content_text(data.get("instructions"))
    return [{"role": "system", "content": text}] if text else []


def _repair_note(result: RepairResult) -> CallscopeNote:
    """The annotation of a repair: the final verdict and the record; when a re-ask failed,
    ``error`` says with what (and a warning is logged), so an answer that was never
    repaired is not passed off as one."""
    note: CallscopeNote = utf8_safe(
        {"verdict": result.verdict.to_dict(), "repair": result.to_dict()}
    )
    errors = [a.error for a in result.attempts if a.error]
    if errors:
        note["error"] = f"callscope: the re-ask failed: {errors[-1]}"
        log.warning(
            "callscope repair: the re-ask failed (%s); the answer returned %s",
            errors[-1],
            "passed" if result.passed else "still fails",
        )
    return note


def _refusal(exc: BaseException) -> bool:
    """``exc`` is block mode's refusal (:class:`CallscopeBlocked`, or the proxy's exception
    raised from one), which the host is meant to get; any other exception of the check is a
    failure of callscope's own."""
    return isinstance(exc, CallscopeBlocked) or isinstance(exc.__cause__, CallscopeBlocked)


def _failed(exc: Exception) -> CallscopeNote:
    """The annotation of a check that failed (logged with its traceback): the answer goes
    through as it came."""
    log.error("callscope: the check failed; the answer goes through unchecked", exc_info=exc)
    return {"error": f"callscope: the check failed ({type(exc).__name__}); the answer is unchecked"}


#: the words a config value may switch with (``config.yaml`` may give ``"false"``)
_SWITCH_WORDS = {"true": True, "1": True, "yes": True, "on": True,
                 "false": False, "0": False, "no": False, "off": False}  # fmt: skip


def _switch(value: Any, name: str) -> bool:
    """A config value as a switch: a bool, 0 or 1, or one of :data:`_SWITCH_WORDS`; anything
    else is a mistake (``"nope"`` read as true before)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _SWITCH_WORDS:
        return _SWITCH_WORDS[value.strip().lower()]
    raise ValueError(f"{name} must be true or false, not {value!r}")


__all__ = ["MODES", "CallscopeBlocked", "CallscopeGuardrail", "GuardedStream"]
