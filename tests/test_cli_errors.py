"""The command line as a newcomer meets it (issue 20 items 1-4, issue 15 items 7 and 11):
one exit-code scheme (0 success, 1 some rows / cases failed, 2 usage or input error), one line
per user error (a traceback only with ``--debug`` / ``CALLSCOPE_DEBUG=1``), unknown experiment
keys named with the nearest valid one, user text shown literally through rich markup, and
``calibrate`` against an unreachable server stopping / reporting the errored cases apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from callscope.runs.experiment import EXPERIMENT_KEYS, Experiment, unknown_key_message

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external"

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
GOOD_OUTPUT = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def case_row(cid: str) -> dict:
    return {
        "id": cid,
        "query": "What is the weather in Paris?",
        "functions": [WEATHER],
        "gold": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


# --------------------------------------------------------------- item 1: missing inputs


@pytest.mark.parametrize(
    "args",
    [
        ("run", "{missing}"),
        ("score", "{missing}"),
        ("classify", "{missing}"),
        ("experiment", "{missing}"),
        ("report", "{missing}"),
        ("compare", "{missing}", "{missing}"),
        ("bench", "build", "--source", "glaive:{missing}", "-o", "{tmp}/x.jsonl"),
    ],
    ids=lambda a: a[0] if a[0] != "bench" else "bench-build",
)
def test_missing_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "nope.jsonl"
    argv = [a.format(missing=missing, tmp=tmp_path) for a in args]
    res = invoke(*argv)
    assert res.exit_code == EXIT_USAGE, res.output
    assert (
        "Traceback" not in res.output
        and res.exception is None
        or isinstance(res.exception, SystemExit)
    )
    lines = error_lines(res.output)
    assert len(lines) == 1 and "nope.jsonl" in lines[0], res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


def test_debug_flag_and_env_show_the_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    res = invoke("--debug", "score", str(missing))
    assert isinstance(res.exception, FileNotFoundError) and res.exit_code == 1
    res = invoke("score", str(missing), env={"CALLSCOPE_DEBUG": "1"})
    assert isinstance(res.exception, FileNotFoundError)
    # the flag holds for one invocation only
    res = invoke("score", str(missing))
    assert res.exit_code == EXIT_USAGE and res.exception is not None
    assert isinstance(res.exception, SystemExit)


def test_bad_option_value_is_exit_2(tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "c.jsonl", [case_row("a")])
    replay = write_jsonl(tmp_path / "r.jsonl", [{"case_id": "a", "outputs": [GOOD_OUTPUT]}])
    res = invoke(
        "run", str(cases), "-m", f"replay:{replay}", "-o", str(tmp_path / "o"), "--modes", "dirct"
    )
    assert res.exit_code == EXIT_USAGE and "unknown mode 'dirct'" in res.output
    res = invoke("run", str(cases), "--no-such-option")
    assert res.exit_code == EXIT_USAGE


def test_empty_inputs_are_exit_2(tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "e.jsonl", [])
    for command in ("score", "run", "classify"):
        res = invoke(command, str(empty), "-o", str(tmp_path / f"{command}.out"))
        assert res.exit_code == EXIT_USAGE, (command, res.output)
        assert "holds no" in res.output


# ------------------------------------------------- issue 15 item 11: run's exit codes


def test_run_exit_codes_clean_malformed_and_markup(tmp_path: Path) -> None:
    replay = write_jsonl(
        tmp_path / "r.jsonl",
        [{"case_id": "a", "outputs": [GOOD_OUTPUT]}, {"case_id": "[/red]", "outputs": ["x"]}],
    )
    good = write_jsonl(tmp_path / "good.jsonl", [case_row("a")])
    out = tmp_path / "run"
    argv = ["-m", f"replay:{replay}", "--modes", "direct", "--quiet"]
    res = invoke("run", str(good), "-o", str(out), *argv)
    assert res.exit_code == EXIT_OK, res.output
    # a duplicate id that is markup: the second row is skipped, its id shown literally
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [case_row("[/red]"), case_row("[/red]")])
    res = invoke("run", str(mixed), "-o", str(tmp_path / "run2"), *argv)
    assert res.exit_code == EXIT_FAILED, res.output
    text = " ".join(res.output.split())
    assert "row 2: duplicate id '[/red]'" in text and "1 malformed case(s) skipped" in text
    # a malformed row (functions not a list) is skipped too
    bad = {**case_row("b"), "functions": "get_weather"}
    res = invoke(
        "run",
        str(write_jsonl(tmp_path / "m2.jsonl", [case_row("a"), bad])),
        "-o",
        str(tmp_path / "run4"),
        *argv,
    )
    assert res.exit_code == EXIT_FAILED and "row 2: 'functions' must be a list" in res.output
    # a valid case with a markup id runs; the replay has no answer for it -> a backend error
    marked = write_jsonl(tmp_path / "marked.jsonl", [case_row("[/red]")])
    replay2 = write_jsonl(tmp_path / "r2.jsonl", [])
    res = invoke(
        "run", str(marked), "-o", str(tmp_path / "run3"), "-m", f"replay:{replay2}", "--quiet"
    )
    assert res.exit_code == EXIT_FAILED, res.output
    assert "replay_missing=3" in res.output


def test_score_markup_id_is_printed_literally(tmp_path: Path) -> None:
    rows = [
        {**case_row("[/red]"), "output": GOOD_OUTPUT},
        {"id": "[/red][bold]", "query": "q", "functions": "nope", "output": "x"},
    ]
    inp = write_jsonl(tmp_path / "in.jsonl", rows)
    res = invoke("score", str(inp), "-o", str(tmp_path / "out.jsonl"))
    assert res.exit_code == EXIT_FAILED, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "row [/red][bold]:" in res.output
    scored = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in scored] == ["[/red]", "[/red][bold]"]
    assert scored[0]["stage"] == 0 and "error" in scored[1]


# ------------------------------------------------------ item 4: experiment file keys


@pytest.mark.parametrize(
    ("toml", "key", "near"),
    [
        ('models = ["replay:x"]\nmodel_typo = 1\n', "model_typo", "models"),
        ('models = ["replay:x"]\n[benchmark]\nsoruce = "bfcl"\n', "soruce", "source"),
        ('models = ["replay:x"]\n[run]\nconcurency = 2\n', "concurency", "concurrency"),
        ('models = ["replay:x"]\n[benchmark]\nscales = [5]\nseeed = 1\n', "seeed", "seed"),
    ],
)
def test_unknown_experiment_key_names_key_and_nearest(
    tmp_path: Path, toml: str, key: str, near: str
) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(toml)
    res = invoke("experiment", str(path))
    assert res.exit_code == EXIT_USAGE, res.output
    (line,) = error_lines(res.output)
    assert f"unknown key {key!r}" in line and f"did you mean {near!r}?" in line
    assert not (tmp_path / "runs").exists()


def test_unknown_key_without_a_near_one_lists_the_valid_keys() -> None:
    msg = unknown_key_message("zzz", "run", EXPERIMENT_KEYS["run"])
    assert "did you mean" not in msg
    assert msg.endswith(
        "valid keys: base_url, cache, concurrency, max_tokens, style, timeout, use_cache"
    )
    with pytest.raises(ValueError, match=r"'run' must be a table"):
        Experiment.from_dict({"models": ["replay:x"], "run": 3})


def test_valid_experiment_file_keeps_loading(tmp_path: Path) -> None:
    exp = Experiment.from_dict(
        {
            "models": ["replay:x"],
            "benchmark": {"source": "bfcl", "scales": [5], "n": 2, "seed": 3},
            "run": {"concurrency": 2, "style": "prompt"},
        },
        base=tmp_path,
    )
    assert (exp.scales, exp.n, exp.seed, exp.concurrency, exp.style) == ([5], 2, 3, 2, "prompt")


def test_bad_toml_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text("models = [")
    res = invoke("experiment", str(path))
    assert res.exit_code == EXIT_USAGE and "not valid TOML" in res.output


# ----------------------------------------------------- bench build: unreadable rows


@pytest.mark.skipif(not (EXTERNAL / "glaive").is_dir(), reason="needs shared/external/glaive")
def test_bench_build_exit_1_on_unreadable_rows(tmp_path: Path) -> None:
    real = (EXTERNAL / "glaive" / "chat_data.jsonl").read_text(encoding="utf-8")
    clean = tmp_path / "g.jsonl"
    clean.write_text(real, encoding="utf-8")
    bad = tmp_path / "gbad.jsonl"
    bad.write_text(real + "{not json\n", encoding="utf-8")
    common = ["--scales", "3", "--n", "2"]
    res = invoke(
        "bench", "build", "--source", f"glaive:{clean}", "-o", str(tmp_path / "a"), *common
    )
    # the README of that folder: 5 rows, rows 2-4 single-call, row 1 two calls, row 0 no call
    assert res.exit_code == EXIT_OK, res.output
    text = " ".join(res.output.split())
    assert "3 usable single-call queries" in text and "malformed_row" not in text
    res = invoke("bench", "build", "--source", f"glaive:{bad}", "-o", str(tmp_path / "b"), *common)
    assert res.exit_code == EXIT_FAILED, res.output
    assert "dropped malformed_row: 1" in res.output


# ------------------------------------------- item 3: --from-bfcl on a missing folder


def test_from_bfcl_missing_folder_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = invoke("calibrate", "--from-bfcl", str(tmp_path / "none"), "-o", str(out))
    assert res.exit_code == EXIT_USAGE, res.output
    assert "does not exist" in res.output and "Traceback" not in res.output
    assert not (out / "report.html").exists()


# ------------------------------------------- item 2: calibrate, unreachable server


def test_calibrate_unreachable_server_reports_errored_cases_apart(tmp_path: Path) -> None:
    pytest.importorskip("bfcl_eval")
    out = tmp_path / "cal"
    res = invoke(
        "calibrate",
        "-m",
        "openai:x",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--categories",
        "base",
        "--n",
        "1",
        "--no-cache",
        "--quiet",
        "-o",
        str(out),
        env={"OPENAI_API_KEY": "test"},
    )
    assert res.exit_code == EXIT_FAILED, res.output
    text = " ".join(res.output.split())
    assert "1 case ended in a backend error (connection: 1) and is left out" in text
    assert "GAR and Acc cover the other 0" in text and "cannot reach" in text
    data = json.loads((out / "calibration-baseline.json").read_text())
    assert data["errored"] == {"connection": 1} and data["rows"] == []


def test_calibration_stops_on_unreachable_and_leaves_errors_out(tmp_path: Path) -> None:
    """Library level, worked by hand: 6 base cases that all fail to connect stop after
    MAX_CONSECUTIVE_CONNECTION_ERRORS (5); 4 cases of which 2 end in a 5xx are diagnosed over
    the other 2 (n = 2), and a resumed run re-runs exactly the 2 errored ones."""
    pytest.importorskip("bfcl_eval")
    from scripted import Scripted

    from callscope.errors import ModelError
    from callscope.runs.calibrate import run_calibration_cases, select_cases
    from callscope.runs.calibration_store import diagnose_store
    from callscope.runs.runner import MAX_CONSECUTIVE_CONNECTION_ERRORS
    from callscope.store.run_store import RunStore

    assert MAX_CONSECUTIVE_CONNECTION_ERRORS == 5
    cases = select_cases(["base"], 6)
    down = Scripted({c.id: [ModelError("cannot reach x", kind="connection")] for c in cases})
    store = RunStore(tmp_path / "a")
    try:
        done = run_calibration_cases(down, store, cases, show_progress=False)
        assert (done.ran, done.skipped, done.aborted) == (5, 0, "cannot reach x")
        assert done.errored == {"connection": 5}
        result = diagnose_store(store, down.spec, cases=cases)
        assert result.n_errored == 5 and result.diagnostics.rows == []
    finally:
        store.close()

    four = cases[:4]
    bad = {four[0].id, four[2].id}
    script = {
        c.id: [ModelError("HTTP 503", kind="http_5xx")] if c.id in bad else ["I cannot help."]
        for c in four
    }
    store = RunStore(tmp_path / "b")
    try:
        done = run_calibration_cases(
            Scripted(script, repeat_last=True), store, four, show_progress=False
        )
        assert (done.ran, done.aborted, done.errored) == (4, None, {"http_5xx": 2})
        result = diagnose_store(store, "scripted:test", cases=four)
        assert result.errored == {"http_5xx": 2} and result.error_message == "HTTP 503"
        (row,) = result.diagnostics.rows
        assert row["n"] == 2 and row["acc"] == 0.0
        assert result.errored_note() == (
            "2 cases ended in a backend error (http_5xx: 2) and are left out: "
            "GAR and Acc cover the other 2."
        )
        again = run_calibration_cases(
            Scripted({c.id: ["I cannot help."] for c in four}, repeat_last=True),
            store,
            four,
            show_progress=False,
        )
        assert (again.ran, again.skipped, again.errored) == (2, 2, {})
        (row,) = diagnose_store(store, "scripted:test", cases=four).diagnostics.rows
        assert row["n"] == 4
    finally:
        store.close()


def test_a_conversation_past_the_context_window_counts_as_the_models(tmp_path: Path) -> None:
    """A context-window overflow is the model's doing (its conversation grew too long), not
    the backend's: the case stays in GAR and Acc (no gold emission, the grader's verdict on
    the state reached) and a resumed run does not re-run it. Worked by hand: 2 base cases,
    one answered "I cannot help." (no TOOL_CALL), one ending on the overflow at its first
    step: n = 2, GAR 0, no case left out; a connection error in its place would be left out."""
    pytest.importorskip("bfcl_eval")
    from scripted import Scripted

    from callscope.errors import ModelError
    from callscope.runs.calibrate import run_calibration_cases, select_cases
    from callscope.runs.calibration_store import diagnose_store
    from callscope.store.run_store import RunStore

    two = select_cases(["base"], 2)
    for kind, n_rows, left_out in (("context_length", 2, {}), ("connection", 1, {"connection": 1})):
        script = {
            two[0].id: ["I cannot help."],
            two[1].id: [ModelError("Requested tokens exceed context window", kind=kind)],
        }
        store = RunStore(tmp_path / kind)
        try:
            done = run_calibration_cases(
                Scripted(script, repeat_last=True), store, two, show_progress=False
            )
            assert done.errored == left_out
            result = diagnose_store(store, "scripted:test", cases=two)
            assert result.errored == left_out
            (row,) = result.diagnostics.rows
            assert (row["n"], row["gar_case"]) == (n_rows, 0.0)
            again = run_calibration_cases(
                Scripted(script, repeat_last=True), store, two, show_progress=False
            )
            assert again.skipped == 2 - len(left_out)
        finally:
            store.close()
