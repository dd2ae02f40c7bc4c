"""The report's action-class diagnostic and conversation browser on a tiny calibration run.

The run: the first 2 cases of multi_turn_base and multi_turn_miss_param, one scripted model
(native tool calls), once as the ``baseline`` and once under the ``sri`` probe. The model
answers by position: turn = number of user messages so far - 1, step = number of assistant
messages after the last user message (SRI's history edit drops the halting message and appends
its retry to the last user message, so a retry is asked the same (turn, step 0) again).

  base_0        every turn: the gold calls, then "Done."          -> passes, TOOL_CALL emitted
  base_1        turn 0: PAYLOAD (a <script> text), then "Done."   -> fails at turn 0 (no call),
                every turn text only                                 TOOL_CALL never emitted
  miss_param_0  gold calls at turns 0-2 and 4; at turn 3 (gold []) it calls the unavailable
                ``teleport`` (rejected: "unavailable"), then asks  -> passes, ASK emitted
  miss_param_1  gold calls at turns 0-2 and 4; "Done." at turn 3  -> passes, ASK never emitted

Per emission classes: gold calls TOOL_CALL, "Done." and PAYLOAD OTHER, the question ASK.
Baseline diagnostics: base GAR 1/2, Acc 1/2; miss_param GAR 1/2, Acc 2/2 (a bound violation,
1 passed without the gold class).

Under SRI (fires when a turn ends with no call in it; at most once per turn, the second halt
logs ``suppressed``/``once_per_turn``): base_1 fires at step 0 of each of its 4 turns and is
suppressed at step 1 (8 events, 2 steps per turn); miss_param_1 fires at turn 3 step 0 and is
suppressed at step 1; base_0 and miss_param_0 have a call in every turn (no events). Verdicts
are unchanged, so the paired ΔAcc is 0 everywhere and the probe fired in 1 of 2 cases of each
category (2 of 4 overall).

Browser filters (8 conversations):
  (none)                                        8
  conv-probe=baseline                           4
  conv-verdict=fail                             2  (base_1 in both runs)
  conv-gold=no                                  4  (base_1, miss_param_1 in both runs)
  conv-category=multi_turn_miss_param&conv-verdict=fail        0
  conv-category=miss_param (short alias)        4
  conv-probe=sri&conv-category=multi_turn_base&conv-gold=yes   1  (base_0 under sri)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, dump_dom

pytest.importorskip("bfcl_eval")

from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.models.base import ChatModel  # noqa: E402
from callscope.models.replay import ReplayModel  # noqa: E402
from callscope.report.conversations import (  # noqa: E402
    conversation_record,
    conversation_report,
)
from callscope.report.html import build_report  # noqa: E402
from callscope.runs.calibrate import run_calibration, select_cases  # noqa: E402
from callscope.runs.runner import run_cases  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402
from callscope.types import (  # noqa: E402, PAPER_MODES
    PAPER_MODES,  # noqa: E402
    Case,
    ModelReply,
)

MODEL = "scripted:positional"
PAYLOAD = "Note: <script>alert(1)</script>"
ASK_TEXT = "Which file do you mean? Please provide the name."
DATA = re.compile(r'<script type="application/json" id="conv-data">(.*?)</script>', re.S)


class PositionalActor(ChatModel):
    """Replies by (case, turn, step-in-turn); "Done." where nothing is scripted."""

    spec = MODEL

    def __init__(self, scripts: dict[str, dict[tuple[int, int], ModelReply]]) -> None:
        self.scripts = scripts
        self.case_id = ""

    def chat(self, messages, tools=None, decoding=None, context=None) -> ModelReply:
        self.case_id = context.case_id
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        turn = len(users) - 1
        step = sum(1 for m in messages[users[-1] :] if m["role"] == "assistant")
        return self.scripts[self.case_id].get((turn, step), ModelReply(text="Done."))


def _gold_script(case, skip: tuple[int, ...] = ()) -> dict[tuple[int, int], ModelReply]:
    return {
        (t, 0): ModelReply(tool_calls=[c.to_dict() for c in calls])
        for t, calls in enumerate(gold_calls(case))
        if calls and t not in skip
    }


def scripts_for(cases) -> dict[str, dict[tuple[int, int], ModelReply]]:
    by_id = {c.id: c for c in cases}
    teleport = ModelReply(tool_calls=[{"name": "teleport", "arguments": {"to": "temp"}}])
    return {
        "multi_turn_base_0": _gold_script(by_id["multi_turn_base_0"]),
        "multi_turn_base_1": {(0, 0): ModelReply(text=PAYLOAD)},
        "multi_turn_miss_param_0": {
            **_gold_script(by_id["multi_turn_miss_param_0"]),
            (3, 0): teleport,
            (3, 1): ModelReply(text=ASK_TEXT),
        },
        "multi_turn_miss_param_1": _gold_script(by_id["multi_turn_miss_param_1"]),
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cases = select_cases(["base", "miss_param"], 2)
    path = tmp_path_factory.mktemp("conv") / "run"
    store = RunStore(path)
    try:
        model = PositionalActor(scripts_for(cases))
        assert run_calibration(model, store, cases, show_progress=False) == (4, 0)
        assert run_calibration(model, store, cases, probe="sri", show_progress=False) == (4, 0)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Path:
    return build_report(run_dir)


@pytest.fixture(scope="module")
def data(run_dir: Path) -> dict[str, Any]:
    store = RunStore(run_dir)
    try:
        return conversation_report(store)
    finally:
        store.close()


def conv(data: dict[str, Any], probe: str, case_id: str) -> dict[str, Any]:
    (found,) = [c for c in data["conversations"] if c["probe"] == probe and c["case_id"] == case_id]
    return found


def classes(c: dict[str, Any]) -> list[list[str | None]]:
    return [[s["class"] for s in t["steps"]] for t in c["turns"]]


# --------------------------------------------------------------------------- data


def test_filter_choices(data: dict[str, Any]) -> None:
    assert len(data["conversations"]) == 8
    assert data["models"] == [MODEL]
    assert data["probes"] == ["baseline", "sri"]
    assert data["categories"] == ["multi_turn_base", "multi_turn_miss_param"]
    assert data["note"] is None


def test_classes_and_verdicts_baseline(data: dict[str, Any]) -> None:
    b0 = conv(data, "baseline", "multi_turn_base_0")
    assert classes(b0) == [["TOOL_CALL", "OTHER"]] * 4
    assert (b0["passed"], b0["verdict"], b0["gold_emitted"]) == (True, "pass", True)
    assert [t["status"] for t in b0["turns"]] == ["passed"] * 4
    assert [t["gold_calls"] for t in b0["turns"]] == [3, 2, 1, 4]
    assert [t["model_calls"] for t in b0["turns"]] == [3, 2, 1, 4]
    assert b0["gold_class"] == "TOOL_CALL" and b0["due_turns"] == [0, 1, 2, 3]
    assert b0["class_counts"]["TOOL_CALL"] == 4 and b0["class_counts"]["OTHER"] == 4

    b1 = conv(data, "baseline", "multi_turn_base_1")
    assert classes(b1) == [["OTHER"]] * 4
    assert b1["turns"][0]["steps"][0]["text"] == PAYLOAD
    assert (b1["passed"], b1["verdict"], b1["gold_emitted"]) == (False, "fail", False)
    assert b1["failed_turn"] == 0
    assert [t["status"] for t in b1["turns"]] == ["failed"] + ["unchecked"] * 3
    assert b1["reason"]

    m0 = conv(data, "baseline", "multi_turn_miss_param_0")
    assert classes(m0) == [["TOOL_CALL", "OTHER"]] * 3 + [
        ["TOOL_CALL", "ASK"],
        ["TOOL_CALL", "OTHER"],
    ]
    assert (m0["passed"], m0["gold_emitted"]) == (True, True)
    assert m0["gold_class"] == "ASK" and m0["due_turns"] == [3]
    assert [t["due"] for t in m0["turns"]] == [False, False, False, True, False]
    assert [t["status"] for t in m0["turns"]] == ["passed"] * 3 + ["skipped", "passed"]
    rejected = m0["turns"][3]["steps"][0]["results"]
    assert [(r["name"], r["accepted"], r["reason"]) for r in rejected] == [
        ("teleport", False, "unavailable")
    ]
    assert m0["n_rejected"] == 1 and m0["turns"][3]["model_calls"] == 0

    m1 = conv(data, "baseline", "multi_turn_miss_param_1")
    assert classes(m1)[3] == ["OTHER"]
    assert (m1["passed"], m1["gold_emitted"]) == (True, False)
    assert all(
        c["other_events"] == [] and c["n_fired"] == 0
        for c in data["conversations"]
        if c["probe"] == "baseline"
    )


def test_probe_events_on_their_turns(data: dict[str, Any]) -> None:
    b1 = conv(data, "sri", "multi_turn_base_1")
    assert classes(b1) == [["OTHER", "OTHER"]] * 4
    # the retry is asked (turn 0, step 0) again, so it repeats the payload
    assert [s["text"] for s in b1["turns"][0]["steps"]] == [PAYLOAD, PAYLOAD]
    for t in b1["turns"]:
        assert [(e["step"], e["decision"], e["reason"]) for e in t["events"]] == [
            (0, "fired", "halt"),
            (1, "suppressed", "once_per_turn"),
        ]
    assert b1["n_fired"] == 4 and b1["verdict"] == "fail"

    m1 = conv(data, "sri", "multi_turn_miss_param_1")
    assert [len(t["events"]) for t in m1["turns"]] == [0, 0, 0, 2, 0]
    assert classes(m1)[3] == ["OTHER", "OTHER"]
    assert m1["n_fired"] == 1 and m1["passed"] is True
    for cid in ("multi_turn_base_0", "multi_turn_miss_param_0"):
        assert conv(data, "sri", cid)["n_fired"] == 0


def test_diagnostic_rows_and_comparison(data: dict[str, Any]) -> None:
    assert [(r["model"], r["probe"]) for r in data["runs"]] == [(MODEL, "baseline"), (MODEL, "sri")]
    rows = {r["category"]: r for r in data["runs"][0]["rows"]}
    assert (rows["multi_turn_base"]["gar_case"], rows["multi_turn_base"]["acc"]) == (0.5, 0.5)
    mp = rows["multi_turn_miss_param"]
    assert (mp["gar_case"], mp["acc"], mp["bound_violation"]) == (0.5, 1.0, True)
    assert mp["passed_without_gold"] == 1
    table = data["runs"][0]["table"]
    assert table["columns"][:3] == ["Category", "Gold", "n"]
    mp_cells = next(r for r in table["rows"] if r[0] == "multi_turn_miss_param")
    assert mp_cells[1:3] == ["ASK", "2"] and mp_cells[3].startswith("50.0 [")
    assert mp_cells[6].startswith("100.0 [") and mp_cells[7] == "-50.0"
    assert "bound violation (Acc > GAR)" in mp_cells[8]

    (comp,) = data["comparisons"]
    assert comp["probe"] == "sri"
    by_cat = {r["category"]: r for r in comp["rows"]}
    assert set(by_cat) == {"base", "miss_param", "all"}
    assert all(r["d_acc"] == 0.0 and r["pass_to_fail"] == 0 for r in by_cat.values())
    assert (by_cat["base"]["fired"], by_cat["miss_param"]["fired"]) == (1, 1)
    assert by_cat["all"]["fired_rate"] == 0.5 and by_cat["all"]["n"] == 4
    assert comp["table"]["rows"][-1][1] == "all" and comp["table"]["notes"]
    # the ablation matrix: one row per probe, ΔAcc / ΔGAR per category, fired % over all cases
    (abl,) = data["ablations"]
    assert abl["model"] == MODEL
    assert abl["table"]["columns"] == [
        "Probe",
        "base ΔAcc / ΔGAR",
        "miss_param ΔAcc / ΔGAR",
        "all ΔAcc / ΔGAR",
        "fired %",
    ]
    assert abl["table"]["rows"] == [["sri", "+0.0 / +0.0", "+0.0 / +0.0", "+0.0 / +0.0", "50.0"]]


def test_placeholder_and_retracted_steps() -> None:
    conv_row = {
        "model": "m",
        "probe": "cri-bypass",
        "case_id": "x",
        "category": "multi_turn_miss_func",
        "passed": False,
        "trajectory": {
            "turns": [
                {
                    "index": 0,
                    "user_messages": [{"role": "user", "content": "hi"}],
                    "added_functions": [],
                    "available": ["ls"],
                    "steps": [
                        {
                            "text": "",
                            "tool_calls": [{"name": "ls", "arguments": {}}],
                            "calls": [{"name": "ls", "arguments": {}}],
                            "results": [],
                            "retracted": True,
                        },
                        {
                            "text": "I cannot proceed with this request yet.",
                            "tool_calls": None,
                            "calls": [],
                            "results": [],
                            "placeholder": True,
                        },
                    ],
                }
            ],
            "partial_turn": {"index": 1, "user_messages": [], "steps": []},
            "events": [
                {"turn": 0, "step": 0, "decision": "fired", "reason": "detected"},
                {"turn": 7, "step": 0, "decision": "suppressed", "reason": "x"},
            ],
        },
        "verdict": {
            "passed": False,
            "reason": "model error: boom",
            "per_turn": [
                {"index": i, "status": "unchecked", "gold_calls": 1, "model_calls": 0, "steps": 0}
                for i in range(3)
            ],
        },
    }
    rec = conversation_record(conv_row, None, None)
    steps = rec["turns"][0]["steps"]
    assert [(s["class"], s["retracted"], s["placeholder"]) for s in steps] == [
        ("TOOL_CALL", True, False),
        (None, False, True),
    ]
    assert [(t["index"], t["reached"], t["partial"]) for t in rec["turns"]] == [
        (0, True, False),
        (1, True, True),
        (2, False, False),
    ]
    assert rec["gold_class"] == "REFUSE" and rec["due_turns"] == []
    assert rec["class_counts"]["TOOL_CALL"] == 1 and sum(rec["class_counts"].values()) == 1
    assert rec["n_fired"] == 1 and [e["turn"] for e in rec["other_events"]] == [7]


def test_report_reads_stored_stage_verdicts_and_never_runs_the_cascade(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SAAG stage mix was stored with each conversation when it was recorded: building
    report.html with the cascade made to fail succeeds, with the stage mix the cascade gives
    when run afresh over the stored trajectories."""
    from collections import Counter
    from functools import partial

    from callscope.benchmarks.protocol import get_benchmark
    from callscope.records import Trajectory
    from callscope.saag import cascade
    from callscope.saag.stage_mix import call_stages, stage_counts

    bench = get_benchmark("bfcl")
    store = RunStore(run_dir)
    try:
        convs = list(store.conversations())
    finally:
        store.close()
    cases = {c.id: c for c in bench.cases(sorted({c["category"] for c in convs}))}
    fresh: dict[tuple[str, str], Counter[str]] = {}
    for c in convs:
        stages = call_stages(
            Trajectory.from_dict(c["trajectory"]), partial(bench.tools_at, cases[c["case_id"]])
        )
        fresh.setdefault((c["probe"], c["category"]), Counter()).update(stage_counts(stages.calls))
    assert sum(sum(m.values()) for m in fresh.values()) > 0

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the cascade ran while building the report")

    monkeypatch.setattr(cascade, "diagnose", refuse)
    assert build_report(run_dir).is_file()
    store = RunStore(run_dir)
    try:
        runs = conversation_report(store)["runs"]
    finally:
        store.close()
    for run in runs:
        for row in run["rows"]:
            mix = fresh[(run["probe"], row["category"])]
            total = sum(mix.values())
            assert row["tool_calls_scored"] == total
            for k in range(4):
                assert row[f"calls_stage{k}"] == mix[f"stage{k}"] / total


# --------------------------------------------------------------------------- HTML


def test_page_sections_and_escaping(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert 'id="diagnostic"' in page and 'id="conversations"' in page
    assert 'id="conv-shown-count"' in page
    # a conversations-only run has no SAAG case browser, tables or figures; its one figure is
    # the first screen's Acc-vs-GAR picture (issue 20 item 6)
    assert 'id="case-list"' not in page and page.count("data:image/png") == 1
    assert 'id="fig-acc_vs_gar"' in page.split('id="diagnostic"', 1)[0]
    assert [p.name for p in (report.parent / "figures").iterdir()] == ["acc_vs_gar.png"]
    blocks = DATA.findall(page)
    assert len(blocks) == 1
    assert "<" not in blocks[0] and "\\u003cscript\\u003ealert(1)" in blocks[0]
    assert "<script>alert" not in page
    assert page.count("<script") == 2  # the JSON block and the page's code
    data = json.loads(blocks[0])
    assert len(data["conversations"]) == 8
    texts = [
        s["text"]
        for c in data["conversations"]
        if c["case_id"] == "multi_turn_base_1"
        for t in c["turns"]
        for s in t["steps"]
    ]
    assert texts.count(PAYLOAD) == 3  # once in the baseline, twice (retry) under sri
    # diagnostic tables are server-rendered, escaped cells
    assert "bound violation (Acc &gt; GAR)" in page
    assert page.count('class="report diag"') == 2 + 2  # GAR/Acc + stage mix per run
    assert 'id="table-compare-0"' in page and 'id="table-ablation-0"' in page


def saag_run(run_dir: Path) -> None:
    """Two single-call cases replayed in the SAAG loop into ``run_dir``'s store."""
    weather = {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    good = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    cases = [
        Case(
            id=cid,
            query="Weather in Paris?",
            functions=[weather],
            gold={"name": "get_weather", "arguments": {"city": "Paris"}},
            scale=5,
        )
        for cid in ("w1", "w2")
    ]
    replay = run_dir.parent / "replay.jsonl"
    replay.write_text(
        json.dumps({"case_id": "w1", "outputs": [good]})
        + "\n"
        + json.dumps({"case_id": "w2", "outputs": ["no idea", good]})
        + "\n",
        encoding="utf-8",
    )
    store = RunStore(run_dir)
    try:
        run_cases(
            ReplayModel(replay),
            cases,
            store,
            modes=PAPER_MODES,
            max_attempts=2,
            show_progress=False,
        )
    finally:
        store.close()


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory, run_dir: Path) -> Path:
    """A run dir holding SAAG outcomes (2 cases x 3 modes) and the 4 baseline conversations."""
    mixed = tmp_path_factory.mktemp("mixed") / "run"
    saag_run(mixed)
    store = RunStore(mixed)
    src = RunStore(run_dir)
    try:
        for c in src.conversations(probe="baseline"):
            store.save_conversation(
                c["model"], c["probe"], c["category"], c["trajectory"], c["verdict"]
            )
    finally:
        src.close()
        store.close()
    return build_report(mixed, n_boot=50)


def test_mixed_run_keeps_saag_part(mixed_report: Path) -> None:
    page = mixed_report.read_text(encoding="utf-8")
    assert 'id="case-list"' in page and 'id="conv-list"' in page
    assert page.count("<script") == 3
    assert 'id="data"' in page and 'id="conv-data"' in page
    saag = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))
    assert len(saag["items"]) == 2 * 3  # 2 cases x 3 modes
    conv_data = json.loads(DATA.search(page).group(1))
    assert len(conv_data["conversations"]) == 4 and conv_data["probes"] == ["baseline"]
    assert conv_data["comparisons"] == []


# --------------------------------------------------------------------------- browser


dump = dump_dom


def shown(dom: str) -> str:
    m = re.search(r'<p id="conv-shown-count">([^<]*)</p>', dom)
    assert m, "no conv-shown-count element"
    return m.group(1)


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
@pytest.mark.parametrize(
    ("hash_", "expected"),
    [
        ("", 8),
        ("conv-probe=baseline", 4),
        ("conv-verdict=fail", 2),
        ("conv-gold=no", 4),
        ("conv-category=multi_turn_miss_param&conv-verdict=fail", 0),
        ("conv-category=miss_param", 4),
        ("conv-probe=sri&conv-category=multi_turn_base&conv-gold=yes", 1),
    ],
)
def test_conversation_hash_filters(report: Path, tmp_path: Path, hash_: str, expected: int) -> None:
    dom = dump(report, tmp_path / "profile", hash_)
    assert shown(dom) == f"{expected} of 8 conversations shown"
    assert len(re.findall(r'<div class="conv"', dom)) == expected
    if hash_ == "":
        # the payload is text in the DOM, and badges show the classes
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>alert" not in dom
        assert 'class="badge cls cls-ASK"' in dom
        assert 'class="result rejected"' in dom


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_unknown_conversation_filter_is_reported(report: Path, tmp_path: Path) -> None:
    dom = dump(report, tmp_path / "profile", "conv-verdict=maybe")
    assert shown(dom) == "8 of 8 conversations shown"
    assert "ignored unknown filter value(s): conv-verdict=maybe" in dom


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_mixed_page_filters_are_independent(mixed_report: Path, tmp_path: Path) -> None:
    """One hash drives both browsers: mode=binary keeps the 2 binary cases, conv-verdict=fail
    the one failing baseline conversation (base_1)."""
    dom = dump(mixed_report, tmp_path / "profile", "mode=binary&conv-verdict=fail")
    assert re.search(r'<p id="shown-count">([^<]*)</p>', dom).group(1) == "2 of 6 cases shown"
    assert shown(dom) == "1 of 4 conversations shown"
    assert len(re.findall(r'<div class="case"', dom)) == 2
    assert len(re.findall(r'<div class="conv"', dom)) == 1
