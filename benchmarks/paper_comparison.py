"""The issue-17 comparison, from whatever the run stores hold so far (read-only): one table per
model and grounding mode, the paired mode differences that decide the SAAG paper's findings,
and the time per case. Every number comes from :mod:`callscope.report.aggregate` (the same
functions ``callscope report`` uses) and :mod:`callscope.core.stats`.

    python benchmarks/paper_comparison.py experiments/results/paper-0.5b-registry ...

A finding is *confirmed* when its deciding 95% interval lies wholly on the paper's side,
*refuted* when wholly on the other side, *not resolved* otherwise.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from callscope.core.stats import bootstrap_ci
from callscope.report import aggregate as agg
from callscope.report.load import load_outcomes
from callscope.report.outcome import is_solved
from callscope.report.paired_modes import paired_modes
from callscope.store.run_store import RunStore


def ci(v: float, lo: float, hi: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if lo is None or math.isnan(lo):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


#: fewer pairs than this decide nothing (a bootstrap of a handful of values is too narrow)
MIN_PAIRS = 10


def verdict(lo: float, hi: float, paper_side: str, n: int) -> str:
    """``paper_side`` ``"<0"`` or ``">0"``: the sign the paper reports."""
    if lo is None or math.isnan(lo):
        return "not resolved (no data)"
    if n < MIN_PAIRS:
        return f"not resolved (n < {MIN_PAIRS})"
    if paper_side == ">0":
        return "confirmed" if lo > 0 else "refuted" if hi < 0 else "not resolved"
    return "confirmed" if hi < 0 else "refuted" if lo > 0 else "not resolved"


def case_seconds(
    run_dir: Path, outcomes: list[dict[str, Any]]
) -> tuple[dict[str, float], int, int]:
    """Model time per case id (attempt 1 once, plus every later attempt of every mode), the
    number of requests counted that way and how many of them the response cache answered
    (their time is the cache's, not the model's)."""
    store = RunStore(run_dir)
    out: dict[str, float] = {}
    requests = cached = 0
    try:
        for o in outcomes:
            attempts = store.attempts(o["model"], o["case_id"], o["mode"], with_messages=False)
            counted = attempts if o["case_id"] not in out else attempts[1:]
            out.setdefault(o["case_id"], 0.0)
            out[o["case_id"]] += sum(a["latency_s"] for a in counted)
            requests += len(counted)
            cached += sum(1 for a in counted if (a.get("reply") or {}).get("cached"))
    finally:
        store.close()
    return out, requests, cached


def complete_cases(outcomes: list[dict[str, Any]], modes: list[str]) -> list[dict[str, Any]]:
    """Only the cases every one of ``modes`` finished (so every mode is on the same cases)."""
    by: dict[str, set[str]] = {}
    for o in outcomes:
        by.setdefault(o["case_id"], set()).add(o["mode"])
    keep = {c for c, ms in by.items() if set(modes) <= ms}
    return [o for o in outcomes if o["case_id"] in keep and o["mode"] in modes]


def report(run_dir: Path, modes: list[str]) -> None:
    outcomes = complete_cases(load_outcomes(run_dir), modes)
    print(f"\n## {run_dir.name}\n")
    if not outcomes:
        print("no case finished in every mode yet")
        return
    cases = sorted({o["case_id"] for o in outcomes})
    scales = sorted({o["scale"] for o in outcomes})
    secs, requests, cached = case_seconds(run_dir, outcomes)
    mean_s = sum(secs.values()) / len(secs)
    print(
        f"{len(cases)} cases finished in all of {', '.join(modes)} (scales {scales}); "
        f"model time per case (all modes) {mean_s:.0f} s mean, {max(secs.values()):.0f} s max; "
        f"{requests} requests, {cached} of them answered by the response cache"
    )
    hl = agg.headline(outcomes).set_index("mode")
    rev = agg.revision_tradeoff(outcomes).set_index("mode")
    print(
        "\n| mode | n | solve | name acc | arg P | arg R | arg F1 | VHR | overcorrection "
        "| attempts to solve | attempts |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in modes:
        if m not in hl.index:
            continue
        r, v = hl.loc[m], rev.loc[m]
        at = [float(o["solved_at"]) for o in outcomes if o["mode"] == m and is_solved(o)]
        at_lo, at_hi = bootstrap_ci(agg.order_free(at))
        att = [float(o["n_attempts"]) for o in outcomes if o["mode"] == m]
        a_lo, a_hi = bootstrap_ci(agg.order_free(att))
        cells = [
            ci(r["solve_rate"], r["solve_lo"], r["solve_hi"]),
            ci(r["name_acc"], r["name_acc_lo"], r["name_acc_hi"]),
            ci(r["arg_precision"], r["arg_precision_lo"], r["arg_precision_hi"]),
            ci(r["arg_recall"], r["arg_recall_lo"], r["arg_recall_hi"]),
            ci(r["arg_f1"], r["arg_f1_lo"], r["arg_f1_hi"]),
            ci(r["vhr"], r["vhr_lo"], r["vhr_hi"]) + f" (n={int(r['vhr_n'])})",
            f"{int(v['overcorrected'])}/{int(v['n'])} = "
            + ci(v["overcorrection"], v["overcorrection_lo"], v["overcorrection_hi"]),
            ci(sum(at) / len(at), at_lo, at_hi) if at else "–",
            ci(sum(att) / len(att), a_lo, a_hi),
        ]
        print(f"| {m} | {int(r['n'])} | " + " | ".join(cells) + " |")
    findings = [
        ("structured lowers VHR vs direct", "direct", "structured", "vhr", "<0"),
        ("structured beats binary (solve)", "binary", "structured", "solve_rate", ">0"),
        (
            "precision improves (structured vs direct)",
            "direct",
            "structured",
            "arg_precision",
            ">0",
        ),
        ("F1 gains (structured vs direct; paper: mixed)", "direct", "structured", "arg_f1", ">0"),
        ("gated solves at least as often as structured", "structured", "gated", "solve_rate", ">0"),
        ("gated overcorrects less than structured", "structured", "gated", "overcorrection", "<0"),
        ("gated keeps name accuracy vs structured", "structured", "gated", "name_acc", ">0"),
        ("gated arg F1 vs structured", "structured", "gated", "arg_f1", ">0"),
    ]
    # the ablation: switching one ingredient off should cost something (the "paper side" is
    # the ingredient helping: more overcorrection and attempts, less solve / name acc / F1)
    ablation = (
        ("overcorrection", ">0"),
        ("solve_rate", "<0"),
        ("name_acc", "<0"),
        ("arg_f1", "<0"),
        ("attempts", ">0"),
    )
    for m in modes:
        if m.startswith("gated-"):
            for key, side in ablation:
                findings.append((f"ablation: {m} vs gated", "gated", m, key, side))
    print("\n| finding | pair | metric | n | diff [95% paired] | up / down | verdict |")
    print("|---|---|---|---|---|---|---|")
    for text, a, b, key, side in findings:
        p = paired_modes(outcomes, a, b)
        if p.empty:
            continue
        r = p.set_index("key").loc[key]
        print(
            f"| {text} | {b} − {a} | {r['metric']} | {int(r['n'])} | "
            f"{ci(r['diff'], r['lo'], r['hi'])} | {int(r['better'])} / {int(r['worse'])} | "
            f"{verdict(r['lo'], r['hi'], side, int(r['n']))} |"
        )
    for m in ("binary", "structured", "gated"):
        at = [float(o["solved_at"]) for o in outcomes if o["mode"] == m and is_solved(o)]
        later = [a for a in at if a > 1]
        if later:
            lo, hi = bootstrap_ci(agg.order_free(later))
            side = "confirmed" if hi <= 3 else "refuted" if lo > 3 else "not resolved"
            if len(later) < MIN_PAIRS:
                side = f"not resolved (n < {MIN_PAIRS})"
            print(
                f"\nconvergence within 2-3 attempts ({m}, cases solved after attempt 1): "
                f"mean {sum(later) / len(later):.2f} [{lo:.2f}, {hi:.2f}], n={len(later)}: {side}"
            )
        else:
            print(f"\nconvergence ({m}): no case solved after attempt 1: not resolved")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--modes", default="direct,binary,structured,gated")
    args = ap.parse_args()
    for run in args.runs:
        if (run / "store.sqlite").is_file():
            report(run, args.modes.split(","))
        else:
            print(f"\n## {run.name}\n\nnot started")


if __name__ == "__main__":
    main()
