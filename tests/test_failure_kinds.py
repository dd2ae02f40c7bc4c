"""Failure kinds are defined once (:class:`callscope.records.FailureKind`): the report's call-flow
segments, their legends and colours, the failure-breakdown columns (frame and table) and the
case browser's kinds are exactly the enum, in its order, plus one ``stage<k>`` segment per
cascade stage for a failure without a recorded kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.colors import to_rgb

from callscope.records import FailureKind
from callscope.report.aggregate import failure_breakdown
from callscope.report.case_data import case_data
from callscope.report.figures import SEGMENT_COLORS, STAGE_SHADES, kind_shade
from callscope.report.flow import SEGMENT_LABELS, SEGMENT_STAGE, SEGMENTS, call_flow, segment_label
from callscope.report.load import load_facts
from callscope.report.outcome import STAGE_LABELS
from callscope.report.tables import failure_table

KINDS = [k.value for k in FailureKind]
STAGES = (1, 2, 3)


def test_segments_are_the_kinds_in_cascade_order() -> None:
    per_stage = [(*(k.value for k in FailureKind.of_stage(s)), f"stage{s}") for s in STAGES]
    expected = ("passed", *(seg for segs in per_stage for seg in segs), "error")
    assert expected == SEGMENTS
    assert [s for s in SEGMENTS if s in KINDS] == KINDS
    assert {k.value: SEGMENT_STAGE[k.value] for k in FailureKind} == {
        k.value: k.stage for k in FailureKind
    }
    assert (SEGMENT_STAGE["passed"], SEGMENT_STAGE["error"]) == (0, 4)
    assert [SEGMENT_STAGE[f"stage{s}"] for s in STAGES] == list(STAGES)


def test_legends_read_the_kinds_labels() -> None:
    assert list(SEGMENT_LABELS) == list(SEGMENTS)
    assert [segment_label(k) for k in KINDS] == [f"{k.stage}: {k.label}" for k in FailureKind]
    # the legend texts the page has always shown
    assert SEGMENT_LABELS == {
        "passed": "passed all 3 stages",
        "wrong_name": "1: name not in registry",
        "no_name": "1: no call parsed",
        "stage1": "1: name (other)",
        "missing": "2: required arg missing",
        "spurious": "2: unknown arg",
        "drifted": "2: misspelled arg",
        "ask": "2: required value not stated",
        "stage2": "2: args (other)",
        "numeric": "3: number not in query",
        "hard": "3: value not grounded",
        "soft": "3: value weakly grounded",
        "stage3": "3: value (other)",
        "error": "no reply (backend error)",
    }


def test_colours_follow_the_stage_families() -> None:
    assert list(SEGMENT_COLORS) == list(SEGMENTS)
    for s in STAGES:
        assert SEGMENT_COLORS[f"stage{s}"] == STAGE_SHADES[s][0]
        for i, k in enumerate(FailureKind.of_stage(s)):
            assert SEGMENT_COLORS[k.value] == kind_shade(s, i) == STAGE_SHADES[s][i + 1]
    assert len(set(SEGMENT_COLORS.values())) == len(SEGMENTS)
    # a kind beyond the listed shades: the family's last shade, lighter with each further kind
    for s in STAGES:
        extra = [kind_shade(s, i) for i in range(len(STAGE_SHADES[s]) - 1, 8)]
        assert not set(extra) & set(SEGMENT_COLORS.values()) and len(set(extra)) == len(extra)
        lightness = [sum(to_rgb(c)) for c in (STAGE_SHADES[s][-1], *extra)]
        assert lightness == sorted(lightness) and lightness[-1] < 3.0


def _outcome(case_id: str, first: dict | None, diagnosis: dict | None = None) -> dict:
    return {
        "model": "m",
        "case_id": case_id,
        "mode": "direct",
        "scale": 5,
        "n_attempts": 1,
        "solved_at": None,
        "error": None if first else "boom",
        "first": first,
        "final": first,
        "first_diagnosis": diagnosis,
        "final_diagnosis": diagnosis,
    }


OUTCOMES = [
    _outcome("a", {"stage": 0, "fnem": 1}),
    _outcome("b", {"stage": 1, "fnem": -1}),
    _outcome("c", {"stage": 1, "fnem": 0}),
    _outcome("d", {"stage": 2, "fnem": 1, "missing": ["x"], "drifted": ["y"]}),
    _outcome("e", {"stage": 3, "fnem": 1}, {"stage": 3, "numeric": ["n"], "soft": ["s"]}),
    _outcome("f", {"stage": 3, "fnem": 1}),
    _outcome("g", None),
]


def test_breakdown_columns_are_the_kinds() -> None:
    """Every kind the cascade decides has its columns; the guard's own ASK only when a case
    shows it (none here: ``OUTCOMES`` are cascade verdicts)."""
    fb = failure_breakdown(OUTCOMES)
    keys = ["model", "scale", "n"]
    stages = [c for s in STAGE_LABELS for c in (s, f"n_{s}")]
    shown = [k for k in KINDS if k != "ask"]
    kinds = [c for k in shown for c in (k, f"n_{k}")]
    assert list(fb.columns) == keys + stages + kinds
    row = fb.iloc[0]
    assert {k: int(row[f"n_{k}"]) for k in shown} == {
        "wrong_name": 1,
        "no_name": 1,
        "missing": 1,
        "spurious": 0,
        "drifted": 1,
        "numeric": 1,
        "hard": 0,
        "soft": 1,
    }
    table = failure_table(fb)
    assert list(table.columns)[-len(shown) :] == shown


def test_call_flow_bars_are_split_by_the_segments() -> None:
    flow = call_flow(OUTCOMES)
    assert list(flow["segment"]) == list(SEGMENTS)
    counts = {r.segment: int(r.n) for r in flow.itertuples() if r.n}
    # a call showing several kinds counts under the first; stage 3 without a list: stage3
    assert counts == {
        "passed": 1,
        "no_name": 1,
        "wrong_name": 1,
        "missing": 1,
        "numeric": 1,
        "stage3": 1,
        "error": 1,
    }
    assert list(flow["stage"]) == [SEGMENT_STAGE[s] for s in SEGMENTS]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> Path:
    return replayed_run(tmp_path_factory.mktemp("kinds"), grounding="lexical")


def test_case_browser_kinds_are_the_enum(run_dir: Path) -> None:
    data = case_data(run_dir, load_facts(run_dir))
    # the page is given each kind's entry (name, stage, label, group, whether the gate
    # corrects it), and renders kinds from that
    assert [k["name"] for k in data["kinds"]] == KINDS
    assert [(k["stage"], k["label"]) for k in data["kinds"]] == [
        (FailureKind(k).stage, FailureKind(k).label) for k in KINDS
    ]
    assert [k["corrects"] for k in data["kinds"]] == [k != "soft" for k in KINDS]
    shown = [i["kinds"] for i in data["items"]]
    assert all(kinds == [k for k in KINDS if k in kinds] for kinds in shown)
    assert {k for kinds in shown for k in kinds} == {"wrong_name", "no_name", "drifted", "numeric"}
