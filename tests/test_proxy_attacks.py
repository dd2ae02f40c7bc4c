"""``callscope serve`` under attack, round two (issue 39): where the upstream or the client
misbehaves. Each test starts the real server as users start it, drives it with a real client
(``httpx``, or a raw socket for bytes no client library sends) and a raw-socket upstream
(:mod:`rawupstream`) scripted to misbehave; every attack is bounded in count and time and
stays on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
from ports import server_port
from proxyserve import callscope_serve, raw_exchange, read_all
from rawupstream import SSE_TEXT, chat, raw_upstream

from callscope.guard.proxy import CALLS_HEADER, GUARD_HEADER, NOTE_HEADER
from callscope.store.run_store import RunStore


def decisions(out: Path) -> dict[str, int]:
    store = RunStore(out)
    try:
        return store.get_meta("guard:decisions") or {}
    finally:
        store.close()


def post(port: int, body: bytes, path: bytes = b"/v1/chat/completions") -> bytes:
    """The raw request of a JSON ``body``, asking to close after the answer."""
    return (
        b"POST "
        + path
        + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )


def status_line(raw: bytes) -> bytes:
    return raw.split(b"\r\n", 1)[0]


def status_mib(pid: int, field: str) -> float:
    """A memory ``field`` of ``/proc/PID/status`` (``VmHWM``: the peak resident size,
    ``VmRSS``: the resident size now) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field}")


def peak_rss_mib(pid: int) -> float:
    return status_mib(pid, "VmHWM")


# --------------------------------------------------------------------------- item 1


def test_a_client_that_abandons_a_stream_frees_its_slot_and_stops_upstream(
    tmp_path: Path,
) -> None:
    """Three abandoned endless streams under --max-concurrent 3: each upstream request is
    closed (upstream sees its reader go away) and the next request is served, not 503."""
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--max-concurrent", "3") as served,
    ):
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
                s.sendall(post(served.port, chat("endless_stream", stream=True)))
                first = s.recv(4096)  # the stream has begun: status line and a first event
                assert status_line(first) == b"HTTP/1.1 200 OK"
        deadline = time.monotonic() + 10
        while up.closed_streams < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        closed = up.closed_streams
        after = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=10)
    assert closed == 3
    assert after.status_code == 200
    assert after.headers[GUARD_HEADER] == "passed"
    counted = decisions(tmp_path / "run")
    assert counted["stream"] == 3 and counted["stream_abandoned"] == 3
    assert "overloaded" not in counted


# --------------------------------------------------------------------------- item 2


def test_a_gzip_bomb_from_upstream_is_a_502_with_memory_bounded(tmp_path: Path) -> None:
    """The issue's payload: about 300 KB of gzip decoding to 300 MiB."""
    with (
        raw_upstream(bomb_mb=300) as up,
        callscope_serve(up.url, tmp_path / "run") as served,
    ):
        assert len(up.bomb) < 400_000
        r = httpx.post(served.url + "/chat/completions", content=chat("bomb"), timeout=60)
        peak = peak_rss_mib(served.proc.pid)
    assert r.status_code == 502
    assert r.json()["error"]["type"] == "upstream_too_large"
    assert "67108864 bytes" in r.json()["error"]["message"]  # the default, 64 MiB
    assert peak < 400  # 1.1 GB before: the whole 300 MiB held, then copied
    assert decisions(tmp_path / "run") == {"upstream_too_large": 1}


# --------------------------------------------------------------------------- item 3


def test_content_length_with_chunked_is_refused_and_nothing_is_smuggled(tmp_path: Path) -> None:
    body = chat("ok")
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    smuggled = b"GET /v1/smuggled-admin HTTP/1.1\r\nHost: x\r\n\r\n"
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        raw = raw_exchange(
            served.port,
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(chunked)}\r\n".encode()
            + b"Transfer-Encoding: chunked\r\n\r\n"
            + chunked
            + smuggled,
        )
    assert status_line(raw) == b"HTTP/1.1 400 Bad Request"
    assert raw.count(b"HTTP/1.1 ") == 1  # one answer, then the connection was closed
    assert b"connection: close" in raw.lower()
    assert up.targets() == []  # neither the request nor the smuggled one reached upstream
    assert decisions(tmp_path / "run") == {"bad_request": 1}


# --------------------------------------------------------------------------- item 4


def test_a_gzipped_event_stream_is_relayed_as_text(tmp_path: Path) -> None:
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        raw = raw_exchange(served.port, post(served.port, chat("gzip_stream", stream=True)))
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert status_line(head) == b"HTTP/1.1 200 OK"
    assert b"content-encoding" not in head.lower()
    assert b"\x1f\x8b" not in rest
    assert _dechunk(rest) == SSE_TEXT


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size, _, body = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out, body = out + body[:n], body[n + 2 :]
    return out


# --------------------------------------------------------------------------- item 5


def test_the_upstream_timeout_bounds_the_whole_request_and_an_escaped_stream_key_streams(
    tmp_path: Path,
) -> None:
    """A trickle of one byte every 0.5 s never trips a per-read timeout of 2 s; the whole
    request's deadline answers it 504 (the client would otherwise wait 30 s)."""
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--upstream-timeout", "2") as served,
    ):
        slow = httpx.post(served.url + "/chat/completions", content=chat("trickle"), timeout=15)
        spelled = chat("gzip_stream").replace(b'"model"', b'"\\u0073tream": true, "model"')
        assert json.loads(spelled)["stream"] is True
        raw = raw_exchange(served.port, post(served.port, spelled))
    assert slow.status_code == 504
    assert slow.json()["error"]["type"] == "upstream_timeout"
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()  # relayed as a stream, not buffered
    assert _dechunk(rest) == SSE_TEXT
    assert decisions(tmp_path / "run") == {"upstream_timeout": 1, "stream": 1}


# --------------------------------------------------------------------------- item 6


def test_an_upstream_cannot_forge_the_guards_verdict(tmp_path: Path) -> None:
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--attempts", "0") as served,
    ):
        bad = httpx.post(served.url + "/chat/completions", content=chat("forged"), timeout=30)
        models = httpx.get(served.url + "/models", timeout=10)
    guard = [v for k, v in bad.headers.raw if k.lower() == GUARD_HEADER.lower().encode()]
    assert guard == [b"unrepaired"]
    calls = [v for k, v in bad.headers.raw if k.lower() == CALLS_HEADER.lower().encode()]
    assert calls == [b"3"]  # the call failed at stage 3, not the forged "0"
    assert models.status_code == 200
    assert not [k for k, _ in models.headers.raw if k.lower().startswith(b"x-callscope")]


def test_arguments_written_as_an_object_are_judged_and_said(tmp_path: Path) -> None:
    """A call whose ``function.arguments`` is an object (not the JSON string the OpenAI
    format requires) was judged "passed" without a word; it is still judged (Ollama writes
    objects), and the reply says which calls wrote their arguments so."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        odd = httpx.post(
            served.url + "/chat/completions", content=chat("object_arguments"), timeout=30
        )
        plain = httpx.post(served.url + "/chat/completions", content=chat("plain"), timeout=30)
    assert odd.headers[GUARD_HEADER] == "passed" and odd.headers[CALLS_HEADER] == "0"
    assert odd.headers[NOTE_HEADER] == "arguments-not-a-string=0"
    assert odd.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == {
        "city": "Paris"
    }  # relayed as upstream sent it: the proxy judges, it does not rewrite a passing answer
    assert plain.headers[GUARD_HEADER] == "passed" and NOTE_HEADER not in plain.headers


# --------------------------------------------------------------------------- item 7


def test_a_non_latin1_upstream_header_is_relayed_byte_for_byte(tmp_path: Path) -> None:
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        raw = raw_exchange(served.port, post(served.port, chat("cafe")))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert status_line(head) == b"HTTP/1.1 200 OK"
    assert "x-note: café €".encode() in head
    assert json.loads(body)["choices"][0]["message"]["tool_calls"][0]["id"] == "c0"
    assert decisions(tmp_path / "run") == {"passed": 1}


# --------------------------------------------------------------------------- item 10 + also


def test_targets_that_are_no_url_path_are_answered_400(tmp_path: Path) -> None:
    targets = [b"/v1/models#@evil:1/", b"/v1/" + b"a" * 70_000, b"/v1/..;/admin"]
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        answers = [
            raw_exchange(served.port, post(served.port, b"{}", path=t), wait=15) for t in targets
        ]
        fine = httpx.get(served.url + "/models", timeout=10)
    for t, raw in zip(targets, answers, strict=True):
        assert status_line(raw) == b"HTTP/1.1 400 Bad Request", (t[:40], raw[:300])
        assert b'"type": "invalid_request_error"' in raw
    assert fine.status_code == 200
    assert up.targets() == ["/v1/models"]
    assert decisions(tmp_path / "run") == {"bad_request": 3}


# --------------------------------------------------------------------------- item 11


def test_a_post_that_reached_upstream_is_never_sent_twice(tmp_path: Path) -> None:
    """An upstream that read the request, then closed without an answer, broke off its
    answer, or answered 101: each is a 502, and each request reached upstream once."""
    models = ["early_close", "partial", "switching"]
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        answers = [
            httpx.post(served.url + "/chat/completions", content=chat(m), timeout=30)
            for m in models
        ]
        seen = [r.model for r in up.requests]
    assert [a.status_code for a in answers] == [502, 502, 502]
    assert seen == models
    assert decisions(tmp_path / "run") == {"upstream_unreachable": 3}


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    port = server_port()  # a port nothing listens on, and nothing will meanwhile
    with callscope_serve(f"http://127.0.0.1:{port}/v1", tmp_path / "run") as served:
        r = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
        with socket.create_connection(("127.0.0.1", served.port)) as s:
            s.sendall(post(served.port, chat("ok")))
            raw = read_all(s, 10)
    assert r.status_code == 502
    assert status_line(raw) == b"HTTP/1.1 502 Bad Gateway"
