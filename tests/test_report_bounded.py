"""The report in bounded memory (issue 16): outcomes streamed from the store into compact
:class:`callscope.report.facts.OutcomeFacts`, the case browser capped per model and mode.

The replayed run of ``conftest.build_run`` with the payload case: 9 cases (q1..q4 at scales 5
and 10, then x1@S5, in that store order) x 3 modes = 27 outcomes of one model.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from callscope.report import aggregate as agg
from callscope.report import case_data as cd
from callscope.report.facts import OutcomeFacts, first_segment
from callscope.report.findings import correction_that_works
from callscope.report.flow import call_flow
from callscope.report.html import REPORT_FILE, build_report, run_info
from callscope.report.load import load_facts, load_outcomes, max_attempts_by_model
from callscope.report.paired_modes import paired_modes
from callscope.report.revisions import KEPT_ITEMS
from callscope.saag.audit import audit
from callscope.saag.groundings import DEFAULT_GROUNDING
from callscope.store.run_store import RunStore

ORDER = ["q1@S5", "q2@S5", "q3@S5", "q4@S5", "q1@S10", "q2@S10", "q3@S10", "q4@S10", "x1@S5"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, replayed_run) -> Path:
    return replayed_run(tmp_path_factory.mktemp("bounded"), payload=True, grounding="lexical")


def test_store_streams_what_it_lists(run_dir: Path) -> None:
    store = RunStore(run_dir)
    try:
        assert list(store.outcomes(stream=True)) == list(store.outcomes())
        assert [c.id for c in store.iter_cases()] == ORDER
        assert list(store.iter_cases()) == store.cases()
    finally:
        store.close()


def test_facts_give_the_same_tables_as_dicts(run_dir: Path) -> None:
    dicts, facts = load_outcomes(run_dir), load_facts(run_dir)
    assert len(facts) == 27 and all(isinstance(f, OutcomeFacts) for f in facts)
    assert [(f.model, f.case_id, f.mode) for f in facts] == [
        (o["model"], o["case_id"], o["mode"]) for o in dicts
    ]
    for fn in (
        agg.per_scale,
        agg.headline,
        agg.cumulative_solve,
        agg.failure_breakdown,
        agg.overcorrection,
        agg.errors_by_kind,
        agg.revision_tradeoff,
        call_flow,
    ):
        pd.testing.assert_frame_equal(fn(facts), fn(dicts), check_exact=True)
    for base, other in (("direct", "structured"), ("binary", "structured")):
        pd.testing.assert_frame_equal(
            paired_modes(facts, base, other),
            paired_modes(dicts, base, other),
            check_exact=True,
        )
    assert max_attempts_by_model(run_dir, facts) == max_attempts_by_model(run_dir, dicts)
    assert correction_that_works(facts) == correction_that_works(dicts)


def test_facts_by_hand(run_dir: Path) -> None:
    """q2@S5 structured: attempt 1 ``book_tbl`` (stage 1, not a registered name), attempt 2
    right: solved at 2, gold name gained, nothing lost."""
    f = next(f for f in load_facts(run_dir) if f.case_id == "q2@S5" and f.mode == "structured")
    assert (f["model"], f["mode"], f.get("final")) == (f.model, "structured", None)
    assert (f.scale, f.first_stage, f.first_kinds, f.solved_at) == (
        "5",
        "stage1",
        ("wrong_name",),
        2,
    )
    assert first_segment(f) == "wrong_name"
    assert (f.solved, f.first_solved, f.error, f.final_segment) == (True, False, False, "passed")
    assert f.overcorrection == (False, True, False, True, 1.0)
    name = f.revisions[KEPT_ITEMS.index("name")]
    assert name == (False, True) and f.lost_any is False
    with pytest.raises(KeyError):
        f["final"]
    with pytest.raises(AttributeError):
        f.solved = False


def test_case_browser_is_capped(run_dir: Path) -> None:
    full = cd.case_data(run_dir, load_facts(run_dir))
    assert len(full["items"]) == 27 and "note" not in full
    assert list(full["cases"]) == ORDER
    assert cd.case_data(run_dir, load_outcomes(run_dir)) == full  # dicts or facts
    capped = cd.case_data(run_dir, load_facts(run_dir), cap=2)
    assert [(i["mode"], i["case_id"]) for i in capped["items"]] == [
        (m, c) for c in ORDER[:2] for m in ("direct", "binary", "structured")
    ]
    assert list(capped["cases"]) == ORDER[:2]
    assert capped["cases"]["q2@S5"] == full["cases"]["q2@S5"]
    by_key = {(i["mode"], i["case_id"]): i for i in full["items"]}
    assert all(i == by_key[i["mode"], i["case_id"]] for i in capped["items"])
    assert "first 2 outcomes of each model and mode" in capped["note"]
    assert "(6 of the run's 27 outcomes)" in capped["note"]


def test_capped_page_says_so(run_dir: Path, tmp_path: Path, monkeypatch) -> None:
    full = build_report(run_dir, tmp_path / "full").read_text(encoding="utf-8")
    monkeypatch.setattr(cd.case_data, "__defaults__", (2,))
    page = build_report(run_dir, tmp_path / "capped").read_text(encoding="utf-8")
    assert 'id="cases-note"' not in full
    cases = page[page.index('<section id="cases">') :]
    assert cases.index('id="cases-note"') < cases.index('id="shown-count"')
    data = page[page.index('id="data">') + len('id="data">') :]
    data = json.loads(data[: data.index("</script>")])
    assert len(data["items"]) == 6
    assert "(6 of the run&#x27;s 27 outcomes)" in page  # the note, escaped
    for name in ("headline", "per_scale", "paired_modes", "revisions"):  # tables count all
        a = (tmp_path / "full" / "tables" / f"{name}.csv").read_text(encoding="utf-8")
        b = (tmp_path / "capped" / "tables" / f"{name}.csv").read_text(encoding="utf-8")
        assert a == b
    assert (tmp_path / "capped" / REPORT_FILE).is_file()


def test_audit_sample_is_the_cases_sample(run_dir: Path) -> None:
    """The audit's seeded sample drawn over ids picks the very cases the old draw over the
    loaded cases picked (``random.sample`` depends only on the population's length)."""
    store = RunStore(run_dir)
    try:
        gold = [c for c in store.cases() if c.gold]
        expected = sorted(random.Random(0).sample(gold, 4), key=lambda c: c.id)
        info = run_info(store, ["m"], cap=4)
        assert info.audit_note.startswith("audited a seeded sample of 4 of the run's 9 ")
        assert info.audit_lines == [audit(expected, grounding=DEFAULT_GROUNDING).headline()]
        whole = [audit(gold, grounding=DEFAULT_GROUNDING).headline()]
        assert run_info(store, ["m"]).audit_lines == whole
    finally:
        store.close()


def test_json_for_script_copies_only_when_needed() -> None:
    data = {"a": [1.5, {"b": float("inf")}], "n": float("nan")}
    assert json.loads(cd.json_for_script(data)) == {"a": [1.5, {"b": "inf"}], "n": "nan"}
    assert data["a"][1]["b"] == float("inf")  # the input is left alone
    assert json.loads(cd.json_for_script({1: 2, None: (3, 4)})) == {"1": 2, "None": [3, 4]}
    assert cd.json_for_script({"x": "</script>", "y": [0.25]}) == (
        '{"x": "\\u003c/script\\u003e", "y": [0.25]}'
    )
