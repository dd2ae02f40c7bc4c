"""τ²-bench results written by other harnesses (issue 29, item 15): a real τ² results file
(../shared/external/tau2, skipped when absent) reshaped as other harnesses write it (a
top-level ``"domain"`` and no ``info``/``tasks``; a bare JSON list of simulations) reads to
the same figures as the original, through ``callscope calibrate from-tau2`` with ``--tasks``
and through the library. A list of tasks is still refused as a tasks file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from callscope.benchmarks.tau2.reader import Tau2FormatError, read_tau2_run
from callscope.runs.from_results import tau2_diagnostics

EXTERNAL = Path(__file__).resolve().parents[2] / "shared" / "external" / "tau2"
NAME = "blakeelias_grok3_telecom.json"
pytestmark = pytest.mark.skipif(not (EXTERNAL / NAME).is_file(), reason="no external τ² file")


def _rows(result) -> dict[str, tuple[int, int, int]]:
    return {
        r["gold_class"]: (r["n"], r["gar_case_k"], r["acc_k"])
        for r in result.rows
        if r["gold_class"] in ("TOOL_CALL", "REFUSE") and r.get("path") is None
    }


def _reshaped(tmp_path: Path, shape: str) -> tuple[Path, Path]:
    data = json.loads((EXTERNAL / NAME).read_text(encoding="utf-8"))
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps(data["tasks"]), encoding="utf-8")
    body = data["simulations"] if shape == "list" else {"domain": "telecom", **data}
    if shape == "domain":
        del body["info"], body["tasks"]
    path = tmp_path / f"other_harness_{shape}.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path, tasks


@pytest.mark.parametrize("shape", ["domain", "list"])
def test_other_harness_shapes_read_as_the_original(tmp_path: Path, shape: str) -> None:
    path, tasks = _reshaped(tmp_path, shape)
    original = tau2_diagnostics(EXTERNAL / NAME)
    again = tau2_diagnostics(path, tasks)
    # the original's pinned figures (tests/test_tau2_external.py): GAR 3/3, Acc 2/3; 4/5 runs
    assert _rows(again) == _rows(original) == {"TOOL_CALL": (3, 3, 2)}
    assert (again.acc_rows[0]["acc_k"], again.acc_rows[0]["acc_n"]) == (4, 5)
    run = read_tau2_run(path)
    assert len(run.simulations) == 5
    # the domain: the top-level key, or (a bare list names none) the stock domain of its calls
    assert run.domain == "telecom"

    done = subprocess.run(
        [sys.executable, "-m", "callscope.cli", "calibrate", "from-tau2", str(path),
         "--tasks", str(tasks), "-o", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "telecom" in done.stdout
    assert (tmp_path / "out" / "report.html").is_file()


def test_a_list_of_tasks_is_still_refused_as_a_tasks_file(tmp_path: Path) -> None:
    _, tasks = _reshaped(tmp_path, "list")
    with pytest.raises(Tau2FormatError, match="a tasks file"):
        read_tau2_run(tasks)
