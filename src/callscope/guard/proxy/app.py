"""The ASGI application of the proxy (:class:`ProxyApp`): the request checks, then a chat
request decided by :class:`~callscope.guard.proxy.decide.Guard`, a streaming one relayed
(and ended the moment its client goes away), every other request forwarded; the lifespan
closes upstream and writes every queued decision."""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from callscope.guard.budget import MemoryBudget, OverBudget, request_ledger
from callscope.guard.proxy.config import MIN_READ_RATE, ProxyConfig
from callscope.guard.proxy.decide import UPSTREAM_FAILURES, ClientWatch, Guard
from callscope.guard.proxy.events import WholeEvents, is_event_stream
from callscope.guard.proxy.request import (
    BodyError,
    NotUtf8,
    Receive,
    Scope,
    Send,
    asks_to_stream,
    conn_tokens,
    header_error,
    is_chat_path,
    json_bytes,
    loads_request,
    read_body,
)
from callscope.guard.record import StoreWriter
from callscope.guard.upstream import (
    HOP,
    BadTarget,
    Headers,
    UpstreamReply,
    UpstreamTimeout,
    UpstreamTooLarge,
    UpstreamUnreachable,
    error_body,
    error_reply,
)

#: the proxy's own health endpoint (never forwarded): the store's state and the memory bound
HEALTH_PATH = "/callscope/health"
#: the header every reply carries while the run store fails to take decisions
STORE_HEADER = "X-Callscope-Store"
#: methods never relayed (405): TRACE and TRACK echo a request (credentials included),
#: CONNECT would open a tunnel. A method is compared upper-cased, as httpx sends it upstream
#: (``trace`` would be relayed as ``TRACE``)
REFUSED_METHODS = frozenset({"TRACE", "TRACK", "CONNECT"})
#: a reply body is sent in pieces of at most this many bytes
SEND_PIECE = 1024 * 1024
#: seconds past ``--upstream-timeout`` that a stream's client may take to read what was sent,
#: and then to take the last error event, before the proxy lets it go
STREAM_GRACE_S = 1.0
#: the status a WebSocket upgrade is refused with (the proxy relays HTTP only)
WEBSOCKET_REFUSED = 501


class ProxyApp:
    """The ASGI application: ``POST .../chat/completions`` is decided by :class:`Guard`, a
    streaming one relayed, every other request forwarded. The lifespan closes upstream and
    writes every queued decision."""

    def __init__(self, config: ProxyConfig, upstream: Any, writer: StoreWriter | None) -> None:
        self.config = config
        self.guard = Guard(upstream, config, writer)
        self.writer = writer
        self.budget = MemoryBudget(config.max_memory_bytes)
        #: set (in the event loop) when the server is told to stop: streams end at once
        self._stop: anyio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "http":
            if self._in_flight >= self.config.max_concurrent:
                self.guard.count("overloaded")
                message = f"over {self.config.max_concurrent} requests in flight; retry shortly"
                await self._reply(send, error_reply(503, message, "overloaded"), close=True)
                return
            self._in_flight += 1
            try:
                with request_ledger(self.budget):
                    await self._http(scope, receive, send)
            finally:
                self._in_flight -= 1

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a WebSocket upgrade before its handshake (the proxy relays HTTP only): a
        JSON :data:`WEBSOCKET_REFUSED` where the server can send an HTTP answer (the
        ``websocket.http.response`` extension), else a close, which the server answers 403.
        Counted ``bad_request``. Before, the app returned without a word: a plain-text 500
        and an error logged for each upgrade."""
        message = await receive()
        if message["type"] != "websocket.connect":  # the client left first
            return
        self.guard.count("bad_request")
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        reply = error_reply(
            WEBSOCKET_REFUSED, "callscope serve does not relay WebSocket upgrades", "not_relayed"
        )
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
        headers.append((b"content-length", str(len(reply.content)).encode()))
        start = {"type": "websocket.http.response.start", "status": reply.status}
        await send({**start, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": reply.content})

    async def _reply(self, send: Send, reply: UpstreamReply, close: bool = False) -> None:
        """:func:`send_reply` within the client's reading deadlines (``--body-timeout`` for
        each piece of :data:`SEND_PIECE`, :func:`reply_deadline` for the whole reply): a
        client that does not take its reply in time is let go, counted ``slow_client``, and
        what its request held (the memory bound, its slot) given back; its decision is not
        recorded (it never got it)."""
        cfg = self.config
        if not await send_reply(send, reply, close, cfg.body_timeout, cfg.min_read_rate):
            self.guard.count("slow_client")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loop = asyncio.get_running_loop()
                self._stop = anyio.Event()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def stop_streams(self) -> None:
        """End every stream in flight (SIGINT, SIGTERM): an endless upstream stream would
        otherwise hold the graceful stop until its deadline. Safe from any thread."""
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already ended
                self._loop.call_soon_threadsafe(self._stop.set)

    async def aclose(self) -> None:
        """Close upstream, then write what is queued and close the store (once)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self.guard.upstream.aclose()
        await anyio.to_thread.run_sync(self.guard.heavy.close)
        if self.writer is not None:
            await anyio.to_thread.run_sync(self.writer.close)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.guard
        problem = header_error(scope)
        if problem is not None:
            guard.count("bad_request")
            await self._reply(send, problem, close=True)
            return
        # what upstream would be sent: httpx upper-cases every method (``trace`` is TRACE)
        method = scope["method"].upper()
        if method in REFUSED_METHODS:
            guard.count("bad_request")
            message = f"{method} is not relayed"
            reply = error_reply(405, message, "method_not_allowed")
            await self._reply(send, reply, close=True)
            return
        try:
            body = await read_body(scope, receive, self.config)
        except BodyError as err:
            guard.count(err.decision)
            await self._reply(send, err.reply, close=err.close)
            return
        path = scope["path"]
        if path == HEALTH_PATH:  # the proxy's own: never relayed, whatever the method
            if method in ("GET", "HEAD"):  # (the server sends no body to a HEAD)
                await self._reply(send, self._health())
            else:
                guard.count("bad_request")
                refused = error_reply(
                    405, f"{HEALTH_PATH} answers GET and HEAD", "method_not_allowed"
                )
                refused.headers.append(("allow", "GET, HEAD"))
                await self._reply(send, refused)
            return
        raw = scope.get("raw_path") or scope["path"].encode()
        target = raw.decode("latin-1")
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode("latin-1")
        headers = [
            (k, v) for k, v in scope["headers"] if k not in HOP and k not in conn_tokens(scope)
        ]
        try:
            if method == "POST" and is_chat_path(path):
                try:
                    request = loads_request(body)
                except NotUtf8 as exc:
                    reply = guard.bad_request(400, str(exc))
                except ValueError as exc:
                    reply = guard.bad_request(400, f"request body is not valid JSON ({exc})")
                else:
                    # on the parsed body: '"\\u0073tream": true' is a stream as well
                    if isinstance(request, dict) and request.get("stream") is True:
                        await self._stream(target, body, headers, receive, send)
                        return
                    answered = await self._chat(body, headers, request, receive)
                    if answered is None:  # the client left: nothing to send or record
                        return
                    reply = answered
            elif method == "POST" and asks_to_stream(body):
                # another endpoint's stream (the Responses API, legacy completions): not
                # checked, relayed as it comes, never read whole first
                await self._stream(target, body, headers, receive, send)
                return
            else:
                reply = await guard.upstream.forward(
                    method, target, body, headers, self.config.upstream_timeout
                )
        except BadTarget as exc:
            reply = guard.bad_request(400, str(exc))
        except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
            reply = guard.upstream_failed(exc)
        except OverBudget as exc:
            guard.count("over_memory_budget")
            reply = error_reply(503, str(exc), "over_memory_budget")
        await self._reply(send, self._store_note(reply))

    async def _chat(
        self, body: bytes, headers: Headers, request: Any, receive: Receive
    ) -> UpstreamReply | None:
        """:meth:`Guard.chat`, ended the moment the client goes away (issue 47 point 4):
        the upstream request is closed, no re-ask starts, nothing is recorded (``None``;
        counted ``client_gone``)."""
        gone = ClientWatch()
        task = asyncio.current_task()
        assert task is not None

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.left()  # a re-ask waiting on upstream ends at once
            task.cancel()  # wherever the request is: the upstream call, the repair's thread

        # a bare asyncio task, not a task group: this runs for every chat request, and a
        # task group's scopes cost more than the watcher itself (benchmarks/proxy_request_work)
        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            return await self.guard.chat(body, headers, request, gone)
        except asyncio.CancelledError:
            if not gone.is_set():
                raise
            task.uncancel()
            self.guard.count("client_gone")
            return None
        finally:
            watcher.cancel()

    def _health(self) -> UpstreamReply:
        """``GET /callscope/health``: 200 while the store takes every decision, else 503
        with how many wait and the last error."""
        health = self.writer.health() if self.writer is not None else None
        data: dict[str, Any] = {
            "status": "ok" if health is None or health.ok else "store_failing",
            "in_flight": self._in_flight,
            "memory_used": self.budget.used,
            "memory_bound": self.budget.limit,
            "check_workers": self.guard.heavy.state,
            "checked_in_workers": self.guard.heavy.done,
        }
        if health is not None:
            data.update(
                unstored=health.unstored,
                lost=health.lost,
                store_errors=health.store_errors,
                last_error=health.last_error,
            )
        status = 200 if health is None or health.ok else 503
        body = json_bytes(data)
        return UpstreamReply(status, [("content-type", "application/json")], body)

    def _store_note(self, reply: UpstreamReply) -> UpstreamReply:
        """``reply`` with ``X-Callscope-Store: failing; unstored=N; lost=M`` while the run
        store fails to take decisions."""
        if self.writer is None or not self.writer.failing:
            return reply
        health = self.writer.health()
        note = f"failing; unstored={health.unstored}; lost={health.lost}"
        return UpstreamReply(
            reply.status, [*reply.headers, (STORE_HEADER, note)], reply.content, reply.on_sent
        )

    async def _stream(
        self, target: str, body: bytes, headers: Headers, receive: Receive, send: Send
    ) -> None:
        """Relay a streaming request; a client that goes away ends it at once: the upstream
        request is closed (no more generation) and its ``max_concurrent`` slot freed. A
        server told to stop ends it too, with a last ``error`` event."""
        guard = self.guard
        guard.count("stream")
        state = _StreamState()
        stopped = False
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not relayed.is_set() and not state.failed:  # else counted as failed
                    guard.count("stream_abandoned")
                tg.cancel_scope.cancel()

            async def stop() -> None:
                nonlocal stopped
                if self._stop is not None:
                    await self._stop.wait()
                    stopped = True
                    tg.cancel_scope.cancel()

            relayed = anyio.Event()
            tg.start_soon(watch)
            tg.start_soon(stop)
            await self._relay(target, body, headers, send, state)
            relayed.set()
            tg.cancel_scope.cancel()
        if stopped and not relayed.is_set():
            message = "the proxy is shutting down"
            if state.began:
                await send(error_event(message, "shutting_down"))
            else:
                await self._reply(send, error_reply(503, message, "shutting_down"), close=True)

    async def _relay(
        self, target: str, body: bytes, headers: Headers, send: Send, state: _StreamState
    ) -> None:
        """Relay upstream's stream: an event stream a whole event at a time
        (:class:`~callscope.guard.proxy.events.WholeEvents`), so that a last ``error`` event
        always reaches the client's parser whole. ``--upstream-timeout`` bounds the whole
        stream, the client's reading included: a client that stops reading holds upstream
        :data:`STREAM_GRACE_S` past it at most, then the stream is ended."""
        guard = self.guard
        timeout = self.config.upstream_timeout
        ended = False
        # upstream's own deadline (reading it) comes first; this one ends a stream whose
        # client stopped reading, the proxy blocked on sending to it
        with anyio.move_on_after(timeout + STREAM_GRACE_S):
            try:
                async with guard.upstream.stream(target, body, headers, timeout) as (
                    status,
                    up_headers,
                    chunks,
                ):
                    if not 200 <= status < 300:
                        guard.count("upstream_error")
                    start = {"type": "http.response.start", "status": status}
                    await send({**start, "headers": up_headers})
                    state.began = True
                    events = WholeEvents() if is_event_stream(up_headers) else None
                    async for chunk in chunks:
                        ready = chunk if events is None else events.feed(chunk)
                        if ready:
                            await send(
                                {"type": "http.response.body", "body": ready, "more_body": True}
                            )
                    rest = b"" if events is None else events.rest()
            except (UpstreamTimeout, UpstreamUnreachable, UpstreamTooLarge) as exc:
                kind, status, what = UPSTREAM_FAILURES[type(exc)]
                guard.count("stream_error")
                state.failed = ended = True
                if not state.began:
                    await send_reply(send, error_reply(status, f"upstream {what}: {exc}", kind))
                    return
                # the stream has begun: end it with one last event, never a second response
                await send(error_event(f"upstream {what} mid-stream: {exc}", kind))
                return
            except BadTarget as exc:
                ended = True
                await send_reply(send, guard.bad_request(400, str(exc)))
                return
            ended = True
            await send({"type": "http.response.body", "body": rest, "more_body": False})
            return
        if ended:  # the deadline came while the last message was being sent
            return
        guard.count("stream_error")
        state.failed = True
        message = f"the stream was not read within {timeout:g} s (--upstream-timeout)"
        with anyio.move_on_after(STREAM_GRACE_S):  # a client still not reading is let go
            if state.began:
                await send(error_event(message, "upstream_timeout"))
            else:
                await send_reply(send, error_reply(504, message, "upstream_timeout"))


@dataclass
class _StreamState:
    """Where a relayed stream stands: its response has begun (a failure is then a last
    event, not a response); it has failed (counted ``stream_error``: a client that leaves
    then is not counted again)."""

    began: bool = False
    failed: bool = False


def error_event(message: str, kind: str) -> dict[str, Any]:
    """The last body message of a stream that has begun: one ``error`` event (after a blank
    line, so that it is an event of its own), never a second response."""
    event = b"\n\ndata: " + error_body(message, kind) + b"\n\n"
    return {"type": "http.response.body", "body": event, "more_body": False}


def reply_deadline(timeout: float, size: int, rate: float = MIN_READ_RATE) -> float:
    """Seconds a client may take for a whole reply of ``size`` body bytes: ``timeout`` (its
    ``--body-timeout``) plus ``size`` at ``rate`` bytes a second (``--min-read-rate``; at the
    defaults, 30 s and 1 MiB/s, a 64 MiB reply: 94 s)."""
    return timeout + size / rate


async def send_reply(
    send: Send,
    reply: UpstreamReply,
    close: bool = False,
    timeout: float | None = None,
    rate: float = MIN_READ_RATE,
) -> bool:
    """Send ``reply`` (its header text is latin-1: the bytes upstream sent); then record its
    decision (``on_sent``). ``timeout``: seconds the client may take for each send (its head,
    each piece of :data:`SEND_PIECE`), and the whole reply must be sent within
    :func:`reply_deadline`; past either the reply is abandoned unrecorded and ``False``
    returned (the server then closes the connection: a client that never reads, or reads a
    piece just within each deadline, would otherwise hold its request's memory and slot for
    as long as it stays connected)."""
    whole = math.inf if timeout is None else reply_deadline(timeout, len(reply.content), rate)
    with anyio.move_on_after(whole) as sending:
        await _send_pieces(send, reply, close, sending, timeout)
    if sending.cancelled_caught:
        return False
    if reply.on_sent is not None:
        reply.on_sent()
    return True


async def _send_pieces(
    send: Send, reply: UpstreamReply, close: bool, sending: anyio.CancelScope, timeout: float | None
) -> None:
    """:func:`send_reply`'s sends, each within ``timeout`` of its start and all within the
    deadline ``sending`` began with."""
    headers = [
        (k.encode("latin-1", "replace"), v.encode("latin-1", "replace"))
        for k, v in reply.headers
        if k.lower() != "content-length"
    ]
    headers.append((b"content-length", str(len(reply.content)).encode()))
    if close:
        headers.append((b"connection", b"close"))
    step = math.inf if timeout is None else timeout
    whole = sending.deadline  # the whole reply's: a piece's own never moves past it
    sending.deadline = min(whole, anyio.current_time() + step)
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    body, view, start = reply.content, memoryview(reply.content), 0
    # a large body in pieces: each waits for the socket to drain, so a 60 MB answer is never
    # one long copy into the transport's buffer while other requests wait (issue 47 point 6)
    while len(body) - start > SEND_PIECE:
        piece = bytes(view[start : start + SEND_PIECE])
        sending.deadline = min(whole, anyio.current_time() + step)
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        start += SEND_PIECE
    last = body if start == 0 else bytes(view[start:])
    sending.deadline = min(whole, anyio.current_time() + step)
    await send({"type": "http.response.body", "body": last, "more_body": False})
