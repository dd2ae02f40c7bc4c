"""`callscope demo` (issue 20 item 8): its cases, and the command end to end with a replayed
model standing in for the embedded one (the real model's run is timed by hand; see the
README's quick start).

Replayed answers, per demo case: attempt 1 calls the gold function under a misspelled name
(``x_`` prefixed: not in the registry, stage 1), attempts 2 and 3 the gold call. So every first
attempt fails at stage 1 with a name not in the registry, and structured and gated feedback
both solve every case at attempt 2 whose gold call passes the cascade; direct solves none.
A second replay never solves: attempt 2 is the gold name with a spurious argument (stage 2),
attempt 3 the misspelled name again (stage 1), so structured feedback ends on a lost name and
gated feedback stops at the regression and answers with attempt 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("bfcl_eval")

from callscope.cli import app  # noqa: E402
from callscope.cli.common import EXIT_OK, EXIT_USAGE  # noqa: E402
from callscope.report.findings import correction_that_works, where_calls_fail  # noqa: E402
from callscope.report.flow import call_flow  # noqa: E402
from callscope.report.load import load_outcomes  # noqa: E402
from callscope.runs.demo import DEMO_CASES, DEMO_MODES, demo_cases  # noqa: E402


@pytest.fixture(scope="module")
def cases():
    return demo_cases()


def test_demo_cases(cases) -> None:
    assert len(DEMO_CASES) >= 3
    assert sorted(c.id for c in cases) == sorted(DEMO_CASES)
    assert {c.scale for c in cases} == {5, 15}
    assert all(len(c.functions) == c.scale for c in cases)
    assert all(c.gold for c in cases)


def test_unknown_query_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not in this bfcl-eval's sample"):
        demo_cases(("simple_python_no_such@S5",))


def _replay(tmp_path: Path, cases, never: bool = False) -> Path:
    rows = []
    for c in cases:
        gold = {"name": c.gold["name"], "arguments": c.gold["arguments"]}
        wrong = {"name": "x_" + c.gold["name"], "arguments": c.gold["arguments"]}
        spurious = {"name": c.gold["name"], "arguments": {**c.gold["arguments"], "zz_extra": 1}}
        later = [spurious, wrong] if never else [gold, gold]
        outputs = [json.dumps(wrong), *(json.dumps(x) for x in later)]
        rows.append({"case_id": c.id, "outputs": outputs})
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_demo_command_prints_three_findings(tmp_path: Path, cases) -> None:
    out = tmp_path / "demo"
    replay = _replay(tmp_path, cases)
    args = ["demo", "-o", str(out), "-m", f"replay:{replay}", "--quiet"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "300"})  # no wrapped paths
    assert res.exit_code == EXIT_OK, res.output
    text = " ".join(res.output.split())
    assert (out / "report.html").is_file()
    n = len(cases)
    assert (
        f"1. Where calls fail: 0 of {n} first attempts passed all three stages; the most "
        f"frequent failure is name not in registry ({n} calls, stage 1) [stage 1: {n}]." in text
    )
    assert "2. A correction that works: structured feedback solved" in text
    assert "3. How far to trust the diagnosis: diagnosis audit (registry grounding)" in text
    assert "report.html#overview" in text and "demo finished in" in text
    outcomes = load_outcomes(out)
    assert {o["mode"] for o in outcomes} == set(DEMO_MODES) == {"direct", "structured", "gated"}
    # the findings from the run's own outcomes, checked against the replay's design
    f1 = where_calls_fail(call_flow(outcomes))
    assert f1.text.startswith(f"0 of {n} first attempts")
    f2 = correction_that_works(outcomes)
    solved = [o for o in outcomes if o["mode"] == "structured" and o["solved_at"] == 2]
    assert f2.text.startswith(f"structured feedback solved {len(solved)} case(s)")
    assert "against direct's 0/" in f2.text and "(name not in registry)" in f2.text


def test_without_a_solve_the_demo_says_what_the_corrections_did(tmp_path: Path, cases) -> None:
    out = tmp_path / "demo"
    replay = _replay(tmp_path, cases, never=True)
    args = ["demo", "-o", str(out), "-m", f"replay:{replay}", "--quiet"]
    res = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert res.exit_code == EXIT_OK, res.output
    text = " ".join(res.output.split())
    n = len(cases)
    # structured: the answer is attempt 3 (stage 1): nothing gained, the name of attempt 2
    # lost; gated: attempt 3 ranks below attempt 2, so the answer is attempt 2 (stage 2):
    # stage 1 gained, nothing lost
    assert (
        "2. What the corrections did: no feedback mode solved a case that attempt 1 got wrong "
        f"in this run; of the calls attempt 1 got wrong, structured moved 0 of {n} past a stage "
        f"they had failed and lost something right in {n}; gated moved {n} of {n} past a stage "
        "they had failed and lost something right in 0." in text
    )
    assert "report.html#table-revisions" in text


def test_demo_refuses_a_folder_with_other_cases(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    (out / "cases.jsonl").write_text(json.dumps({"id": "old@S5"}) + "\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["demo", "-o", str(out), "-m", "replay:/nonexistent"])
    assert res.exit_code == EXIT_USAGE
    assert "holds another run's cases" in res.output
