"""The HTTP protocol of the proxy's server: uvicorn's h11 protocol with a deadline for a
request's header block and a 400 for a request line it cannot decode."""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from callscope.guard.proxy.request import MAX_HEADER_BYTES
from callscope.guard.upstream import error_body


def raw_answer(status: int, reason: str, message: str, kind: str) -> bytes:
    body = error_body(message, kind)
    return (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with what it lacks for a server facing any client: a header
    block must be complete within ``header_timeout`` seconds of its first byte or of the
    connection (408, then closed: headers then silence, or a trickle, never hold a connection
    open), a request line uvicorn cannot decode (a non-ASCII target) is a 400 instead of
    a dropped connection, and a header block over :data:`MAX_HEADER_BYTES` is a JSON 431
    however it arrives (in one piece the app answers it; in pieces, here)."""

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
            raw_answer(
                408,
                "Request Timeout",
                f"request headers not complete within {self.header_timeout:g} s",
                "request_timeout",
            )
        )
        self.transport.close()

    def _refuse_head(self) -> None:
        """The 431 to a header block over :data:`MAX_HEADER_BYTES` not yet complete; closed."""
        self.transport.write(
            raw_answer(
                431,
                "Request Header Fields Too Large",
                f"request headers over {MAX_HEADER_BYTES} bytes",
                "headers_too_large",
            )
        )
        self.transport.close()
        self._disarm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE and self._head_too_large(data):
            self._refuse_head()
            return
        try:
            super().data_received(data)
        except (UnicodeDecodeError, ValueError) as exc:
            self.logger.warning("Invalid HTTP request received: %s", exc)
            if not self.transport.is_closing():
                self.transport.write(
                    raw_answer(400, "Bad Request", f"invalid request: {exc}", "invalid_request")
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

    def _head_too_large(self, data: bytes) -> bool:
        """Whether a request head still incomplete would pass :data:`MAX_HEADER_BYTES`
        with ``data`` (h11 would refuse it with a plain-text 400: issue 47 point 17, the
        431 a header block in one piece gets must hold for one that arrives in pieces)."""
        buffered = self.conn.trailing_data[0]
        if len(buffered) + len(data) <= MAX_HEADER_BYTES:
            return False
        pending = buffered + data  # h11's own rule: only a head still incomplete is refused
        return b"\r\n\r\n" not in pending and b"\n\n" not in pending

    def on_response_complete(self) -> None:
        """uvicorn's, but a pipelined request whose head arrived with (or during) the one
        just answered and is already over :data:`MAX_HEADER_BYTES` unfinished gets the 431 a
        head arriving later gets. Before, uvicorn parsed it from its buffer here, h11
        refused it and the client got a plain-text ``400 Invalid HTTP request received.``
        (and a warning in the log)."""
        if (
            not self.transport.is_closing()
            and self.conn.our_state is h11.DONE
            and self.conn.their_state is h11.DONE
            and self._head_too_large(b"")
        ):
            self.server_state.total_requests += 1
            self._refuse_head()
            return
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)
