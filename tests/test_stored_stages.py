"""The SAAG stage verdicts of a calibrate run are computed once, when a conversation is
recorded, and stored with it: building ``report.html`` reads them and never calls the cascade
(issue 27). A store written before the verdicts were stored reports the same numbers: they are
computed when missing, stored, and not computed again.

The run is the two-turn "lamp" benchmark of ``test_benchmark_protocol`` with three cases: a
good call (passes the cascade), a call with an unknown argument ``colour`` (stage 2) and no
call at all. Tool calls scored: 2, one passed (50.0 %), one failing stage 2 (50.0 %).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from scripted import Scripted
from test_benchmark_protocol import Lamp, LampCase

from callscope.benchmarks.protocol import BENCHMARKS, register_benchmark
from callscope.report.conversations import conversation_report
from callscope.report.html import build_report
from callscope.runs.calibrate import calibrate_model
from callscope.saag import cascade
from callscope.store.run_store import RunStore
from callscope.store.schema import STORE_FILE
from callscope.types import ModelReply

#: the stage-mix table of the run: calls scored, passed, stage 1, 2, 3 (shares in %)
STAGE_ROW = ["lamp", "2", "50.0", "0.0", "50.0", "0.0"]


class ThreeLamps(Lamp):
    def cases(self, categories=None) -> list[LampCase]:
        two = super().cases(categories)
        return [*two, LampCase("lamp_colour", "lamp", two[0].turns)]


def _call(**arguments) -> ModelReply:
    return ModelReply(tool_calls=[{"name": "switch_lamp", "arguments": arguments}])


@pytest.fixture
def run_dir(tmp_path: Path):
    register_benchmark("lamp", ThreeLamps)
    try:
        bench = BENCHMARKS["lamp"]()
        model = Scripted(
            {
                "lamp_good": [_call(on=True), ModelReply(text="Done.")],
                "lamp_bad": [ModelReply(text="Sure.")],
                "lamp_colour": [_call(on=True, colour="red"), ModelReply(text="Done.")],
            },
            then=ModelReply(text="Which colour?"),
            spec="scripted:lamp",
        )
        out = tmp_path / "cal"
        calibrate_model(model, out, bench.cases(), style="native", benchmark=bench)
        yield out
    finally:
        BENCHMARKS.unregister("lamp")


def _stage_rows(run_dir: Path) -> list[list[str]]:
    store = RunStore(run_dir)
    try:
        (run,) = conversation_report(store)["runs"]
    finally:
        store.close()
    return run["stage_table"]["rows"]


def _no_cascade(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the cascade ran while building a report")

    monkeypatch.setattr(cascade, "diagnose", refuse)


def test_report_reads_stored_stages_and_never_runs_the_cascade(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _stage_rows(run_dir)
    assert before == [STAGE_ROW]
    _no_cascade(monkeypatch)
    page = build_report(run_dir).read_text(encoding="utf-8")
    assert 'id="conversations"' in page
    assert _stage_rows(run_dir) == before


def test_store_from_before_stored_stages_reports_the_same(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = sqlite3.connect(run_dir / STORE_FILE)
    with con:
        con.execute("DROP TABLE call_stages")  # as a store written before the table
    con.close()
    calls = []
    real = cascade.diagnose

    def counted(*args, **kwargs):
        calls.append(args[0].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(cascade, "diagnose", counted)
    assert _stage_rows(run_dir) == [STAGE_ROW]
    assert calls == ["switch_lamp", "switch_lamp"]  # computed when missing, and stored
    _no_cascade(monkeypatch)
    build_report(run_dir)
    assert _stage_rows(run_dir) == [STAGE_ROW]


def test_stages_of_a_resaved_trajectory_are_not_read(run_dir: Path) -> None:
    """A conversation saved again without verdicts (e.g. by a callscope that does not store
    them) no longer matches the digest of the stored verdicts: it reads as having none."""
    store = RunStore(run_dir)
    try:
        conv = next(c for c in store.conversations() if c["case_id"] == "lamp_colour")
        assert [(s.stage, s.kinds) for s in conv["stages"].calls] == [(2, ["spurious"])]
        assert conv["stages"].is_current(None)
        assert not conv["stages"].is_current("lexical")
        traj = {**conv["trajectory"], "wall_s": 1.5}
        con = sqlite3.connect(run_dir / STORE_FILE)
        with con:  # rewritten without touching call_stages
            con.execute(
                "UPDATE conversations SET trajectory=? WHERE case_id='lamp_colour'",
                (__import__("json").dumps(traj),),
            )
        con.close()
        again = next(c for c in store.conversations() if c["case_id"] == "lamp_colour")
        assert again["stages"] is None
    finally:
        store.close()
