"""`calibrate` end to end on real BFCL multi-turn cases and simulators, with scripted models
whose right answers come from BFCL's gold (so the expected GAR and Acc are known)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")

from scripted import Scripted  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.runs.calibrate import run_calibration, select_cases, write_outputs  # noqa: E402
from callscope.runs.calibration_store import diagnose_store  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402
from callscope.types import ModelReply  # noqa: E402

ASK = "Which file do you mean? Please provide the name."
REFUSE = "I cannot do that: no such function is available to me."


def gold_actor(cases, silent: bool = False) -> Scripted:
    """Per case: the gold calls of each turn (native), then a closing text; at an empty-gold
    turn it asks (miss_param) or refuses (miss_func). ``silent`` makes it never call."""
    scripts: dict[str, list[ModelReply]] = {}
    for case in cases:
        out: list[ModelReply] = []
        for calls in gold_calls(case):
            if calls and not silent:
                out.append(ModelReply(tool_calls=[c.to_dict() for c in calls]))
                out.append(ModelReply(text="Done."))
            elif "miss_param" in case.category:
                out.append(ModelReply(text=ASK))
            elif "miss_func" in case.category:
                out.append(ModelReply(text=REFUSE))
            else:
                out.append(ModelReply(text="Done."))
        scripts[case.id] = out
    return Scripted(scripts, then=ModelReply(text="Done."), spec="scripted:gold-actor")


@pytest.fixture(scope="module")
def cases():
    # miss_func_49's gold calls a held-out tool early (a BFCL data defect): not among the first 2
    return select_cases(["base", "long_context", "miss_param", "miss_func"], 2)


def test_gold_actor_passes_everything_with_gar_at_ceiling(tmp_path, cases) -> None:
    store = RunStore(tmp_path / "cal")
    ran, skipped = run_calibration(gold_actor(cases), store, cases, show_progress=False)
    assert (ran, skipped) == (8, 0)
    result = diagnose_store(store, "scripted:gold-actor", cases=cases)
    rows = {r["category"]: r for r in result.rows()}
    assert set(rows) == {
        f"multi_turn_{c}" for c in ("base", "long_context", "miss_param", "miss_func")
    }
    for r in rows.values():
        assert r["n"] == 2 and r["acc"] == 1.0 and r["gar_case"] == 1.0
        assert not r["bound_violation"]
    # every gold call passes the SAAG cascade's stages 1 and 2 (names and schemas are right)
    assert all(r["calls_stage1"] == 0.0 and r["calls_stage2"] == 0.0 for r in rows.values())
    # resuming runs nothing
    again = run_calibration(gold_actor(cases), store, cases, show_progress=False)
    assert again == (0, 8)
    md = write_outputs(tmp_path / "cal", result).read_text()
    assert "multi_turn_miss_param" in md and "stage 3 (grounding)" in md


def test_silent_model_shows_gar_zero_on_tool_call_categories(tmp_path, cases) -> None:
    store = RunStore(tmp_path / "cal")
    run_calibration(gold_actor(cases, silent=True), store, cases, show_progress=False)
    rows = {
        r["category"]: r for r in diagnose_store(store, "scripted:gold-actor", cases=cases).rows()
    }
    assert rows["multi_turn_base"]["gar_case"] == 0.0 and rows["multi_turn_base"]["acc"] == 0.0
    # it still asks / refuses at the empty-gold turns: the gold class fires, but the case fails
    assert rows["multi_turn_miss_param"]["gar_case"] == 1.0
    assert rows["multi_turn_miss_param"]["acc"] == 0.0
    assert rows["multi_turn_miss_param"]["large_slack"] is True


def test_calibrate_from_bfcl_cli(tmp_path) -> None:
    """`calibrate --from-bfcl` on a result tree in BFCL's layout (text emissions)."""
    from callscope.cli import app

    tree = tmp_path / "result" / "my-model" / "multi_turn"
    tree.mkdir(parents=True)
    rows = [
        {
            "id": "multi_turn_miss_param_0",
            "result": [["[cd(folder='x')]"], ["Which one do you mean?"]],
        },
        {"id": "multi_turn_miss_param_1", "result": [["I did it."]]},
    ]
    (tree / "BFCL_v4_multi_turn_miss_param_result.json").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    res = CliRunner().invoke(
        app, ["calibrate", "--from-bfcl", str(tmp_path / "result"), "-o", str(tmp_path / "o")]
    )
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "o" / "calibration-from-bfcl.json").read_text())
    row = data["rows"][0]
    assert row["n"] == 2 and row["gar_case"] == 0.5
    page = (tmp_path / "o" / "report.html").read_text()
    assert "GAR and Acc per category" in page and "miss_param" in page


def test_probe_run_is_paired_with_its_baseline(tmp_path) -> None:
    """SRI never fires for a model that calls at every turn: the paired comparison shows no
    change and no flips; events of a probe run land in events.jsonl only when decided."""
    from callscope.runs.calibration_store import compare_with_baseline

    base_cases = select_cases(["base"], 2)
    store = RunStore(tmp_path / "cal")
    run_calibration(gold_actor(base_cases), store, base_cases, show_progress=False)
    run_calibration(gold_actor(base_cases), store, base_cases, probe="sri", show_progress=False)
    rows, md = compare_with_baseline(store, "scripted:gold-actor", "sri", base_cases)
    row = next(r for r in rows if r["category"] in ("base", "multi_turn_base"))
    assert row["n"] == 2 and row["acc_base"] == row["acc_probe"] == 1.0
    assert row["d_acc"] == 0.0 and row["pass_to_fail"] == 0 and row["fail_to_pass"] == 0
    assert row["fired"] == 0 and row["fired_rate"] == 0.0
    assert (tmp_path / "cal" / "probe-sri.md").read_text() == md
    assert not (tmp_path / "cal" / "events.jsonl").exists()


def test_fired_rate_counts_cases_where_the_probe_fired(tmp_path) -> None:
    """A model that never calls halts at every turn, so SRI fires in every case: the paired
    comparison reports fired 2/2 (read back from the stored trajectories' events), and every
    decision is in events.jsonl."""
    from callscope.runs.calibration_store import compare_with_baseline

    base_cases = select_cases(["base"], 2)
    store = RunStore(tmp_path / "cal")
    run_calibration(gold_actor(base_cases, silent=True), store, base_cases, show_progress=False)
    run_calibration(
        gold_actor(base_cases, silent=True), store, base_cases, probe="sri", show_progress=False
    )
    rows, md = compare_with_baseline(store, "scripted:gold-actor", "sri", base_cases)
    row = next(r for r in rows if r["category"] in ("base", "multi_turn_base"))
    assert row["n"] == 2 and row["fired"] == 2 and row["fired_rate"] == 1.0
    assert "| 100.0 |" in md
    events = [
        json.loads(line) for line in (tmp_path / "cal" / "events.jsonl").read_text().splitlines()
    ]
    fired = {e["case_id"] for e in events if e["decision"] == "fired"}
    assert fired == {c.id for c in base_cases}
    # once per turn: one fire per turn of each case, no more
    turns = sum(len(c.ground_truth) for c in base_cases)
    assert sum(e["decision"] == "fired" for e in events) == turns


def test_probe_cli_writes_the_paired_table_and_the_ablation_matrix(tmp_path, monkeypatch) -> None:
    """`calibrate --probe` over a directory holding a full baseline and two probe runs on
    different categories: probe-<P>.md pairs every case both runs hold (not only the
    command's categories) and probe-ablation.md has one row per probe."""
    from callscope.cli import app

    cases = select_cases(["base", "miss_param"], 2)
    base, mp = cases[:2], cases[2:]
    store = RunStore(tmp_path / "cal")
    run_calibration(gold_actor(cases, silent=True), store, cases, show_progress=False)
    run_calibration(gold_actor(mp, silent=True), store, mp, probe="cri-retry", show_progress=False)
    run_calibration(gold_actor(base, silent=True), store, base, probe="sri", show_progress=False)
    store.close()
    actor = gold_actor(mp, silent=True)
    monkeypatch.setattr("callscope.runs.experiment.open_model", lambda *a, **k: actor)
    res = CliRunner().invoke(
        app,
        [
            "calibrate",
            "-m",
            "scripted:gold-actor",
            "--categories",
            "miss_param",
            "--n",
            "2",
            "--probe",
            "sri",
            "-o",
            str(tmp_path / "cal"),
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    sri = (tmp_path / "cal" / "probe-sri.md").read_text()
    assert (
        "| sri | base | 2 |" in sri
        and "| sri | miss_param | 2 |" in sri
        and "| sri | all | 4 |" in sri
    )
    ablation = (tmp_path / "cal" / "probe-ablation.md").read_text().splitlines()
    assert (
        ablation[0]
        == "| Probe | base ΔAcc / ΔGAR | miss_param ΔAcc / ΔGAR | all ΔAcc / ΔGAR | fired % |"
    )
    assert [line.split(" | ")[0] for line in ablation[2:]] == ["| sri", "| cri-retry"]
    assert ablation[3].split(" | ")[1] == "n/a / n/a"  # cri-retry never ran base
