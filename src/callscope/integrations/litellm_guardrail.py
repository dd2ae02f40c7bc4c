"""A LiteLLM guardrail: the tool calls of every response checked after the call (extra
``litellm``).

:class:`CallscopeGuardrail` is a ``litellm.integrations.custom_guardrail.CustomGuardrail``
whose ``async_post_call_success_hook`` (a whole response) and
``async_post_call_streaming_iterator_hook`` (a ``stream: true`` response: its chunks are
held, assembled with ``litellm.stream_chunk_builder`` and checked before the first one is
sent) run :func:`callscope.guard_check` on the response against the request's ``tools`` and
``messages``, and then, by ``callscope_mode``:

- ``annotate`` (default): the response goes through unchanged, with the verdict under its
  ``callscope`` field (``TurnVerdict.to_dict()``; the proxy returns it in the JSON body, and
  on the last chunk of a stream);
- ``repair``: a response the gate acts on is re-asked with the gated correction
  (:func:`callscope.guard_repair`, as ``callscope serve`` does, through the proxy's router
  when it runs in the proxy, else ``litellm.acompletion`` with the caller's own parameters:
  ``api_base``, ``api_key`` and the rest) and the best answer is returned (a stream as a
  stream), annotated with the repair's record; a re-ask that fails is logged and named in
  the annotation (``error``), never passed off as a repair;
- ``block``: a response the gate acts on is refused: :class:`CallscopeBlocked` (HTTP 400 in
  the proxy, before any chunk of a stream is sent; the correction and the verdict as the
  detail).

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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail

from callscope.guard.check import TurnVerdict, check
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS, RepairResult, repair
from callscope.integrations.verdicts import acts_on, turn_correction
from callscope.saag.gated import GATED_DEFAULT

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


class CallscopeBlocked(Exception):
    """A response whose tool calls the gate acts on, refused in ``block`` mode, from the SDK
    and the proxy alike; ``status_code`` 400 is what the proxy answers with, ``detail`` the
    error body (``error``, ``correction``, ``verdict``)."""

    status_code = 400

    def __init__(self, verdict: TurnVerdict, correction: str | None = None) -> None:
        fix = correction or verdict.correction or "a tool call failed"
        self.message = f"callscope: tool call failed: {fix}"
        super().__init__(self.message)
        self.verdict = verdict
        self.detail = {
            "error": "callscope: tool call failed",
            "correction": fix,
            "verdict": verdict.to_dict(),
        }


def _as_dict(response: Any) -> dict[str, Any]:
    if isinstance(response, dict):
        return response
    dump = getattr(response, "model_dump", None)
    return dump() if callable(dump) else {}


class CallscopeGuardrail(CustomGuardrail):
    """callscope's post-call check of tool calls (see the module docstring)."""

    def __init__(
        self,
        callscope_mode: str = "annotate",
        attempts: int = DEFAULT_REPAIR_ATTEMPTS,
        grounding: str | None = None,
        gated: bool = True,
        **kwargs: Any,
    ) -> None:
        if callscope_mode not in MODES:
            raise ValueError(f"callscope_mode must be one of {MODES}, not {callscope_mode!r}")
        self.callscope_mode = callscope_mode
        self.attempts = int(attempts)
        self.grounding = grounding
        self.settings = GATED_DEFAULT if _truthy(gated) else None
        super().__init__(**kwargs)

    def check_response(self, data: dict[str, Any], response: Any) -> TurnVerdict:
        """The guard's verdict on ``response`` to the request ``data``."""
        return check(
            _as_dict(response), data.get("tools") or [], data.get("messages") or [], self.grounding
        )

    async def _reask(self, data: dict[str, Any], in_proxy: bool = False) -> Any:
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
        self, data: dict[str, Any], response: Any, in_proxy: bool
    ) -> tuple[Any, dict[str, Any]]:
        """The response to send for ``response`` by the mode (the same one, or a repaired
        one) and its annotation, or :class:`CallscopeBlocked`."""
        tools = data.get("tools")
        verdict = self.check_response(data, response)
        acted = acts_on(verdict, self.settings)
        if self.callscope_mode == "annotate" or not acted:
            return response, {"verdict": verdict.to_dict()}
        if self.callscope_mode == "block":
            raise CallscopeBlocked(verdict, turn_correction(verdict, self.settings))
        loop = asyncio.get_running_loop()

        def chat_fn(messages: list[dict[str, Any]], tools: Sequence[Any] | None) -> Any:
            ask = {**data, "messages": messages}
            fut = asyncio.run_coroutine_threadsafe(self._reask(ask, in_proxy), loop)
            return _as_dict(fut.result())

        result = await asyncio.to_thread(
            repair,
            chat_fn,
            data.get("messages") or [],
            tools,
            k=self.attempts,
            grounding=self.grounding,
            first=_as_dict(response),
            settings=self.settings,
        )
        best = result.response
        if result.best_attempt > 1 and isinstance(best, dict):
            import litellm  # lazy: the host's response type

            best_response = litellm.ModelResponse(**best)
        else:
            best_response = response
        return best_response, _repair_note(result)

    async def async_post_call_success_hook(
        self, data: dict, user_api_key_dict: Any, response: Any
    ) -> Any:
        if not data.get("tools") or not hasattr(response, "choices"):
            return response
        out, note = await self._guard(data, response, in_proxy=user_api_key_dict is not None)
        _annotate(out, note)
        return out

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict
    ) -> AsyncGenerator[Any, None]:
        """A ``stream: true`` response: held whole (a call's arguments arrive in pieces),
        assembled and checked as :meth:`async_post_call_success_hook` checks a response;
        then its own chunks are sent (annotate, or a call the gate lets through: the
        verdict on the last chunk), the repaired answer as a stream, or nothing
        (:class:`CallscopeBlocked` before the first chunk)."""
        if not request_data.get("tools"):
            async for item in response:
                yield item
            return
        chunks = [item async for item in response]
        import litellm  # lazy: the host's stream assembler

        built = litellm.stream_chunk_builder(chunks, messages=request_data.get("messages"))
        if built is None or not hasattr(built, "choices"):
            for item in chunks:
                yield item
            return
        out, note = await self._guard(request_data, built, in_proxy=user_api_key_dict is not None)
        if out is not built:  # repaired: the best answer as a stream of its own
            chunks = _as_stream(_as_dict(out), chunks[0] if chunks else None)
        if chunks:
            _annotate(chunks[_last_choice(chunks)], note)
        for item in chunks:
            yield item


def _repair_note(result: RepairResult) -> dict[str, Any]:
    """The annotation of a repair: the final verdict and the record; when a re-ask failed,
    ``error`` says with what (and a warning is logged), so an answer that was never
    repaired is not passed off as one."""
    note: dict[str, Any] = {"verdict": result.verdict.to_dict(), "repair": result.to_dict()}
    errors = [a.error for a in result.attempts if a.error]
    if errors:
        note["error"] = f"callscope: the re-ask failed: {errors[-1]}"
        log.warning(
            "callscope repair: the re-ask failed (%s); the answer returned %s",
            errors[-1],
            "passed" if result.passed else "still fails",
        )
    return note


def _as_stream(response: dict[str, Any], first: Any) -> list[Any]:
    """A whole chat completion as stream chunks: one carrying the message, one closing it
    with the finish reason."""
    import litellm  # lazy: the host's chunk type

    choice = (response.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
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


def _truthy(value: Any) -> bool:
    """A config value as a switch (``config.yaml`` may give ``"false"``)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


def _annotate(response: Any, value: dict[str, Any]) -> None:
    try:
        response.callscope = value
    except (AttributeError, TypeError, ValueError):
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            hidden["callscope"] = value


__all__ = ["MODES", "CallscopeBlocked", "CallscopeGuardrail"]
