"""``callscope serve``'s streams under attack (round four): what an upstream sends that no
client can be given, a stream broken off mid-event, a compressed stream, a client that stops
reading, another endpoint's stream. The real server as users start it, real clients (the
``openai`` SDK, ``httpx``, a raw socket) and a raw-socket upstream (:mod:`rawupstream`);
bounded in count and time, 127.0.0.1 only."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest
from proxyserve import callscope_serve, raw_exchange
from rawupstream import QUERY, TOOLS, chat, raw_upstream
from test_proxy_attacks import decisions, peak_rss_mib, post, status_line

from callscope.guard.proxy.events import MAX_HELD_BYTES, WholeEvents


def test_a_status_no_server_can_write_is_a_502_streamed_or_not(tmp_path: Path) -> None:
    """Status 999 (h11 reads any three digits): uvicorn has no reason phrase for it, so
    relaying it crashed the request and the client got nothing. Now a 502 that says why, in
    both paths, and the server answers the next request."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        streamed = raw_exchange(served.port, post(served.port, chat("status_999", stream=True)))
        whole = httpx.post(served.url + "/chat/completions", content=chat("status_999"), timeout=10)
        after = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=10)
    assert status_line(streamed) == b"HTTP/1.1 502 Bad Gateway"
    error = json.loads(streamed.partition(b"\r\n\r\n")[2])["error"]
    assert error["type"] == "upstream_invalid"
    assert "status 999" in error["message"]
    assert whole.status_code == 502 and whole.json()["error"]["type"] == "upstream_invalid"
    assert after.status_code == 200
    assert decisions(tmp_path / "run") == {
        "stream": 1,
        "stream_error": 1,
        "upstream_invalid": 1,
        "passed": 1,
    }


def test_only_codings_decoded_in_bounded_steps_are_asked_for_or_taken(tmp_path: Path) -> None:
    """httpx offers zstd (and br) where their packages are installed and inflates them a
    whole network read at once: 49 KB of zstd took the proxy to 2.1 GiB. The proxy asks for
    gzip and deflate only, and an answer in another coding is a 502, never decoded."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        streamed = raw_exchange(served.port, post(served.port, chat("zstd", stream=True)))
        whole = httpx.post(served.url + "/chat/completions", content=chat("zstd"), timeout=10)
        asked = [r.headers.get("accept-encoding") for r in up.requests]
    assert asked == ["gzip, deflate", "gzip, deflate"]
    assert status_line(streamed) == b"HTTP/1.1 502 Bad Gateway"
    assert b"'zstd' content coding" in streamed
    assert whole.status_code == 502
    assert "'zstd' content coding" in whole.json()["error"]["message"]


def test_a_gzipped_stream_bomb_is_inflated_in_bounded_steps(tmp_path: Path) -> None:
    """Four streams of 300 KB of gzip each decoding to 300 MiB, at once: the stream path
    inflates in 1 MiB steps as an answer read whole does (before: a network read at a time,
    one 64 KiB read being 64 MiB; four streams took the proxy from 50 to 860 MiB)."""
    body = chat("stream_bomb", stream=True)
    with (
        raw_upstream(bomb_mb=300) as up,
        callscope_serve(up.url, tmp_path / "run", "--max-reply-mb", "16") as served,
    ):
        results: list[bytes] = []

        def one() -> None:
            results.append(raw_exchange(served.port, post(served.port, body), wait=60))

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        peak = peak_rss_mib(served.proc.pid)
    assert len(results) == 4
    for raw in results:
        assert status_line(raw) == b"HTTP/1.1 200 OK"
        assert b'"type": "upstream_too_large"' in raw[-4096:]  # the stream's last event
    assert peak < 160
    assert decisions(tmp_path / "run") == {"stream": 4, "stream_error": 4}


def test_a_stream_broken_off_mid_event_ends_with_an_error_the_sdk_raises(tmp_path: Path) -> None:
    """Upstream sends one whole event and half of the next ``data:`` line, then breaks off.
    The proxy relays whole events only, so its last error event is parsed as one: the
    ``openai`` SDK user gets the first delta, then ``openai.APIError`` with the proxy's
    message (before: the half line and the error event read as one event, a
    ``JSONDecodeError`` inside the SDK)."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        client = openai.OpenAI(base_url=served.url, api_key="x", max_retries=0)
        stream = client.chat.completions.create(
            model="cut_mid_event", messages=QUERY, tools=TOOLS, stream=True, timeout=20
        )
        deltas = []
        with pytest.raises(openai.APIError) as raised:
            for chunk in stream:
                deltas.append(chunk.choices[0].delta.content)
    assert deltas == ["Hel"]
    assert "upstream unreachable mid-stream" in str(raised.value)
    assert decisions(tmp_path / "run") == {"stream": 1, "stream_error": 1}


def test_a_client_that_stops_reading_holds_upstream_no_longer_than_the_deadline(
    tmp_path: Path,
) -> None:
    """--upstream-timeout bounds a whole stream, the client's reading included: upstream
    sends as fast as it can, the client reads the head and stops. The proxy closes the
    upstream request within the deadline and its 1 s grace (before: for as long as the
    client kept the connection open), and answers other requests meanwhile."""
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--upstream-timeout", "2") as served,
        socket.create_connection(("127.0.0.1", served.port), timeout=10) as s,
    ):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(post(served.port, chat("flood_stream", stream=True)))
        assert s.recv(12) == b"HTTP/1.1 200"
        deadline = time.monotonic() + 15
        while up.closed_streams == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        closed_while_held = up.closed_streams
        other = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=10)
    assert closed_while_held == 1
    assert other.status_code == 200
    assert decisions(tmp_path / "run") == {"stream": 1, "stream_error": 1, "passed": 1}


def test_another_endpoints_stream_is_relayed_as_it_comes(tmp_path: Path) -> None:
    """``stream: true`` on ``/v1/responses`` (or legacy completions) is relayed event by
    event, as a chat stream is: upstream sends its second event only once the client has
    read the first (before: the proxy read the whole answer first, so the client waited for
    upstream's end, or got a 504 at --upstream-timeout)."""
    request = {"model": "held_events", "input": "hi", "stream": True}
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        got = b""
        with httpx.stream("POST", served.url + "/responses", json=request, timeout=20) as r:
            for piece in r.iter_raw():
                got += piece
                if b"response.created" in got:
                    up.release.set()
        status = r.status_code
    assert status == 200
    assert up.released is True
    assert got.endswith(b'data: {"type": "response.completed"}\n\n')
    assert decisions(tmp_path / "run") == {"stream": 1}


STREAM = b"data: a\r\n\r\n: ping\ndata: b\n\nevent: x\rdata: c\r\rdata: d\ndata: e\n\ndata: cut"
#: where each event of :data:`STREAM` ends (its blank line: CRLF CRLF, LF LF, CR CR, LF LF),
#: counted by hand; the first also at 10, its last CR, when a read ends there (the LF that
#: follows is the same line end, handed on with the next piece)
EVENT_ENDS = (10, 11, 27, 45, 62)


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_whole_events_hands_on_every_byte_in_order_and_only_at_event_ends(cut: int) -> None:
    """Any split of a stream into two network reads: the bytes handed on are the stream's,
    in order, and each piece ends at an event end (a blank line split across the reads
    included); the unfinished last event is handed on at the stream's end."""
    events = WholeEvents()
    pieces = [events.feed(STREAM[:cut]), events.feed(STREAM[cut:])]
    rest = events.rest()
    assert b"".join(pieces) + rest == STREAM
    handed = 0
    for piece in pieces:
        handed += len(piece)
        assert not piece or handed in EVENT_ENDS
    assert rest == b"data: cut"


def test_an_unfinished_event_over_the_bound_is_handed_on_as_it_comes() -> None:
    events = WholeEvents()
    big = b"data: " + b"x" * MAX_HELD_BYTES
    assert events.feed(big[:1000]) == b""
    assert events.feed(big[1000:]) == big  # over the bound: memory per stream stays bounded
    assert events.rest() == b""
