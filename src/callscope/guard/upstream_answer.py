"""How the repair proxy reads an upstream's answer within its bounds (issues 39 and 47), for
:class:`~callscope.guard.upstream.HTTPUpstream`: the body decoded a bounded step at a time
(:func:`decoded_chunks`: gzip and deflate inflated at most :data:`DECODE_STEP` bytes per step,
so a gzip bomb never lands in memory whole before the ``max_reply_bytes`` bound and the
process's memory budget can look at it), the connection closed when upstream sent more than
the answer it declared (:func:`overran`), and the header bytes relayed as they came (latin-1
is byte for byte) less the hop-by-hop ones and every ``X-Callscope-*`` header (only the proxy
says what it decided: :func:`end_headers`).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

#: headers that describe one hop and are never forwarded (RFC 9110 section 7.6.1), plus the
#: ones the proxy sets itself (the server writes its own ``Server`` and ``Date``: upstream's
#: are dropped so that a reply never carries two)
HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"content-encoding",
        b"accept-encoding",
        b"server",
        b"date",
    }
)
#: response headers an upstream may not send on: the proxy's own verdict headers
OWN_HEADER_PREFIX = b"x-callscope-"
#: decoded bytes at most per step when the proxy decodes gzip or deflate itself
DECODE_STEP = 1024 * 1024
#: the content codings the proxy asks upstream for (``Accept-Encoding``) and accepts back:
#: the ones :func:`decoded_chunks` inflates in bounded steps. httpx would also offer ``br``
#: and ``zstd`` where their packages are installed, and decode them a whole network read at
#: once: 49 KB of zstd is 1 GiB
ACCEPT_ENCODING = "gzip, deflate"
_DECODED = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})

Headers = list[tuple[bytes, bytes]]


async def overran(response: httpx.Response) -> bool:
    """Whether upstream sent bytes after ``response``'s declared end (read into the HTTP/1.1
    connection's buffer with it: a second response, a ``Content-Length`` short of its body);
    if so the connection is closed, never put back to use (a request already handed it is
    placed on another: httpcore's ``ConnectionNotAvailable``), so those bytes can never be
    read as a later request's answer. Bytes that arrive later make an idle connection
    readable, which httpcore already treats as closed. The connection is reached through
    httpx's and httpcore's stream wrappers; where a version lays them out otherwise, nothing
    is found and ``False`` is returned."""
    stream: Any = response.stream
    for name in ("_stream", "_httpcore_stream", "_stream"):  # httpx's two, httpcore's pool
        stream = getattr(stream, name, None)
    connection = getattr(stream, "_connection", None)
    state = getattr(connection, "_h11_state", None)
    if state is None:
        return False
    data, _closed = state.trailing_data
    if not data:
        return False
    with contextlib.suppress(Exception):
        await connection.aclose()
    return True


def unusable(response: httpx.Response) -> str | None:
    """Why the proxy cannot relay ``response`` whatever its body holds, or ``None``: a status
    outside HTTP's 100-599 (h11 reads any three digits; no server can write the status line
    back), or a content coding the proxy did not ask for (:data:`ACCEPT_ENCODING`; several
    codings stacked included), which it could only relay still encoded or decode whole.

    >>> unusable(httpx.Response(600)), unusable(httpx.Response(200))
    ("upstream answered status 600, outside HTTP's 100-599", None)
    >>> unusable(httpx.Response(200, headers={"Content-Encoding": "zstd"}))
    "upstream answered in the 'zstd' content coding, which the proxy did not ask for (it accepts gzip, deflate)"
    """
    if not 100 <= response.status_code <= 599:
        return f"upstream answered status {response.status_code}, outside HTTP's 100-599"
    coding = response.headers.get("content-encoding", "").strip().lower()
    if coding not in _DECODED:
        shown = coding[:40].encode("ascii", "replace").decode()
        return (
            f"upstream answered in the {shown!r} content coding, which the proxy did not ask "
            f"for (it accepts {ACCEPT_ENCODING})"
        )
    return None


async def decoded_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """``response``'s body decoded, at most :data:`DECODE_STEP` bytes at a time for gzip and
    deflate (httpx's decoder inflates a whole network read at once: 64 KiB of a gzip bomb
    is 64 MiB, before any bound could look at it); a body with no coding as it came. Any
    other coding is an ``httpx.DecodingError`` (:func:`unusable` says so before the body)."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("gzip", "x-gzip", "deflate"):
        if encoding not in _DECODED:
            raise httpx.DecodingError(f"the {encoding[:40]!r} content coding is not accepted")
        async for chunk in response.aiter_raw():
            yield chunk
        return
    wbits = 31 if encoding != "deflate" else 15
    inflate = zlib.decompressobj(wbits)
    first = True
    async for raw in response.aiter_raw():
        data = raw
        while data:
            try:
                out = inflate.decompress(data, DECODE_STEP)
            except zlib.error as exc:
                if first and wbits == 15:  # deflate sent without its zlib header
                    wbits, inflate = -15, zlib.decompressobj(-15)
                    continue
                raise httpx.DecodingError(f"cannot decode the {encoding} body: {exc}") from None
            first = False
            data = inflate.unconsumed_tail
            if inflate.eof and inflate.unused_data:  # a gzip file of several members
                data = inflate.unused_data + data
                inflate = zlib.decompressobj(wbits)
            if out:
                yield out
    if not inflate.eof and not first:
        tail = inflate.flush()
        if tail:
            yield tail


def raw_end_headers(headers: httpx.Headers) -> Headers:
    """Upstream's response header bytes, names lower-cased, less the hop-by-hop ones (and
    ``Server``, ``Date``) and every ``X-Callscope-*`` header.

    >>> raw_end_headers(httpx.Headers([("Date", "x"), ("X-Callscope-Guard", "ok"), ("A", "1")]))
    [(b'a', b'1')]
    """
    out: Headers = []
    for k, v in headers.raw:
        name = k.lower()
        if name not in HOP and not name.startswith(OWN_HEADER_PREFIX):
            out.append((name, v))
    return out


def end_headers(headers: httpx.Headers) -> list[tuple[str, str]]:
    """:func:`raw_end_headers` as text: each byte one latin-1 character, so the bytes an
    upstream sent (``café €`` in UTF-8) are relayed as they came, never re-encoded."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_end_headers(headers)]
