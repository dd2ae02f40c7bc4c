"""Write a callscope multi-turn run as BFCL result and score files, so BFCL's own tooling (and
``callscope calibrate from-bfcl``) can read it.

Layout (BFCL's, ``bfcl generate`` / ``bfcl evaluate``)::

    <out>/result/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_result.json
    <out>/score/<model>/multi_turn/BFCL_v4_multi_turn_<cat>_score.json

``<model>`` is :func:`~callscope.runs.calibrate.model_slug` of the model spec. Result lines are
``{"id", "result"}`` with ``result`` per turn (one list per turn of the case, reached or not)
the model's emissions in order, as BFCL stores a function-calling model's: a step that made
native calls is ``[{tool_name: "<json arguments>"}]``, any other step its text (prompt mode:
the raw text BFCL would decode). Probe placeholders are not model emissions and are left
out, as the diagnostics leave them out. The score file's first line is BFCL's header
``{"accuracy", "correct_count", "total_count"}``; each failed case follows as
``{"id", "valid": false, "error": {...}}`` with callscope's verdict reason.

Cases that ended in a backend error are left out (as GAR and Acc leave them out), so that
reading the files back gives the run's numbers. One thing BFCL's format cannot hold: the
text of a step that also made native calls (BFCL's FC files keep the calls only); such steps
are counted in :attr:`BfclExport.text_dropped`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.benchmarks.bfcl.categories import category_key, short_category
from callscope.benchmarks.bfcl.results import result_file_name, score_file_name
from callscope.runs.calibrate import model_slug
from callscope.runs.calibration_store import BASELINE, backend_error
from callscope.store.run_store import RunStore


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _call_name_args(call: Any) -> tuple[str, Any]:
    fn = call.get("function", call) if isinstance(call, dict) else {}
    return str(fn.get("name", "")), fn.get("arguments", {})


def step_emission(step: dict[str, Any]) -> Any:
    """One stored step as BFCL saves it: ``[{name: json args}]`` when it made native calls,
    else its text."""
    calls = step.get("tool_calls")
    if calls:
        return [{name: _arguments_text(args)} for name, args in map(_call_name_args, calls)]
    return step.get("text") or ""


def bfcl_result_of(trajectory: dict[str, Any], n_turns: int) -> list[list[Any]]:
    """Per turn (``n_turns`` lists), the model's emissions of a stored trajectory."""
    turns: list[list[Any]] = [[] for _ in range(n_turns)]
    for turn in trajectory.get("turns") or []:
        idx = int(turn["index"])
        if idx < n_turns:
            turns[idx].extend(
                step_emission(s) for s in turn.get("steps") or [] if not s.get("placeholder")
            )
    return turns


@dataclass
class BfclExport:
    """What :func:`export_bfcl` wrote: the files, cases per (model, category), cases left
    out for a backend error, and steps whose text BFCL's format could not hold."""

    files: list[Path] = field(default_factory=list)
    cases: dict[tuple[str, str], int] = field(default_factory=dict)
    skipped_errors: int = 0
    text_dropped: int = 0
    models: dict[str, str] = field(default_factory=dict)


def export_bfcl(
    run_dir: str | Path,
    out: str | Path,
    *,
    models: Sequence[str] | None = None,
    probe: str = BASELINE,
    n_turns: dict[str, int] | None = None,
) -> BfclExport:
    """Write the ``probe`` conversations of ``models`` (default: every model with such a run)
    in the store of ``run_dir`` as BFCL result and score files under ``out`` (see the module
    docstring). ``n_turns``: turns per case id (default: the turns of the stored trajectory,
    at least the highest turn index reached + 1; BFCL's cases give the exact count)."""
    out = Path(out)
    store = RunStore(run_dir)
    try:
        convs = list(store.conversations(None, probe))
    finally:
        store.close()
    wanted = set(models) if models is not None else None
    done = BfclExport()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for conv in convs:
        if wanted is not None and conv["model"] not in wanted:
            continue
        if backend_error(conv["trajectory"]) is not None:
            done.skipped_errors += 1
            continue
        groups.setdefault((str(conv["model"]), short_category(conv["category"])), []).append(conv)
    for (model, cat), items in sorted(
        groups.items(), key=lambda kv: (kv[0][0], category_key(kv[0][1]))
    ):
        slug = model_slug(model)
        done.models[model] = slug
        items.sort(key=lambda c: _id_key(c["case_id"]))
        lines, failures = [], []
        for conv in items:
            traj = conv["trajectory"]
            reached = [int(t["index"]) for t in traj.get("turns") or []]
            turns = (n_turns or {}).get(conv["case_id"]) or (max(reached) + 1 if reached else 0)
            for turn in traj.get("turns") or []:
                done.text_dropped += sum(
                    bool(s.get("tool_calls")) and bool((s.get("text") or "").strip())
                    for s in turn.get("steps") or []
                    if not s.get("placeholder")
                )
            lines.append({"id": conv["case_id"], "result": bfcl_result_of(traj, turns)})
            if not conv["passed"]:
                verdict = conv.get("verdict") or {}
                failures.append(
                    {
                        "id": conv["case_id"],
                        "model_name": slug,
                        "test_category": f"multi_turn_{cat}",
                        "valid": False,
                        "error": {
                            "error_message": str(verdict.get("reason") or "failed"),
                            "error_type": verdict.get("error_type") or "multi_turn:failed",
                        },
                    }
                )
        correct = len(items) - len(failures)
        header = {
            "accuracy": correct / len(items),
            "correct_count": correct,
            "total_count": len(items),
        }
        res = out / "result" / slug / "multi_turn" / result_file_name(cat)
        sco = out / "score" / slug / "multi_turn" / score_file_name(cat)
        for path, rows in ((res, lines), (sco, [header, *failures])):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
            done.files.append(path)
        done.cases[(model, cat)] = len(items)
    return done


def _id_key(case_id: str) -> tuple[str, int]:
    """``multi_turn_base_10`` after ``multi_turn_base_9`` (BFCL's file order)."""
    head, _, tail = case_id.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (case_id, -1)
