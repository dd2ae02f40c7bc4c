"""What guards a run directory against being written wrongly, through the command line as a
user types it:

* one writer per run directory: while one ``experiment`` / ``run`` / ``calibrate`` process
  writes a directory (held on a request a fake server keeps open), a second ``experiment``,
  ``calibrate run``, ``calibrate panel`` or ``calibrate experiment`` on it is refused in
  one line, exit 2, before it sends a request;
* ``calibrate run`` resumes only with the settings the directory was run with (style,
  ``--max-steps``, ``--max-tokens``): others are refused, naming what differs; a directory
  from before the settings were stored is accepted and its settings stored;
* ``run`` resumed with a cases file whose case changed (same id) is refused, naming the
  case; new cases added to the file still resume;
* ``-o FILE`` (a regular file) is one line, exit 2, for ``run``, ``experiment`` and
  ``calibrate run``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fakeserver import FakeServer, Step, openai_reply
from test_cli_errors import GOOD_OUTPUT, WEATHER
from typer.testing import CliRunner

from callscope.cli import app
from callscope.cli.common import EXIT_OK, EXIT_USAGE
from callscope.store.run_store import RunStore

BUSY = "being written by another callscope process"
HAS_BFCL = importlib.util.find_spec("bfcl_eval") is not None
needs_bfcl = pytest.mark.skipif(not HAS_BFCL, reason="calibrate needs bfcl-eval's cases")

GOOD = GOOD_OUTPUT


def case_row(cid: str, city: str = "Paris") -> dict:
    return {
        "id": cid,
        "query": f"What is the weather in {city}?",
        "functions": [WEATHER],
        "gold": {"name": "get_weather", "arguments": {"city": city}},
    }


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def env(tmp_path: Path) -> dict[str, str]:
    """A process environment of its own: no shared response cache, no colour, one width."""
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "CALLSCOPE_CACHE": str(tmp_path / "cache"),
        "OPENAI_API_KEY": "x",
        "NO_COLOR": "1",
        "COLUMNS": "2000",
        "CALLSCOPE_PROGRESS": "off",
    }


def argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "from callscope.cli.main import main; main()", *args]


def invoke(tmp_path: Path, *args: str):
    return CliRunner().invoke(app, list(args), env=env(tmp_path))


@contextmanager
def holding(srv: FakeServer, tmp_path: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``callscope ARGS`` started and held on its first request (the server answers it only
    when it stops): the run directory is being written while the block runs. Killed after."""
    with holding_command(srv, tmp_path, argv(*args)) as proc:
        yield proc


@contextmanager
def holding_command(
    srv: FakeServer, tmp_path: Path, command: list[str]
) -> Iterator[subprocess.Popen[str]]:
    """:func:`holding` of any ``command`` (a library call in a process of its own, too)."""
    srv.push(Step(hang=120, body=openai_reply("hello")))
    proc = subprocess.Popen(
        command,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not srv.requests:
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"the first writer ended before its request: {err[-3000:]}")
            assert time.monotonic() < deadline, "the first writer sent no request in 120 s"
            time.sleep(0.05)
        yield proc
    finally:
        proc.kill()
        proc.communicate()


def second(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(*args), env=env(tmp_path), capture_output=True, text=True, timeout=300
    )


def assert_refused(done: subprocess.CompletedProcess[str], out: Path) -> None:
    assert done.returncode == EXIT_USAGE, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and BUSY in errors[0] and str(out) in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def experiment_file(tmp_path: Path, url: str, out: Path) -> Path:
    cases = write_jsonl(tmp_path / "cases.jsonl", [case_row("c1"), case_row("c2", "Rome")])
    toml = tmp_path / "exp.toml"
    toml.write_text(
        f'output = "{out}"\nmodels = ["openai:fake"]\nmodes = ["direct"]\n'
        f'[benchmark]\ncases = "{cases}"\n'
        f'[run]\nbase_url = "{url}/v1"\nuse_cache = false\ntimeout = 200\n'
    )
    return toml


# ------------------------------------------------------------ one writer per run directory


def test_a_second_experiment_on_the_same_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    with FakeServer() as srv:
        toml = experiment_file(tmp_path, srv.url, out)
        with holding(srv, tmp_path, "experiment", str(toml), "--quiet"):
            done = second(tmp_path, "experiment", str(toml), "--quiet")
            assert len(srv.requests) == 1  # the second sent nothing
    assert_refused(done, out)


def test_an_experiment_into_a_directory_a_run_holds_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    with FakeServer() as srv:
        toml = experiment_file(tmp_path, srv.url, out)
        run = (
            "run", str(tmp_path / "cases.jsonl"), "-m", "openai:fake", "--base-url",
            f"{srv.url}/v1", "--no-cache", "--modes", "direct", "--quiet", "-o", str(out),
        )  # fmt: skip
        with holding(srv, tmp_path, *run):
            done = second(tmp_path, "experiment", str(toml), "--quiet")
            assert len(srv.requests) == 1
    assert_refused(done, out)


def calibrate_args(url: str, out: Path, *more: str) -> tuple[str, ...]:
    return (
        "--base-url", f"{url}/v1", "--categories", "base", "--n", "1", "--no-cache",
        "--quiet", "--timeout", "200", "-o", str(out), *more,
    )  # fmt: skip


@needs_bfcl
@pytest.mark.parametrize("sub", ["run", "panel", "experiment"])
def test_calibrate_refuses_a_directory_a_calibrate_run_holds(tmp_path: Path, sub: str) -> None:
    out = tmp_path / "cal"
    with FakeServer() as srv:
        first = ("calibrate", "run", "-m", "openai:a", *calibrate_args(srv.url, out))
        if sub == "experiment":
            toml = tmp_path / "cal.toml"
            toml.write_text(
                f'output = "{out}"\nmodels = ["openai:a", "openai:b"]\ncategories = ["base"]\n'
                f'n = 1\n[run]\nbase_url = "{srv.url}/v1"\nuse_cache = false\n'
            )
            args: tuple[str, ...] = ("calibrate", "experiment", str(toml), "--quiet")
        else:
            models = ("-m", "openai:a") if sub == "run" else ("-m", "openai:a", "-m", "openai:b")
            args = ("calibrate", sub, *models, *calibrate_args(srv.url, out))
        with holding(srv, tmp_path, *first):
            done = second(tmp_path, *args)
            assert len(srv.requests) == 1
    assert_refused(done, out)


# ------------------------------------------------------- calibrate run's fixed settings


@needs_bfcl
def test_calibrate_run_refuses_other_settings_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "cal"
    with FakeServer() as srv:
        cal = ("calibrate", "run", "-m", "openai:a", *calibrate_args(srv.url, out))
        first = invoke(tmp_path, *cal, "--max-steps", "3")
        assert first.exit_code == EXIT_OK, first.output
        sent = len(srv.requests)
        steps = invoke(tmp_path, *cal, "--max-steps", "5")
        style = invoke(tmp_path, *cal, "--max-steps", "3", "--style", "prompt", "--max-tokens", "9")
        panel = invoke(
            tmp_path, "calibrate", "panel", "-m", "openai:a", "-m", "openai:b",
            *calibrate_args(srv.url, out), "--max-steps", "5",
        )  # fmt: skip
        assert len(srv.requests) == sent  # nothing ran under the other settings
        same = invoke(tmp_path, *cal, "--max-steps", "3")
        assert len(srv.requests) == sent
    for res in (steps, style, panel):
        assert res.exit_code == EXIT_USAGE, res.output
        assert "error: run directory" in res.output and "already holds model 'openai:a'" in (
            " ".join(res.output.split())
        )
    assert "different max_steps (max_steps=3)" in " ".join(steps.output.split())
    assert "different style, decoding" in " ".join(style.output.split())
    assert "different max_steps" in " ".join(panel.output.split())
    assert same.exit_code == EXIT_OK and "0 ran, 1 already done" in " ".join(same.output.split())


@needs_bfcl
def test_an_old_calibrate_directory_without_settings_is_accepted_then_kept(
    tmp_path: Path,
) -> None:
    out = tmp_path / "cal"
    with FakeServer() as srv:
        cal = ("calibrate", "run", "-m", "openai:a", *calibrate_args(srv.url, out))
        assert invoke(tmp_path, *cal, "--max-steps", "3").exit_code == EXIT_OK
        store = RunStore(out)  # as a directory written before the settings were stored
        try:
            store._db.execute("DELETE FROM meta WHERE key LIKE 'calibrate_config:%'")
        finally:
            store.close()
        old = invoke(tmp_path, *cal, "--max-steps", "4")
        again = invoke(tmp_path, *cal, "--max-steps", "3")
    assert old.exit_code == EXIT_OK, old.output
    assert "0 ran, 1 already done" in " ".join(old.output.split())
    assert again.exit_code == EXIT_USAGE and "(max_steps=4)" in " ".join(again.output.split())


# ------------------------------------------------------------------ an edited cases file


def test_run_refuses_a_cases_file_whose_case_changed(tmp_path: Path) -> None:
    replay = write_jsonl(
        tmp_path / "r.jsonl",
        [{"case_id": cid, "outputs": [GOOD]} for cid in ("a", "b", "c")],
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", [case_row("a"), case_row("b")])
    run = ("run", str(cases), "-m", f"replay:{replay}", "--modes", "direct", "--quiet")
    out = ("-o", str(tmp_path / "run"))
    assert invoke(tmp_path, *run, *out).exit_code == EXIT_OK
    write_jsonl(cases, [case_row("a"), case_row("b", "Rome")])  # b's query and gold edited
    edited = invoke(tmp_path, *run, *out)
    assert edited.exit_code == EXIT_USAGE, edited.output
    text = " ".join(edited.output.split())
    assert "holds case 'b' with another query, gold" in text and "Traceback" not in text
    # adding a case (a new id) still resumes: only the new one runs
    write_jsonl(cases, [case_row("a"), case_row("b"), case_row("c")])
    more = invoke(tmp_path, *run, *out)
    assert more.exit_code == EXIT_OK, more.output
    assert "1 ran, 2 already done" in " ".join(more.output.split())


# ------------------------------------------------------------------ -o naming a file


@pytest.mark.parametrize("command", ["run", "experiment", "calibrate"])
def test_out_naming_a_file_is_one_line(tmp_path: Path, command: str) -> None:
    if command == "calibrate" and not HAS_BFCL:
        pytest.skip("calibrate needs bfcl-eval's cases")
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    cases = write_jsonl(tmp_path / "cases.jsonl", [case_row("a")])
    replay = write_jsonl(tmp_path / "r.jsonl", [{"case_id": "a", "outputs": [GOOD]}])
    if command == "run":
        args: tuple[str, ...] = ("run", str(cases), "-m", f"replay:{replay}", "-o", str(afile))
    elif command == "experiment":
        toml = tmp_path / "exp.toml"
        toml.write_text(
            f'output = "{afile}"\nmodels = ["replay:{replay}"]\n[benchmark]\ncases = "{cases}"\n'
        )
        args = ("experiment", str(toml), "--quiet")
    else:
        args = ("calibrate", "run", "-m", f"replay:{replay}", "--n", "1", "-o", str(afile))
    res = invoke(tmp_path, *args)
    assert res.exit_code == EXIT_USAGE, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith(f"error: {afile}: exists and is not a folder;"), lines[0]
    assert afile.read_text() == "not a folder\n"
