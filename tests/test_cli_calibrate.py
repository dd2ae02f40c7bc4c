"""`callscope calibrate` as subcommands (issue 27 item 4): each subcommand's help lists only
its own options; the single command's old spellings still run (as their subcommand, with a
one-line note on stderr) and write the very files the new spellings write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.cli.calibrate_legacy import legacy_args

#: every subcommand's options (besides --help), as its --help lists them
CONNECTION = {"--base-url", "--api-key", "--timeout", "--cache", "--no-cache"}
MODEL_RUN = {
    "--model",
    "--out",
    "--categories",
    "--benchmark",
    "--n",
    "--probe",
    "--style",
    "--max-steps",
    "--max-tokens",
    "--classifier",
    "--preset",
    "--concurrency",
    "--quiet",
    "--grounding",
    *CONNECTION,
}
OPTIONS = {
    "run": MODEL_RUN,
    "panel": MODEL_RUN,
    "experiment": {"--quiet"},
    "from-bfcl": {"--out", "--scores", "--bfcl-model", "--classifier", "--preset"},
    "from-tau2": {
        "--out",
        "--tasks",
        "--judge",
        "--write-tools",
        "--read-tools",
        "--ask-tasks",
        "--allow-task-mismatch",
        "--pooled",
        "--classifier",
        "--preset",
        *CONNECTION,
    },
    "export": {"--probe"},
}
NOTE = re.compile(r"^note: `callscope calibrate .*` is now `callscope calibrate (\S+) .*`; ", re.M)


def invoke(*args: str):
    return CliRunner().invoke(app, ["calibrate", *args], env={"COLUMNS": "200"})


@pytest.mark.parametrize("sub", sorted(OPTIONS))
def test_each_subcommand_help_lists_only_its_options(sub: str) -> None:
    res = invoke(sub, "--help")
    assert res.exit_code == 0, res.output
    listed = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", res.output)) - {"--help"}
    assert listed == OPTIONS[sub]
    assert "note:" not in res.output


def test_group_help_lists_the_subcommands() -> None:
    res = invoke("--help")
    assert res.exit_code == 0
    for sub in OPTIONS:
        assert sub in res.output
    assert "--from-bfcl" not in res.output and "note:" not in res.output


def _accepted() -> dict[str, frozenset[str]]:
    return {sub: frozenset(opts | {"-o", "-m"}) for sub, opts in OPTIONS.items()}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["-m", "a", "--n", "1"], ["run", "-m", "a", "--n", "1"]),
        ([], ["run"]),
        (["-m", "a", "--model=b", "--quiet"], ["panel", "-m", "a", "--model", "b", "--quiet"]),
        (["--experiment", "e.toml", "--quiet"], ["experiment", "e.toml", "--quiet"]),
        (
            ["--from-bfcl", "r", "--scores", "s", "-o", "o", "--quiet", "--probe", "sri"],
            ["from-bfcl", "r", "--scores", "s", "-o", "o"],
        ),
        (
            ["--from-tau2=t.json", "--pooled", "-o", "o", "--judge", "openai:j"],
            ["from-tau2", "t.json", "--pooled", "-o", "o", "--judge", "openai:j"],
        ),
        (["-o", "run", "--export-bfcl", "dest"], ["export", "run", "dest"]),
        (
            ["--export-bfcl", "dest", "--probe", "sri"],
            ["export", "runs/calibrate", "dest", "--probe", "sri"],
        ),
        # the single command tried --export-bfcl first, then --from-tau2, --from-bfcl, --experiment
        (["--from-bfcl", "r", "--export-bfcl", "d", "-o", "x"], ["export", "x", "d"]),
    ],
)
def test_legacy_args_choose_the_job_as_the_single_command_did(old, new) -> None:
    args, note = legacy_args(old, _accepted())
    assert args == new
    assert NOTE.match(note) and NOTE.match(note).group(1) == new[0]
    assert "\n" not in note


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the store excepted: SQLite pages are not compared)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith("store.sqlite")
    }


def _bfcl_tree(root: Path) -> Path:
    tree = root / "result" / "my-model" / "multi_turn"
    tree.mkdir(parents=True)
    rows = [
        {"id": "multi_turn_miss_param_0", "result": [["[cd(folder='x')]"], ["Which one?"]]},
        {"id": "multi_turn_miss_param_1", "result": [["I did it."]]},
    ]
    (tree / "BFCL_v4_multi_turn_miss_param_result.json").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    return root / "result"


def _same_run(old: list[str], new: list[str], tmp_path: Path, sub: str) -> None:
    """``old`` (writing to ``tmp_path/old``) and ``new`` (``tmp_path/new``) exit alike, print
    alike (but for the note, the old spelling's last line) and write identical files (the
    output folder's name aside)."""
    a_dir, b_dir = str(tmp_path / "old"), str(tmp_path / "new")
    a = invoke(*old, "-o", a_dir)
    b = invoke(*new, "-o", b_dir)
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    *body, note = a.output.rstrip("\n").split("\n")
    assert NOTE.match(note) and NOTE.match(note).group(1) == sub
    assert "\n".join(body).replace(a_dir, b_dir) == b.output.rstrip("\n")
    assert "note:" not in b.output
    old_files, new_files = _files(tmp_path / "old"), _files(tmp_path / "new")
    assert old_files and old_files.keys() == new_files.keys()
    for name, data in old_files.items():
        assert data.replace(a_dir.encode(), b_dir.encode()) == new_files[name], name


def test_from_bfcl_old_and_new_spellings_write_the_same_files(tmp_path: Path) -> None:
    tree = _bfcl_tree(tmp_path / "in")
    _same_run(
        ["--from-bfcl", str(tree), "--classifier", "paper"],
        ["from-bfcl", str(tree), "--classifier", "paper"],
        tmp_path,
        "from-bfcl",
    )


def test_from_tau2_old_and_new_spellings_write_the_same_files(tmp_path: Path) -> None:
    from test_tau2 import write_airline

    run = write_airline(tmp_path / "airline.json")
    _same_run(["--from-tau2", str(run)], ["from-tau2", str(run)], tmp_path, "from-tau2")


def test_a_bad_option_of_an_old_spelling_is_still_a_usage_error(tmp_path: Path) -> None:
    res = invoke("--from-bfcl", str(tmp_path), "--no-such-option", "x")
    assert res.exit_code == 2
    assert NOTE.search(res.output)


def test_model_run_and_export_old_and_new_spellings_write_the_same_files(tmp_path: Path) -> None:
    """``calibrate -m X`` and ``calibrate run -m X`` on one BFCL case over a fake OpenAI
    server (the gold calls, then "Done." per turn), then ``-o RUN --export-bfcl DEST`` and
    ``export RUN DEST``."""
    pytest.importorskip("bfcl_eval")
    from fakeserver import FakeServer
    from test_multiturn_native_http import _script

    from callscope.runs.calibrate import select_cases

    (case,) = select_cases(["base"], 1)
    args = ["--style", "native", "--categories", "base", "--n", "1", "--quiet", "--no-cache"]
    runs = {}
    for name, head in (("old", []), ("new", ["run"])):
        with FakeServer() as srv:
            srv.push(*_script(case))
            res = invoke(
                *head, "-m", "openai:served", "--base-url", srv.url + "/v1", *args,
                "-o", str(tmp_path / name),
            )  # fmt: skip
        assert res.exit_code == 0, res.output
        runs[name] = res.output
        assert bool(NOTE.search(res.output)) == (name == "old")
    old = json.loads((tmp_path / "old" / "calibration-baseline.json").read_text())
    new = json.loads((tmp_path / "new" / "calibration-baseline.json").read_text())
    assert old == new
    for name in ("calibration-baseline.md", "calibration-baseline.json"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()
    a = invoke("-o", str(tmp_path / "old"), "--export-bfcl", str(tmp_path / "bfcl-old"))
    b = invoke("export", str(tmp_path / "old"), str(tmp_path / "bfcl-new"))
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert NOTE.search(a.output).group(1) == "export" and "note:" not in b.output
    assert _files(tmp_path / "bfcl-old") == _files(tmp_path / "bfcl-new")
