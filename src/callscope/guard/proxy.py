"""The repair proxy: an OpenAI-compatible ``/v1/chat/completions`` between an agent and its
model server (``callscope serve``).

What it checks, and what it does not:

- A non-streaming ``POST /v1/chat/completions`` (or ``/chat/completions``) whose request has
  ``tools`` and whose upstream answer (status 200) has ``tool_calls`` in its first choice:
  every call is diagnosed (:func:`callscope.guard.check.check`) against the request's tools,
  its last user message and, as context, its earlier user messages and tool results. A
  failing call is repaired (:func:`callscope.guard.repair.repair`): upstream is asked again
  with the model's answer and the gated correction appended (the agent never sees
  those turns; a failing call among passing ones is named by position and name, and the
  passing ones are to be kept as they are), at most ``attempts`` times and not after
  ``repair_timeout`` seconds; the best whole answer is kept.
- The agent gets the upstream body byte for byte when the calls pass; the repaired
  completion when a re-ask passed; else the best one seen. A changed body carries one extra
  top-level field, ``callscope``: ``{"guard": "repaired" | "unrepaired", "attempts",
  "best_attempt", "stage", "reasons", "correction", "calls", "first_stages",
  "request_id"}``, where ``calls`` lists each call of the returned answer by position
  (``{"position", "name", "stage", "reasons"}``) and ``first_stages`` each call's stage in
  the first answer. Every checked reply also has the header
  ``X-Callscope-Guard: passed | repaired | unrepaired`` (``unchecked`` for a completion
  without tool calls) and ``X-Callscope-Guard-Calls``: each call's stage in the answer
  returned, by position, comma-separated (``0,3``: the first call passed, the second failed
  at stage 3; only stage digits, so no model text reaches a header).
- Not checked, passed through unchanged: answers without tool calls, requests without
  tools, streaming requests (``"stream": true``, relayed chunk by chunk as upstream's
  server-sent events; an upstream that fails mid-stream ends the stream with one last
  ``data: {"error": ...}`` event, never a second HTTP response), choices after the first
  (``n > 1``), every other endpoint and method, and error statuses (returned with upstream's
  status and body). An upstream timeout is answered 504, an unreachable upstream 502, an
  upstream answer too deeply nested to read 502, each with an OpenAI-style ``error`` object.
- Every bad request is answered, with an OpenAI-style ``error`` object, and counted in the
  run store (``guard:decisions``): a garbage request line, a header block over 16 KiB, both
  ``Transfer-Encoding`` and ``Content-Length`` or two ``Content-Length`` values, a non-ASCII
  request target: 400 (the server's HTTP parser, h11); over 100 header fields or 16 KiB of
  them: 431; request bodies over
  ``max_body_bytes``: 413; a chunked body without ``Content-Length``: 411; a body or header
  block not complete within ``body_timeout`` / ``header_timeout`` seconds: 408; a target that
  would leave the configured upstream (:func:`~callscope.guard.upstream.upstream_url`), a
  body that is not a JSON object, or a chat request whose ``messages``, ``tools`` or a tool's
  ``parameters`` have the wrong JSON type (:func:`request_error`): 400; a request beyond
  ``max_concurrent`` in flight: 503 (``overloaded``). It binds 127.0.0.1 unless told
  otherwise.
- A check that fails with an error of its own (a bug, or a value no reader foresaw) passes
  upstream's answer on unchanged with ``X-Callscope-Guard: error``, counted as
  ``guard_error`` and logged on one line: the agent is never left without an answer.

The stack: an ASGI application (:class:`ProxyApp`, no framework: one endpoint and a
pass-through need none) served by uvicorn (its h11 parser, a listen backlog of 2048, one
event loop; the checks and repairs, which are CPU work over model text, run on worker
threads) with an ``httpx.AsyncClient`` to upstream. SIGINT and SIGTERM stop it gracefully:
no new connections, every request in flight answered, then every decision written.

Every decision is recorded in a run store (:mod:`callscope.guard.record`), so ``callscope
report RUN_DIR`` shows the stage mix and each repaired request like a SAAG run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.record import StoreWriter
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS, RepairAttempt, RepairResult, repair
from callscope.guard.upstream import (
    DEFAULT_LOCAL_MODEL,
    HOP,
    MAX_REPLY_BYTES,
    BadTarget,
    Headers,
    HTTPUpstream,
    LocalUpstream,
    Upstream,
    UpstreamReply,
    UpstreamTimeout,
    UpstreamTooLarge,
    UpstreamUnreachable,
    as_async,
    error_body,
    error_reply,
)

__all__ = [
    "CALLS_HEADER",
    "EXTRA_FIELD",
    "GUARD_HEADER",
    "Guard",
    "LocalUpstream",
    "ProxyApp",
    "ProxyConfig",
    "ProxyServer",
    "UpstreamReply",
    "make_server",
    "serving",
]

#: the extra top-level field of a completion the proxy changed (documented above)
EXTRA_FIELD = "callscope"
#: the response header naming the proxy's decision
GUARD_HEADER = "X-Callscope-Guard"
#: the response header listing each call's stage (0 = passed) by position
CALLS_HEADER = "X-Callscope-Guard-Calls"
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
#: the listen backlog: a burst of connections waits in the kernel's queue, not refused
BACKLOG = 2048
#: connections held at once (idle kept-alive ones too); beyond it uvicorn answers 503 itself
MAX_CONNECTIONS = 4096
#: requests in flight at once by default (``--max-concurrent``); beyond it a request is
#: answered 503 with an OpenAI-style ``overloaded`` error and counted, never dropped
MAX_CONCURRENT = 2048
#: a request's header block at most (bytes of names and values) and its header count at most:
#: beyond either, 431 (h11 itself only bounds a header block that arrives in pieces)
MAX_HEADER_BYTES = 16 * 1024
#: the thread switch interval while serving (Python's default is 5 ms): after each socket
#: call the event loop waits for the GIL while the store writer's thread or a check runs, and
#: at 5 ms that wait was most of a passing answer's added latency (3 ms per send, profiled)
SWITCH_INTERVAL_S = 0.0002
#: an upstream answer up to this size is checked on the event loop (a check costs ~0.3 ms);
#: a larger one, and every repair, on a worker thread so that small requests keep moving
INLINE_CHECK_BYTES = 64 * 1024
MAX_HEADERS = 100

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy runs. ``upstream`` is the base URL the agent would otherwise use (with its
    ``/v1``, e.g. ``http://127.0.0.1:8080/v1``); ``None`` serves the embedded model
    (``local_model``). ``attempts`` re-asks at most, within ``repair_timeout`` seconds after
    the first answer; ``upstream_timeout`` bounds each upstream request as a whole (from
    sending it to the last byte of its answer, a stream included); an upstream answer over
    ``max_reply_bytes`` once decoded is a 502; a request's header
    block must arrive within ``header_timeout`` seconds and its body within ``body_timeout``;
    beyond ``max_concurrent`` requests in flight, a request is answered 503."""

    upstream: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    run_dir: Path = Path("callscope-proxy")
    attempts: int = DEFAULT_REPAIR_ATTEMPTS
    repair_timeout: float = 30.0
    upstream_timeout: float = 120.0
    max_body_bytes: int = 4 * 1024 * 1024
    grounding: str | None = None
    local_model: str = DEFAULT_LOCAL_MODEL
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_concurrent: int = MAX_CONCURRENT
    max_reply_bytes: int = MAX_REPLY_BYTES

    def to_meta(self) -> dict[str, Any]:
        return {
            "source": "proxy",
            "upstream": self.upstream or self.local_model,
            "max_attempts": self.attempts + 1,
            "repair_timeout": self.repair_timeout,
            "grounding": self.grounding,
        }


def _log(message: str) -> None:
    print(f"callscope serve: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the request


def request_error(request: Any) -> str | None:
    """Why a chat request cannot be checked, or ``None``: the body must be a JSON object;
    ``messages``, when present, a list of objects; ``tools``, when present and not ``null``, a
    list of objects whose ``function`` (when present) is an object with a string ``name`` and
    whose ``parameters`` (when present) is an object. A request the guard could not read
    would otherwise be recorded with values no report can show (issue 29 item 10):
    ``{"messages": [5]}`` is ``'messages[0] must be a JSON object'``, a tool whose
    ``parameters`` is ``[1, 2]`` ``'tools[0].function.parameters must be a JSON object'``.
    """
    if not isinstance(request, dict):
        return "request body must be a JSON object"
    messages = request.get("messages")
    if messages is not None:
        if not isinstance(messages, list):
            return "messages must be a list"
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                return f"messages[{i}] must be a JSON object"
    tools = request.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools must be a list of tool objects"
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools[{i}] must be a JSON object"
        fn = tool.get("function", tool)
        if not isinstance(fn, dict):
            return f"tools[{i}].function must be a JSON object"
        if "name" in fn and not isinstance(fn["name"], str):
            return f"tools[{i}].function.name must be a string"
        params = fn.get("parameters")
        if params is not None and not isinstance(params, dict):
            return f"tools[{i}].function.parameters must be a JSON object"
        props = params.get("properties") if isinstance(params, dict) else None
        if props is not None and not isinstance(props, dict):
            return f"tools[{i}].function.parameters.properties must be a JSON object"
    return None


def _loads(body: bytes) -> Any:
    """JSON, or :class:`ValueError` (also for nesting too deep to read)."""
    try:
        return json.loads(body)
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


#: how each upstream failure is answered: its decision (and error type), status, wording
UPSTREAM_FAILURES: dict[type[Exception], tuple[str, int, str]] = {
    UpstreamTimeout: ("upstream_timeout", 504, "timed out"),
    UpstreamUnreachable: ("upstream_unreachable", 502, "unreachable"),
    UpstreamTooLarge: ("upstream_too_large", 502, "answer too large"),
}
#: ``Guard.chat``'s default: the request body is still to be parsed
_UNREAD: Any = object()


# --------------------------------------------------------------------------- the guard


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

    async def chat(self, body: bytes, headers: Headers, request: Any = _UNREAD) -> UpstreamReply:
        """The reply to the chat request ``body`` (``request``: the body already parsed)."""
        if request is _UNREAD:
            try:
                request = _loads(body)
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
            data = _loads(first.content)
        except ValueError as exc:
            if "nested" in str(exc):
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
            return _with_header(first, "unchecked")
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
            _log(f"check failed, answer passed on unchecked: {type(exc).__name__}: {exc}")
            return _with_header(first, "error")

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
            return _loads(reply.content)

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
        return _with_header(reply, decision, result.verdict)

    def _passed(
        self, request: dict[str, Any], data: Any, first: UpstreamReply, verdict: TurnVerdict
    ) -> UpstreamReply:
        _, record = self._record(request, _single(data, verdict), "passed")
        reply = UpstreamReply(first.status, first.headers, first.content, record)
        return _with_header(reply, "passed", verdict)

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


def _with_header(
    reply: UpstreamReply, decision: str, verdict: TurnVerdict | None = None
) -> UpstreamReply:
    headers = [*reply.headers, (GUARD_HEADER, decision)]
    if verdict is not None and verdict.calls:
        headers.append((CALLS_HEADER, calls_header(verdict)))
    return UpstreamReply(reply.status, headers, reply.content, reply.on_sent)


# --------------------------------------------------------------------------- HTTP (ASGI)


class _BodyError(Exception):
    def __init__(self, reply: UpstreamReply, close: bool = False) -> None:
        self.reply = reply
        self.close = close


class ProxyApp:
    """The ASGI application: ``POST .../chat/completions`` is decided by :class:`Guard`, a
    streaming one relayed, every other request forwarded. The lifespan closes upstream and
    writes every queued decision."""

    def __init__(self, config: ProxyConfig, upstream: Any, writer: StoreWriter | None) -> None:
        self.config = config
        self.guard = Guard(upstream, config, writer)
        self.writer = writer
        self._closed = False
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            if self._in_flight >= self.config.max_concurrent:
                self.guard.count("overloaded")
                message = f"over {self.config.max_concurrent} requests in flight; retry shortly"
                await _send(send, error_reply(503, message, "overloaded"), close=True)
                return
            self._in_flight += 1
            try:
                await self._http(scope, receive, send)
            finally:
                self._in_flight -= 1

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close upstream, then write what is queued and close the store (once)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self.guard.upstream.aclose()
        if self.writer is not None:
            await anyio.to_thread.run_sync(self.writer.close)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        headers = scope["headers"]
        lengths = [v for k, v in headers if k == b"content-length"]
        chunked = any(k == b"transfer-encoding" for k, _ in headers)
        if lengths and chunked:
            # h11 reads such a body as chunked: whatever follows its last chunk would be
            # read as a second request on this connection (CL.TE smuggling); refuse, close
            raise _BodyError(
                error_reply(400, "send Content-Length or Transfer-Encoding, not both"), True
            )
        if not lengths:
            if chunked:
                raise _BodyError(
                    error_reply(411, "send a Content-Length (chunked bodies are refused)"), True
                )
            limit = 0
        else:
            try:
                limit = int(lengths[0])
            except ValueError:
                raise _BodyError(error_reply(400, "bad Content-Length"), True) from None
        cfg = self.config
        if limit > cfg.max_body_bytes:
            raise _BodyError(
                error_reply(413, f"request body over {cfg.max_body_bytes} bytes", "too_large"),
                True,
            )
        parts: list[bytes] = []
        size = 0
        with anyio.move_on_after(cfg.body_timeout) as scope_timer:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _BodyError(error_reply(400, "client went away"), True)
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > cfg.max_body_bytes:
                    raise _BodyError(
                        error_reply(
                            413, f"request body over {cfg.max_body_bytes} bytes", "too_large"
                        ),
                        True,
                    )
                parts.append(chunk)
                if not message.get("more_body", False):
                    break
        if scope_timer.cancelled_caught:
            raise _BodyError(
                error_reply(
                    408,
                    f"request body not complete within {cfg.body_timeout:g} s",
                    "request_timeout",
                ),
                True,
            )
        return b"".join(parts)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.guard
        raw_headers = scope["headers"]
        if len(raw_headers) > MAX_HEADERS or (
            sum(len(k) + len(v) for k, v in raw_headers) > MAX_HEADER_BYTES
        ):
            guard.count("bad_request")
            message = f"request headers over {MAX_HEADERS} fields or {MAX_HEADER_BYTES} bytes"
            await _send(send, error_reply(431, message, "headers_too_large"), close=True)
            return
        try:
            body = await self._read_body(scope, receive)
        except _BodyError as err:
            guard.count("bad_request")
            await _send(send, err.reply, close=err.close)
            return
        method = scope["method"]
        raw = scope.get("raw_path") or scope["path"].encode()
        target = raw.decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        path = scope["path"]
        headers = [
            (k, v) for k, v in scope["headers"] if k not in HOP and k not in _conn_tokens(scope)
        ]
        try:
            if method == "POST" and path in CHAT_PATHS:
                try:
                    request = _loads(body)
                except ValueError as exc:
                    reply = guard.bad_request(400, f"request body is not valid JSON ({exc})")
                else:
                    # on the parsed body: '"\\u0073tream": true' is a stream as well
                    if isinstance(request, dict) and request.get("stream") is True:
                        await self._stream(target, body, headers, receive, send)
                        return
                    reply = await guard.chat(body, headers, request)
            else:
                reply = await guard.upstream.forward(
                    method, target, body, headers, self.config.upstream_timeout
                )
        except BadTarget as exc:
            reply = guard.bad_request(400, str(exc))
        except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
            reply = guard.upstream_failed(exc)
        await _send(send, reply)

    async def _stream(
        self, target: str, body: bytes, headers: Headers, receive: Receive, send: Send
    ) -> None:
        """Relay a streaming request; a client that goes away ends it at once: the upstream
        request is closed (no more generation) and its ``max_concurrent`` slot freed."""
        guard = self.guard
        guard.count("stream")
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not relayed.is_set():
                    guard.count("stream_abandoned")
                tg.cancel_scope.cancel()

            relayed = anyio.Event()
            tg.start_soon(watch)
            await self._relay(target, body, headers, send)
            relayed.set()
            tg.cancel_scope.cancel()

    async def _relay(self, target: str, body: bytes, headers: Headers, send: Send) -> None:
        guard = self.guard
        started = False
        try:
            async with guard.upstream.stream(
                target, body, headers, self.config.upstream_timeout
            ) as (status, up_headers, chunks):
                await send({"type": "http.response.start", "status": status, "headers": up_headers})
                started = True
                async for chunk in chunks:
                    if chunk:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
            kind, status, what = UPSTREAM_FAILURES[type(exc)]
            guard.count("stream_error")
            if not started:
                await _send(send, error_reply(status, f"upstream {what}: {exc}", kind))
                return
            # the 200 stream has begun: end it with one last event, never a second response
            event = b"\n\ndata: " + error_body(f"upstream {what} mid-stream: {exc}", kind)
            event += b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": False})
            return
        except BadTarget as exc:
            await _send(send, guard.bad_request(400, str(exc)))
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _conn_tokens(scope: Scope) -> frozenset[bytes]:
    """Header names the client's ``Connection`` header marks as hop-by-hop."""
    names = [
        t.strip().lower() for k, v in scope["headers"] if k == b"connection" for t in v.split(b",")
    ]
    return frozenset(names)


async def _send(send: Send, reply: UpstreamReply, close: bool = False) -> None:
    """Send ``reply`` (its header text is latin-1: the bytes upstream sent); then record its
    decision (``on_sent``)."""
    headers = [
        (k.encode("latin-1", "replace"), v.encode("latin-1", "replace"))
        for k, v in reply.headers
        if k.lower() != "content-length"
    ]
    headers.append((b"content-length", str(len(reply.content)).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.content, "more_body": False})
    if reply.on_sent is not None:
        reply.on_sent()


# --------------------------------------------------------------------------- the server


def _raw_answer(status: int, reason: str, message: str, kind: str) -> bytes:
    body = error_body(message, kind)
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with what it lacks for a server facing any client: a header
    block must be complete within ``header_timeout`` seconds of its first byte or of the
    connection (408, then closed: headers then silence, or a trickle, never hold a connection
    open), and a request line uvicorn cannot decode (a non-ASCII target) is a 400 instead of
    a dropped connection."""

    header_timeout: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()

    def _arm_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._header_timeout)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return
        self.transport.write(
            _raw_answer(
                408,
                "Request Timeout",
                f"request headers not complete within {self.header_timeout:g} s",
                "request_timeout",
            )
        )
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        try:
            super().data_received(data)
        except (UnicodeDecodeError, ValueError) as exc:
            self.logger.warning("Invalid HTTP request received: %s", exc)
            if not self.transport.is_closing():
                self.transport.write(
                    _raw_answer(400, "Bad Request", f"invalid request: {exc}", "invalid_request")
                )
                self.transport.close()
            return
        if self.transport.is_closing():
            self._disarm_header_timer()
        elif self.conn.their_state is h11.IDLE and (
            self.cycle is None or self.cycle.response_complete
        ):
            self._arm_header_timer()  # a (next) request's headers are on their way
        else:
            self._disarm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)


class ProxyServer:
    """The proxy bound to its socket: :meth:`run` serves in the foreground (SIGINT and SIGTERM
    stop it gracefully), :func:`serving` on a thread; :attr:`url` is its base URL."""

    def __init__(self, config: ProxyConfig, upstream: Any, writer: StoreWriter | None) -> None:
        self.config = config
        self.writer = writer
        self.app = ProxyApp(config, upstream, writer)
        self.guard = self.app.guard
        family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
        # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so, and an
        # answer's headers and body are two writes (Nagle plus a delayed ACK cost 40 ms each)
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.socket.bind((config.host, config.port))
            self.socket.listen(BACKLOG)
        except OSError:
            self.socket.close()
            raise
        protocol = type(
            "GuardedH11", (GuardedH11Protocol,), {"header_timeout": config.header_timeout}
        )
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                http=protocol,
                loop="asyncio",
                lifespan="on",
                log_config=None,
                log_level="warning",
                access_log=False,
                backlog=BACKLOG,
                limit_concurrency=MAX_CONNECTIONS,
                timeout_keep_alive=5,
                timeout_graceful_shutdown=None,
            )
        )

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM (then: stop accepting, answer what is in flight,
        write every decision). Sets the interpreter's thread switch interval to
        :data:`SWITCH_INTERVAL_S`."""
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.server.run(sockets=[self.socket])

    def serve_forever(self) -> None:
        self.run()

    def shutdown(self) -> None:
        self.server.should_exit = True

    def close(self) -> None:
        """Stop serving, write what is queued, close upstream and the store."""
        self.server.should_exit = True
        with contextlib.suppress(OSError):
            self.socket.close()
        if not self.app._closed:
            self.app._closed = True
            if self.writer is not None:
                self.writer.close()


def make_upstream(config: ProxyConfig) -> Any:
    """:class:`~callscope.guard.upstream.HTTPUpstream` for ``config.upstream``, else the
    embedded model."""
    if config.upstream:
        return HTTPUpstream(config.upstream, max_reply_bytes=config.max_reply_bytes)
    from callscope.models.registry import load_model  # lazy: llama.cpp and the weights

    return LocalUpstream(load_model(config.local_model), config.local_model)


def make_server(config: ProxyConfig, upstream: Any | None = None) -> ProxyServer:
    """A bound, not yet serving proxy (:meth:`ProxyServer.run` on it, or :func:`serving`)."""
    upstream = upstream if upstream is not None else make_upstream(config)
    writer = StoreWriter(config.run_dir, config.to_meta())
    return ProxyServer(config, upstream, writer)


@contextlib.contextmanager
def serving(config: ProxyConfig, upstream: Any | None = None) -> Iterator[ProxyServer]:
    """A proxy serving on a background thread for the ``with`` block, then stopped as SIGTERM
    stops it (in-flight requests answered, every decision written)."""
    server = make_server(config, upstream)
    thread = threading.Thread(target=server.run, daemon=True, name="callscope-proxy")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=30)
        server.close()
