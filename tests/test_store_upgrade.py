"""A run directory written by the code before issue 48 is read by this code with the same
report tables, byte for byte: ``tests/fixtures/store_main`` is the replayed run of
``conftest.build_run`` (lexical stage 3; the paper's modes and the gated one; the payload
case) as that code wrote it, with the tables its ``callscope report`` wrote
(``expected_tables``; how it was made: ``tests/fixtures/make_store_main.py``). Here
``callscope report`` (a subprocess, this tree's code) reads a copy of that store and must
write every table file the same."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store_main"


def test_an_older_run_directory_reports_the_same_tables(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(FIXTURE / "run", run_dir)
    res = subprocess.run(
        ["callscope", "report", str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr
    expected = sorted(p.name for p in (FIXTURE / "expected_tables").iterdir())
    written = sorted(p.name for p in (run_dir / "tables").iterdir())
    assert written == expected
    differ = [
        name
        for name in expected
        if (run_dir / "tables" / name).read_bytes()
        != (FIXTURE / "expected_tables" / name).read_bytes()
    ]
    assert differ == []
    # the page still shows the stored stage-3 kinds of the older store (the numeric value of
    # q3: "two people" answered with people=2 is stated in words, lexical finds it unstated)
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert '"numeric"' in page
