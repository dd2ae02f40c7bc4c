"""A LiteLLM guardrail: the tool calls of every response checked after the call (extra
``litellm``).

:class:`CallscopeGuardrail` is a ``litellm.integrations.custom_guardrail.CustomGuardrail``
whose ``async_post_call_success_hook`` runs :func:`callscope.guard_check` on the response
against the request's ``tools`` and ``messages``, and then, by ``mode``:

- ``annotate`` (default): the response goes through unchanged, with the verdict under its
  ``callscope`` field (``TurnVerdict.to_dict()``; the proxy returns it in the JSON body);
- ``repair``: a failing response is re-asked with the gated correction
  (:func:`callscope.guard_repair`, as ``callscope serve`` does, through the proxy's router
  when it runs in the proxy, else ``litellm.acompletion``) and the best answer is returned,
  annotated with the repair's record;
- ``block``: a failing response is refused (HTTP 400 in the proxy, the correction as the
  detail).

Proxy ``config.yaml``::

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
from collections.abc import Sequence
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail

from callscope.guard.check import TurnVerdict, check
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS, repair

MODES = ("annotate", "repair", "block")


class CallscopeBlocked(Exception):
    """A response whose tool calls failed, refused in ``block`` mode (the SDK's error; the
    proxy's is an ``HTTPException`` 400)."""

    def __init__(self, verdict: TurnVerdict) -> None:
        super().__init__(verdict.correction or "callscope: a tool call failed")
        self.verdict = verdict


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
        **kwargs: Any,
    ) -> None:
        if callscope_mode not in MODES:
            raise ValueError(f"callscope_mode must be one of {MODES}, not {callscope_mode!r}")
        self.callscope_mode = callscope_mode
        self.attempts = int(attempts)
        self.grounding = grounding
        super().__init__(**kwargs)

    def check_response(self, data: dict[str, Any], response: Any) -> TurnVerdict:
        """The guard's verdict on ``response`` to the request ``data``."""
        return check(
            _as_dict(response), data.get("tools") or [], data.get("messages") or [], self.grounding
        )

    async def _reask(self, data: dict[str, Any]) -> Any:
        try:  # lazy: inside the proxy, its router serves the model names of config.yaml
            from litellm.proxy.proxy_server import llm_router
        except ImportError:
            llm_router = None
        kwargs = {k: v for k, v in data.items() if k in ("model", "tools", "tool_choice")}
        if llm_router is not None:
            return await llm_router.acompletion(messages=data["messages"], **kwargs)
        import litellm  # lazy: the host package, only when re-asking from the SDK

        return await litellm.acompletion(messages=data["messages"], **kwargs)

    async def async_post_call_success_hook(
        self, data: dict, user_api_key_dict: Any, response: Any
    ) -> Any:
        tools = data.get("tools")
        if not tools or not hasattr(response, "choices"):
            return response
        verdict = self.check_response(data, response)
        if self.callscope_mode == "annotate" or verdict.passed:
            _annotate(response, {"verdict": verdict.to_dict()})
            return response
        if self.callscope_mode == "block":
            try:  # lazy: the proxy's error type where the proxy runs
                from fastapi import HTTPException
            except ImportError:
                raise CallscopeBlocked(verdict) from None
            raise HTTPException(
                status_code=400,
                detail={"error": "callscope: tool call failed", "verdict": verdict.to_dict()},
            )
        loop = asyncio.get_running_loop()

        def chat_fn(messages: list[dict[str, Any]], tools: Sequence[Any] | None) -> Any:
            ask = {**data, "messages": messages}
            fut = asyncio.run_coroutine_threadsafe(self._reask(ask), loop)
            return _as_dict(fut.result())

        result = await asyncio.to_thread(
            repair,
            chat_fn,
            data.get("messages") or [],
            tools,
            k=self.attempts,
            grounding=self.grounding,
            first=_as_dict(response),
        )
        best = result.response
        if result.best_attempt > 1 and isinstance(best, dict):
            import litellm  # lazy: the host's response type

            best_response = litellm.ModelResponse(**best)
        else:
            best_response = response
        _annotate(best_response, {"verdict": result.verdict.to_dict(), "repair": result.to_dict()})
        return best_response


def _annotate(response: Any, value: dict[str, Any]) -> None:
    try:
        response.callscope = value
    except (AttributeError, TypeError, ValueError):
        hidden = getattr(response, "_hidden_params", None)
        if isinstance(hidden, dict):
            hidden["callscope"] = value


__all__ = ["MODES", "CallscopeBlocked", "CallscopeGuardrail"]
