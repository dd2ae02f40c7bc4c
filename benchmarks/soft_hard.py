"""Soft vs hard stage-3 drifts as a detector (issue 40): what the integrations act on.

Every integration (the Inspect approver, the Agents SDK guardrail, LiteLLM's ``repair`` and
``block``, ``callscope serve``) acts on a call exactly when the gated correction has something
to say (:func:`callscope.integrations.verdicts.acts_on`): any stage-1 or stage-2 failure, a
numeric or *hard* stage-3 drift; a *soft* drift alone is let through. So the soft/hard split
is a detector of its own. This script measures it the way the audit measures the cascade: on
BFCL single-call cases, the gold call in full and minimal form (negatives: an act is a false
alarm) and the audit's calls made wrong on purpose (:func:`callscope.saag.audit.positives`,
built only from a case whose minimal gold passes; positives: an act is a detection), per
grounding mode, under two soft rules side by side:

* ``paper``: soft when PartialRatio(v, Q) >= 60 (the SAAG paper's hard-drift boundary alone);
* ``callscope``: :func:`callscope.saag.grounding.soft_drift` (the paper's boundary and every
  word of the value stated, a near spelling of a stated word or the start of one; a word
  with a digit only as stated).

Columns per rule: ``flagged`` (the cascade fails the call, any kind), ``acted`` (the gate
acts on it), ``soft`` (flagged but let through as a soft drift alone), each a share with its
Wilson 95% interval.

    python benchmarks/soft_hard.py CASES.jsonl [--n 1911] [--grounding lexical,registry]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from callscope.cli.run import load_cases
from callscope.core.stats import rate_ci
from callscope.core.table import pct_ci
from callscope.saag import grounding as g
from callscope.saag.audit import KINDS, NEGATIVES, _values_by_param, gold_calls, positives
from callscope.saag.cascade import diagnose
from callscope.saag.gated import confident_kinds


def _paper_soft(value: str, text: str) -> bool:
    return g.partial_ratio(value, text) >= g.HARD_DRIFT_BELOW


RULES = {"paper": _paper_soft, "callscope": g.soft_drift}


def measure(cases, mode: str, rule: str) -> dict[str, Counter[str]]:
    """Per kind: ``n``, ``flagged``, ``acted``, ``soft`` counts under ``rule``."""
    saved = g.soft_drift
    g.soft_drift = RULES[rule]  # the cascade reads the rule from the module
    try:
        pool = _values_by_param(cases)
        out: dict[str, Counter[str]] = {}
        for case in cases:
            calls = gold_calls(case)
            if calls is None:
                continue

            def score(call, case=case):
                return diagnose(call, case.functions, case.query, grounding=mode)

            work = [(k, c) for k, c in zip(NEGATIVES, calls, strict=True)]
            if score(calls[1]).passed:
                work += [(k, c) for k, c, _ in positives(case, calls[1], pool, 0)]
            for kind, call in work:
                d = score(call)
                c = out.setdefault(kind, Counter())
                c["n"] += 1
                c["flagged"] += d.stage != 0
                acted = bool(confident_kinds(d))
                c["acted"] += acted
                c["soft"] += d.stage != 0 and not acted
        return out
    finally:
        g.soft_drift = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", type=Path)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--grounding", default="lexical,registry")
    args = ap.parse_args()
    cases = load_cases(args.cases)[0][: args.n]
    for mode in args.grounding.split(","):
        results = {rule: measure(cases, mode, rule) for rule in RULES}
        print(f"\n{mode} grounding, {len(cases)} cases (share, Wilson 95%)\n")
        print("| kind | measures | n | flagged | acted, paper rule | acted, callscope rule |")
        print("|---|---|---|---|---|---|")
        for kind in (*NEGATIVES, *KINDS):
            if kind not in results["callscope"]:
                continue
            cs, pp = results["callscope"][kind], results["paper"][kind]
            n = cs["n"]

            def cell(k: int, n: int = n) -> str:
                return pct_ci(*rate_ci(k, n))

            what = "false alarm" if kind in NEGATIVES else "detection"
            print(
                f"| {kind} | {what} | {n} | {cell(cs['flagged'])} | {cell(pp['acted'])} "
                f"| {cell(cs['acted'])} |"
            )


if __name__ == "__main__":
    main()
