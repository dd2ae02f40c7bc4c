"""Help and summaries a new user reads (issue 32): descriptions read as sentences at 80
columns and at full width (the docstrings' hard line breaks are joined once, in
``cli/main.py``), no help text is cut with "…", the ``score`` summary title stays on one
line, and a malformed ``score`` line is reported once as ``line n: ...``."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callscope.cli.main import COMMANDS, build_app, help_text, short_help

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GROUPS = ("bench", "calibrate")


def _help(*args: str, columns: int) -> str:
    res = CliRunner().invoke(build_app(), [*args, "--help"], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    return res.output


def _rows(output: str) -> list[str]:
    """The text inside the help's panels, one string per line, borders stripped."""
    return [ln.strip("│ ").rstrip() for ln in output.splitlines()]


def test_the_command_list_shows_each_first_sentence_whole_at_full_width() -> None:
    text = _help(columns=320)
    rows = _rows(text)
    for name in COMMANDS:
        row = next(r for r in rows if r.split(" ", 1)[0] == name)
        described = " ".join(row.split()[1:])
        assert described.endswith("."), (name, row)  # a whole sentence on one line
        assert len(described) > 20


def test_the_demo_description_does_not_break_mid_sentence_at_80_columns() -> None:
    # before: "... six BFCL cases │ chosen to show the │ cascade's ..." (the docstring's own
    # line break kept, so a line ended after "the" with the panel half empty)
    rows = _rows(_help(columns=80))
    start = next(i for i, r in enumerate(rows) if r.startswith("demo "))
    lines = [rows[start].removeprefix("demo").strip()]
    for r in rows[start + 1 :]:
        if r and not r.startswith(" " * 10) and r.split(" ", 1)[0] in COMMANDS:
            break
        lines.append(r.strip())
    # every line but the last is filled: at least 60 of the ~64 characters the column has
    assert all(len(ln) >= 55 for ln in lines[:-1]), lines
    assert " ".join(lines).startswith("The quick start's main job: the embedded model on six BFCL")


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("name", [*COMMANDS])
def test_no_help_text_is_cut(name: str, columns: int) -> None:
    text = _help(name, columns=columns)
    assert "…" not in text, text
    if name in GROUPS:
        return
    doc = help_text(inspect.getdoc(_target(name)))
    # the first paragraph, joined: all of its words are in the page, in order
    words = " ".join(" ".join(_rows(text)).split())
    first = " ".join(doc.split("\n\n")[0].split())
    assert first in words or columns == 80, (first, words)


def test_serve_shows_its_default_model_whole_at_80_columns() -> None:
    text = _help("serve", columns=80)
    assert "local:qwen2.5-coder-0.5b" in text and "0.5…" not in text


def _target(name: str):
    import importlib

    module, attr = COMMANDS[name]
    return getattr(importlib.import_module(module), attr)


def test_help_text_joins_lines_and_keeps_lists() -> None:
    doc = """Run it over
    the cases.

    Exit codes:
    - 0 when it
    passed
    - 1 failed"""
    assert help_text(doc) == "Run it over the cases.\n\nExit codes:\n- 0 when it passed\n- 1 failed"
    assert short_help(doc) == "Run it over the cases."


def test_score_summary_title_and_malformed_line(tmp_path: Path) -> None:
    good = (EXAMPLES / "score_example.jsonl").read_text(encoding="utf-8").splitlines()[0]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(f"{good}\nnot json\n{good}\n", encoding="utf-8")
    res = CliRunner().invoke(build_app(), ["score", str(rows)], env={"COLUMNS": "80"})
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert "callscope score: 3 rows, 1 malformed" in [ln.strip() for ln in lines]
    assert "metric means (over rows where each is defined)" in [ln.strip() for ln in lines]
    # the bad line is reported once, by its line number, without a doubled prefix
    assert "line 2: Expecting value: line 1 column 1 (char 0)" in res.output
    assert "row 2: line 2" not in res.output
    error_rows = [json.loads(ln) for ln in lines if ln.startswith('{"id": 2,')]
    assert error_rows and error_rows[0]["error"].startswith("line 2: ")


def test_every_guard_header_value_is_in_the_docs() -> None:
    """Issue 32: each value ``callscope serve`` can put in ``X-Callscope-Guard`` (read from
    the proxy's source: every ``_with_header`` call and the repair decision) has a row in
    the table of docs/guard.md (the README's until issue 45)."""
    import re

    import callscope.guard.proxy.decide as decide

    src = inspect.getsource(decide)
    values = set(re.findall(r'with_header\([^,()]+, "(\w+)"', src))
    decision = re.search(r'decision = "(\w+)" if [^\n]+ else "(\w+)"', src)
    assert decision, "the repair decision line moved: update this test"
    values |= set(decision.groups())
    assert values >= {"passed", "repaired", "unrepaired", "unchecked", "error"}, values
    page = (EXAMPLES.parent / "docs" / "guard.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \| ", page, re.M))
    assert values <= rows, values - rows
