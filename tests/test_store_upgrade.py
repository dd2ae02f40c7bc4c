"""A run directory written by older code is read by this code with the same report tables,
byte for byte. ``store_main`` was written by the code before issue 48: ``tests/fixtures/store_main`` is the replayed run of
``conftest.build_run`` (lexical stage 3; the paper's modes and the gated one; the payload
case) as that code wrote it, with the tables its ``callscope report`` wrote
(``expected_tables``; how it was made: ``tests/fixtures/make_store_main.py``). Here
``callscope report`` (a subprocess, this tree's code) reads a copy of that store and must
write every table file the same. ``store_v2`` is the gated mode's run as the first round of
issue 48 wrote it (verdict version 2 beside each attempt's score row and diagnosis dict)."""

from __future__ import annotations

import shutil
import subprocess
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
