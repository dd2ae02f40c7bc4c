"""``callscope serve`` under attack, round five: a client that takes its reply just fast enough
for each piece, request bodies that are not UTF-8 or come in a content coding, and a
pipelined request whose header block is too large. Each test starts the real server as users
start it (``--port 0``, the port read from its banner) and drives it with real clients
(``httpx``, ``curl``, raw sockets for what no library sends) and a raw-socket upstream
(:mod:`rawupstream`); everything stays on 127.0.0.1, bounded in count and time, and waits on
events or on the server's health endpoint, never asserts a timing."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import rawupstream
from proxyserve import callscope_serve, raw_exchange, read_all
from rawupstream import RawUpstream, Request, chat, head, raw_upstream
from test_attack_round3 import wait_until
from test_proxy_attacks import decisions, post, status_line

from callscope.guard.proxy import GUARD_HEADER

#: the size of the reply a slow client takes (well over the ~3 MiB the kernel buffers between
#: the proxy and a client with a small receive buffer)
BIG_MIB = 16
#: --body-timeout for the slow client: each MiB piece must go within it, and the whole reply
#: within it plus one second per MiB (20 s for BIG_MIB)
SLOW_BODY_TIMEOUT = 4
#: how fast the slow client reads, in bytes a second: a MiB in 2.5 s (inside the 4 s each
#: piece may take), the whole reply in 40 s (twice the 20 s it may take)
SLOW_RATE = 0.4 * 1024 * 1024


async def big_file(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """``GET .../big``: :data:`BIG_MIB` MiB of JSON, sent as fast as the proxy takes it."""
    body = b'{"data": "' + b"x" * (BIG_MIB * 1024 * 1024) + b'"}'
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    w.write(head("200 OK", headers) + body)
    await w.drain()


@pytest.fixture
def up(monkeypatch: pytest.MonkeyPatch) -> Iterator[RawUpstream]:
    """The raw upstream with this module's behaviours (``big`` by the target's last
    segment)."""
    monkeypatch.setitem(rawupstream.BEHAVIOURS, "big", big_file)
    with raw_upstream() as upstream:
        yield upstream


def health(port: int) -> dict[str, object]:
    reply: dict[str, object] = httpx.get(
        f"http://127.0.0.1:{port}/callscope/health", timeout=10
    ).json()
    return reply


def paced_read(s: socket.socket, rate: float, done: object, limit: float) -> int:
    """Read from ``s`` at about ``rate`` bytes a second until the server closes, ``done()``
    (asked about once a second) is true, or ``limit`` seconds pass; the bytes read."""
    got = 0
    started = last_asked = time.monotonic()
    s.settimeout(1)
    while time.monotonic() - started < limit:
        now = time.monotonic()
        if now - last_asked >= 1:
            last_asked = now
            if done():  # type: ignore[operator]
                break
        ahead = got - rate * (now - started)
        if ahead > 0:
            time.sleep(min(ahead / rate, 0.5))
            continue
        try:
            chunk = s.recv(16384)
        except TimeoutError:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += len(chunk)
    return got


# --------------------------------------------------------------------------- finding 1


def test_a_client_taking_each_piece_just_in_time_is_let_go_at_the_whole_reply_deadline(
    up: RawUpstream, tmp_path: Path
) -> None:
    """A client (a receive buffer of 4 KiB) takes a 16 MiB reply at 0.4 MiB/s: each MiB
    within --body-timeout (4 s), but the whole far past --body-timeout plus one second per
    MiB (20 s). It is let go, counted slow_client, and what it held given back while it is
    still connected (before, only each piece had a deadline: it held the reply, its memory
    and its slot until it had read the last byte, and a client taking each MiB just inside
    30 s held a 64 MiB reply about 32 minutes)."""
    options = ("--body-timeout", str(SLOW_BODY_TIMEOUT), "--upstream-timeout", "60")
    with callscope_serve(up.url, tmp_path / "run", *options) as served:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", served.port))
        try:
            s.sendall(b"GET /v1/files/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert wait_until(lambda: len(up.requests) == 1, 30)
            assert wait_until(lambda: health(served.port)["memory_used"] != 0, 30)

            def let_go() -> bool:
                state = health(served.port)
                return state["memory_used"] == 0 and state["in_flight"] == 1

            got = paced_read(s, SLOW_RATE, let_go, 120)
            state = health(served.port)
            freed = let_go()
        finally:
            s.close()
        beside = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
    assert freed, state
    assert got < BIG_MIB * 1024 * 1024  # it never got the whole reply
    assert beside.status_code == 200, beside.text[:300]
    counted = decisions(tmp_path / "run")
    assert counted.get("slow_client") == 1, counted
    assert counted.get("passed") == 1, counted


#: --min-read-rate of the slow-link test, KiB a second (the default, 1024, lets it go)
RATE = "256"


def test_a_lower_min_read_rate_lets_a_slow_link_take_its_whole_reply(
    up: RawUpstream, tmp_path: Path
) -> None:
    """``--min-read-rate`` (KiB a second) is the floor of the whole-reply deadline: at 256 a
    client reading the 16 MiB reply at 0.5 MiB/s (a slow link: 32 s, past the default
    deadline of 4 + 16 s, within 4 + 64 s) takes all of it, and nothing is counted
    slow_client."""
    options = ("--body-timeout", str(SLOW_BODY_TIMEOUT), "--upstream-timeout", "60")
    with callscope_serve(up.url, tmp_path / "run", *options, "--min-read-rate", RATE) as served:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", served.port))
        try:
            s.sendall(b"GET /v1/files/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = paced_read(s, 0.5 * 1024 * 1024, lambda: False, 120)
        finally:
            s.close()
        assert wait_until(lambda: health(served.port)["in_flight"] == 1, 30)
    assert got > BIG_MIB * 1024 * 1024  # the whole body (and its head)
    counted = decisions(tmp_path / "run")
    assert "slow_client" not in counted, counted  # (the slow client of the test above: 1)


# --------------------------------------------------------------------------- finding 2


@pytest.mark.parametrize(
    ("encoding", "named"),
    [
        ("utf-16", "UTF-16 (with a byte order mark)"),
        ("utf-16-le", "UTF-16-LE"),
        ("utf-32", "UTF-32 (with a byte order mark)"),
        ("utf-8-sig", "UTF-8 after a byte order mark"),
    ],
)
def test_a_request_that_is_not_utf8_is_refused_not_checked_and_relayed_as_it_came(
    up: RawUpstream, tmp_path: Path, encoding: str, named: str
) -> None:
    """A chat request in UTF-16, UTF-32 or after a UTF-8 byte order mark is a clear 400
    saying the body must be UTF-8 (RFC 8259 section 8.1), and nothing reaches upstream
    (before, it was checked as read, then sent upstream in its own encoding: 200). The same
    request in UTF-8 passes."""
    body = chat("ok").decode().encode(encoding)
    with callscope_serve(up.url, tmp_path / "run") as served:
        r = httpx.post(served.url + "/chat/completions", content=body, timeout=30)
        assert up.requests == []
        plain = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
    assert r.status_code == 400, r.text[:300]
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert named in error["message"] and "UTF-8" in error["message"], error
    assert "RFC 8259" in error["message"]
    assert plain.status_code == 200 and plain.headers[GUARD_HEADER] == "passed"
    assert [req.body for req in up.requests] == [chat("ok")]
    assert decisions(tmp_path / "run").get("bad_request") == 1


# --------------------------------------------------------------------------- finding 3


def test_a_request_body_in_a_content_coding_is_a_415_never_inflated_nor_relayed(
    up: RawUpstream, tmp_path: Path
) -> None:
    """``Content-Encoding: gzip`` on a request: the chat path, another path and a gzip bomb
    are each a JSON 415 naming the coding, with ``Accept-Encoding: identity``, the body
    never inflated and nothing sent upstream (before: the chat path was a 400 about a byte
    that is not UTF-8, and another path was relayed upstream without its Content-Encoding, so
    upstream read the gzip bytes as the body: 200). ``identity`` is no coding: it passes."""
    packed = gzip.compress(chat("ok"))
    bomb = rawupstream.gzip_bomb(64)  # 64 MiB of zeros, about 64 KB on the wire
    gz = {"content-type": "application/json", "content-encoding": "gzip"}
    with callscope_serve(up.url, tmp_path / "run") as served:
        answers = [
            httpx.post(served.url + "/chat/completions", content=packed, headers=gz, timeout=30),
            httpx.post(served.url + "/embeddings", content=packed, headers=gz, timeout=30),
            httpx.post(served.url + "/chat/completions", content=bomb, headers=gz, timeout=30),
            httpx.post(
                served.url + "/chat/completions",
                content=packed,
                headers={**gz, "content-encoding": "deflate, GZIP"},
                timeout=30,
            ),
        ]
        reached = list(up.requests)
        state = health(served.port)
        identity = httpx.post(
            served.url + "/chat/completions",
            content=chat("ok"),
            headers={"content-encoding": "identity"},
            timeout=30,
        )
        curl = None
        if shutil.which("curl"):
            (tmp_path / "body.gz").write_bytes(packed)
            curl = subprocess.run(
                ["curl", "-s", "-w", "\n%{http_code}", "-H", "Content-Type: application/json"]
                + ["-H", "Content-Encoding: gzip", "--data-binary", f"@{tmp_path / 'body.gz'}"]
                + [served.url + "/chat/completions"],
                capture_output=True,
                text=True,
                timeout=60,
            )
    assert reached == [], [r.target for r in reached]
    for r in answers:
        assert r.status_code == 415, r.text[:300]
        assert r.headers["accept-encoding"] == "identity"
        error = r.json()["error"]
        assert error["type"] == "unsupported_encoding"
        assert "Content-Encoding: " in error["message"] and "gzip" in error["message"].lower()
    assert "deflate, GZIP" in answers[3].json()["error"]["message"]
    assert state["memory_used"] == 0
    assert identity.status_code == 200 and identity.headers[GUARD_HEADER] == "passed"
    if curl is not None:
        assert curl.stdout.rstrip().endswith("415"), curl.stdout[-300:]
        assert "unsupported_encoding" in curl.stdout
    assert decisions(tmp_path / "run").get("bad_request") == len(answers) + (curl is not None)


# --------------------------------------------------------------------------- finding 4


def test_a_pipelined_header_block_over_16_kib_is_the_json_431(
    up: RawUpstream, tmp_path: Path
) -> None:
    """HTTP/1.1 pipelining: a request, then in the same send (or while it is answered) the
    head of a second that is over 16 KiB and never ends. The first is answered, the second
    gets the JSON 431 any other header block over 16 KiB gets (before: uvicorn parsed it from
    its buffer once the first was answered, h11 refused it, and the client got a plain-text
    ``400 Invalid HTTP request received.``, logged as a warning). Two pipelined requests
    that are whole are both answered, in order."""
    first = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    endless = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000
    with callscope_serve(up.url, tmp_path / "run") as served:
        one_send = raw_exchange(served.port, first + endless, wait=15)
        with socket.create_connection(("127.0.0.1", served.port), timeout=15) as s:
            s.sendall(post(served.port, chat("ok")).replace(b"Connection: close\r\n", b""))
            s.sendall(endless[:100])
            for _ in range(25):  # the rest in pieces while the chat request is answered
                s.sendall(b"a" * 1000)
            in_pieces = read_all(s, 15)
        both = raw_exchange(served.port, first + post(served.port, chat("ok")), wait=15)
        _, stderr = served.stop()
    for raw in (one_send, in_pieces):
        assert status_line(raw) == b"HTTP/1.1 200 OK", raw[:200]
        second = raw[raw.index(b"HTTP/1.1 ", 10) :]
        assert status_line(second) == b"HTTP/1.1 431 Request Header Fields Too Large", second
        assert b'"type": "headers_too_large"' in second
    assert both.count(b"HTTP/1.1 200 OK") == 2, both[-300:]
    assert b"X-Callscope-Guard: passed" in both.split(b"HTTP/1.1 200 OK")[2]
    assert "Invalid HTTP request" not in stderr and "Traceback" not in stderr
