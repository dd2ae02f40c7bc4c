"""The cascade as a detector, on real model answers: each run store's first answers (attempt 1
of the ``direct`` mode) re-scored with today's cascade and set against BFCL's acceptable
values (read-only).

* **false alarm**: BFCL accepts the answer (gold name, every argument acceptable, nothing
  missing or extra) yet the cascade fails it;
* **miss**: BFCL rejects an answer the cascade passes (parsed, right registry, grounded).

Each flagged answer is listed with the arguments stage 3 flagged and their values, so a rule
can be fixed and the count re-measured.

    python benchmarks/first_answer_alarms.py experiments/results/paper-0.5b-registry ...
        [--grounding registry|lexical] [--list]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from callscope.parse import parse_output
from callscope.saag.extrinsic import is_correct
from callscope.saag.score import score_parsed
from callscope.store.run_store import RunStore
from callscope.types import ModelReply


def first_answers(store: RunStore):
    """``(model, case, attempt 1's reply parsed, its stored score row)`` per case with a
    direct-mode first attempt."""
    cases = {c.id: c for c in store.iter_cases()}
    for o in store.outcomes():
        if o["mode"] != "direct" or o["case_id"] not in cases:
            continue
        attempts = store.attempts(o["model"], o["case_id"], "direct", with_messages=False)
        if not attempts or attempts[0].get("row") is None:
            continue  # a model error: no answer to judge
        a = attempts[0]
        parsed = parse_output(ModelReply.from_dict(a["reply"] or {}))  # as the loop reads it
        yield o["model"], cases[o["case_id"]], parsed, a["row"]


def flagged(d) -> str:
    if d.stage == 1:
        return "stage 1" + (f" (nearest {d.nearest})" if d.nearest else "")
    if d.stage == 2:
        return f"stage 2 missing={d.missing} drifted={d.drifted} spurious={d.spurious}"
    return "stage 3 " + ", ".join(
        f"{k}:{','.join(getattr(d, k))}" for k in ("numeric", "hard", "soft") if getattr(d, k)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--grounding", default=None, help="stage-3 mode (default: the store's runs')")
    ap.add_argument("--list", action="store_true", help="list every false alarm and miss")
    args = ap.parse_args()
    for path in args.stores:
        store = RunStore(path)
        counts = {"acceptable": 0, "false_alarm": 0, "rejected": 0, "miss": 0}
        listed: list[str] = []
        grounding = args.grounding
        for model, case, parsed, stored in first_answers(store):
            grounding = args.grounding or stored.get("grounding") or "registry"
            d, _ = score_parsed(parsed, case, grounding=grounding)
            ok = case.gold is not None and is_correct(parsed.first, case.gold, case.functions)
            call = parsed.first.to_dict() if parsed.first else parsed.error
            if ok:
                counts["acceptable"] += 1
                if not d.passed:
                    counts["false_alarm"] += 1
                    listed.append(f"  false alarm {model} {case.id}: {flagged(d)}\n    {call}")
            else:
                counts["rejected"] += 1
                if d.passed:
                    counts["miss"] += 1
                    listed.append(f"  miss {model} {case.id}: {call}\n    gold {case.gold}")
        fa, n_ok = counts["false_alarm"], counts["acceptable"]
        miss, n_bad = counts["miss"], counts["rejected"]
        print(
            f"{path} [{grounding}]: false alarms {fa}/{n_ok} acceptable"
            f" ({fa / n_ok if n_ok else 0:.1%}); misses {miss}/{n_bad} rejected"
            f" ({miss / n_bad if n_bad else 0:.1%})"
        )
        if args.list:
            print("\n".join(listed))
        store.close()


if __name__ == "__main__":
    main()
