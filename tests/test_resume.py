"""Kill a real `callscope run` (SIGKILL and SIGINT) mid-way and resume it.

The model is a real OpenAI-compatible HTTP server on 127.0.0.1 (written here) that answers
slowly and deterministically: a call with a missing argument first, the right call after
any feedback turn. The run must end with exactly one outcome per (case, mode).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

N_CASES = 10
MODES = ("direct", "binary", "structured")
FUNC = {
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city", "unit"],
    },
}


class Hold:
    """Answers past the first ``after`` wait until :meth:`release`: a run cannot finish before
    the test's kill, however fast the machine or starved the test's poller."""

    def __init__(self) -> None:
        self.after: int | None = None
        self.answered = 0
        self.lock = threading.Lock()
        self.gate = threading.Event()

    def reset(self, after: int | None = None) -> None:
        with self.lock:
            self.after, self.answered = after, 0
            self.gate.clear()

    def wait_turn(self) -> None:
        with self.lock:
            self.answered += 1
            held = self.after is not None and self.answered > self.after
        if held:
            self.gate.wait(60)

    def release(self) -> None:
        self.gate.set()


HOLD = Hold()


class SlowModelHandler(BaseHTTPRequestHandler):
    # slow enough that a kill after the 4th outcome lands mid-way even on a loaded machine
    # (at 0.08 s the whole run took ~1 s, and a starved poller once saw it finish first)
    delay = 0.2

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.delay)
        HOLD.wait_turn()
        msgs = body["messages"]
        city = msgs[1]["content"].split("in ")[-1].rstrip("?")
        args = {"city": city} if len(msgs) == 2 else {"city": city, "unit": "celsius"}
        reply = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": json.dumps({"name": "get_weather", "arguments": args}),
                    }
                }
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    HOLD.reset()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SlowModelHandler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def write_cases(path: Path) -> None:
    with path.open("w") as fh:
        for i in range(N_CASES):
            row = {
                "id": f"w{i}",
                "query": f"What is the weather in celsius in City{i}?",
                "functions": [FUNC],
                "gold": {
                    "name": "get_weather",
                    "arguments": {"city": f"City{i}", "unit": "celsius"},
                },
            }
            fh.write(json.dumps(row) + "\n")


def command(cases: Path, out: Path, url: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "callscope.cli",
        "run",
        str(cases),
        "-o",
        str(out),
        "-m",
        "openai:fake",
        "--base-url",
        url,
        "--style",
        "prompt",
        "--max-attempts",
        "3",
        "--no-cache",
        "--quiet",
        "--concurrency",
        "2",
    ]


def count_outcomes(store: Path) -> int:
    if not store.exists():
        return 0
    try:
        con = sqlite3.connect(store, timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@contextmanager
def sigint_as_at_a_terminal() -> Iterator[None]:
    """Children started inside get SIGINT as a shell with job control gives them: the
    default, which Python turns into ``KeyboardInterrupt``. A suite started as a background
    job without job control (``(pytest &)``, ``sh -c 'pytest &'``) inherits SIGINT *ignored*
    (POSIX, for asynchronous commands), and so would every ``callscope run`` it starts: that
    run rightly keeps ignoring a Ctrl-C meant for the foreground job, and a test sending it
    SIGINT would see it finish instead. An ignored disposition survives ``exec`` and a
    handler does not, so a handler set here while the child is started reaches it as the
    default."""
    before = signal.getsignal(signal.SIGINT)
    if before != signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def signal_state(pid: int) -> str:
    """What process ``pid`` does with signals (Linux ``/proc``: the blocked, ignored and
    caught masks), for a failure message; ``""`` elsewhere."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return ""
    fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
    return " ".join(f"{k} {fields[k].strip()}" for k in ("SigBlk", "SigIgn", "SigCgt"))


def kill_midway(cmd: list[str], store: Path, sig: int, at_least: int) -> tuple[int, str]:
    """Start ``cmd``, send ``sig`` once ``at_least`` outcomes are stored, and return its exit
    status and its :func:`signal_state` at the kill. The server holds every answer after the ``2 * at_least + 2``-th until then (with
    two requests at once and at most two per outcome, those answers complete ``at_least``
    outcomes), so the kill lands mid-way on any machine."""
    HOLD.reset(after=2 * at_least + 2)
    env = {**os.environ, "OPENAI_API_KEY": "test"}
    with sigint_as_at_a_terminal():
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    try:
        while count_outcomes(store) < at_least and time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before the kill"
        state = signal_state(proc.pid)
        proc.send_signal(sig)
    finally:
        HOLD.release()  # what is in flight is answered (SIGINT: the run ends it gracefully)
    proc.wait(timeout=30)
    return proc.returncode, state


def check_complete(out: Path) -> None:
    con = sqlite3.connect(out / "store.sqlite")
    keys = con.execute("SELECT case_id, mode FROM outcomes").fetchall()
    assert sorted(keys) == sorted((f"w{i}", m) for i in range(N_CASES) for m in MODES)
    # every outcome has exactly its attempts, numbered 1..n, no orphans
    rows = con.execute(
        "SELECT o.case_id, o.mode, o.n_attempts, COUNT(a.attempt), MIN(a.attempt), MAX(a.attempt)"
        " FROM outcomes o JOIN attempts a USING (model, case_id, mode) GROUP BY 1, 2"
    ).fetchall()
    assert len(rows) == N_CASES * len(MODES)
    for _cid, mode, n, count, lo, hi in rows:
        assert count == n and lo == 1 and hi == n
        assert n == (1 if mode == "direct" else 2)
    orphans = con.execute(
        "SELECT COUNT(*) FROM attempts a LEFT JOIN outcomes o USING (model, case_id, mode)"
        " WHERE o.case_id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    final = [json.loads(x) for x in (out / "final.jsonl").read_text().splitlines()]
    assert len(final) == N_CASES * len(MODES)
    assert len({(r["id"], r["mode"]) for r in final}) == len(final)
    solved = {m: sum(r["solved"] for r in final if r["mode"] == m) for m in MODES}
    assert solved == {"direct": 0, "binary": N_CASES, "structured": N_CASES}


@pytest.mark.parametrize(
    "sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["SIGKILL", "SIGINT", "SIGTERM"]
)
def test_killed_run_resumes_without_loss_or_duplicates(tmp_path, server, sig) -> None:
    cases = tmp_path / "cases.jsonl"
    write_cases(cases)
    out = tmp_path / "run"
    cmd = command(cases, out, server)
    rc, state = kill_midway(cmd, out / "store.sqlite", sig, at_least=4)
    partial = count_outcomes(out / "store.sqlite")
    assert 4 <= partial < N_CASES * len(MODES), f"the kill did not stop the run: {state}"
    if sig == signal.SIGINT:  # the cases in flight finish, then the run says so and ends
        assert rc == 130
    else:  # no handler: the run ends at once, as killed
        assert rc == -sig
    done = subprocess.run(
        cmd,
        env={**os.environ, "OPENAI_API_KEY": "test"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{N_CASES * len(MODES) - partial} ran, {partial} already done" in " ".join(
        done.stderr.split()
    )
    check_complete(out)


# ------------------------------------------------------------- byte-identical resumes (issue 15)

#: fields that measure the machine, not the run: left out of the store comparison
VOLATILE = frozenset({"latency_s", "cached"})
#: the report tables compared byte for byte (figures and the page embed rendering details)
TABLE_SUFFIXES = (".md", ".csv", ".tex")


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def store_dump(out: Path) -> list[str]:
    """Every row of every table, JSON columns decoded with :data:`VOLATILE` left out, in
    key order."""
    con = sqlite3.connect(out / "store.sqlite")
    try:
        lines: list[str] = []
        for table in ("meta", "cases", "outcomes", "attempts", "conversations"):
            for row in sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr):
                cells = []
                for cell in row:
                    if isinstance(cell, str) and cell[:1] in "{[":
                        cell = json.dumps(_strip(json.loads(cell)))
                    cells.append(cell)
                lines.append(f"{table}: {cells!r}")
        return lines
    finally:
        con.close()


def report_tables(out: Path) -> dict[str, bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "test"}
    done = subprocess.run(
        [sys.executable, "-m", "callscope.cli", "report", str(out)],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in TABLE_SUFFIXES
    }


def cached_command(cases: Path, out: Path, url: str, cache: Path) -> list[str]:
    cmd = [c for c in command(cases, out, url) if c != "--no-cache"]
    return [*cmd, "--cache", str(cache)]


def run_to_end(cmd: list[str]) -> None:
    done = subprocess.run(
        cmd, env={**os.environ, "OPENAI_API_KEY": "test"}, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def resumed_trial(tmp: Path, url: str, cases: Path, at_least: int) -> tuple[int, Path]:
    """SIGKILL a cached, concurrent run after ``at_least`` outcomes, then resume it; returns
    the outcomes stored at the kill and the run folder."""
    out, cache = tmp / "run", tmp / "cache.sqlite"
    cmd = cached_command(cases, out, url, cache)
    kill_midway(cmd, out / "store.sqlite", signal.SIGKILL, at_least=at_least)
    partial = count_outcomes(out / "store.sqlite")
    run_to_end(cmd)
    return partial, out


def reference_run(tmp: Path, url: str, cases: Path) -> Path:
    out = tmp / "run"
    run_to_end(cached_command(cases, out, url, tmp / "cache.sqlite"))
    return out


@pytest.mark.parametrize("at_least", [3, 17])
def test_sigkilled_cached_run_resumes_byte_identical(tmp_path, server, at_least) -> None:
    """Concurrency 2, the response cache on: after a SIGKILL and a resume, the store (less
    latencies), ``final.jsonl`` and every report table equal an uninterrupted run's."""
    cases = tmp_path / "cases.jsonl"
    write_cases(cases)
    ref = reference_run(tmp_path / "ref", server, cases)
    partial, out = resumed_trial(tmp_path / "trial", server, cases, at_least)
    assert 0 < partial <= N_CASES * len(MODES)
    check_complete(out)
    assert store_dump(out) == store_dump(ref)
    assert (out / "final.jsonl").read_bytes() == (ref / "final.jsonl").read_bytes()
    tables = report_tables(out)
    assert len(tables) >= 9
    assert tables == report_tables(ref)
