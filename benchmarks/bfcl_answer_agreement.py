"""callscope's answer verdicts against BFCL's own checkers on BFCL's single-turn data (issue 28).

Two tables, from the installed bfcl-eval (``pip install --no-deps bfcl-eval==2026.3.23
mpmath==1.3.0``):

1. parallel, parallel_multiple, live_parallel, live_parallel_multiple: BFCL's
   ``parallel_function_checker_no_order`` against callscope's answer solve on the gold
   answers and on perturbed ones (a call dropped, duplicated, added; one value changed; calls
   reordered; values swapped between two calls), per perturbation and per category, then
   the data defects (gold answers BFCL itself rejects, left out) and every disagreement with
   its reason;
2. irrelevance, live_irrelevance, live_relevance: BFCL's ``relevance_file_runner`` verdict
   against callscope's on written answers (an abstention, empty answers, calls, an unclosed
   call, a broken call, a JSON call): agreement where BFCL decodes the answer, and where it
   does not, what callscope read (``broken``: the broken calls BFCL credits as abstentions).

``tests/test_bfcl_answer_agreement.py`` pins the counts this prints.

Usage: ``python benchmarks/bfcl_answer_agreement.py [--seed 0] [--json]``.
"""

from __future__ import annotations

import argparse
import json

from callscope.benchmarks.bfcl.answer_agreement import (
    ANSWER_PERTURBATION_KINDS,
    answer_agreement_report,
)
from callscope.benchmarks.bfcl.relevance_agreement import (
    RELEVANCE_ANSWER_KINDS,
    relevance_agreement_report,
)
from callscope.benchmarks.bfcl.single import (
    ANY_CALL_CATEGORIES,
    NO_CALL_CATEGORIES,
    PARALLEL_CATEGORIES,
    load_bfcl_detailed,
)
from callscope.core.table import Table


def parallel_tables(report: dict) -> list[Table]:
    kinds = Table(
        ["answer", "n", "agree", "disagree", "BFCL valid", "callscope solved", "agreement"],
        [
            [
                kind,
                row["total"],
                row["agree"],
                row["disagree"],
                row["bfcl_valid"],
                row["score_valid"],
                f"{row['agree'] / row['total']:.2%}" if row["total"] else "-",
            ]
            for kind, row in report["by_kind"].items()
        ]
        + [
            [
                "all",
                report["total"],
                report["agree"],
                report["disagree"],
                "",
                "",
                f"{report['agree'] / report['total']:.3%}",
            ]
        ],
        title="Parallel categories: BFCL parallel_function_checker_no_order vs callscope answer solve",
        align="lrrrrrr",
        note="skipped (kind does not apply): "
        + ", ".join(f"{k} {n}" for k, n in sorted(report["skipped"].items())),
    )
    cats = Table(
        ["category", "cases", "answers", "agree", "disagree"],
        [
            [c, r["cases"], r["total"], r["agree"], r["disagree"]]
            for c, r in report["by_category"].items()
        ],
        title="Per category",
        align="lrrrr",
    )
    defects = Table(
        ["id", "BFCL's error on the gold answer"],
        [[d["id"], d["error"][:160]] for d in report["data_defects"]],
        title="Data defects (gold answers BFCL rejects; left out)",
        empty="none",
    )
    disagreements = Table(
        ["id", "answer", "BFCL", "callscope", "reason"],
        [
            [d["id"], d["kind"], d["bfcl_valid"], d["score_valid"], d["reason"]]
            for d in report["disagreements"]
        ],
        title="Disagreements",
        empty="none",
    )
    return [kinds, cats, defects, disagreements]


def relevance_table(report: dict) -> Table:
    rows = []
    for category, table in report["by_category"].items():
        for kind in RELEVANCE_ANSWER_KINDS:
            r = table[kind]
            rows.append(
                [
                    category,
                    kind,
                    r.get("total", 0),
                    r.get("decoded", 0),
                    r.get("agree", 0),
                    r.get("disagree", 0),
                    r.get("not_decoded", 0),
                    r.get("not_decoded_agree", 0),
                    r.get("broken", 0),
                    r.get("callscope_calls", 0),
                    r.get("abstained", 0),
                    r.get("skipped", 0),
                ]
            )
    return Table(
        [
            "category",
            "answer",
            "n",
            "BFCL decodes",
            "agree",
            "disagree",
            "BFCL does not decode",
            "same credit",
            "callscope: broken",
            "callscope: calls",
            "callscope: abstained",
            "skipped",
        ],
        rows,
        title="Relevance categories: BFCL relevance_file_runner vs callscope",
        align="llrrrrrrrrrr",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    args = parser.parse_args()
    parallel = answer_agreement_report(
        load_bfcl_detailed(PARALLEL_CATEGORIES).cases, seed=args.seed
    )
    relevance = relevance_agreement_report(
        load_bfcl_detailed(NO_CALL_CATEGORIES + ANY_CALL_CATEGORIES).cases
    )
    if args.json:
        print(json.dumps({"parallel": parallel, "relevance": relevance}, indent=1, default=str))
        return
    for table in [*parallel_tables(parallel), relevance_table(relevance)]:
        print(table.to_markdown())
        print()
    reasons: dict[str, int] = {}
    for d in relevance["disagreements"]:
        key = f"{d['category']} / {d['kind']}: {d['reason']}"
        reasons[key] = reasons.get(key, 0) + 1
    print("Relevance disagreements by reason:")
    for key, n in reasons.items():
        print(f"- {key}: {n}")
    assert set(parallel["by_kind"]) == {"gold", *ANSWER_PERTURBATION_KINDS}


if __name__ == "__main__":
    main()
