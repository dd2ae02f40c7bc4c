"""report.html in headless Chromium: figures load, hash filters drive the case count, the
injected model output stays text, and the first screen (grounding line, audit line, the
call-flow figure) is visible above the fold at 1280 and 800 pixels wide; its screenshots are
saved under ``test-artifacts/`` (``$CALLSCOPE_TEST_ARTIFACTS``), and the run prints where.

The run is pinned to the paper's three modes and lexical stage 3, as in test_report_html.

Expected counts (the run of test_report_aggregate plus the payload case x1@S5, 9 cases x 3
modes = 27 items):
  mode=binary                 -> 9
  stage=2 (first attempt)     -> q4@S5, q4@S10 in 3 modes = 6
  mode=binary&stage=1         -> q1@S10, q2@S5, q2@S10, x1@S5 = 4
  kind=numeric                -> q3@S5, q3@S10 in 3 modes = 6
  scale=10&result=solved      -> S10 binary 4 + structured 3 = 7
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium import ARTIFACTS, CHROMIUM, dump_dom, measure, png_size, screenshot

from callscope.report.figures import FIGURE_FILES
from callscope.report.html import build_report

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium"
    ),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, replayed_run) -> Path:
    run_dir = replayed_run(
        tmp_path_factory.mktemp("browser"),
        payload=True,
        grounding="lexical",
        modes=("direct", "binary", "structured"),
    )
    return build_report(run_dir, n_boot=200)


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chromium-profile")


def dump(report: Path, profile: Path, hash_: str = "") -> str:
    dom = dump_dom(report, profile, hash_)
    assert "<html" in dom
    return dom


def shown(dom: str) -> str:
    m = re.search(r'<p id="shown-count">([^<]*)</p>', dom)
    assert m, "no shown-count element"
    return m.group(1)


def test_unfiltered_page(report: Path, profile: Path) -> None:
    dom = dump(report, profile)
    assert shown(dom) == "27 of 27 cases shown"
    imgs = re.findall(r"<img\b[^>]*>", dom)
    # issue 28: the answer-scored run adds calls_by_category.png to the six figures
    assert len(imgs) == len(FIGURE_FILES) + 1
    assert all('data-loaded="1"' in tag for tag in imgs)
    # the payload is text: escaped in the DOM, no element made from it, title untouched
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom
    assert "<script>alert" not in dom and '<img src="x"' not in dom
    title = re.search(r"<title>([^<]*)</title>", dom)
    assert title and title.group(1) == "callscope report: run"
    assert len(re.findall(r'<div class="case"', dom)) == 27


@pytest.mark.parametrize(
    ("hash_", "expected"),
    [
        ("mode=binary", 9),
        ("stage=2", 6),
        ("stage=stage2", 6),
        ("mode=binary&stage=1", 4),
        ("kind=numeric", 6),
        ("scale=10&result=solved", 7),
    ],
)
def test_hash_filters(report: Path, profile: Path, hash_: str, expected: int) -> None:
    dom = dump(report, profile, hash_)
    assert shown(dom) == f"{expected} of 27 cases shown"
    assert len(re.findall(r'<div class="case"', dom)) == expected


def test_unknown_filter_value_is_reported(report: Path, profile: Path) -> None:
    dom = dump(report, profile, "mode=nonsense")
    assert shown(dom) == "27 of 27 cases shown"
    assert "ignored unknown filter value(s): mode=nonsense" in dom


FIRST_SCREEN = ["#grounding-line", "#audit-line", "#fig-call_flow img", "#summary"]


@pytest.mark.parametrize("width", [1280, 800])
def test_first_screen_above_the_fold(report: Path, profile: Path, width: int) -> None:
    window = (width, 800)
    shot = screenshot(report, profile, ARTIFACTS / f"report-first-screen-{width}.png", window)
    print(f"screenshot: {shot}")
    assert png_size(shot) == window
    m = measure(report, profile, FIRST_SCREEN, window)
    assert m["width"] == width
    fold = m["height"]
    boxes = m["boxes"]
    grounding, audit_line, fig, summary = (boxes[s] for s in FIRST_SCREEN)
    assert grounding and audit_line and fig and summary, boxes
    # the two lines, then the whole figure, inside the first screen; the tables after it
    assert 0 <= grounding["top"] < audit_line["top"] < fig["top"]
    assert fig["bottom"] <= fold and fig["height"] >= 150 and fig["width"] >= 0.6 * width
    assert summary["top"] >= fig["bottom"]
    dom = dump_dom(report, profile, window=window)
    line = re.search(r'<p id="audit-line"[^>]*>([^<]*)', dom)
    assert line and "false alarms on gold 22.2 [6.3, 54.7]% (n=9)" in line.group(1)
    assert re.search(r'<p id="grounding-line"[^>]*>Stage-3 grounding: lexical', dom)
    img = re.search(r'<figure id="fig-call_flow"><img\b[^>]*>', dom)
    assert img and 'data-loaded="1"' in img.group(0)


_TABLES_JS = """
<script>
window.addEventListener('load', () => {
  const tables = [...document.querySelectorAll('table')].map((t) => ({
    id: t.id, cols: t.tHead ? t.tHead.rows[0].cells.length : 0,
    right: t.getBoundingClientRect().right,
    scroll: t.parentElement.scrollWidth, client: t.parentElement.clientWidth,
    heads: [...(t.tHead ? t.tHead.rows[0].cells : [])].map((c) => c.textContent)}));
  const pre = document.createElement('pre');
  pre.id = 'cs-tables';
  pre.textContent = JSON.stringify({width: window.innerWidth,
    page: document.documentElement.scrollWidth, tables});
  document.body.appendChild(pre);
});
</script>
"""


def test_every_table_shows_all_its_columns_at_1400_px(report: Path, profile: Path) -> None:
    """Issue 32: at 1,400 x 1,000 no table scrolls sideways (before: per-scale 2,527 px,
    aggregate 1,971, answers 1,963, revisions 1,826, hiding AVEM / QSLO / VHR, argument F1
    and the stage columns); a wide table is split into parts that repeat its key columns,
    and together the parts show every column of the table in ``tables/``."""
    import json

    page = report.read_text(encoding="utf-8")
    copy = report.with_name("report.tables.html")
    copy.write_text(page.replace("</body>", _TABLES_JS + "</body>", 1), encoding="utf-8")
    m = re.search(
        r'<pre id="cs-tables">([^<]*)</pre>', dump_dom(copy, profile, window=(1400, 1000))
    )
    assert m, "the measuring script did not run"
    got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert got["width"] == 1400 and got["page"] <= 1400
    for t in got["tables"]:
        assert t["scroll"] <= t["client"] + 1 and t["right"] <= 1400, t
    heads: dict[str, set[str]] = {}
    for t in got["tables"]:
        heads.setdefault(re.sub(r"-\d+$", "", t["id"]), set()).update(t["heads"])
    for name in ("per_scale", "aggregate", "answers", "revisions"):
        md = (report.parent / "tables" / f"{name}.md").read_text(encoding="utf-8")
        header = next(ln for ln in md.splitlines() if ln.startswith("| "))
        columns = {c.strip() for c in header.strip("| ").split(" | ")}
        assert columns <= heads[f"table-{name}"], name
    assert {"AVEM", "QSLO", "VHR", "Arg F1"} <= heads["table-per_scale"]
    assert any(t["id"] == "table-per_scale-2" for t in got["tables"])  # it was split


_SCROLL_JS = """
<script>
window.addEventListener('load', () => setTimeout(() => {
  const cases = document.getElementById('cases').getBoundingClientRect();
  const card = document.querySelector('#case-list .case');
  const pre = document.createElement('pre');
  pre.id = 'cs-scroll';
  pre.textContent = JSON.stringify({y: window.scrollY, h: window.innerHeight, top: cases.top,
    card: card ? card.getBoundingClientRect().top : null});
  document.body.appendChild(pre);
}, 50));
</script>
"""


def test_a_page_opened_at_cases_shows_the_cases(report: Path, profile: Path) -> None:
    """Issue 32: ``report.html#cases`` showed a blank window; once loaded, the window is at
    the case browser, with the first case card on screen."""
    import json

    page = report.read_text(encoding="utf-8")
    copy = report.with_name("report.scroll.html")
    copy.write_text(page.replace("</body>", _SCROLL_JS + "</body>", 1), encoding="utf-8")
    dom = dump_dom(copy, profile, "cases", window=(1400, 1000))
    m = re.search(r'<pre id="cs-scroll">([^<]*)</pre>', dom)
    assert m, "the measuring script did not run"
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["y"] > 0 and abs(got["top"]) <= 2, got
    assert got["card"] is not None and 0 < got["card"] < got["h"], got
