"""The request checks of the proxy, before anything reaches upstream: the header block's
size, the body (its framing, size and time), and the shape of a chat request's JSON. Each
refusal is an :class:`~callscope.guard.upstream.UpstreamReply` with an OpenAI-style error."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from callscope.core.jsonl import loads_bounded
from callscope.guard.budget import OverBudget, charge
from callscope.guard.proxy.config import ProxyConfig
from callscope.guard.upstream import UpstreamReply, error_reply

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
#: runs of slashes, read as one by the routers upstreams use (and by :func:`is_chat_path`)
_SLASHES = re.compile(r"/{2,}")
#: a request's header block at most (bytes of names and values) and its header count at most:
#: beyond either, 431 (h11 itself only bounds a header block that arrives in pieces)
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADERS = 100


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


def is_chat_path(path: str) -> bool:
    """Whether the (percent-decoded) request ``path`` is the chat endpoint an upstream would
    serve: one of :data:`CHAT_PATHS` once runs of slashes are read as one and a trailing
    slash is dropped (``/v1//chat/completions``, ``/v1/chat/completions/``: Starlette, as in
    vLLM, redirects the one and routes the other there). Such a request is checked, never
    relayed unchecked.

    >>> is_chat_path("/v1//chat/completions/"), is_chat_path("/v1/chat/completionsx")
    (True, False)
    """
    return _SLASHES.sub("/", path).rstrip("/") in CHAT_PATHS


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"the number {shown} does not fit a 64-bit float")
    return value


#: the proxy's JSON decoder, for requests and answers alike: ``NaN`` / ``Infinity`` are not
#: JSON, and a number no float can carry (``1e999``) would be read as infinity and written
#: back as ``Infinity`` (a request carrying one would be re-asked upstream with it, an answer
#: holding one re-encoded for its client), so each is refused: a request with one is a 400,
#: an answer with one is unreadable (a 502 where its calls were to be checked)
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def _strict(body: bytes) -> Any:
    """``body``'s JSON by the one bounded reader, with :data:`_DECODER`."""
    text = body.decode(json.detect_encoding(body), "surrogatepass")
    return loads_bounded(text, decoder=_DECODER)


class NotUtf8(ValueError):
    """A request body in another encoding than UTF-8 (UTF-16, UTF-32, or UTF-8 after a byte
    order mark): JSON exchanged between systems must be UTF-8 (RFC 8259 section 8.1)."""


#: how :func:`json.detect_encoding` names the encodings a request body may not be in
_ENCODING_NAMES = {
    "utf-8-sig": "UTF-8 after a byte order mark",
    "utf-16": "UTF-16 (with a byte order mark)",
    "utf-16-le": "UTF-16-LE",
    "utf-16-be": "UTF-16-BE",
    "utf-32": "UTF-32 (with a byte order mark)",
    "utf-32-le": "UTF-32-LE",
    "utf-32-be": "UTF-32-BE",
}


def loads_request(body: bytes) -> Any:
    """A client request's JSON, by the one bounded reader
    (:func:`~callscope.core.jsonl.loads_bounded`) with a decoder that refuses ``NaN``,
    ``Infinity`` and numbers no float can carry (``1e999``): a ``ValueError`` for text that
    is not JSON (or not UTF-8), such a number, an integer over the digit limit, or a value
    nested deeper than :data:`~callscope.core.jsonl.MAX_JSON_DEPTH`
    (:class:`~callscope.core.jsonl.TooDeep`); :class:`NotUtf8` for a body in UTF-16, UTF-32
    or with a byte order mark (it would be checked as read, then sent upstream as it came:
    RFC 8259 section 8.1 says JSON between systems MUST be UTF-8, and a server may read such
    bytes otherwise or not at all).

    >>> loads_request('{"a": 1}'.encode("utf-16"))
    Traceback (most recent call last):
    ...
    callscope.guard.proxy.request.NotUtf8: the request body is UTF-16 (with a byte order mark): JSON must be sent as UTF-8 (RFC 8259 section 8.1), without a byte order mark
    """
    encoding = json.detect_encoding(body)
    if encoding != "utf-8":
        name = _ENCODING_NAMES.get(encoding, encoding)
        raise NotUtf8(
            f"the request body is {name}: JSON must be sent as UTF-8 (RFC 8259 section 8.1), "
            "without a byte order mark"
        )
    return _strict(body)


def asks_to_stream(body: bytes) -> bool:
    """The request ``body`` is a JSON object with ``"stream": true`` (read from the parsed
    body: ``"\\u0073tream"`` is the same key); a body that is no JSON object does not.

    >>> asks_to_stream(b'{"input": "hi", "stream": true}'), asks_to_stream(b"stream")
    (True, False)
    """
    if body.lstrip()[:1] != b"{":
        return False
    try:
        request = loads_request(body)
    except ValueError:
        return False
    return isinstance(request, dict) and request.get("stream") is True


def loads_answer(body: bytes) -> Any:
    """An upstream answer's JSON, read as strictly as :func:`loads_request` (the same
    errors): what the proxy cannot read as JSON it cannot check, and what it reads it may
    write again (a repaired completion, a re-ask), so it never reads a value it could only
    write as something that is not JSON (``NaN``, ``Infinity``, ``1e999``)."""
    return _strict(body)


def json_bytes(value: Any) -> bytes:
    """The JSON text the proxy writes of ``value`` (a re-ask's body, a repaired completion,
    its ``callscope`` field): UTF-8, as ``json.dumps(ensure_ascii=False)`` writes it, and
    never ``NaN`` or ``Infinity`` (``allow_nan=False``: a ``ValueError`` instead; the
    readers above let none in). Lone surrogates (``"\\ud800"`` read from a request) are
    written as escapes, never as bytes that are not UTF-8."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=False).encode()


def header_error(scope: Scope) -> UpstreamReply | None:
    """The 431 answer to a header block over :data:`MAX_HEADERS` fields or
    :data:`MAX_HEADER_BYTES` bytes, or ``None``."""
    raw_headers = scope["headers"]
    if len(raw_headers) > MAX_HEADERS or (
        sum(len(k) + len(v) for k, v in raw_headers) > MAX_HEADER_BYTES
    ):
        message = f"request headers over {MAX_HEADERS} fields or {MAX_HEADER_BYTES} bytes"
        return error_reply(431, message, "headers_too_large")
    return None


def conn_tokens(scope: Scope) -> frozenset[bytes]:
    """Header names the client's ``Connection`` header marks as hop-by-hop."""
    names = [
        t.strip().lower() for k, v in scope["headers"] if k == b"connection" for t in v.split(b",")
    ]
    return frozenset(names)


def coding_error(headers: list[tuple[bytes, bytes]]) -> UpstreamReply | None:
    """The 415 answer to a request body in a content coding (``Content-Encoding: gzip``, any
    but ``identity``), or ``None``. The proxy neither inflates a request (a gzip bomb) nor
    relays one it cannot read: before, a gzipped chat request was a 400 naming a byte that
    is not UTF-8, and any other was sent upstream without its ``Content-Encoding`` (a hop
    header here), so upstream read the gzip bytes as the body itself.

    >>> coding_error([(b"content-encoding", b"identity")]) is None
    True
    >>> coding_error([(b"content-encoding", b"GZIP")]).status
    415
    """
    codings = [
        token.strip()
        for name, value in headers
        if name == b"content-encoding"
        for token in value.split(b",")
        if token.strip()
    ]
    refused = [c for c in codings if c.lower() != b"identity"]
    if not refused:
        return None
    shown = b", ".join(refused).decode("latin-1")[:40].encode("ascii", "replace").decode()
    reply = error_reply(
        415,
        f"request bodies in a content coding are not accepted (Content-Encoding: {shown}); "
        "send the JSON uncompressed",
        "unsupported_encoding",
    )
    reply.headers.append(("accept-encoding", "identity"))
    return reply


class BodyError(Exception):
    """A request body that is not read: the answer to send, whether to close, and the
    decision it is counted as."""

    def __init__(
        self, reply: UpstreamReply, close: bool = False, decision: str = "bad_request"
    ) -> None:
        self.reply = reply
        self.close = close
        self.decision = decision


async def read_body(scope: Scope, receive: Receive, cfg: ProxyConfig) -> bytes:
    """The request's body, read within ``cfg.body_timeout`` and ``cfg.max_body_bytes``;
    :class:`BodyError` (with its answer, and whether to close) for a body that may not be
    read: both ``Content-Length`` and ``Transfer-Encoding`` (400, closed: CL.TE smuggling),
    chunked without a length (411), in a content coding (415, :func:`coding_error`), over
    the limit (413), too slow (408)."""
    headers = scope["headers"]
    lengths = [v for k, v in headers if k == b"content-length"]
    chunked = any(k == b"transfer-encoding" for k, _ in headers)
    if lengths and chunked:
        # h11 reads such a body as chunked: whatever follows its last chunk would be
        # read as a second request on this connection (CL.TE smuggling); refuse, close
        raise BodyError(
            error_reply(400, "send Content-Length or Transfer-Encoding, not both"), True
        )
    if not lengths:
        if chunked:
            raise BodyError(
                error_reply(411, "send a Content-Length (chunked bodies are refused)"), True
            )
        limit = 0
    else:
        try:
            limit = int(lengths[0])
        except ValueError:
            raise BodyError(error_reply(400, "bad Content-Length"), True) from None
    if limit > 0:
        coding_refused = coding_error(headers)
        if coding_refused is not None:
            raise BodyError(coding_refused, True)
    if limit > cfg.max_body_bytes:
        raise BodyError(
            error_reply(413, f"request body over {cfg.max_body_bytes} bytes", "too_large"),
            True,
        )
    try:
        charge(limit)  # the declared length, before a byte of it is held
    except OverBudget as exc:
        raise BodyError(
            error_reply(503, str(exc), "over_memory_budget"), True, "over_memory_budget"
        ) from None
    parts: list[bytes] = []
    size = 0
    with anyio.move_on_after(cfg.body_timeout) as scope_timer:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise BodyError(error_reply(400, "client went away"), True)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cfg.max_body_bytes:
                raise BodyError(
                    error_reply(413, f"request body over {cfg.max_body_bytes} bytes", "too_large"),
                    True,
                )
            parts.append(chunk)
            if not message.get("more_body", False):
                break
    if scope_timer.cancelled_caught:
        raise BodyError(
            error_reply(
                408,
                f"request body not complete within {cfg.body_timeout:g} s",
                "request_timeout",
            ),
            True,
        )
    return b"".join(parts)
