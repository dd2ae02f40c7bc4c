"""build_report: files, table formats, and escaping of model text in report.html.

The run is the hand-made one of test_report_aggregate plus a case x1@S5 whose model output
is an HTML/script injection payload (three times; no name parsed, unsolved in every mode).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from callscope.report.case_data import json_for_script
from callscope.report.figures import FIGURE_FILES
from callscope.report.html import build_report

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


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> Path:
    run_dir = replayed_run(tmp_path_factory.mktemp("html"), payload=True)
    return build_report(run_dir, n_boot=200)


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
    assert page.count('src="data:image/png;base64,') == len(FIGURE_FILES)
    assert page.count("onload=\"this.setAttribute('data-loaded','1')\"") == len(FIGURE_FILES)
    assert 'id="shown-count"' in page and "default-src 'none'" in page


def test_json_for_script_round_trip() -> None:
    value = {"t": "</script><!-- & \u2028", "n": float("nan")}
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"t": value["t"], "n": "nan"}


def test_missing_run_dir(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        build_report(tmp_path / "nope")
