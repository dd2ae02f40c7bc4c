"""`bench build`, the BFCL agreement of callscope's extrinsic scoring, and experiments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.runs.experiment import Experiment, run_experiment
from callscope.saag.extrinsic import is_correct
from callscope.types import ToolCall

bfcl = pytest.importorskip("bfcl_eval")


def test_bench_build_bfcl_is_deterministic_and_nested(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (a, b):
        res = CliRunner().invoke(
            app, ["bench", "build", "--source", "bfcl", "--n", "12", "--seed", "3", "-o", str(out)]
        )
        assert res.exit_code == 0, res.output
    assert a.read_bytes() == b.read_bytes()
    rows = [json.loads(line) for line in a.read_text().splitlines()]
    assert len(rows) == 36
    by_src: dict[str, dict[int, list[str]]] = {}
    for r in rows:
        names = [f["name"] for f in r["functions"]]
        assert len(names) == r["scale"] == len(set(names))
        assert names.count(r["gold"]["name"]) == 1
        by_src.setdefault(r["meta"]["source_id"], {})[r["scale"]] = names
    for scales in by_src.values():
        five, ten, fifteen = scales[5], scales[10], scales[15]
        assert set(five) < set(ten) < set(fifteen)
    other = tmp_path / "c.jsonl"
    CliRunner().invoke(app, ["bench", "build", "--n", "12", "--seed", "4", "-o", str(other)])
    assert other.read_bytes() != a.read_bytes()


def test_bench_build_reports_a_missing_glaive_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        [
            "bench",
            "build",
            "--source",
            f"glaive:{tmp_path / 'none.json'}",
            "-o",
            str(tmp_path / "x"),
        ],
    )
    assert res.exit_code == 2
    assert "no Glaive file" in res.output


def test_extrinsic_agrees_with_bfcl_ast_checker_on_every_call() -> None:
    """Name-and-argument correctness vs BFCL's own AST checker on all 1,911 gold calls and
    their systematic perturbations (10,511 calls, ~1 s). The one disagreement is BFCL's gold
    for live_multiple_862-181-3, which BFCL's checker itself rejects (the answer names a
    parameter, ``journey_start_time``, that the function's schema does not declare)."""
    from callscope.benchmarks.bfcl.agreement import agreement_report
    from callscope.benchmarks.bfcl.single import load_bfcl_single

    def ours(case, call) -> bool:
        if isinstance(call, dict):
            call = ToolCall(call["name"], call.get("arguments") or {})
        return is_correct(call, case.gold, case.functions)

    report = agreement_report(load_bfcl_single(), ours)
    assert (report["total"], report["agree"], report["disagree"]) == (10_511, 10_510, 1)
    (d,) = report["disagreements"]
    assert (d["id"], d["kind"], d["bfcl_valid"], d["score_valid"]) == (
        "live_multiple_862-181-3",
        "gold",
        False,
        True,
    )
    assert "journey_start_time" in d["bfcl_error"]


def test_experiment_toml_runs_resumes_and_reports(tmp_path: Path) -> None:
    """A replay experiment over a BFCL-built benchmark: resumable, then a report."""
    toml = tmp_path / "exp.toml"
    replay = tmp_path / "replay.jsonl"
    replay.write_text("")  # every request is a recorded miss: outcomes carry the error
    toml.write_text(
        f'output = "out"\nmodels = ["replay:{replay}"]\nmodes = ["direct", "structured"]\n'
        'max_attempts = 3\n[benchmark]\nsource = "bfcl"\nscales = [5, 10]\nn = 3\nseed = 1\n'
    )
    exp = Experiment.load(toml)
    assert exp.output == tmp_path / "out" and exp.scales == [5, 10] and exp.n == 3
    first = run_experiment(exp, show_progress=False)
    assert first[0].ran == 12 and first[0].errors["replay_missing"] == 12
    cases = [json.loads(x) for x in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    assert len(cases) == 6
    # errored outcomes are retried on resume; the benchmark file is reused, not rebuilt
    again = run_experiment(Experiment.load(toml), show_progress=False)
    assert again[0].ran == 12
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "report.html").exists()


def test_experiment_rejects_unknown_keys(tmp_path: Path) -> None:
    toml = tmp_path / "bad.toml"
    toml.write_text('models = ["replay:x"]\nmodel_typo = 1\n')
    res = CliRunner().invoke(app, ["experiment", str(toml)])
    assert res.exit_code == 2 and "model_typo" in res.output
