"""A run directory written by older code is read by this code with the same report tables,
byte for byte: ``tests/fixtures/store_main`` is the replayed run of ``conftest.build_run``
(lexical stage 3; the paper's modes and the gated one; the payload case) as the code before
issue 48 wrote it, ``store_v2`` its gated mode as the first round of issue 48 wrote it
(verdict version 2 beside each attempt's score row and the outcome's rows), each with the
tables its ``callscope report`` wrote (``expected_tables``; how they were made:
``tests/fixtures/make_store_main.py``). Here ``callscope report`` (a subprocess, this tree's
code) reads a copy of each store and must write every table file the same; and the same run
written afresh by this code (the verdict stored once, no row) reports and exports the same."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("name", ["store_main", "store_v2"])
def test_an_older_run_directory_reports_the_same_tables(tmp_path: Path, name: str) -> None:
    fixture = FIXTURES / name
    run_dir = tmp_path / "run"
    shutil.copytree(fixture / "run", run_dir)
    res = subprocess.run(
        ["callscope", "report", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    expected = sorted(p.name for p in (fixture / "expected_tables").iterdir())
    written = sorted(p.name for p in (run_dir / "tables").iterdir())
    assert written == expected
    differ = [
        name
        for name in expected
        if (run_dir / "tables" / name).read_bytes()
        != (fixture / "expected_tables" / name).read_bytes()
    ]
    assert differ == []
    # the page still shows the stored stage-3 kinds of the older store (the numeric value of
    # q3: "two people" answered with people=2 is stated in words, lexical finds it unstated)
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert '"numeric"' in page


def _model_free(text: str) -> str:
    """A text with the replay file's path (a temporary folder: the model's name) left out."""
    return re.sub(r"[^\s\"|,&:]*replay\\?_outputs\.jsonl", "REPLAY", text)


@pytest.mark.parametrize(
    ("name", "modes"),
    [("store_main", ("direct", "binary", "structured", "gated")), ("store_v2", ("gated",))],
)
def test_a_store_of_verdicts_alone_reports_what_the_older_code_reported(
    tmp_path: Path, replayed_run: Callable[..., Path], name: str, modes: tuple[str, ...]
) -> None:
    """The same run written by this code keeps each attempt's verdict once (version 3: no
    score row beside it, no ``first`` row, the outcome's ``final`` only its own keys) and
    its report and export, computed from those verdicts when read, are what the older code
    reported and exported from its rows (the model's name aside: a temporary folder)."""
    run_dir = replayed_run(tmp_path, payload=True, grounding="lexical", modes=modes)
    db = sqlite3.connect(run_dir / "store.sqlite")
    attempts = [json.loads(d) for (d,) in db.execute("SELECT data FROM attempts")]
    outcomes = db.execute("SELECT final, first FROM outcomes").fetchall()
    db.close()
    scored = [a for a in attempts if a["diagnosis"] is not None]
    assert scored and all("row" not in a for a in scored)
    assert {a["diagnosis"]["version"] for a in scored} == {3}
    assert all(json.loads(first) is None for _, first in outcomes)
    assert all("stage" not in json.loads(final) for final, _ in outcomes)
    res = subprocess.run(
        ["callscope", "report", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    fixture = FIXTURES / name
    for table in sorted((fixture / "expected_tables").iterdir()):
        got = (run_dir / "tables" / table.name).read_text(encoding="utf-8")
        assert _model_free(got) == _model_free(table.read_text(encoding="utf-8")), table.name
    exported = (run_dir / "final.jsonl").read_text(encoding="utf-8")
    assert _model_free(exported) == _model_free(
        (fixture / "run" / "final.jsonl").read_text(encoding="utf-8")
    )
