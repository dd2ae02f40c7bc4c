"""Where the repair proxy sends requests: an OpenAI-compatible server reached with one pooled
``httpx.AsyncClient`` (:class:`HTTPUpstream`), or the embedded model (:class:`LocalUpstream`,
synchronous, run on a worker thread through :class:`ThreadedUpstream`).

The one rule for upstream URLs is :mod:`callscope.guard.upstream_url`'s.

What an upstream sends back is bounded the same way (issue 39): an answer is read whole
within one deadline (``timeout`` seconds from the request to its last byte, not per read),
decoded (gzip, deflate, ...) at most ``max_reply_bytes`` (:class:`UpstreamTooLarge` past it),
its headers relayed as they came less the hop-by-hop and ``X-Callscope-*`` ones (how an
answer is decoded, checked and relayed: :mod:`callscope.guard.upstream_answer`). A request is
sent a second time only when it provably never reached upstream (the connection could not
be made, or writing the request failed): an upstream that closed early, trickled or
answered 101 may have started generating, and is answered 502, never asked again.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.to_thread
import httpx

from callscope.core.jsonl import loads_bounded
from callscope.guard.budget import charge
from callscope.guard.upstream_answer import (  # noqa: F401 (importable from here)
    ACCEPT_ENCODING,
    DECODE_STEP,
    HOP,
    OWN_HEADER_PREFIX,
    Headers,
    decoded_chunks,
    end_headers,
    overran,
    raw_end_headers,
    unusable,
)
from callscope.guard.upstream_url import (  # noqa: F401 (importable from here)
    MAX_TARGET_CHARS,
    BadTarget,
    proxied_location,
    redacted_url,
    upstream_url,
)
from callscope.models.base import ChatModel, Decoding
from callscope.models.registry import DEFAULT_SPEC
from callscope.parse import parse_output

#: an upstream answer at most this large once decoded, by default (``--max-reply-mb``)
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: the embedded model's name when the proxy serves it
DEFAULT_LOCAL_MODEL = DEFAULT_SPEC


@dataclass
class UpstreamReply:
    """One upstream answer: status, headers (hop-by-hop ones removed) and body bytes.
    ``on_sent``: what to do once the reply has been sent to the client (the proxy records a
    decision only then, so the store never holds an outcome the client did not get)."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    content: bytes = b""
    on_sent: Callable[[], None] | None = None


class UpstreamTimeout(Exception):
    """Upstream did not answer within the time allowed."""


class UpstreamUnreachable(Exception):
    """Upstream could not be connected to, or broke off its answer."""


class UpstreamTooLarge(Exception):
    """Upstream's answer, decoded, is over the proxy's ``max_reply_bytes``."""


class UpstreamInvalid(UpstreamUnreachable):
    """Upstream's answer cannot be relayed whatever its body holds: a status outside
    100-599, a content coding the proxy did not ask for
    (:func:`~callscope.guard.upstream_answer.unusable`)."""


class UpstreamOverrun(UpstreamInvalid):
    """Upstream sent bytes beyond the answer it declared (a second response to one request, or
    a ``Content-Length`` shorter than its body): the answer is not trusted and the connection
    is never used again, so no later request can read those bytes as its own answer."""


class Upstream(Protocol):
    """Where the proxy sends requests, asynchronously."""

    async def chat(self, body: bytes, headers: Headers, timeout: float) -> UpstreamReply: ...

    async def forward(
        self, method: str, target: str, body: bytes, headers: Headers, timeout: float
    ) -> UpstreamReply: ...

    def stream(
        self, target: str, body: bytes, headers: Headers, timeout: float
    ) -> contextlib.AbstractAsyncContextManager[tuple[int, Headers, AsyncIterator[bytes]]]: ...

    async def aclose(self) -> None: ...


#: connections to upstream at most, and how many pools they are split over: httpx's pool
#: scans every connection it holds for each request it places, and asks each idle one
#: whether upstream closed it (two system calls), so requests take pools in turn. At 16 pools
#: of 32 that scan was a fifth of the proxy's CPU in a 200-wide burst; at 64 of 8 the
#: burst's p99 fell by about a third (issue 49 point 4, docs/performance.md)
UPSTREAM_CONNECTIONS = 512
UPSTREAM_POOLS = 64
#: seconds an idle upstream connection is kept: under uvicorn's default keep-alive of 5 s,
#: so the proxy drops a connection before such an upstream closes it under a request (a
#: request written to a connection upstream closed is never sent again: it may have started
#: generating; at httpx's default of 5 s, bursts of 500 lost 0 to 5 requests that way)
UPSTREAM_KEEPALIVE_S = 4.0


class HTTPUpstream:
    """An OpenAI-compatible server reached with pooled ``httpx.AsyncClient`` s (created on first
    use, inside the server's event loop): ``pools`` clients taken in turn, each holding at
    most ``max_connections // pools`` connections. An answer is read within one deadline and
    at most ``max_reply_bytes`` decoded (module docstring)."""

    def __init__(
        self,
        base_url: str,
        max_connections: int = UPSTREAM_CONNECTIONS,
        pools: int = UPSTREAM_POOLS,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        self.max_reply_bytes = max_reply_bytes
        self.base = httpx.URL(base_url.rstrip("/"))
        if self.base.scheme not in ("http", "https") or not self.base.host:
            raise ValueError(f"--upstream must be an http(s) URL, not {redacted_url(base_url)!r}")
        self._pools = max(1, min(pools, max_connections))
        per_pool = max(1, max_connections // self._pools)
        self._limits = httpx.Limits(
            max_connections=per_pool,
            max_keepalive_connections=per_pool,
            keepalive_expiry=UPSTREAM_KEEPALIVE_S,
        )
        self._clients: list[httpx.AsyncClient] = []
        self._turn = itertools.count()

    @property
    def client(self) -> httpx.AsyncClient:
        """The next pool's client, in turn."""
        if not self._clients:
            # one TLS context for every pool, and none for plain HTTP: each client loading
            # the CA bundle itself stalled the first request's event loop 0.7 s (16 x 42 ms)
            verify: ssl.SSLContext | bool = (
                httpx.create_ssl_context(trust_env=False) if self.base.scheme == "https" else False
            )
            self._clients = [
                httpx.AsyncClient(
                    limits=self._limits,
                    trust_env=False,
                    verify=verify,
                    headers={"accept-encoding": ACCEPT_ENCODING},
                )
                for _ in range(self._pools)
            ]
        return self._clients[next(self._turn) % self._pools]

    def _request(
        self, method: str, target: str, body: bytes, headers: Headers, timeout: float
    ) -> tuple[httpx.AsyncClient, httpx.Request]:
        url = upstream_url(self.base, target)
        client = self.client
        try:
            request = client.build_request(
                method, url, content=body, headers=headers, timeout=timeout
            )
        except httpx.InvalidURL as exc:
            raise BadTarget(f"the request target is not a valid URL: {exc}") from None
        return client, request

    @staticmethod
    async def _open(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
        """Send ``request``, the response's head read (the body still to read). Sent a second
        time only when it never reached upstream: the connection could not be made, or the
        request could not be written (a kept-alive connection upstream had closed). An answer
        no client could be given (:func:`~callscope.guard.upstream_answer.unusable`) is
        closed unread: :class:`UpstreamInvalid`."""
        try:
            response = await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.WriteError):
            response = await client.send(request, stream=True)
        problem = unusable(response)
        if problem is not None:
            await response.aclose()
            raise UpstreamInvalid(problem)
        return response

    def _relocated(self, headers: Headers) -> Headers:
        """``headers`` with a ``Location`` on the upstream's origin made a proxy path
        (:func:`~callscope.guard.upstream_url.proxied_location`); :class:`UpstreamInvalid`
        for one outside ``--upstream``'s path, which the proxy cannot reach."""
        out: Headers = []
        for name, value in headers:
            if name == b"location":
                moved = proxied_location(self.base, value.decode("latin-1"))
                if moved is None:
                    raise UpstreamInvalid("upstream redirected outside --upstream's path")
                value = moved.encode("latin-1", "replace")
            out.append((name, value))
        return out

    def _too_large(self) -> UpstreamTooLarge:
        return UpstreamTooLarge(
            f"upstream answer over {self.max_reply_bytes} bytes decoded (--max-reply-mb)"
        )

    async def _send(
        self, method: str, target: str, body: bytes, headers: Headers, timeout: float
    ) -> UpstreamReply:
        client, request = self._request(method, target, body, headers, timeout)
        try:
            with anyio.fail_after(timeout):  # one deadline: request, head and every byte
                response = await self._open(client, request)
                try:
                    parts: list[bytes] = []
                    size = 0
                    async for chunk in decoded_chunks(response):  # decoded, bounded steps
                        size += len(chunk)
                        if size > self.max_reply_bytes:
                            raise self._too_large()
                        charge(len(chunk))  # the process's bound on bodies in flight
                        parts.append(chunk)
                    if await overran(response):
                        raise UpstreamOverrun(
                            "upstream sent more than the answer it declared (a second "
                            "response, or a Content-Length shorter than its body)"
                        )
                finally:
                    await response.aclose()
        except TimeoutError:
            raise UpstreamTimeout(f"no whole answer within {timeout:g} s") from None
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "timed out") from exc
        except (httpx.TransportError, httpx.DecodingError, httpx.StreamError) as exc:
            raise UpstreamUnreachable(str(exc) or type(exc).__name__) from exc
        relayed = self._relocated(raw_end_headers(response.headers))
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in relayed]
        return UpstreamReply(response.status_code, headers, b"".join(parts))

    async def chat(self, body: bytes, headers: Headers, timeout: float) -> UpstreamReply:
        return await self._send("POST", "/v1/chat/completions", body, headers, timeout)

    async def forward(
        self, method: str, target: str, body: bytes, headers: Headers, timeout: float
    ) -> UpstreamReply:
        return await self._send(method, target, body, headers, timeout)

    @contextlib.asynccontextmanager
    async def stream(
        self, target: str, body: bytes, headers: Headers, timeout: float
    ) -> AsyncIterator[tuple[int, Headers, AsyncIterator[bytes]]]:
        """Upstream's status, headers and body chunks, decoded (an upstream that gzips its
        event stream is relayed as text: ``Content-Encoding`` is a hop header here). The
        whole stream has one deadline, ``timeout`` seconds, and at most ``max_reply_bytes``
        decoded. Failing before the status line raises :class:`UpstreamTimeout` /
        :class:`UpstreamUnreachable`; failing while the chunks are read raises the same (or
        :class:`UpstreamTooLarge`) from the iterator (the proxy ends its stream cleanly).
        Leaving the block early (the client went away) closes the upstream request."""
        client, request = self._request("POST", target, body, headers, timeout)
        deadline = anyio.current_time() + timeout
        try:
            with anyio.fail_after(timeout):
                response = await self._open(client, request)
        except TimeoutError:
            raise UpstreamTimeout(f"no answer within {timeout:g} s") from None
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "timed out") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnreachable(str(exc) or type(exc).__name__) from exc

        async def chunks() -> AsyncIterator[bytes]:
            decoded = decoded_chunks(response)  # bounded steps, as an answer read whole
            size = 0
            while True:
                try:
                    with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                        chunk = await decoded.__anext__()
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise UpstreamTimeout(f"stream not complete within {timeout:g} s") from None
                except httpx.TimeoutException as exc:
                    raise UpstreamTimeout(str(exc) or "timed out") from exc
                except (httpx.TransportError, httpx.StreamError, httpx.DecodingError) as exc:
                    raise UpstreamUnreachable(str(exc) or type(exc).__name__) from exc
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise self._too_large()
                yield chunk

        try:
            yield response.status_code, self._relocated(raw_end_headers(response.headers)), chunks()
        finally:
            await overran(response)  # never reuse a connection that sent more than it declared
            await response.aclose()

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()


class SyncUpstream(Protocol):
    """A blocking upstream (the embedded model; a benchmark's recording wrapper)."""

    def chat(self, body: bytes, headers: Any, timeout: float) -> UpstreamReply: ...

    def forward(
        self, method: str, path: str, body: bytes, headers: Any, timeout: float
    ) -> UpstreamReply: ...

    def close(self) -> None: ...


class ThreadedUpstream:
    """A blocking upstream run on worker threads, so the event loop never waits on it."""

    def __init__(self, inner: SyncUpstream) -> None:
        self.inner = inner

    async def chat(self, body: bytes, headers: Headers, timeout: float) -> UpstreamReply:
        return await anyio.to_thread.run_sync(self.inner.chat, body, _str_headers(headers), timeout)

    async def forward(
        self, method: str, target: str, body: bytes, headers: Headers, timeout: float
    ) -> UpstreamReply:
        path = target.split("?", 1)[0]
        return await anyio.to_thread.run_sync(
            self.inner.forward, method, path, body, _str_headers(headers), timeout
        )

    @contextlib.asynccontextmanager
    async def stream(
        self, target: str, body: bytes, headers: Headers, timeout: float
    ) -> AsyncIterator[tuple[int, Headers, AsyncIterator[bytes]]]:
        reply = _error_reply(400, "the embedded model does not stream; send stream=false")

        async def one() -> AsyncIterator[bytes]:
            yield reply.content

        yield reply.status, [(k.encode(), v.encode()) for k, v in reply.headers], one()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.inner.close)


def _str_headers(headers: Headers) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}


def as_async(upstream: Any) -> Upstream:
    """``upstream`` itself when it is asynchronous, else wrapped in :class:`ThreadedUpstream`."""
    if hasattr(upstream, "aclose"):
        return upstream
    return ThreadedUpstream(upstream)


class LocalUpstream:
    """The embedded model as an upstream: answers ``chat/completions`` (not streaming) and
    ``GET /v1/models``. Calls the model writes as text are returned as native ``tool_calls``
    when the request has tools (as llama.cpp's ``llama-server --jinja`` does). Blocking: the
    proxy runs it through :class:`ThreadedUpstream`."""

    def __init__(self, model: ChatModel, name: str = DEFAULT_LOCAL_MODEL) -> None:
        self.model = model
        self.name = name
        self._lock = threading.Lock()  # the embedded engine answers one request at a time
        self._ids = itertools.count(1)

    def chat(self, body: bytes, headers: Any, timeout: float) -> UpstreamReply:
        try:
            req = loads_bounded(body)
            messages = req["messages"]
            tools = req.get("tools") or None
            decoding = Decoding(
                temperature=float(req.get("temperature") or 0.0),
                seed=int(req.get("seed") or 0),
                max_tokens=int(req.get("max_tokens") or req.get("max_completion_tokens") or 256),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return _error_reply(400, "request body must be a JSON object with 'messages'")
        with self._lock:
            reply = self.model.chat(messages, tools, decoding)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        native = reply.tool_calls
        if not native and tools:
            parsed = parse_output(reply.text)
            native = [c.to_dict() for c in parsed.calls] or None
        if native:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": c.get("name", ""),
                        "arguments": c["arguments"]
                        if isinstance(c.get("arguments"), str)
                        else json.dumps(c.get("arguments") or {}),
                    },
                }
                for i, c in enumerate(native)
            ]
        data = {
            "id": f"chatcmpl-local-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if native else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens or 0,
                "completion_tokens": reply.completion_tokens or 0,
                "total_tokens": (reply.prompt_tokens or 0) + (reply.completion_tokens or 0),
            },
        }
        if reply.prompt_tokens is not None and reply.prompt_tokens_evaluated is not None:
            # OpenAI's own field for prompt tokens not computed again (a kept prefix)
            cached = max(0, reply.prompt_tokens - reply.prompt_tokens_evaluated)
            data["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return UpstreamReply(200, [("content-type", "application/json")], json.dumps(data).encode())

    def forward(
        self, method: str, path: str, body: bytes, headers: Any, timeout: float
    ) -> UpstreamReply:
        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            data = {"object": "list", "data": [{"id": self.name, "object": "model"}]}
            return UpstreamReply(
                200, [("content-type", "application/json")], json.dumps(data).encode()
            )
        return _error_reply(404, f"{method} {path} is not served by the embedded model")

    @contextlib.contextmanager
    def stream(self, *args: Any) -> Iterator[tuple[int, list[tuple[str, str]], Iterator[bytes]]]:
        reply = _error_reply(400, "the embedded model does not stream; send stream=false")
        yield reply.status, reply.headers, iter([reply.content])

    def close(self) -> None:
        self.model.close()


def error_body(message: str, kind: str) -> bytes:
    """An OpenAI-style error object: ``{"error": {"message", "type", "code"}}``."""
    return json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()


def _error_reply(status: int, message: str, kind: str = "invalid_request_error") -> UpstreamReply:
    return UpstreamReply(status, [("content-type", "application/json")], error_body(message, kind))


error_reply = _error_reply
