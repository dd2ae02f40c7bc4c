"""The JSON the report's case browser renders: the SAAG outcomes with all their attempts (at
most :data:`MAX_CASES_PER_GROUP` per model and mode), and the one safe way to put JSON inside
a ``<script>`` block (:func:`json_for_script`)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from callscope.records import STAGES, FailureKind
from callscope.report.facts import OutcomeFacts, Outcomeish, as_facts
from callscope.report.outcome import mode_sort_key, scale_label, scale_sort_key
from callscope.saag.metrics import METRIC_SPECS
from callscope.store.run_store import RunStore

#: the most characters of one reply text the case browser shows (issue 29: a 5 MB reply made a
#: 79 MB page); the rest is named by its length, the run store keeps it whole
MAX_TEXT_SHOWN = 20_000


def shown_text(text: str, limit: int = MAX_TEXT_SHOWN) -> str:
    """``text`` as the case browser shows it: whole up to ``limit`` characters, else its
    first ``limit`` and how many more there are.

    >>> shown_text("abcdef", 4)
    'abcd\\n[... 2 more characters not shown; the run store keeps the whole text]'
    """
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return f"{text[:limit]}\n[... {more:,} more characters not shown; the run store keeps the whole text]"


def _attempt_record(a: dict[str, Any]) -> dict[str, Any]:
    reply = a.get("reply") or {}
    row = a.get("row")
    diag = a.get("diagnosis") or {}
    if row is not None:  # every kind's list the score row leaves out, from the stored verdict
        row = {**row, **{k.value: diag.get(k.value, []) for k in FailureKind if k.value not in row}}
        if diag.get("evidence"):  # issue 37: which library grounded which value
            row["evidence"] = diag["evidence"]
    return {
        "attempt": a.get("attempt"),
        "text": shown_text(reply.get("text") or ""),
        "tool_calls": reply.get("tool_calls"),
        "parsed": a.get("parsed") or [],
        "parse_error": (row or {}).get("parse_error"),
        "row": row,
        "feedback": a.get("feedback"),
        "error": a.get("error"),
        "error_kind": a.get("error_kind"),
    }


#: the most outcomes of one (model, mode) the case browser holds (the first in the run's
#: case order); the page says so when a run has more. The tables and figures count them all.
MAX_CASES_PER_GROUP = 200


def case_data(
    run_dir: str | Path,
    outcomes: Iterable[Outcomeish],
    cap: int = MAX_CASES_PER_GROUP,
) -> dict[str, Any]:
    """The JSON the case browser renders: ``items`` (one per outcome, with every attempt; at
    most ``cap`` per model and mode, the first in ``outcomes``' order), ``cases`` (query,
    registry, gold, scale by id, for the cases of ``items``, in the store's order), the
    filter choices and ``metrics``, the metric specs
    (:data:`callscope.saag.metrics.METRIC_SPECS`) whose labels and stages the page shows.
    When some model and mode has more than ``cap`` outcomes, ``note`` says how many the page
    holds. Memory: what the page holds, whatever the size of the store."""

    total: Counter[tuple[str, str]] = Counter()
    shown: list[OutcomeFacts] = []
    for f in as_facts(outcomes):
        total[f.model, f.mode] += 1
        if total[f.model, f.mode] <= cap:
            shown.append(f)
    store = RunStore(run_dir)
    try:
        items = []
        for f in shown:
            # the attempts as the tables read them (the store's versioned reader)
            attempts = store.read_attempts(f.model, f.case_id, f.mode)
            stage = f.first_stage
            items.append(
                {
                    "model": f.model,
                    "case_id": f.case_id,
                    "mode": f.mode,
                    "scale": f.scale,
                    "stage": "error"
                    if stage == "error"
                    else ("0" if stage == "passed" else stage[-1]),
                    "kinds": [k.value for k in f.first_kinds],
                    "result": "error"
                    if f.error
                    else ("solved" if f.solved_at is not None else "unsolved"),
                    "solved_at": f.solved_at,
                    "n_attempts": f.n_attempts,
                    "error": f.error_text,
                    "error_kind": f.error_kind,
                    "attempts": [_attempt_record(a) for a in attempts],
                }
            )
        wanted = {f.case_id for f in shown}
        cases = {
            c.id: {
                "query": c.query,
                "functions": c.functions,
                "gold": c.gold,
                "scale": scale_label(c.scale),
            }
            for c in store.iter_cases()
            if c.id in wanted
        }
    finally:
        store.close()
    scales = sorted({i["scale"] for i in items}, key=scale_sort_key)
    data: dict[str, Any] = {
        "cases": cases,
        "items": items,
        "models": sorted({i["model"] for i in items}),
        "modes": sorted({i["mode"] for i in items}, key=mode_sort_key),
        "scales": scales,
        # the kind table and the stage vocabulary the page renders from (report.js re-types
        # no kind's or stage's name)
        "kinds": kind_table(),
        "cascade": [
            {"number": s.number, "key": s.key, "segment": s.segment}
            for s in STAGES
            if s.number is not None
        ],
        # the stage filter's choices, from the one vocabulary (records.STAGES), not re-typed
        "stages": [
            [str(s.number), "passed" if s.number == 0 else f"stage {s.number} ({s.key})"]
            for s in STAGES
            if s.number is not None
        ],
        "metrics": [m.to_dict() for m in METRIC_SPECS],
    }
    if len(items) < sum(total.values()):
        data["note"] = (
            f"The case browser holds the first {cap:,} outcomes of each model and mode in the "
            f"run's case order ({len(items):,} of the run's {sum(total.values()):,} outcomes); "
            "the tables and figures count every outcome."
        )
    return data


def kind_table() -> list[dict[str, Any]]:
    """Every failure kind's entry as the pages embed it (:class:`callscope.records.KindInfo`:
    ``name``, ``stage``, ``label``, ``group``, ``corrects``), in cascade order.

    >>> kind_table()[0]
    {'name': 'wrong_name', 'stage': 1, 'label': 'name not in registry', 'group': None, 'corrects': True}
    """
    return [
        {"name": k.value, "stage": k.stage, "label": k.label, "group": k.group,
         "corrects": k.corrects}
        for k in FailureKind
    ]  # fmt: skip


def _plain(x: Any) -> bool:
    """``x`` holds no non-finite float and no non-string key: JSON takes it as it is."""
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in x.items())
    if isinstance(x, list | tuple):
        return all(_plain(v) for v in x)
    return True


def _finite(x: Any) -> Any:
    """``x`` with non-finite floats (which JSON cannot hold) written as strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def json_for_script(data: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">``: ``<``, ``>``, ``&``
    and the JS line separators are escaped as ``\\uXXXX`` (``json.loads`` reads it back)."""
    plain = data if _plain(data) else _finite(data)  # copied only where JSON needs it
    text = json.dumps(plain, ensure_ascii=False, allow_nan=False, default=str)
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text
