"""``callscope serve`` and the CLI under attack, round three (issue 47). Each test starts the
real server (or the real command) as users do, with the payload the issue describes, a raw-
socket upstream (:mod:`rawupstream`) scripted to misbehave, and real clients (``httpx``, a
raw socket); everything stays on 127.0.0.1, bounded in count and time, waits on events."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
from proxyserve import callscope_serve, raw_exchange
from rawupstream import TOOLS, chat, raw_upstream
from test_proxy_attacks import decisions, peak_rss_mib, post, status_line

from callscope.guard.proxy import CALLS_HEADER, GUARD_HEADER
from callscope.store.run_store import RunStore


def wait_until(predicate: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------- point 1


def test_a_second_response_on_one_connection_never_reaches_another_client(
    tmp_path: Path,
) -> None:
    """An upstream answers one request twice (the second INJECTED-BY-ATTACKER) and keeps
    the connection open; then 40 unrelated requests: none gets the injected answer (the
    proxy's 16 pools are taken in turn, so the 17th would have reused the connection)."""
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=30) as client,
    ):
        client.post(served.url + "/chat/completions", content=chat("double"))
        later = [
            client.post(served.url + "/chat/completions", content=chat("ok")) for _ in range(40)
        ]
    assert all(b"INJECTED" not in r.content for r in later)
    assert [r.status_code for r in later] == [200] * 40
    assert {r.headers[GUARD_HEADER] for r in later} == {"passed"}


def test_a_content_length_counting_characters_never_leaks_into_a_later_answer(
    tmp_path: Path,
) -> None:
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run") as served,
        httpx.Client(timeout=30) as client,
    ):
        client.post(served.url + "/chat/completions", content=chat("char_length"))
        later = [
            client.post(served.url + "/chat/completions", content=chat("ok")) for _ in range(40)
        ]
    assert [r.status_code for r in later] == [200] * 40
    assert all("€".encode() not in r.content for r in later)


# --------------------------------------------------------------------------- point 2


def test_a_201_with_a_call_is_checked_like_a_200(tmp_path: Path) -> None:
    """201 Created with a ``delete_account`` call (not among the tools): checked, fails at
    stage 1, re-asked (the same again) and marked unrepaired; never relayed unchecked."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        r = httpx.post(served.url + "/chat/completions", content=chat("created"), timeout=60)
    assert r.headers[GUARD_HEADER] == "unrepaired"
    assert r.headers[CALLS_HEADER] == "1"
    assert r.json()["callscope"]["guard"] == "unrepaired"
    assert decisions(tmp_path / "run").get("unrepaired") == 1


# --------------------------------------------------------------------------- point 3


def test_a_legacy_function_call_is_checked(tmp_path: Path) -> None:
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        r = httpx.post(served.url + "/chat/completions", content=chat("legacy"), timeout=60)
        functions = [t["function"] for t in TOOLS]
        body = json.dumps({"model": "legacy", "messages": [], "functions": functions})
        r_functions = httpx.post(served.url + "/chat/completions", content=body, timeout=60)
    assert r.headers[GUARD_HEADER] == "unrepaired"
    assert r.headers[CALLS_HEADER] == "1"
    assert r_functions.headers[GUARD_HEADER] == "unrepaired"  # legacy ``functions`` too


# --------------------------------------------------------------------------- point 4


def test_a_client_that_left_is_neither_recorded_nor_re_asked_for(tmp_path: Path) -> None:
    """The client closes at 0.5 s; upstream would answer a failing call at 2 s: the proxy
    closes the upstream request at once (upstream sees it), re-asks nothing and records no
    outcome, only ``client_gone``."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
            s.sendall(post(served.port, chat("slow_berlin")))
            assert wait_until(lambda: len(up.requests) == 1)
            time.sleep(0.5)
        closed = wait_until(lambda: up.closed_streams == 1 or len(up.requests) > 1)
        after = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
    assert closed and up.closed_streams == 1
    assert [r.model for r in up.requests] == ["slow_berlin", "ok"]  # no re-ask
    assert after.headers[GUARD_HEADER] == "passed"
    counted = decisions(tmp_path / "run")
    assert counted.get("client_gone") == 1
    assert "unrepaired" not in counted and counted.get("passed") == 1
    store = RunStore(tmp_path / "run")
    try:
        assert len(list(store.outcomes())) == 1  # the later request's, only
    finally:
        store.close()


# --------------------------------------------------------------------------- point 5


def test_duplicate_keys_in_arguments_are_a_stage_1_failure(tmp_path: Path) -> None:
    """``{"city": "Berlin", "\\u0063ity": "Paris"}``: Python reads Paris (grounded), other
    readers Berlin; the call is ambiguous and never passes."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        r = httpx.post(served.url + "/chat/completions", content=chat("duplicate_keys"), timeout=60)
    assert r.headers[GUARD_HEADER] == "unrepaired"
    assert r.headers[CALLS_HEADER] == "1"
    assert "duplicate key 'city'" in " ".join(r.json()["callscope"]["reasons"])


# --------------------------------------------------------------------------- point 7


def test_request_bodies_held_open_are_bounded_by_the_process_memory_bound(
    tmp_path: Path,
) -> None:
    """Connections that each declare a 4 MiB body and send a part of it: past the bound
    (16 MiB here) a request is answered 503 at once, before its body is read."""
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {4 * 1024 * 1024}\r\n\r\n".encode()
    )
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--max-memory-mb", "16") as served,
    ):
        held = []
        try:
            for _ in range(4):  # 16 MiB: the bound, all taken
                s = socket.create_connection(("127.0.0.1", served.port), timeout=30)
                s.sendall(head + b"x" * 65536)
                held.append(s)
            refused = raw_exchange(served.port, head + b"x" * 1024, wait=30)
            health = httpx.get(f"http://127.0.0.1:{served.port}/callscope/health", timeout=30)
        finally:
            for s in held:
                s.close()
        assert wait_until(
            lambda: (
                httpx.get(f"http://127.0.0.1:{served.port}/callscope/health", timeout=30).json()[
                    "memory_used"
                ]
                == 0
            )
        )
        after = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
    assert status_line(refused) == b"HTTP/1.1 503 Service Unavailable"
    assert json.loads(refused.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "over_memory_budget"
    assert health.json()["memory_used"] == 16 * 1024 * 1024
    assert after.status_code == 200  # what the abandoned requests held was given back
    assert decisions(tmp_path / "run").get("over_memory_budget") == 1


def test_concurrent_gzip_bombs_are_bounded_by_the_process_memory_bound(tmp_path: Path) -> None:
    """Ten concurrent 60 MiB gzip bombs (each under --max-reply-mb 64) under a 128 MiB bound:
    the ones past it are 503, and the process stays far below ten times 60 MiB."""
    import concurrent.futures

    with (
        raw_upstream(bomb_mb=60) as up,
        callscope_serve(up.url, tmp_path / "run", "--max-memory-mb", "128") as served,
    ):

        def one() -> httpx.Response:
            return httpx.post(served.url + "/chat/completions", content=chat("bomb"), timeout=120)

        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            replies = list(pool.map(lambda _: one(), range(10)))
        peak = peak_rss_mib(served.proc.pid)
    statuses = sorted(r.status_code for r in replies)
    assert 503 in statuses
    assert {r.json()["error"]["type"] for r in replies if r.status_code == 503} == {
        "over_memory_budget"
    }
    assert peak < 500  # 704 MiB before, unbounded in the count of bombs


# --------------------------------------------------------------------------- point 8


def test_a_store_that_cannot_be_written_is_said_everywhere(tmp_path: Path) -> None:
    """The store's file size limited (``prlimit --fsize``): the first failure is said on
    stderr, the health endpoint answers 503 with how many decisions wait, every reply
    carries ``X-Callscope-Store``, and each decision that could not be stored is named on
    stderr when the server stops."""
    (tmp_path / "run").mkdir()
    RunStore(tmp_path / "run").close()  # the schema exists: only new records fail
    size = (tmp_path / "run" / "store.sqlite").stat().st_size
    with (
        raw_upstream() as up,
        callscope_serve(
            up.url, tmp_path / "run", wrap=["prlimit", f"--fsize={size + 40_000}"]
        ) as served,
    ):
        replies = [
            httpx.post(served.url + "/chat/completions", content=chat("forged"), timeout=60)
            for _ in range(60)
        ]
        health_url = f"http://127.0.0.1:{served.port}/callscope/health"
        assert wait_until(lambda: httpx.get(health_url, timeout=30).status_code == 503)
        health = httpx.get(health_url, timeout=30)
        last = httpx.post(served.url + "/chat/completions", content=chat("forged"), timeout=60)
        code, err = served.stop()
    assert {r.status_code for r in replies} == {200}
    assert health.status_code == 503
    assert health.json()["status"] == "store_failing"
    unstored = health.json()["unstored"]
    assert unstored > 0
    assert "the run store cannot be written" in err
    assert last.headers["X-Callscope-Store"].startswith("failing; unstored=")
    assert err.count("decision NOT stored") >= unstored
    assert code != 0
