"""Shared HTTP plumbing for the Ollama and OpenAI-compatible backends.

:class:`HTTPChatModel` is the one base of the HTTP backends: it owns the client, the retry
loop (:func:`post_json`), the concurrency setting, the latency measurement and the reply and
token accounting; a backend supplies only its protocol: the endpoint (``_endpoint``), the
request body (``_payload``), extra headers (``_headers``), where the message sits in the
reply (``MESSAGE_PATH``) and how the server reports token usage (``_usage``).

What a user relies on:

* one request is tried at most ``retries + 1`` times; it is retried only on connection
  errors, timeouts, HTTP 5xx and HTTP 429 (other 4xx fail at once);
* the wait between attempts doubles from ``backoff_base`` seconds (capped at
  ``backoff_cap``); a 429/503 ``Retry-After`` header (seconds) is honoured up to
  ``retry_after_cap`` seconds;
* every failure is a :class:`callscope.errors.ModelError` whose message names the backend
  and the address, and whose ``kind`` is one of ``connection``, ``timeout``, ``http_5xx``,
  ``http_4xx``, ``rate_limited``, ``malformed``, and ``context_length`` for a 4xx that says
  the prompt does not fit the model's context (:func:`~callscope.models.base.is_context_overflow`).
"""

from __future__ import annotations

import json
import threading
import time
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from callscope.core.jsonl import dumps_safe, loads_bounded
from callscope.errors import ModelError
from callscope.models.base import (
    ChatModel,
    ChatRequest,
    Decoding,
    Messages,
    Tools,
    is_context_overflow,
)
from callscope.records.wire import ChatMessage, ChatTool, FunctionCall, JsonObject, content_text
from callscope.types import ModelReply

if TYPE_CHECKING:
    import ssl

    # httpx (~60 ms to import) is loaded when a client is made
    import httpx


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one request. ``sleep`` is injectable so tests need not wait."""

    timeout: float = 120.0
    retries: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    retry_after_cap: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    @property
    def attempts(self) -> int:
        return max(0, self.retries) + 1

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.backoff_cap, self.backoff_base * (2 ** (attempt - 1)))


def policy_from_opts(timeout: float, retries: int, opts: Mapping[str, Any]) -> RetryPolicy:
    """Build a policy from ``load_model`` arguments (``backoff_base``, ``backoff_cap``,
    ``retry_after_cap`` and ``sleep`` may come in ``opts``)."""
    kw: dict[str, Any] = {"timeout": float(timeout), "retries": int(retries)}
    for name in ("backoff_base", "backoff_cap", "retry_after_cap"):
        if opts.get(name) is not None:
            kw[name] = float(opts[name])
    if opts.get("sleep") is not None:
        kw["sleep"] = opts["sleep"]
    return RetryPolicy(**kw)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds; ``None`` if absent or a date."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return max(0.0, seconds)


def _connection_reason(exc: Exception) -> str:
    text = str(exc)
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "name or service not known" in low or "nodename nor servname" in low:
        return "unknown host"
    return text or type(exc).__name__


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error_detail(response: httpx.Response) -> tuple[str, object]:
    """The server's own error text (``error`` / ``error.message`` of a JSON body, else the
    body) and its error code (``error.code``, else ``error.type``; ``None`` without one)."""
    try:
        body = loads_bounded(response.content)
    except ValueError:
        return _snippet(response.text), None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return _snippet(err["message"]), err.get("code") or err.get("type")
        if isinstance(err, str):
            return _snippet(err), None
    return _snippet(response.text), None


def _plural(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def post_json(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    *,
    backend: str,
    policy: RetryPolicy,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """POST ``payload`` as JSON and return the decoded JSON object of a 2xx reply.

    Raises :class:`ModelError` after the retry budget is spent or at once on a non-retryable
    failure; a 2xx body that is not a JSON object is ``kind="malformed"``.
    """
    import httpx  # loaded by the client already; here for its exception types

    last_kind = "connection"
    last_msg = ""
    # the one writer of JSON that leaves the process: a lone surrogate a model wrote is sent
    # as its JSON escape, never a UnicodeEncodeError that stops the run
    body = dumps_safe(payload, mark=False).encode("utf-8")
    sent = {"Content-Type": "application/json", **dict(headers or {})}
    for attempt in range(1, policy.attempts + 1):
        wait: float | None = None
        try:
            response = client.post(url, content=body, headers=sent, timeout=policy.timeout)
        except httpx.TimeoutException:
            last_kind = "timeout"
            last_msg = f"{backend} backend timed out after {policy.timeout:g} s waiting for {url}"
        except httpx.TransportError as exc:
            last_kind = "connection"
            last_msg = f"{backend} backend cannot reach {url} ({_connection_reason(exc)})"
        else:
            status = response.status_code
            if 200 <= status < 300:
                return decode_json_object(response, backend=backend, url=url)
            detail, code = _error_detail(response)
            if status == 429 or status >= 500:
                last_kind = "rate_limited" if status == 429 else "http_5xx"
                last_msg = f"{backend} backend got HTTP {status} from {url}: {detail}"
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    wait = min(retry_after, policy.retry_after_cap)
            else:
                kind = "context_length" if is_context_overflow(detail, code) else "http_4xx"
                raise ModelError(
                    f"{backend} backend got HTTP {status} from {url}: {detail}", kind=kind
                )
        if attempt < policy.attempts:
            policy.sleep(policy.backoff(attempt) if wait is None else wait)
    raise ModelError(f"{last_msg} after {_plural(policy.attempts)}", kind=last_kind)


def decode_json_object(response: httpx.Response, *, backend: str, url: str) -> dict[str, Any]:
    """The reply body as a JSON object, or ``ModelError(kind="malformed")``: read by the
    bounded decoder (:func:`~callscope.core.jsonl.loads_bounded`), so a reply nested
    10,000 deep or holding a 5,000-digit integer is a malformed reply, not a crash."""
    try:
        body = loads_bounded(response.content)
    except json.JSONDecodeError:
        raise ModelError(
            f"{backend} backend got a reply from {url} that is not JSON: "
            f"{_snippet(response.text, 120)!r}",
            kind="malformed",
        ) from None
    except ValueError as exc:
        raise ModelError(
            f"{backend} backend got a reply from {url} it cannot read: {exc}", kind="malformed"
        ) from None
    if not isinstance(body, dict):
        raise ModelError(
            f"{backend} backend got a reply from {url} that is not a JSON object",
            kind="malformed",
        )
    return body


def require(
    obj: Any, path: str, expected: type | tuple[type, ...], *, backend: str, url: str
) -> Any:
    """Walk a dotted ``path`` (``choices.0.message``) into ``obj``; raise ``malformed``
    naming the missing or mistyped field."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise ModelError(f"{backend} backend reply from {url} lacks '{path}'", kind="malformed")
    if not isinstance(cur, expected):
        raise ModelError(
            f"{backend} backend reply from {url} has '{path}' of type {type(cur).__name__}",
            kind="malformed",
        )
    return cur


def normalise_arguments(arguments: Any) -> JsonObject | str:
    """Tool-call arguments as a dict; a JSON string is decoded, and kept as the raw string
    when it is not a JSON object (so the parser can report it)."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            decoded = loads_bounded(arguments)
        except ValueError:
            return arguments
        return decoded if isinstance(decoded, dict) else arguments
    if arguments is None:
        return {}
    return dumps_safe(arguments, mark=False)


def parse_tool_calls(raw: Any, *, backend: str, url: str) -> list[FunctionCall] | None:
    """Normalise ``[{function: {name, arguments}}]`` to ``[{"name", "arguments"}]``;
    ``None`` when there are none."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ModelError(
            f"{backend} backend reply from {url} has non-list 'tool_calls'", kind="malformed"
        )
    calls: list[FunctionCall] = []
    for i, item in enumerate(raw):
        fn = item.get("function") if isinstance(item, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str):
            raise ModelError(
                f"{backend} backend reply from {url} lacks 'tool_calls.{i}.function.name'",
                kind="malformed",
            )
        calls.append({"name": name, "arguments": normalise_arguments(fn.get("arguments"))})
    return calls or None


def ensure_scheme(base: str) -> str:
    """``127.0.0.1:11434`` -> ``http://127.0.0.1:11434``; strips a trailing slash."""
    base = base.strip()
    if "://" not in base:
        base = "http://" + base
    return base.rstrip("/")


#: the largest token count a server's reply is believed (a larger or negative one is not a
#: count: it is dropped, so a hostile reply never reaches a sum or a table as a 5,000-digit int)
MAX_COUNT = 2**53


def int_or_none(value: Any) -> int | None:
    """A server's token count: an ``int`` in ``[0, MAX_COUNT]``, else ``None``.

    >>> int_or_none(12), int_or_none(True), int_or_none(-1), int_or_none(10**5000), int_or_none("3")
    (12, None, None, None, None)
    """
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if ok else None


def evaluated_tokens(prompt_tokens: int | None, cached_tokens: int | None) -> int | None:
    """Prompt tokens actually computed: the total less the reported cache hits; ``None``
    when the server does not report cache hits (recent Ollama sends
    ``prompt_eval_cached_count``; OpenAI-style servers ``prompt_tokens_details.cached_tokens``)."""
    if prompt_tokens is None or cached_tokens is None:
        return None
    return max(0, prompt_tokens - cached_tokens)


#: requests one HTTP backend runs at once unless told fewer (``max_concurrency``): no cap in
#: practice, so ``--concurrency N`` is what runs; a server that queues requests (Ollama per
#: model) queues them itself
MAX_HTTP_CONCURRENCY = 1024


def pool_limits(concurrency: int) -> httpx.Limits:
    """Connection pool limits for ``concurrency`` requests at once: as many open and as many
    idle (kept-alive) connections, so that every request in flight reuses a connection
    instead of opening a new one (httpx keeps only 20 idle connections by default). Each
    client :meth:`HTTPChatModel._borrow` lends runs one request at a time: ``pool_limits(1)``."""
    import httpx  # lazy: only commands that talk to a server pay for it

    n = max(1, int(concurrency))
    return httpx.Limits(max_connections=n, max_keepalive_connections=n)


class HTTPChatModel(ChatModel):
    """A chat model behind a JSON-over-HTTP endpoint (``<backend>:<model>``). Thread-safe.

    ``chat`` builds the body with :meth:`_payload`, POSTs it to :attr:`url` with the retry
    ``policy`` (:func:`post_json`), and turns the reply into a :class:`ModelReply` with
    :meth:`_parse`: the text and tool calls of the object at :attr:`MESSAGE_PATH`, and the
    token counts of :meth:`_usage` (prompt tokens actually evaluated: :func:`evaluated_tokens`).
    The request context is not sent (it is not part of the request). Each request borrows an
    idle client (one kept-alive connection each) and gives it back when done
    (:meth:`_borrow`), so there are as many connections as requests ever ran at once, each
    reused by whichever thread comes next. (One shared httpx pool scans all its connections
    under its lock on every request: at 64 threads a quarter of the GIL time,
    ``benchmarks/http_concurrency.py``.)
    ``max_concurrency`` (default :data:`MAX_HTTP_CONCURRENCY`) is the most requests the
    runner sends at once.
    """

    #: the prefix of ``spec`` and the backend name every error message starts with
    BACKEND: ClassVar[str] = "http"
    #: a model name shown when none is given (``ollama: needs a model name, e.g. ...``)
    EXAMPLE_MODEL: ClassVar[str] = "<model>"
    #: dotted path of the reply's message object (see :func:`require`)
    MESSAGE_PATH: ClassVar[str] = "message"

    supports_native_tools = True

    def __init__(
        self,
        model: str,
        *,
        base: str,
        policy: RetryPolicy | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        if not model:
            raise ValueError(
                f"{self.BACKEND}: needs a model name, e.g. {self.BACKEND}:{self.EXAMPLE_MODEL}"
            )
        self.model = model
        self.spec = f"{self.BACKEND}:{model}"
        self.url = self._endpoint(base)
        self.policy = policy or RetryPolicy()
        self.max_concurrency = (
            MAX_HTTP_CONCURRENCY if max_concurrency is None else max(1, int(max_concurrency))
        )
        #: clients not in use (``deque.pop`` / ``append`` are atomic), and every client made
        self._idle: deque[httpx.Client] = deque()
        self._clients: list[httpx.Client] = []
        self._clients_lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None

    @contextmanager
    def _borrow(self) -> Iterator[httpx.Client]:
        """An idle client for one request (the one used last, whose connection is the most
        likely still open), or a new one when all are busy; given back afterwards. New
        clients share one TLS context (building one reads the CA bundle, ~0.1 s)."""
        try:
            client = self._idle.pop()
        except IndexError:
            import httpx  # lazy: only commands that talk to a server pay for it

            with self._clients_lock:
                if self._ssl is None:
                    self._ssl = httpx.create_ssl_context()
                client = httpx.Client(limits=pool_limits(1), verify=self._ssl)
                self._clients.append(client)
        try:
            yield client
        finally:
            if not client.is_closed:  # ``close`` ran meanwhile: not given out again
                self._idle.append(client)

    @abstractmethod
    def _endpoint(self, base: str) -> str:
        """The URL requests are POSTed to, from the server's base address."""

    @abstractmethod
    def _payload(self, messages: Messages, tools: Tools, decoding: Decoding) -> dict[str, Any]:
        """The JSON body of one request."""

    def _headers(self) -> dict[str, str]:
        """Extra request headers (none by default)."""
        return {}

    @abstractmethod
    def _usage(self, data: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
        """``(prompt tokens, completion tokens, prompt tokens served from the server's
        cache)`` as the reply reports them; ``None`` where it does not."""

    def build_request(
        self,
        messages: list[ChatMessage],
        tools: list[ChatTool] | None,
        decoding: Decoding,
    ) -> dict[str, Any]:
        """The JSON body sent to :attr:`url`."""
        return self._payload(messages, tools, decoding)

    def _parse(self, data: dict[str, Any], latency: float) -> ModelReply:
        """The reply object as a :class:`ModelReply` (``malformed`` when the message is
        missing or its tool calls are not well formed)."""
        message = require(data, self.MESSAGE_PATH, dict, backend=self.BACKEND, url=self.url)
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ModelError(
                f"{self.BACKEND} backend reply from {self.url} has a {type(content).__name__} "
                "'content', not text",
                kind="malformed",
            )
        prompt_tokens, completion_tokens, cached = self._usage(data)
        return ModelReply(
            # a list of content parts (some OpenAI-compatible servers) is read as its text
            text=content_text(content),
            tool_calls=parse_tool_calls(
                message.get("tool_calls"), backend=self.BACKEND, url=self.url
            ),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            prompt_tokens_evaluated=evaluated_tokens(prompt_tokens, cached),
            latency_s=latency,
        )

    def answer(self, request: ChatRequest) -> ModelReply:
        messages, tools, decoding, context = request
        body = self.build_request(messages, tools, decoding or Decoding())
        start = time.perf_counter()
        with self._borrow() as client:
            data = post_json(
                client,
                self.url,
                body,
                backend=self.BACKEND,
                policy=self.policy,
                headers=self._headers(),
            )
        latency = time.perf_counter() - start
        return self.counted(self._parse(data, latency))

    def close(self) -> None:
        with self._clients_lock:
            clients = list(self._clients)
            self._clients.clear()
            self._idle.clear()
        for client in clients:
            client.close()
