"""The JSON the report's case browser renders: every SAAG outcome with all its attempts, and
the one safe way to put JSON inside a ``<script>`` block (:func:`json_for_script`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from callscope.report import aggregate as agg
from callscope.saag.metrics import METRIC_SPECS
from callscope.store.run_store import RunStore


def _attempt_record(a: dict[str, Any]) -> dict[str, Any]:
    reply = a.get("reply") or {}
    row = a.get("row")
    diag = a.get("diagnosis") or {}
    if row is not None:
        row = {**row, **{k: diag.get(k, []) for k in ("numeric", "hard", "soft")}}
    return {
        "attempt": a.get("attempt"),
        "text": reply.get("text") or "",
        "tool_calls": reply.get("tool_calls"),
        "parsed": a.get("parsed") or [],
        "parse_error": (row or {}).get("parse_error"),
        "row": row,
        "feedback": a.get("feedback"),
        "error": a.get("error"),
        "error_kind": a.get("error_kind"),
    }


def case_data(run_dir: str | Path, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON the case browser renders: ``cases`` (query, registry, gold, scale by id),
    ``items`` (one per outcome, with every attempt), the filter choices and ``metrics``, the
    metric specs (:data:`callscope.saag.metrics.METRIC_SPECS`) whose labels and stages the
    page shows."""

    store = RunStore(run_dir)
    try:
        cases = {
            c.id: {
                "query": c.query,
                "functions": c.functions,
                "gold": c.gold,
                "scale": agg.scale_label(c.scale),
            }
            for c in store.cases()
        }
        items = []
        for o in outcomes:
            attempts = store.attempts(o["model"], o["case_id"], o["mode"])
            stage = agg.first_stage(o)
            items.append(
                {
                    "model": o["model"],
                    "case_id": o["case_id"],
                    "mode": o["mode"],
                    "scale": agg.scale_label(o.get("scale")),
                    "stage": "error"
                    if stage == "error"
                    else ("0" if stage == "passed" else stage[-1]),
                    "kinds": agg.first_kinds(o),
                    "result": "error"
                    if agg.is_error(o)
                    else ("solved" if o.get("solved_at") is not None else "unsolved"),
                    "solved_at": o.get("solved_at"),
                    "n_attempts": o.get("n_attempts"),
                    "error": o.get("error"),
                    "error_kind": o.get("error_kind"),
                    "attempts": [_attempt_record(a) for a in attempts],
                }
            )
    finally:
        store.close()
    scales = sorted({i["scale"] for i in items}, key=agg.scale_sort_key)
    return {
        "cases": cases,
        "items": items,
        "models": sorted({i["model"] for i in items}),
        "modes": sorted({i["mode"] for i in items}, key=agg.mode_sort_key),
        "scales": scales,
        "kinds": list(agg.FAILURE_KINDS),
        "metrics": [m.to_dict() for m in METRIC_SPECS],
    }


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
    text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, default=str)
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text
