"""report.html in headless Chromium: figures load, hash filters drive the case count, and the
injected model output stays text.

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
from chromium import CHROMIUM, dump_dom

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
    run_dir = replayed_run(tmp_path_factory.mktemp("browser"), payload=True)
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
    assert len(imgs) == len(FIGURE_FILES)
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
