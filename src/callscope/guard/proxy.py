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
  tools, streaming requests (``"stream": true``, relayed chunk by chunk), choices after the
  first (``n > 1``), every other endpoint and method, and error statuses (returned with
  upstream's status and body). An upstream timeout is answered 504 and an unreachable
  upstream 502, each with an OpenAI-style ``error`` object.
- Limits: request bodies over ``max_body_bytes`` get 413, bodies without a
  ``Content-Length`` 411, bodies that are not a JSON object 400. It binds 127.0.0.1 unless
  told otherwise.

Every decision is recorded in a run store (:mod:`callscope.guard.record`), so ``callscope
report RUN_DIR`` shows the stage mix and each repaired request like a SAAG run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import httpx

from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.record import StoreWriter, guard_records
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS, RepairAttempt, RepairResult, repair
from callscope.models.base import ChatModel, Decoding
from callscope.models.registry import DEFAULT_SPEC
from callscope.parse import parse_output

#: the extra top-level field of a completion the proxy changed (documented above)
EXTRA_FIELD = "callscope"
#: the response header naming the proxy's decision
GUARD_HEADER = "X-Callscope-Guard"
#: the response header listing each call's stage (0 = passed) by position
CALLS_HEADER = "X-Callscope-Guard-Calls"
#: the default model the proxy serves without ``--upstream`` (the embedded one)
DEFAULT_LOCAL_MODEL = DEFAULT_SPEC
CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
#: headers that describe one hop and are never forwarded (RFC 9110 section 7.6.1), plus the
#: ones the proxy sets itself
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
    }
)


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy runs. ``upstream`` is the base URL the agent would otherwise use (with its
    ``/v1``, e.g. ``http://127.0.0.1:8080/v1``); ``None`` serves the embedded model
    (``local_model``). ``attempts`` re-asks at most, within ``repair_timeout`` seconds after
    the first answer; ``upstream_timeout`` bounds each upstream request."""

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

    def to_meta(self) -> dict[str, Any]:
        return {
            "source": "proxy",
            "upstream": self.upstream or self.local_model,
            "max_attempts": self.attempts + 1,
            "repair_timeout": self.repair_timeout,
            "grounding": self.grounding,
        }


@dataclass
class UpstreamReply:
    """One upstream answer: status, headers (hop-by-hop ones removed) and body bytes."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    content: bytes = b""


class UpstreamTimeout(Exception):
    """Upstream did not answer within the time allowed."""


class UpstreamUnreachable(Exception):
    """Upstream could not be connected to."""


class Upstream(Protocol):
    """Where the proxy sends requests (an HTTP server, or the embedded model)."""

    def chat(self, body: bytes, headers: dict[str, str], timeout: float) -> UpstreamReply: ...

    def forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> UpstreamReply: ...

    @contextlib.contextmanager
    def stream(
        self, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> Iterator[tuple[int, list[tuple[str, str]], Iterator[bytes]]]: ...

    def close(self) -> None: ...


def _end_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.items() if k.lower() not in _HOP]


class HTTPUpstream:
    """An OpenAI-compatible server reached with one pooled, thread-safe ``httpx.Client``."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")
        self.client = httpx.Client(
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32)
        )

    def _url(self, path: str) -> str:
        # the agent's path is under the proxy's root; upstream's root already holds its /v1
        if self.base.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return self.base + path

    def _send(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> UpstreamReply:
        try:
            r = self.client.request(
                method, self._url(path), content=body, headers=headers, timeout=timeout
            )
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "timed out") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnreachable(str(exc) or type(exc).__name__) from exc
        return UpstreamReply(r.status_code, _end_headers(r.headers), r.content)

    def chat(self, body: bytes, headers: dict[str, str], timeout: float) -> UpstreamReply:
        return self._send("POST", "/v1/chat/completions", body, headers, timeout)

    def forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> UpstreamReply:
        return self._send(method, path, body, headers, timeout)

    @contextlib.contextmanager
    def stream(
        self, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> Iterator[tuple[int, list[tuple[str, str]], Iterator[bytes]]]:
        try:
            with self.client.stream(
                "POST", self._url(path), content=body, headers=headers, timeout=timeout
            ) as r:
                yield r.status_code, _end_headers(r.headers), r.iter_bytes()
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(str(exc) or "timed out") from exc
        except httpx.TransportError as exc:
            raise UpstreamUnreachable(str(exc) or type(exc).__name__) from exc

    def close(self) -> None:
        self.client.close()


class LocalUpstream:
    """The embedded model as an upstream: answers ``chat/completions`` (not streaming) and
    ``GET /v1/models``. Calls the model writes as text are returned as native ``tool_calls``
    when the request has tools (as llama.cpp's ``llama-server --jinja`` does)."""

    def __init__(self, model: ChatModel, name: str = DEFAULT_LOCAL_MODEL) -> None:
        self.model = model
        self.name = name
        self._lock = threading.Lock()  # the embedded engine answers one request at a time
        self._ids = itertools.count(1)

    def chat(self, body: bytes, headers: dict[str, str], timeout: float) -> UpstreamReply:
        try:
            req = json.loads(body)
            messages = req["messages"]
        except (ValueError, KeyError, TypeError):
            return _error_reply(400, "request body must be a JSON object with 'messages'")
        tools = req.get("tools") or None
        decoding = Decoding(
            temperature=float(req.get("temperature") or 0.0),
            seed=int(req.get("seed") or 0),
            max_tokens=int(req.get("max_tokens") or req.get("max_completion_tokens") or 256),
        )
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
        return UpstreamReply(200, [("content-type", "application/json")], json.dumps(data).encode())

    def forward(
        self, method: str, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> UpstreamReply:
        if method == "GET" and path.rstrip("/") in ("/v1/models", "/models"):
            data = {"object": "list", "data": [{"id": self.name, "object": "model"}]}
            return UpstreamReply(
                200, [("content-type", "application/json")], json.dumps(data).encode()
            )
        return _error_reply(404, f"{method} {path} is not served by the embedded model")

    @contextlib.contextmanager
    def stream(
        self, path: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> Iterator[tuple[int, list[tuple[str, str]], Iterator[bytes]]]:
        reply = _error_reply(400, "the embedded model does not stream; send stream=false")
        yield reply.status, reply.headers, iter([reply.content])

    def close(self) -> None:
        self.model.close()


def _error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()


def _error_reply(status: int, message: str, kind: str = "invalid_request_error") -> UpstreamReply:
    return UpstreamReply(status, [("content-type", "application/json")], _error_body(message, kind))


# --------------------------------------------------------------------------- the guard


class Guard:
    """The proxy's decisions, independent of HTTP: :meth:`chat` takes the agent's request body
    and returns the reply to send back. Thread-safe."""

    def __init__(
        self, upstream: Upstream, config: ProxyConfig, writer: StoreWriter | None = None
    ) -> None:
        self.upstream = upstream
        self.config = config
        self.writer = writer
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]

    def _count(self, decision: str) -> None:
        if self.writer is not None:
            self.writer.count(decision)

    def chat(self, body: bytes, headers: dict[str, str]) -> UpstreamReply:
        try:
            request = json.loads(body)
        except ValueError:
            self._count("bad_request")
            return _error_reply(400, "request body is not valid JSON")
        if not isinstance(request, dict):
            self._count("bad_request")
            return _error_reply(400, "request body must be a JSON object")
        cfg = self.config
        try:
            first = self.upstream.chat(body, headers, cfg.upstream_timeout)
        except UpstreamTimeout as exc:
            self._count("upstream_timeout")
            return _error_reply(504, f"upstream timed out: {exc}", "upstream_timeout")
        except UpstreamUnreachable as exc:
            self._count("upstream_unreachable")
            return _error_reply(502, f"upstream unreachable: {exc}", "upstream_unreachable")
        tools = request.get("tools")
        if first.status != 200 or not tools:
            self._count("upstream_error" if first.status != 200 else "unchecked")
            return first
        try:
            data = json.loads(first.content)
            message = message_of(data)
        except (ValueError, TypeError):
            self._count("unchecked")
            return first
        if not message.get("tool_calls"):
            self._count("unchecked")
            return _with_header(first, "unchecked")
        messages = request.get("messages") if isinstance(request.get("messages"), list) else []
        verdict = check(data, tools, messages, cfg.grounding)
        if verdict.passed:
            self._record(request, _single(data, verdict), "passed")
            return _with_header(first, "passed", verdict)
        deadline = time.monotonic() + cfg.repair_timeout

        def ask(convo: list[dict[str, Any]], _tools: Any) -> dict[str, Any]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UpstreamTimeout("repair time spent")
            reply = self.upstream.chat(
                json.dumps({**request, "messages": convo}).encode(),
                headers,
                min(cfg.upstream_timeout, left),
            )
            if reply.status != 200:
                raise RuntimeError(f"upstream answered {reply.status}")
            return json.loads(reply.content)

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
        request_id = self._record(request, result, decision)
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
        reply = UpstreamReply(200, headers_out, json.dumps(best).encode())
        return _with_header(reply, decision, result.verdict)

    def _record(self, request: dict[str, Any], result: RepairResult, decision: str) -> str:
        request_id = f"{self._prefix}-{next(self._ids):06d}"
        if self.writer is not None:
            model = str(request.get("model") or "unknown")[:200]
            case, outcome = guard_records(
                request_id, result, self.config.grounding, meta={"decision": decision}
            )
            self.writer.submit(model, case, outcome)
            self.writer.count(decision)
        return request_id


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
    return UpstreamReply(reply.status, headers, reply.content)


# --------------------------------------------------------------------------- HTTP


def _forward_headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    return {k: v for k, v in handler.headers.items() if k.lower() not in _HOP}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ProxyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        """Quiet: every decision is in the run store."""

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding"):
                self._send(_error_reply(411, "send a Content-Length (chunked bodies are refused)"))
                return None
            return b""
        try:
            n = int(length)
        except ValueError:
            self._send(_error_reply(400, "bad Content-Length"))
            return None
        if n < 0:
            self._send(_error_reply(400, "bad Content-Length"))
            return None
        if n > self.server.config.max_body_bytes:
            self.close_connection = True
            self._send(
                _error_reply(
                    413, f"request body over {self.server.config.max_body_bytes} bytes", "too_large"
                )
            )
            return None
        return self.rfile.read(n)

    def _send(self, reply: UpstreamReply) -> None:
        self.send_response(reply.status)
        for k, v in reply.headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)

    def _upstream_error(self, exc: Exception) -> None:
        if isinstance(exc, UpstreamTimeout):
            self._send(_error_reply(504, f"upstream timed out: {exc}", "upstream_timeout"))
        else:
            self._send(_error_reply(502, f"upstream unreachable: {exc}", "upstream_unreachable"))

    def _handle(self, method: str) -> None:
        body = self._body()
        if body is None:
            return
        path = self.path.split("?", 1)[0]
        guard = self.server.guard
        headers = _forward_headers(self)
        if method == "POST" and path in CHAT_PATHS:
            if _is_stream(body):
                self._stream(body, headers)
                return
            self._send(guard.chat(body, headers))
            return
        try:
            reply = guard.upstream.forward(
                method, self.path, body, headers, self.server.config.upstream_timeout
            )
        except (UpstreamTimeout, UpstreamUnreachable) as exc:
            self._upstream_error(exc)
            return
        self._send(reply)

    def _stream(self, body: bytes, headers: dict[str, str]) -> None:
        guard = self.server.guard
        guard._count("stream")
        try:
            with guard.upstream.stream(
                self.path, body, headers, self.server.config.upstream_timeout
            ) as (status, up_headers, chunks):
                self.send_response(status)
                for k, v in up_headers:
                    self.send_header(k, v)
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
        except (UpstreamTimeout, UpstreamUnreachable) as exc:
            self._upstream_error(exc)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's names
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")


def _is_stream(body: bytes) -> bool:
    if b'"stream"' not in body:
        return False
    try:
        request = json.loads(body)
    except ValueError:
        return False
    return isinstance(request, dict) and request.get("stream") is True


class ProxyServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, each request decided by :attr:`guard`."""

    daemon_threads = True

    def __init__(self, config: ProxyConfig, upstream: Upstream, writer: StoreWriter | None):
        self.config = config
        self.guard = Guard(upstream, config, writer)
        self.writer = writer
        super().__init__((config.host, config.port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        """Stop serving, write what is queued, close upstream and the store."""
        self.server_close()
        if self.writer is not None:
            self.writer.close()
        self.guard.upstream.close()


def make_upstream(config: ProxyConfig) -> Upstream:
    """:class:`HTTPUpstream` for ``config.upstream``, else the embedded model."""
    if config.upstream:
        return HTTPUpstream(config.upstream)
    from callscope.models.registry import load_model  # lazy: llama.cpp and the weights

    return LocalUpstream(load_model(config.local_model), config.local_model)


def make_server(config: ProxyConfig, upstream: Upstream | None = None) -> ProxyServer:
    """A bound, not yet serving proxy (``serve_forever`` on it, or on a thread)."""
    upstream = upstream if upstream is not None else make_upstream(config)
    writer = StoreWriter(config.run_dir, config.to_meta())
    return ProxyServer(config, upstream, writer)


@contextlib.contextmanager
def serving(config: ProxyConfig, upstream: Upstream | None = None) -> Iterator[ProxyServer]:
    """A proxy serving on a background thread for the ``with`` block, then closed."""
    server = make_server(config, upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.close()
