"""The proxy's decisions, independent of HTTP (:class:`Guard`): a chat request's upstream
answer checked, repaired when a call fails, recorded once the reply is sent, and the
headers that say what was decided."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread

from callscope.core.jsonl import TooDeep
from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.proxy.config import ProxyConfig, log
from callscope.guard.proxy.request import loads_request, request_error
from callscope.guard.record import StoreWriter
from callscope.guard.repair import RepairAttempt, RepairResult, repair
from callscope.guard.upstream import (
    Headers,
    Upstream,
    UpstreamReply,
    UpstreamTimeout,
    UpstreamTooLarge,
    UpstreamUnreachable,
    as_async,
    error_reply,
)

#: the extra top-level field of a completion the proxy changed (the package docstring)
EXTRA_FIELD = "callscope"
#: the response header naming the proxy's decision
GUARD_HEADER = "X-Callscope-Guard"
#: the response header listing each call's stage (0 = passed) by position
CALLS_HEADER = "X-Callscope-Guard-Calls"
#: the response header naming what the guard noticed beside its verdict: the positions of
#: calls whose arguments are an object, not the JSON string the OpenAI format requires
#: (``arguments-not-a-string=0,2``; only fixed words and digits reach it)
NOTE_HEADER = "X-Callscope-Guard-Note"
#: an upstream answer up to this size is checked on the event loop (a check costs ~0.3 ms);
#: a larger one, and every repair, on a worker thread so that small requests keep moving
INLINE_CHECK_BYTES = 64 * 1024

#: how each upstream failure is answered: its decision (and error type), status, wording
UPSTREAM_FAILURES: dict[type[Exception], tuple[str, int, str]] = {
    UpstreamTimeout: ("upstream_timeout", 504, "timed out"),
    UpstreamUnreachable: ("upstream_unreachable", 502, "unreachable"),
    UpstreamTooLarge: ("upstream_too_large", 502, "answer too large"),
}
#: ``Guard.chat``'s default: the request body is still to be parsed
UNREAD: Any = object()


class Guard:
    """The proxy's decisions, independent of HTTP: :meth:`chat` takes the agent's request body
    and returns the reply to send back. The checks and repairs run on worker threads."""

    def __init__(
        self, upstream: Any, config: ProxyConfig, writer: StoreWriter | None = None
    ) -> None:
        self.upstream: Upstream = as_async(upstream)
        self.config = config
        self.writer = writer
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]

    def count(self, decision: str) -> None:
        if self.writer is not None:
            self.writer.count(decision)

    _count = count

    def bad_request(
        self, status: int, message: str, kind: str = "invalid_request_error"
    ) -> UpstreamReply:
        """An answered, counted refusal (``guard:decisions``: ``bad_request``)."""
        self.count("bad_request")
        return error_reply(status, message, kind)

    def upstream_failed(self, exc: Exception) -> UpstreamReply:
        """The counted answer to an upstream that failed: 504 when it timed out, 502 when it
        was unreachable, broke off or sent an answer over ``max_reply_bytes``."""
        kind, status, what = UPSTREAM_FAILURES[type(exc)]
        self.count(kind)
        return error_reply(status, f"upstream {what}: {exc}", kind)

    async def chat(self, body: bytes, headers: Headers, request: Any = UNREAD) -> UpstreamReply:
        """The reply to the chat request ``body`` (``request``: the body already parsed)."""
        if request is UNREAD:
            try:
                request = loads_request(body)
            except ValueError as exc:
                return self.bad_request(400, f"request body is not valid JSON ({exc})")
        problem = request_error(request)
        if problem is not None:
            return self.bad_request(400, problem)
        cfg = self.config
        try:
            first = await self.upstream.chat(body, headers, cfg.upstream_timeout)
        except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
            return self.upstream_failed(exc)
        tools = request.get("tools")
        if first.status != 200 or not tools:
            self.count("upstream_error" if first.status != 200 else "unchecked")
            return first
        try:
            data = loads_request(first.content)
        except ValueError as exc:
            if isinstance(exc, TooDeep):
                self.count("upstream_invalid")
                return error_reply(
                    502, "upstream answer is nested too deeply to read", "upstream_invalid"
                )
            self.count("unchecked")
            return first
        try:
            message = message_of(data)
        except (TypeError, ValueError):
            self.count("unchecked")
            return first
        if not message.get("tool_calls"):
            self.count("unchecked")
            return with_header(first, "unchecked")
        messages = request.get("messages") or []
        try:
            if len(first.content) <= INLINE_CHECK_BYTES:  # ~0.3 ms: no thread hop
                verdict = check(data, tools, messages, self.config.grounding)
                if verdict.passed:
                    return self._passed(request, data, first, verdict)
            else:
                verdict = None
            return await anyio.to_thread.run_sync(
                self._decide, request, headers, data, first, messages, tools, verdict
            )
        except Exception as exc:  # noqa: BLE001 - the agent gets upstream's answer, marked
            self.count("guard_error")
            log(f"check failed, answer passed on unchecked: {type(exc).__name__}: {exc}")
            return with_header(first, "error")

    def _decide(
        self,
        request: dict[str, Any],
        headers: Headers,
        data: dict[str, Any],
        first: UpstreamReply,
        messages: list[Any],
        tools: Any,
        verdict: TurnVerdict | None = None,
    ) -> UpstreamReply:
        """On a worker thread: check the answer (unless ``verdict`` is given); repair it
        (re-asks go to upstream through the event loop) when a call fails."""
        cfg = self.config
        if verdict is None:
            verdict = check(data, tools, messages, cfg.grounding)
        if verdict.passed:
            return self._passed(request, data, first, verdict)
        deadline = time.monotonic() + cfg.repair_timeout

        def ask(convo: list[dict[str, Any]], _tools: Any) -> dict[str, Any]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UpstreamTimeout("repair time spent")
            reply = anyio.from_thread.run(
                self.upstream.chat,
                json.dumps({**request, "messages": convo}).encode(),
                headers,
                min(cfg.upstream_timeout, left),
            )
            if reply.status != 200:
                raise RuntimeError(f"upstream answered {reply.status}")
            return loads_request(reply.content)

        result = repair(
            ask,
            messages,
            tools,
            k=cfg.attempts,
            grounding=cfg.grounding,
            first=data,
            deadline=deadline,
        )
        decision = "repaired" if result.passed else "unrepaired"
        request_id, record = self._record(request, result, decision)
        best = dict(result.response)
        best[EXTRA_FIELD] = {
            "guard": decision,
            "attempts": len(result.attempts),
            "best_attempt": result.best_attempt,
            "stage": result.verdict.stage,
            "reasons": [r for c in result.verdict.calls for r in c.reasons],
            "correction": result.verdict.correction,
            "calls": call_list(result.verdict),
            "first_stages": [c.stage for c in verdict.calls],
            "request_id": request_id,
        }
        headers_out = [(k, v) for k, v in first.headers if k.lower() != "content-type"]
        headers_out.append(("content-type", "application/json"))
        reply = UpstreamReply(200, headers_out, json.dumps(best).encode(), record)
        return with_header(reply, decision, result.verdict)

    def _passed(
        self, request: dict[str, Any], data: Any, first: UpstreamReply, verdict: TurnVerdict
    ) -> UpstreamReply:
        _, record = self._record(request, _single(data, verdict), "passed")
        reply = UpstreamReply(first.status, first.headers, first.content, record)
        return with_header(reply, "passed", verdict)

    def _record(
        self, request: dict[str, Any], result: RepairResult, decision: str
    ) -> tuple[str, Callable[[], None] | None]:
        """The decision's request id, and what records it: run once the reply is sent
        (``UpstreamReply.on_sent``), so that a reply that never reached the client is never
        recorded as given."""
        request_id = f"{self._prefix}-{next(self._ids):06d}"
        writer = self.writer
        if writer is None:
            return request_id, None
        model = str(request.get("model") or "unknown")[:200]

        def record() -> None:
            writer.submit(model, request_id, result, self.config.grounding, {"decision": decision})
            writer.count(decision)

        return request_id, record


def _single(data: dict[str, Any], verdict: TurnVerdict) -> RepairResult:
    """The record of a response that passed as it came (nothing re-asked)."""
    return RepairResult(data, verdict, 1, "passed", [RepairAttempt(1, [], data, verdict)])


def call_list(verdict: TurnVerdict) -> list[dict[str, Any]]:
    """Each call of a checked answer by position: ``{"position", "name", "stage",
    "reasons"}`` (the ``calls`` of the extra field)."""
    return [
        {"position": c.index, "name": c.name, "stage": c.stage, "reasons": list(c.reasons)}
        for c in verdict.calls
    ]


def calls_header(verdict: TurnVerdict) -> str:
    """The :data:`CALLS_HEADER` value: each call's stage by position, ``"0,3"``."""
    return ",".join(str(c.stage) for c in verdict.calls)


def with_header(
    reply: UpstreamReply, decision: str, verdict: TurnVerdict | None = None
) -> UpstreamReply:
    headers = [*reply.headers, (GUARD_HEADER, decision)]
    if verdict is not None and verdict.calls:
        headers.append((CALLS_HEADER, calls_header(verdict)))
    if verdict is not None and verdict.object_arguments:
        positions = ",".join(str(i) for i in verdict.object_arguments)
        headers.append((NOTE_HEADER, f"arguments-not-a-string={positions}"))
    return UpstreamReply(reply.status, headers, reply.content, reply.on_sent)
