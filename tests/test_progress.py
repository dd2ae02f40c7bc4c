"""Progress that works everywhere (issue 32): the rich bar on a terminal, plain lines
(done / total, rate, elapsed, ETA) from a timer when stderr is a pipe or a file, so a run in
CI or under ``nohup`` says where it is while a slow case is still running."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from fakeserver import FakeServer, Step, openai_reply

from callscope.runs.progress import RunProgress, progress_line

FUNC = {
    "name": "get_weather",
    "description": "Weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
LINE = re.compile(r"^openai:fake: (\d+)/2 \((\d+)%\)(.*)$")


def _cases(path: Path) -> None:
    rows = [{"id": f"w{i}", "query": f"Weather in City{i}?", "functions": [FUNC]} for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cases = tmp_path / "cases.jsonl"
    _cases(cases)
    cmd = [
        sys.executable, "-m", "callscope.cli", "run", str(cases), "-o", str(tmp_path / "run"),
        "-m", "openai:fake", "--base-url", url, "--style", "prompt", "--modes", "direct",
        "--max-attempts", "1", "--no-cache", *extra,
    ]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "test", "CALLSCOPE_PROGRESS_INTERVAL": "0.2"}
    env.pop("CALLSCOPE_PROGRESS", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_a_run_to_a_pipe_prints_plain_lines_while_a_case_runs(tmp_path: Path) -> None:
    good = openai_reply(json.dumps({"name": "get_weather", "arguments": {"city": "City0"}}))
    with FakeServer() as srv:
        # the first answer takes 2 s: the timer must print lines while nothing has finished
        srv.push(Step(body=good, hang=2.0), Step(body=good))
        done = _run(tmp_path, srv.url + "/v1")
    assert done.returncode == 0, done.stderr
    lines = [m.groups() for m in map(LINE.match, done.stderr.splitlines()) if m]
    assert lines, done.stderr
    # first line at the start, periodic lines before anything finished, the last at the end
    assert lines[0][:2] == ("0", "0") and lines[0][2].endswith("ETA unknown")
    assert sum(1 for n, _, _ in lines if n == "0") >= 2, done.stderr
    assert lines[-1][:2] == ("2", "100") and lines[-1][2].endswith(", done")
    assert " runs/s, elapsed " in lines[-1][2]
    # no live-bar drawing in a log
    assert "\x1b[" not in done.stderr
    assert not [ln for ln in done.stderr.splitlines() if "openai:fake" in ln and "━" in ln]


def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    with FakeServer() as srv:
        done = _run(tmp_path, srv.url + "/v1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert not [ln for ln in done.stderr.splitlines() if LINE.match(ln)], done.stderr


def test_plain_lines_count_resumed_work_but_rate_only_this_run() -> None:
    # 10 of 40 were done before; this process ran 6 more in 120 s: 0.05/s, 24 left -> 8 min
    now = [100.0]
    out = io.StringIO()
    with RunProgress("m", 40, completed=10, stream=out, interval=3600, clock=lambda: now[0]) as p:
        assert p.style == "plain"
        now[0] = 220.0
        p.advance(6)
    first, last = out.getvalue().splitlines()
    assert first == "m: 10/40 (25%), elapsed 0s, ETA unknown"
    assert last == "m: 16/40 (40%), 0.050 runs/s, elapsed 2m00s, ETA 8m00s"
    assert progress_line("m", 40, 40, 30, 600.0).endswith("elapsed 10m00s, done")


def test_the_style_is_chosen_by_the_environment(monkeypatch) -> None:
    out = io.StringIO()
    assert RunProgress("m", 1, stream=out, enabled=False).style == "off"
    monkeypatch.setenv("CALLSCOPE_PROGRESS", "off")
    assert RunProgress("m", 1, stream=out).style == "off"
    monkeypatch.setenv("CALLSCOPE_PROGRESS", "bar")
    with RunProgress("m", 2, stream=out) as p:
        p.advance(2)
    assert p.style == "bar" and "2/2" in out.getvalue()
