"""build_report: files, table formats, and escaping of model text in report.html.

The run is the hand-made one of test_report_aggregate plus a case x1@S5 whose model output
is an HTML/script injection payload (three times; no name parsed, unsolved in every mode). It
is pinned to the SAAG paper's three modes and its stage 3 (``grounding="lexical"``), the
setting test_report_aggregate's numbers are worked out in; the default ``registry`` mode is
checked apart (``default_report``) where it changes a number.

The first screen, by hand (9 cases; attempt 1 is shared by the modes):
  attempt 1   passed q1@S5; wrong name q2@S5/S10 (book_tbl); no call parsed q1@S10 (prose),
              x1 (payload); misspelled arg q4@S5/S10 (dayss); stage 3 numeric q3@S5/S10
              (lexical: 2 is not a number of "two people at 8pm")       -> 1/2/2/2/2, solved 1
  binary      every case passes but x1 (no name)                      -> passed 8, solved 8
  structured  q4 ends on get_forecast (wrong name, S5 and S10), x1     -> passed 6, wrong name
              2, no name 1, solved 6
  registry    "two" states 2: q3 passes at attempt 1 -> attempt 1 passed 3, solved 3.
Audit (minimal gold = full gold here: no acceptable sets): 9 gold calls; lexical flags q3's
people=2 at S5 and S10 -> false alarms 2/9 = 22.2%, Wilson 95% [6.3, 54.7]; registry 0/9,
Wilson [0.0, 29.9] (upper bound z^2/(n+z^2) = 3.8416/12.8416).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from callscope.report.acc_gar_figure import ACC_GAR_FILE, acc_gar_points, acc_vs_gar_plot
from callscope.report.case_data import json_for_script
from callscope.report.figures import FIGURE_FILES
from callscope.report.flow import FIRST, SEGMENTS, call_flow
from callscope.report.html import RunInfo, build_report, render_html, run_info
from callscope.report.load import load_outcomes
from callscope.store.run_store import RunStore

TABLES = (
    "headline",
    "per_scale",
    "aggregate",
    "extrinsic",
    "intrinsic",
    "cumulative_solve",
    "failure_breakdown",
    "overcorrection",
    "errors",
)
DATA_BLOCK = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)
PAPER_MODES = ("direct", "binary", "structured")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> Path:
    run_dir = replayed_run(
        tmp_path_factory.mktemp("html"), payload=True, grounding="lexical", modes=PAPER_MODES
    )
    return build_report(run_dir, n_boot=200)


@pytest.fixture(scope="module")
def default_report(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> Path:
    run_dir = replayed_run(tmp_path_factory.mktemp("html-default"), payload=True, modes=PAPER_MODES)
    return build_report(run_dir, n_boot=50)


def _bars(run_dir: Path) -> dict[str, dict[str, int]]:
    flow = call_flow(load_outcomes(run_dir))
    out: dict[str, dict[str, int]] = {}
    for bar, g in flow.groupby("bar", sort=False):
        counts = {r.segment: int(r.n) for r in g.itertuples() if r.n}
        counts["solved"] = int(g["solved"].iloc[0])
        counts["total"] = int(g["total"].iloc[0])
        out[str(bar)] = counts
    return out


def _overview(page: str) -> str:
    return page.split('<section id="overview">', 1)[1].split("</section>", 1)[0]


def test_files_exist(report: Path) -> None:
    assert report.name == "report.html" and report.is_file()
    for name in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (report.parent / "tables" / f"{name}.{ext}").stat().st_size > 0
    for name in FIGURE_FILES:
        assert (report.parent / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_holds_raw_numbers(report: Path) -> None:
    hl = pd.read_csv(report.parent / "tables" / "headline.csv").set_index("mode")
    # 9 cases per mode; x1 is never solved: direct 1/9, binary 8/9, structured 6/9
    assert hl.loc["direct", "solved"] == 1 and hl.loc["binary", "solved"] == 8
    assert hl.loc["structured", "solve_rate"] == pytest.approx(6 / 9, abs=1e-6)
    assert (hl["n"] == 9).all()
    cum = pd.read_csv(report.parent / "tables" / "cumulative_solve.csv")
    s10 = cum[(cum["scale"] == 10) & (cum["mode"] == "binary")].sort_values("attempt")
    assert s10["rate"].tolist() == [0.0, 0.75, 1.0]


def test_markdown_table(report: Path) -> None:
    md = (report.parent / "tables" / "per_scale.md").read_text(encoding="utf-8")
    assert md.startswith("**Per-scale results.**") and "stage-conditional" in md
    assert "| model | scale | mode | n | FNEM |" in md
    s10_direct = next(line for line in md.splitlines() if "| 10 | direct |" in line)
    cells = [c.strip() for c in s10_direct.strip("|").split(" | ")]
    # columns: model, scale, mode, n, FNEM, NCS, RPR, PDS, SPR, AVEM, QSLO, ...
    # FNEM at S10 direct: of the 4 first attempts only q3, q4 conform: 0.5, population std 0.5
    assert cells[4] == "0.500 ± 0.500 (n=4)"
    assert cells[6] == "1.000 ± 0.000 (n=2)"  # RPR over the two calls that reached stage 2
    assert cells[10] == "– (n=0)"  # QSLO: no string argument failed exact match
    assert cells[9] == "0.500 ± 0.000 (n=1)"  # AVEM: only q3 reached stage 3


def test_latex_table(report: Path) -> None:
    tex = (report.parent / "tables" / "intrinsic.tex").read_text(encoding="utf-8")
    for token in (
        r"\begin{table}",
        r"\toprule",
        r"\midrule",
        r"\bottomrule",
        r"\caption{",
        r"\label{tab:intrinsic}",
        "stage-conditional",
    ):
        assert token in tex
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    assert r"\_" in body  # the model spec (a tmp path with underscores) is escaped
    assert not re.search(r"(?<!\\)_", body)
    assert r"$\pm$" in body
    agg_tex = (report.parent / "tables" / "aggregate.tex").read_text(encoding="utf-8")
    assert r"Attempts to solve" in agg_tex and "sample standard deviation" in agg_tex


def test_model_text_is_escaped(report: Path, report_payload: str) -> None:
    page = report.read_text(encoding="utf-8")
    blocks = DATA_BLOCK.findall(page)
    assert len(blocks) == 1
    outside = DATA_BLOCK.sub("", page)
    assert "<script>alert" not in page
    assert "onerror" not in outside and "pwned" not in outside
    # exactly two script elements: the JSON data block and the page's own code
    assert page.count("<script") == 2
    assert "</script>" not in blocks[0] and "<" not in blocks[0]
    data = json.loads(blocks[0])
    texts = [a["text"] for it in data["items"] if it["case_id"] == "x1@S5" for a in it["attempts"]]
    assert texts and all(t == report_payload for t in texts)
    assert len(data["items"]) == 27


def test_page_is_self_contained(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert "<link" not in page and not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    # issue 28: a run scored answer by answer adds the figure of calls made against calls
    # expected per category (calls_by_category.png) to the six of every SAAG run
    n_figures = len(FIGURE_FILES) + 1
    assert page.count('src="data:image/png;base64,') == n_figures
    assert page.count("onload=\"this.setAttribute('data-loaded','1')\"") == n_figures
    assert 'id="shown-count"' in page and "default-src 'none'" in page


def test_json_for_script_round_trip() -> None:
    value = {"t": "</script><!-- & \u2028", "n": float("nan")}
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": value["t"], "n": "nan"}


def test_missing_run_dir(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build_report(tmp_path / "nope")


# --------------------------------------------------------------------------- first screen


def test_call_flow_by_hand(report: Path) -> None:
    bars = _bars(report.parent)
    assert list(bars) == [FIRST, "final, binary", "final, structured"]
    assert bars[FIRST] == {
        "passed": 1,
        "wrong_name": 2,
        "no_name": 2,
        "drifted": 2,
        "numeric": 2,
        "solved": 1,
        "total": 9,
    }
    assert bars["final, binary"] == {"passed": 8, "no_name": 1, "solved": 8, "total": 9}
    assert bars["final, structured"] == {
        "passed": 6,
        "wrong_name": 2,
        "no_name": 1,
        "solved": 6,
        "total": 9,
    }


def test_call_flow_shares_partition_each_bar(report: Path) -> None:
    flow = call_flow(load_outcomes(report.parent))
    assert set(flow["segment"]) == set(SEGMENTS)
    for _, g in flow.groupby("bar"):
        assert g["share"].sum() == pytest.approx(1.0) and g["n"].sum() == g["total"].iloc[0]


def test_call_flow_default_grounding(default_report: Path) -> None:
    first = _bars(default_report.parent)[FIRST]
    assert first["passed"] == 3 and "numeric" not in first and first["solved"] == 3


def test_first_screen_leads_the_page(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    overview = _overview(page)
    assert page.index('id="overview"') < page.index('id="summary"') < page.index('id="figures"')
    assert overview.count("<img") == 1 and 'id="fig-call_flow"' in overview
    figures = page.split('<section id="figures">', 1)[1].split("</section>", 1)[0]
    # issue 28: the answer-scored run's calls_by_category.png joins the other five figures
    assert "call_flow" not in figures and figures.count("<img") == len(FIGURE_FILES)
    assert 'id="fig-calls_by_category"' in figures
    assert "Stage-3 grounding: lexical (" in overview
    assert "diagnosis audit (lexical grounding): false alarms on gold 22.2 [6.3, 54.7]% (n=9)" in (
        overview
    )


def test_first_screen_default_grounding(default_report: Path) -> None:
    overview = _overview(default_report.read_text(encoding="utf-8"))
    assert "Stage-3 grounding: registry (" in overview
    assert "diagnosis audit (registry grounding): false alarms on gold 0.0 [0.0, 29.9]% (n=9)" in (
        overview
    )


def test_audit_is_capped(report: Path) -> None:
    store = RunStore(report.parent)
    try:
        info = run_info(store, [], cap=4)
    finally:
        store.close()
    assert info.groundings == {}  # no model named: no configuration read
    assert info.audit_note.startswith("audited a seeded sample of 4 of the run's 9 gold cases")
    assert len(info.audit_lines) == 1 and "(n=4)" in info.audit_lines[0]
    assert "registry grounding" in info.audit_lines[0]  # no recorded mode: the default


# Diagnostic rows as conversation_report gives them (test_report_conversations' baseline):
# base GAR 1/2, Acc 1/2 (on the diagonal); miss_param GAR 1/2, Acc 2/2 (above it: masking).
CALIBRATION_RUNS = [
    {
        "model": "m",
        "probe": "baseline",
        "rows": [
            {"category": "multi_turn_base", "gar_case": 0.5, "acc": 0.5},
            {"category": "multi_turn_miss_param", "gar_case": 0.5, "acc": 1.0},
            {"category": "multi_turn_long_context", "gar_case": None, "acc": None},
        ],
        "table": {"columns": ["category"], "rows": [["multi_turn_base"]]},
        "stage_table": {"columns": ["category"], "rows": [["multi_turn_base"]]},
        "capability": {"t_cap": 1, "below": []},
    }
]


def test_acc_gar_points() -> None:
    points = acc_gar_points(CALIBRATION_RUNS)
    assert [(p["category"], p["gar"], p["acc"], p["masked"]) for p in points] == [
        ("multi_turn_base", 0.5, 0.5, False),
        ("multi_turn_miss_param", 0.5, 1.0, True),
    ]
    assert points[1]["acc_lo"] == 1.0  # no interval given: the rate itself


def test_calibration_first_screen(tmp_path: Path) -> None:
    fig = acc_vs_gar_plot(acc_gar_points(CALIBRATION_RUNS), tmp_path / ACC_GAR_FILE).path
    assert fig.name == ACC_GAR_FILE and fig.read_bytes()[:4] == b"\x89PNG"
    conv = {"runs": CALIBRATION_RUNS, "comparisons": [], "ablations": [], "config": "default"}
    info = RunInfo(groundings={"m": "registry"})
    page = render_html("t", None, [], {}, conv, info, fig)
    overview = _overview(page)
    assert 'id="fig-acc_vs_gar"' in overview and "Stage-3 grounding: registry" in overview
    assert 'id="audit-line"' not in overview  # no gold cases, no audit
    assert page.index('id="overview"') < page.index('id="diagnostic"')
    assert page.count("<img") == 1


def _run(model: str, rows: list[dict], probe: str = "baseline") -> dict:
    return {"model": model, "probe": probe, "rows": rows}


def test_acc_vs_gar_one_marker_per_model(tmp_path: Path) -> None:
    """Three models on two categories: one subplot per category, one legend entry per model
    (in the runs' order), each point where its rows put it; a model name is data (``$`` is
    not mathtext); with a second probe each (model, probe) is its own series."""
    base, miss = "multi_turn_base", "multi_turn_miss_param"
    runs = [
        _run("a", [{"category": base, "gar_case": 1.0, "acc": 1.0}]),
        _run("b$x$", [{"category": base, "gar_case": 0.5, "acc": 0.25}]),
        _run("c", [{"category": base, "gar_case": 0.0, "acc": 0.0}]),
        _run("c", [{"category": miss, "gar_case": 0.0, "acc": 0.5}]),
    ]
    fig = acc_vs_gar_plot(acc_gar_points(runs), tmp_path / "f.png")
    assert fig.path.read_bytes()[:4] == b"\x89PNG"
    assert fig.categories == ["base", "miss_param"]
    assert fig.legend == ["a", "b\\$x\\$", "c"]
    assert [(p["model"], p["gar"], p["acc"], p["masked"]) for p in fig.points] == [
        ("a", 1.0, 1.0, False),
        ("b$x$", 0.5, 0.25, False),
        ("c", 0.0, 0.0, False),
        ("c", 0.0, 0.5, True),
    ]
    two = acc_vs_gar_plot(
        acc_gar_points([*runs[:1], _run("a", runs[0]["rows"], "sri")]), tmp_path / "g.png"
    )
    assert two.legend == ["a (baseline)", "a (sri)"]
    # a path spec keeps its file name; a τ² group label (spaces) keeps its text
    labels = ["local:/models/qwen.gguf", "xai/grok-3 (user: xai/grok-3)"]
    named = acc_vs_gar_plot(
        acc_gar_points([_run(m, runs[0]["rows"]) for m in labels]), tmp_path / "h.png"
    )
    assert named.legend == ["local:qwen.gguf", "xai/grok-3 (user: xai/grok-3)"]
    assert acc_vs_gar_plot([], tmp_path / "e.png").legend == []


def test_panel_section_escapes_model_names() -> None:
    """The panel section of a calibration run: after the first screen, before the per-model
    tables; model-derived text (names, warnings) is escaped."""
    evil = "<script>alert(1)</script>"
    panel = {
        "probe": "baseline",
        "models": [evil, "m"],
        "table": {
            "columns": ["Model", "base GAR %"],
            "rows": [[evil, "0.0"], ["m", "50.0"]],
            "title": "Panel",
            "caption": "c",
            "row_styles": ["red", None],
        },
        "turn_table": {"columns": ["Model"], "rows": [[evil], ["m"]], "title": "T"},
        "warnings": [f"{evil}: capability check failed"],
        "notes": [],
    }
    conv = {
        "runs": CALIBRATION_RUNS,
        "comparisons": [],
        "ablations": [],
        "config": "default",
        "panels": [panel],
    }
    page = render_html("t", None, [], {}, conv, RunInfo(), None)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.index('id="overview"') < page.index('id="panel"') < page.index('id="diagnostic"')
    assert '<tr class="row-red"><td>&lt;script&gt;' in page
    assert '<a href="#panel">Panel</a>' in page
    single = render_html("t", None, [], {}, {**conv, "panels": []}, RunInfo(), None)
    assert 'id="panel"' not in single and 'href="#panel"' not in single
