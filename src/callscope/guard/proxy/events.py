"""Where the proxy may cut a relayed event stream (``text/event-stream``): at the end of an
event, so that when upstream breaks off mid-event, the proxy's last ``error`` event is the
next thing the client's parser reads, not the tail of a half-sent ``data:`` line (which the
OpenAI SDK then fails to decode, and never reports the proxy's error).

The bytes are relayed unchanged and in order; only when they are handed on changes."""

from __future__ import annotations

import re

#: a blank line (two line ends in a row: CRLF, LF or CR each, CRLF never split in two) ends an
#: event (the HTML standard's event stream format)
_EVENT_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
#: an unfinished event longer than this is handed on as it comes (memory per stream stays
#: bounded; such an event, broken off, ends unfinished before the error event)
MAX_HELD_BYTES = 1024 * 1024


class WholeEvents:
    """An event stream's bytes handed on at event ends (:meth:`feed`); what is still held at
    the stream's end with :meth:`rest`. Linear: each byte is scanned once (a blank line split
    across two chunks is found by scanning the last three bytes held again).

    >>> events = WholeEvents()
    >>> events.feed(b'data: {"a": 1}\\n\\ndata: {"b"'), events.feed(b": 2}\\r\\n\\r\\n")
    (b'data: {"a": 1}\\n\\n', b'data: {"b": 2}\\r\\n\\r\\n')
    >>> events.feed(b"data: cut"), events.rest()
    (b'', b'data: cut')
    """

    def __init__(self) -> None:
        self._held = bytearray()

    def feed(self, chunk: bytes) -> bytes:
        """The bytes ready to hand on once ``chunk`` has come: up to the last event end held
        (everything held when that is over :data:`MAX_HELD_BYTES`)."""
        start = max(0, len(self._held) - 3)
        self._held += chunk
        end = 0
        for m in _EVENT_END.finditer(self._held, start):
            end = m.end()
        if len(self._held) > MAX_HELD_BYTES:
            end = len(self._held)
        if not end:
            return b""
        ready = bytes(self._held[:end])
        del self._held[:end]
        return ready

    def rest(self) -> bytes:
        """The bytes still held (the stream has ended), handed on now."""
        rest = bytes(self._held)
        self._held.clear()
        return rest


def is_event_stream(headers: list[tuple[bytes, bytes]]) -> bool:
    """``headers`` (names lower-cased) say the body is an event stream.

    >>> is_event_stream([(b"content-type", b"text/event-stream; charset=utf-8")])
    True
    """
    return any(
        k == b"content-type" and v.strip().lower().startswith(b"text/event-stream")
        for k, v in headers
    )
