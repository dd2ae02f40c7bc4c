"""The report over answers (issue 28 item 9): `callscope run` with the replay backend on a
hand-written cases file of parallel, no-call and single-call cases, then `callscope report`.

Registry: get_weather(city), get_time(city), book_table(restaurant, people). Replies by
attempt (attempt 1 shared by the modes; binary/structured re-ask after a failing answer):

  p1 parallel           gold w(Paris), w(London)  1: w(Paris), w(Berlin)  2: w(Paris), w(London)
  p2 parallel_multiple  gold w(Rome), t(Tokyo)    1: w(Rome)    (passes the cascade: stops)
  p3 parallel           gold w(Oslo), w(Lima)     1: w(Lima), w(Oslo)    (order-free: solved)
  n1 irrelevance        gold []                   1: prose joke          (clean abstention)
  n2 irrelevance        gold []                   1: w(Paris) ("capital of France": stage 3)
                                                  2: prose               (clean abstention)
  n3 irrelevance        gold []                   1-3: a call cut off    (broken: stage 1)
  s1 simple             gold book_table(Nopa, 4)  1: book_table(Nopa, 4)

Worked by hand, direct (= attempt 1):
  kinds: calls 5 (p1 p2 p3 n2 s1), abstained 1 (n1), broken 1 (n3)
  calls made 2+1+2+1+1 = 7; expected 2+2+2+0+0+0+1 = 7; missing 1 (p2); extra 1 (n2)
  name P per answer 1,1,1,1,0,0,1 -> 5/7; name R 1,.5,1,1,1,1,1 -> 6.5/7
  arg P .5 (p1: Paris right of 2 given),1,1,1,0,0,1 -> 4.5/7; arg R .5, .5 (p2: 1 of 2
  gold args), 1,1,1,1,1 -> 6/7
  solved p3 n1 s1 = 3/7; no-call cases 3: right 1 (n1), BFCL credit 2 (n1, n3: nothing decodes)
binary and structured: p1 and n2 fixed at attempt 2: kinds 4/2/1, calls made 6, extra 0,
  solved 5/7, no-call right 2, BFCL credit 3.
Attempt 1's stage mix: answers passed 4 (p2 p3 n1 s1), stage 1 1 (n3), stage 3 2 (p1 n2);
  calls 7: passed 5, stage 3 2 (Berlin, Paris).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from callscope.cli import app
from callscope.report.answers import (
    answer_summary,
    answer_tables,
    calls_by_category,
    has_answers,
    stage_mix_units,
)
from callscope.report.facts import as_facts
from callscope.report.html import compute_report
from callscope.report.load import load_facts, load_outcomes
from callscope.report.outcome import answer_of, call_stages_of, category_of

W = {
    "name": "get_weather",
    "description": "Current weather of a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "city name"}},
        "required": ["city"],
    },
}
T = {
    "name": "get_time",
    "description": "Local time in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "city name"}},
        "required": ["city"],
    },
}
B = {
    "name": "book_table",
    "description": "Book a restaurant table",
    "parameters": {
        "type": "object",
        "properties": {"restaurant": {"type": "string"}, "people": {"type": "integer"}},
        "required": ["restaurant", "people"],
    },
}
MODES = ("direct", "binary", "structured")
NEW_TABLES = ("answers", "stage_mix_calls", "calls_by_category")


def _c(name: str, **args) -> dict:
    return {"name": name, "arguments": args}


def _j(*calls: dict) -> str:
    return json.dumps(list(calls))


def _case(cid, query, gold, category):
    return {
        "id": cid,
        "query": query,
        "functions": [W, T, B],
        "gold": gold,
        "meta": {"category": category},
    }


CASES = [
    _case("p1", "What's the weather in Paris and in London?",
          [_c("get_weather", city="Paris"), _c("get_weather", city="London")], "parallel"),
    _case("p2", "What's the weather in Rome and the time in Tokyo?",
          [_c("get_weather", city="Rome"), _c("get_time", city="Tokyo")], "parallel_multiple"),
    _case("p3", "Weather in Oslo and in Lima, please.",
          [_c("get_weather", city="Oslo"), _c("get_weather", city="Lima")], "parallel"),
    _case("n1", "Tell me a joke about cats.", [], "irrelevance"),
    _case("n2", "What is the capital of France?", [], "irrelevance"),
    _case("n3", "Sing me a song.", [], "irrelevance"),
    _case("s1", "Book a table at Nopa for 4 people.",
          _c("book_table", restaurant="Nopa", people=4), "simple"),
]  # fmt: skip
BROKEN = '[{"name": "get_weather", "arguments": {"city": '
REPLIES = {
    "p1": [
        _j(_c("get_weather", city="Paris"), _c("get_weather", city="Berlin")),
        _j(_c("get_weather", city="Paris"), _c("get_weather", city="London")),
    ],
    "p2": [_j(_c("get_weather", city="Rome"))],
    "p3": [_j(_c("get_weather", city="Lima"), _c("get_weather", city="Oslo"))],
    "n1": ["Why did the cat sit on the computer? To keep an eye on the mouse."],
    "n2": [_j(_c("get_weather", city="Paris")), "The capital of France is Paris."],
    "n3": [BROKEN, BROKEN, BROKEN],
    "s1": [_j(_c("book_table", restaurant="Nopa", people=4))],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run made as a user makes it: `callscope run` (replay backend), `callscope report`."""
    root = tmp_path_factory.mktemp("answers")
    cases, replay = root / "cases.jsonl", root / "replay.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    replay.write_text(
        "".join(json.dumps({"case_id": k, "outputs": v}) + "\n" for k, v in REPLIES.items()),
        encoding="utf-8",
    )
    out = root / "run"
    args = ["run", str(cases), "-o", str(out), "-m", f"replay:{replay}", "--no-cache"]
    args += ["--quiet", "--max-attempts", "3", "--modes", ",".join(MODES)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["report", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _csv(run_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(run_dir / "tables" / f"{name}.csv", keep_default_na=False)


def test_answers_table(run_dir: Path) -> None:
    df = _csv(run_dir, "answers").set_index("mode")
    d = df.loc["direct"]
    assert (d["n"], d["n_calls"], d["n_abstained"], d["n_broken"], d["n_empty"]) == (7, 5, 1, 1, 0)
    assert (d["calls_made"], d["calls_expected"], d["missing_calls"], d["extra_calls"]) == (
        7, 7, 1, 1,
    )  # fmt: skip
    assert float(d["name_precision"]) == pytest.approx(5 / 7, abs=1e-5)
    assert float(d["name_recall"]) == pytest.approx(6.5 / 7, abs=1e-5)
    assert float(d["arg_precision"]) == pytest.approx(4.5 / 7, abs=1e-5)
    assert float(d["arg_recall"]) == pytest.approx(6 / 7, abs=1e-5)
    # name F1 per answer: 1, 2/3 (p2: P 1, R 1/2), 1, 1, 0, 0, 1
    assert float(d["name_f1"]) == pytest.approx((4 + 2 / 3) / 7, abs=1e-5)
    assert (d["solved"], d["gold_n"], d["nocall_n"], d["nocall_correct"], d["bfcl_credited"]) == (
        3, 7, 3, 1, 2,
    )  # fmt: skip
    for mode in ("binary", "structured"):
        r = df.loc[mode]
        assert (r["n_calls"], r["n_abstained"], r["n_broken"]) == (4, 2, 1)
        assert (r["calls_made"], r["missing_calls"], r["extra_calls"], r["solved"]) == (6, 1, 0, 5)
        assert (r["nocall_correct"], r["bfcl_credited"]) == (2, 3)
    md = (run_dir / "tables" / "answers.md").read_text(encoding="utf-8")
    assert "| 3/7 = 0.429 [0.158, 0.750] | 1 / 2 of 3 |" in md


def test_stage_mix_over_calls_beside_answers(run_dir: Path) -> None:
    df = _csv(run_dir, "stage_mix_calls").set_index("unit")
    a, c = df.loc["answers"], df.loc["calls"]
    assert (a["n"], a["n_passed"], a["n_stage1"], a["n_stage2"], a["n_stage3"]) == (7, 4, 1, 0, 2)
    assert a["n_error"] == "0"  # the column is empty for calls, so read as text
    assert (c["n"], c["n_passed"], c["n_stage1"], c["n_stage2"], c["n_stage3"]) == (7, 5, 0, 0, 2)
    assert c["n_error"] == ""  # a call is never a model error
    # the answers row is the first-failure breakdown's stage mix
    fb = _csv(run_dir, "failure_breakdown").iloc[0]
    assert [fb[f"n_{s}"] for s in ("passed", "stage1", "stage2", "stage3", "error")] == [
        4, 1, 0, 2, 0,
    ]  # fmt: skip


def test_calls_by_category(run_dir: Path) -> None:
    df = _csv(run_dir, "calls_by_category")
    got = {
        (r.mode, r.category): (r.n, r.calls_expected, r.calls_made, r.missing_calls,
                               r.extra_calls, r.solved)
        for r in df.itertuples()
    }  # fmt: skip
    assert got[("direct", "irrelevance")] == (3, 0, 1, 0, 1, 1)
    assert got[("direct", "parallel")] == (2, 4, 4, 0, 0, 1)
    assert got[("direct", "parallel_multiple")] == (1, 2, 1, 1, 0, 0)
    assert got[("direct", "simple")] == (1, 1, 1, 0, 0, 1)
    assert got[("binary", "irrelevance")] == (3, 0, 0, 0, 0, 2)
    assert got[("structured", "parallel")] == (2, 4, 4, 0, 0, 2)
    assert len(got) == 12


def test_page_shows_the_tables_and_the_figure(run_dir: Path) -> None:
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    for name in NEW_TABLES:
        assert f'id="table-{name}"' in page
    # beside today's stage mix over answers: right after the first-failure breakdown
    assert (
        page.index('id="table-failure_breakdown"')
        < page.index('id="table-answers"')
        < page.index('id="table-stage_mix_calls"')
        < page.index('id="table-overcorrection"')
    )
    figures = page.split('<section id="figures">', 1)[1].split("</section>", 1)[0]
    assert 'id="fig-calls_by_category"' in figures and "Calls made against calls expected" in (
        figures
    )
    png = run_dir / "figures" / "calls_by_category.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_category_reaches_the_facts(run_dir: Path) -> None:
    cats = {f.case_id: f.category for f in load_facts(run_dir) if f.mode == "direct"}
    assert cats == {
        "p1": "parallel",
        "p2": "parallel_multiple",
        "p3": "parallel",
        "n1": "irrelevance",
        "n2": "irrelevance",
        "n3": "irrelevance",
        "s1": "simple",
    }
    assert category_of({}) == category_of(None) == "-"


def test_per_outcome_definitions(run_dir: Path) -> None:
    by = {(o["case_id"], o["mode"]): o for o in load_outcomes(run_dir)}
    a = answer_of(by["p1", "direct"])
    assert (a.kind, a.calls_made, a.calls_expected, a.missing, a.extra, a.solved) == (
        "calls", 2, 2, 0, 0, False,
    )  # fmt: skip
    assert (a.arg_precision, a.name_recall, a.bfcl_credit) == (0.5, 1.0, None)
    n3 = answer_of(by["n3", "direct"])
    assert (n3.kind, n3.calls_made, n3.solved, n3.bfcl_credit) == ("broken", 0, False, True)
    assert call_stages_of(by["p1", "direct"]["first"]) == (0, 3)
    assert call_stages_of(by["n1", "direct"]["first"]) == ()


def test_model_error_counts_as_no_call() -> None:
    err = {"error": "timeout", "calls_expected": 2}
    a = answer_of(err)
    assert (a.kind, a.calls_made, a.missing, a.extra, a.arg_f1, a.solved) == (
        "error", 0, 2, 0, 0.0, False,
    )  # fmt: skip
    assert answer_of({"error": "timeout"}) is None  # case unknown: no answer facts


def test_runs_scored_before_answers_report_as_before(run_dir: Path) -> None:
    """Rows without the answer keys (a store from before issue 28): no new table or figure,
    and the other tables are those of the same outcomes."""
    new_keys = {"answer", "calls", "calls_made", "calls_expected", "missing_calls"}
    new_keys |= {"extra_calls", "name_precision", "name_recall", "name_f1", "answer_solved"}
    new_keys |= {"answer_arg_precision", "answer_arg_recall", "answer_arg_f1", "matched"}
    old = []
    for o in load_outcomes(run_dir):
        o = dict(o)
        for key in ("first", "final"):
            if o.get(key):
                o[key] = {k: v for k, v in o[key].items() if k not in new_keys}
        old.append(o)
    assert not has_answers(old)
    assert answer_tables(old)[0] == [] and answer_tables(old)[1].empty
    data = compute_report(old, 3, n_boot=20)
    names = [t.name for t in data.tables]
    assert not set(NEW_TABLES) & set(names) and data.by_category.empty
    assert names == [
        "headline", "per_scale", "aggregate", "extrinsic", "intrinsic", "cumulative_solve",
        "failure_breakdown", "overcorrection", "revisions", "paired_modes", "errors",
    ]  # fmt: skip
    new = compute_report(load_outcomes(run_dir), 3, n_boot=20)
    assert [t.name for t in new.tables] == [
        *names[:7], *NEW_TABLES, *names[7:],
    ]  # fmt: skip


def test_aggregates_take_dicts_or_facts(run_dir: Path) -> None:
    outcomes = load_outcomes(run_dir)
    facts = as_facts(outcomes)
    for fn in (answer_summary, stage_mix_units, calls_by_category):
        pd.testing.assert_frame_equal(fn(outcomes), fn(facts))
