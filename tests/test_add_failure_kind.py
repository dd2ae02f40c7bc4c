"""docs/architecture.md's claim "a failure kind: its entry, its check and its template, nothing
else" (issues 41, 48), tested by doing it: in a copy of ``src/`` a throwaway stage-3 kind
``out_of_range`` (a number outside the range its schema states, ``maximum``) is added by
editing only its entry in ``records/verdicts.py`` (the enum member, its :class:`KindInfo`
with label, reason, correction template, summary group and audit probe, its detail list on
``Diagnosis``) and its check in ``saag/cascade.py``. With that copy first on the path, the kind
then reaches, through the real entry points:

* the verdict: ``callscope score`` gives the row stage 3, kind ``out_of_range`` and the
  kind's template as ``fix``; its stage summary counts the row at stage 3;
* the guard: ``guard.check`` gives the kind's reason;
* the gated correction: ``callscope run --modes direct,gated`` (replayed answers) sends the
  kind's template, and the model's second answer passes (the gate corrects the kind: the
  issue found the gate closed on a new kind whose name ``gated.py`` did not list);
* the summaries and every table: ``callscope report`` writes every table file, the failure
  breakdown with an ``out_of_range`` column (its count), the call flow its segment and legend;
* the leaderboard columns: an answer with the value counts in the ``unstated`` column (the
  kind's summary group) of the leaderboard table;
* the case browser: the page embeds the kind's entry (name, stage, label), and in headless
  Chromium (when installed) the kind filter offers it, ``#kind=out_of_range`` shows its two
  cases and the verdict lists the flagged parameter;
* the audit: ``callscope audit`` builds the kind's own probe (its entry's ``probe``) and the
  cascade detects it at stage 3.
"""

from __future__ import annotations

import csv
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import CHROMIUM, dump_dom

SRC = Path(__file__).resolve().parents[1] / "src"

PROBE_FN = (
    "lambda args, props, rng: next(((\n"
    "        {**args, p: props[p]['maximum'] + 1}, f\"{p}: {args[p]!r} -> over its maximum\")\n"
    "        for p in args\n"
    "        if isinstance(args[p], int) and isinstance(props.get(p), dict)\n"
    "        and isinstance(props[p].get('maximum'), int)), None)"
)
ENTRY = (
    '    "out_of_range": KindInfo(\n'
    "        3,\n"
    '        "value out of range",\n'
    '        "{name}={value} is outside the range its schema states",\n'
    '        "The values for {params} are outside the range the schema allows.",\n'
    '        group="unstated",\n'
    f"        probe={PROBE_FN},\n"
    "    ),\n"
)
EDITS: dict[str, list[tuple[str, str]]] = {
    "callscope/records/verdicts.py": [
        ('    SOFT = "soft"\n', '    SOFT = "soft"\n    OUT_OF_RANGE = "out_of_range"\n'),
        ('        corrects=False,\n        group="soft",\n    ),\n}\n',
         '        corrects=False,\n        group="soft",\n    ),\n' + ENTRY + "}\n"),
        (
            "    soft: list[str] = field(default_factory=list)\n",
            "    soft: list[str] = field(default_factory=list)\n"
            "    out_of_range: list[str] = field(default_factory=list)\n",
        ),
    ],
    "callscope/saag/cascade.py": [
        (
            "    for p, v in arguments.items():\n        if isinstance(v, _CONTAINERS) and _too_deep(v):",
            "    for p, v in arguments.items():\n"
            "        top = (props.get(p) or {}).get('maximum') if isinstance(props.get(p), dict) else None\n"
            "        if isinstance(v, int) and isinstance(top, int) and v > top:\n"
            "            d.out_of_range.append(p)\n"
            "            continue\n"
            "        if isinstance(v, _CONTAINERS) and _too_deep(v):",
        )
    ],
}  # fmt: skip

TEMPLATE = "The values for degrees are outside the range the schema allows."
THERMOSTAT = {
    "name": "set_thermostat",
    "description": "Set the thermostat",
    "parameters": {
        "type": "object",
        "properties": {"degrees": {"type": "integer", "maximum": 28}},
        "required": ["degrees"],
    },
}
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
QUERY = "Set the thermostat to 30 degrees, or to 25 if 30 is too hot."


def _call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``src/`` copied, the kind added by the edits above; fails unless exactly the two files
    changed."""
    copy = tmp_path_factory.mktemp("kind") / "src"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for rel, edits in EDITS.items():
        path = copy / rel
        text = path.read_text(encoding="utf-8")
        for old, new in edits:
            assert text.count(old) == 1, (rel, old)
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    changed = sorted(
        str(p.relative_to(copy))
        for p in copy.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p)
        if not filecmp.cmp(p, SRC / p.relative_to(copy), shallow=False)
    )
    assert changed == sorted(EDITS)
    return copy


def _env(copy: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(copy)}


def _callscope(copy: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from callscope.cli.main import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(copy), timeout=600, cwd=cwd)


def _python(copy: Path, script: str, *args: str) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True, text=True, env=_env(copy), timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_verdict_and_its_summary(copy: Path, tmp_path: Path) -> None:
    row = {"id": "t", "query": QUERY, "functions": [THERMOSTAT], "output": json.loads(
        _call("set_thermostat", degrees=30))}  # fmt: skip
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    res = _callscope(copy, "score", str(rows), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.splitlines()[0])
    assert (out["stage"], out["calls"][0]["kinds"], out["fix"]) == (3, ["out_of_range"], TEMPLATE)
    # the stage summary (stderr) counts the row at stage 3
    assert re.search(r"3 grounding\s*│\s*1\s*│", res.stderr), res.stderr


GUARD = """
import json, sys
from callscope.guard.check import check
from callscope.report.figures import SEGMENT_COLORS
from callscope.report.flow import SEGMENT_LABELS, SEGMENT_STAGE
tools = [{"type": "function", "function": json.loads(sys.argv[1])}]
v = check({"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
    "function": {"name": "set_thermostat", "arguments": json.dumps({"degrees": 30})}}]},
    tools, [{"role": "user", "content": sys.argv[2]}])
print(json.dumps({"reasons": v.calls[0].reasons, "stage": v.stage,
                  "segment": [SEGMENT_STAGE["out_of_range"], SEGMENT_LABELS["out_of_range"]],
                  "colour": SEGMENT_COLORS["out_of_range"].startswith("#")}))
"""


def test_the_guard_and_the_call_flow(copy: Path) -> None:
    seen = _python(copy, GUARD, json.dumps(THERMOSTAT), QUERY)
    assert seen == {
        "reasons": ["out_of_range: degrees=30 is outside the range its schema states"],
        "stage": 3,
        "segment": [3, "3: value out of range"],
        "colour": True,
    }


@pytest.fixture(scope="module")
def run_dir(copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``callscope run`` (direct and gated, replayed answers) and ``callscope report`` in the
    copy: case ``t1`` first answers 30 (over the maximum 28), then 25 (stated, in range);
    ``w1`` passes."""
    tmp = tmp_path_factory.mktemp("run")
    cases = [
        {"id": "t1", "query": QUERY, "functions": [THERMOSTAT, WEATHER],
         "gold": {"name": "set_thermostat", "arguments": {"degrees": 25}}},
        {"id": "w1", "query": "What is the weather in Paris?", "functions": [THERMOSTAT, WEATHER],
         "gold": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    ]  # fmt: skip
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    replay = [
        {"case_id": "t1", "outputs": [_call("set_thermostat", degrees=30)]},
        {"case_id": "t1", "mode": "gated", "outputs": [
            _call("set_thermostat", degrees=30), _call("set_thermostat", degrees=25)]},
        {"case_id": "w1", "outputs": [_call("get_weather", city="Paris")]},
    ]  # fmt: skip
    (tmp / "replay.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replay))
    run = tmp / "run"
    res = _callscope(
        copy, "run", "cases.jsonl", "-m", "replay:replay.jsonl", "-o", str(run),
        "--modes", "direct,gated", "--max-attempts", "3", "--quiet", cwd=tmp,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = _callscope(copy, "report", str(run), cwd=tmp)
    assert res.returncode == 0, res.stderr
    return run


def _page_data(run_dir: Path) -> dict:
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert m, "no embedded case data"
    return json.loads(m.group(1))


def test_the_gated_correction_and_every_table(run_dir: Path) -> None:
    data = _page_data(run_dir)
    gated = next(i for i in data["items"] if (i["case_id"], i["mode"]) == ("t1", "gated"))
    assert gated["kinds"] == ["out_of_range"]
    assert gated["solved_at"] == 2
    assert TEMPLATE in gated["attempts"][0]["feedback"]  # the feedback attempt 1 got
    tables = run_dir / "tables"
    with (tables / "failure_breakdown.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert "out_of_range" in rows[0]
    assert [(r["n"], r["stage3"], r["out_of_range"], r["n_out_of_range"]) for r in rows] == [
        ("2", "0.5", "0.5", "1")
    ]
    for ext in ("md", "tex"):
        assert "out\\_of\\_range" in (tables / f"failure_breakdown.{ext}").read_text() or (
            "out_of_range" in (tables / f"failure_breakdown.{ext}").read_text()
        )


def test_the_case_browser_data(run_dir: Path) -> None:
    data = _page_data(run_dir)
    entry = next(k for k in data["kinds"] if k["name"] == "out_of_range")
    assert (entry["stage"], entry["label"], entry["group"]) == (3, "value out of range", "unstated")
    first = next(i for i in data["items"] if (i["case_id"], i["mode"]) == ("t1", "direct"))
    assert first["attempts"][0]["row"]["out_of_range"] == ["degrees"]


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium")
def test_the_case_browser_renders_the_kind(run_dir: Path, tmp_path: Path) -> None:
    dom = dump_dom(run_dir / "report.html", tmp_path / "profile", "kind=out_of_range")
    assert re.search(r'<option value="out_of_range">out_of_range</option>', dom)
    shown = re.search(r'<p id="shown-count">([^<]*)</p>', dom)
    assert shown and shown.group(1) == "2 of 4 cases shown"
    assert "out_of_range=degrees" in dom


LEADERBOARD = """
import json, sys
from collections import Counter
import numpy as np
from callscope.benchmarks.bfcl.single_results import SingleTurnModel, StoredAnswer
from callscope.report.leaderboard import leaderboard_table
from callscope.runs.leaderboard import CaseTable, Vocabulary, diagnose_model
from callscope.runs.leaderboard_tree import LeaderboardRun
from callscope.types import Case
fn, query = json.loads(sys.argv[1]), sys.argv[2]
table = CaseTable.__new__(CaseTable)
table.cases = [Case(id="simple_python_0", query=query, functions=[fn],
                    gold=[{"name": fn["name"], "arguments": {"degrees": 25}}])]
table.index = {"simple_python_0": 0}
table.bfcl_version, table._names, table._back = "test", {}, {}
table._gold_flags, table.reference = None, None
answer = StoredAnswer("simple_python_0", "simple_python",
                      [{fn["name"]: json.dumps({"degrees": 30})}], None, True)
model = SingleTurnModel(model="m-FC", answers=[answer])
result = diagnose_model(model, table, Vocabulary(), checker=False)
run = LeaderboardRun([result], [], ["simple_python_0"], {}, "test", 0.0, 1)
t = leaderboard_table(run)
print(json.dumps({"unstated": bool(result.rows["unstated"][0]),
                  "column": t.rows[0][t.columns.index("unstated value %")]}))
"""


def test_the_leaderboard_columns(copy: Path) -> None:
    seen = _python(copy, LEADERBOARD, json.dumps(THERMOSTAT), QUERY)
    assert seen["unstated"] is True
    assert seen["column"].startswith("100.0")


def test_the_audit_runs_the_kinds_probe(copy: Path, tmp_path: Path) -> None:
    case = {"id": "t1", "query": QUERY, "functions": [THERMOSTAT, WEATHER],
            "gold": {"name": "set_thermostat", "arguments": {"degrees": 25}}}  # fmt: skip
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    res = _callscope(copy, "audit", "cases.jsonl", "-o", "out", "--grounding", "lexical",
                     cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    with (tmp_path / "out" / "audit.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "out_of_range"]
    assert rows  # per category and over all: one probe, flagged, at its stage
    assert {(r["polarity"], r["stage"], r["n"], r["flagged"], r["at_stage"]) for r in rows} == {
        ("positive", "3", "1", "1", "1")
    }
