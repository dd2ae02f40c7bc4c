"""Detector validity audit: how far the cascade's own diagnosis can be trusted on a benchmark.

Beyond the SAAG paper, which never measures its detectors. Every stage of the cascade is a
detector; on any cases with gold calls :func:`audit` builds

* *negatives*, calls known to be correct: the gold call in full (``gold_full``: every
  argument the gold gives) and minimal (``gold_minimal``: arguments BFCL's answer lets a
  model omit left out; for gold without acceptable sets, the same as full);
* *positives*, calls made wrong on purpose from the minimal gold, one per failure kind the
  cascade claims to detect (:data:`KINDS`): stage 1 ``misspelled_name``, ``other_registry_name``,
  ``invented_name``; stage 2 ``missing_required``, ``spurious_param``, ``drifted_param``;
  stage 3 ``unstated_string``, ``unstated_number``, ``other_case_value``, ``swapped_values``,
  ``truncated_string``, ``blanked_required`` (a required string argument set to ``""``: the
  registry mode reads ``""`` as "left out" only for optional parameters),

scores them all and reports, per kind (and per benchmark category), the *false-alarm rate*
on negatives (share flagged at any stage) and the *detection rate* on positives (share
flagged at any stage; ``at stage`` also gives the share flagged at the kind's own stage),
each with its Wilson 95% interval (:func:`callscope.core.stats.wilson`).

A positive is built only from a case whose minimal gold passes in the same mode, so a
detection is never a false alarm of the base call in disguise; positives that cannot be
built for a case (no string argument, one-function registry, ...) are skipped and counted
by ``n``. Every perturbation is deterministic for ``seed`` (``random.Random`` seeded with
the seed, the case id and the kind).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.stats import rate_ci
from callscope.core.table import Table, pct_ci
from callscope.core.table_formats import write_table
from callscope.records import Diagnosis
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.cascade import diagnose, find_spec, schema_params
from callscope.saag.groundings import Grounding, Judge, get_grounding
from callscope.types import Case, ToolCall

NEGATIVES: tuple[str, ...] = ("gold_full", "gold_minimal")
#: every positive kind and the cascade stage that claims to detect it
KINDS: dict[str, int] = {
    "misspelled_name": 1,
    "other_registry_name": 1,
    "invented_name": 1,
    "missing_required": 2,
    "spurious_param": 2,
    "drifted_param": 2,
    "unstated_string": 3,
    "unstated_number": 3,
    "other_case_value": 3,
    "swapped_values": 3,
    "truncated_string": 3,
    "blanked_required": 3,
}
_INVENTED_NAMES = (
    "quantum_ledger_sync",
    "fetch_orbital_manifest",
    "compose_weather_haiku",
    "zyxt_process_blob",
)
_UNSTATED_STRINGS = ("Zanzibar Quartz", "periwinkle_mode", "Vostok-7", "unknown_xyzzy")
_SPURIOUS_PARAM = "zq_extra_flag"
_DATE_LIKE = re.compile(r"\d{1,4}[-/.:]\d{1,2}")


@dataclass
class AuditRow:
    """One scored call of the audit."""

    case_id: str
    category: str
    kind: str
    positive: bool
    stage: int
    flagged: bool
    #: for a flagged negative, why (:func:`false_alarm_reason`); for a positive, the change
    detail: str = ""
    example: dict[str, Any] = field(default_factory=dict)


@dataclass
class AuditResult:
    """Every scored call of one audit in one grounding mode."""

    grounding: str
    seed: int
    rows: list[AuditRow]

    def summary(self, by_category: bool = False) -> list[dict[str, Any]]:
        """One dict per kind (and category): ``n``, ``flagged``, ``rate`` with Wilson bounds
        ``lo``/``hi``, and for positives ``at_stage`` (flagged at the kind's own stage)."""
        groups: dict[tuple[str, str], list[AuditRow]] = defaultdict(list)
        for r in self.rows:
            groups[(r.category if by_category else "all", r.kind)].append(r)
        order = {k: i for i, k in enumerate((*NEGATIVES, *KINDS))}
        out = []
        for (cat, kind), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
            k = sum(r.flagged for r in rows)
            rate, lo, hi = rate_ci(k, len(rows))
            entry: dict[str, Any] = {
                "grounding": self.grounding,
                "category": cat,
                "kind": kind,
                "polarity": "positive" if rows[0].positive else "negative",
                "stage": KINDS.get(kind),
                "n": len(rows),
                "flagged": k,
                "rate": rate,
                "lo": lo,
                "hi": hi,
            }
            if rows[0].positive:
                entry["at_stage"] = sum(r.stage == KINDS[kind] for r in rows)
            out.append(entry)
        return out

    def false_alarm_reasons(self, examples: int = 3) -> list[dict[str, Any]]:
        """Flagged minimal-gold calls grouped by reason, most frequent first, with examples."""
        groups: dict[str, list[AuditRow]] = defaultdict(list)
        for r in self.rows:
            if r.kind == "gold_minimal" and r.flagged:
                groups[r.detail].append(r)
        return [
            {"reason": reason, "count": len(rows), "examples": [r.example for r in rows[:examples]]}
            for reason, rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]

    def headline(self) -> str:
        """One line: false alarms on minimal gold and detection per stage."""
        s = {e["kind"]: e for e in self.summary()}
        neg = s.get("gold_minimal")
        if neg is None:
            return f"audit ({self.grounding} grounding): no gold calls"
        parts = [
            f"false alarms on gold {pct_ci(neg['rate'], neg['lo'], neg['hi'])}% (n={neg['n']})"
        ]
        for stage in (1, 2, 3):
            rows = [r for r in self.rows if r.positive and KINDS[r.kind] == stage]
            if rows:
                rate, lo, hi = rate_ci(sum(r.flagged for r in rows), len(rows))
                parts.append(f"detects stage-{stage} errors {pct_ci(rate, lo, hi)}%")
        return f"diagnosis audit ({self.grounding} grounding): " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounding": self.grounding,
            "seed": self.seed,
            "headline": self.headline(),
            "summary": self.summary(),
            "by_category": self.summary(by_category=True),
            "false_alarm_reasons": self.false_alarm_reasons(),
        }


# --------------------------------------------------------------------------- negatives


def gold_calls(case: Case) -> tuple[ToolCall, ToolCall] | None:
    """The case's gold call in full and minimal form (:func:`gold_call_forms`); ``None``
    without gold and for an answer gold (a list of calls, or ``[]``: the answer audit,
    :mod:`callscope.saag.answer_audit`, reads those)."""
    if not isinstance(case.gold, dict):
        return None
    return gold_call_forms(case.gold, case.functions)


def gold_call_forms(
    gold: dict[str, Any], functions: list[dict[str, Any]]
) -> tuple[ToolCall, ToolCall] | None:
    """One gold call ``{name, arguments, acceptable}`` in full and minimal form (``None`` when
    it is empty or its arguments are no object). Full: every argument the gold gives, and for a
    parameter only in ``acceptable`` its first non-empty value. Minimal drops every optional
    argument (not in the schema's ``required``) whose acceptable set holds ``""`` (BFCL: may
    be omitted)."""
    if not gold or not isinstance(gold.get("arguments", {}), dict):
        return None
    full = dict(gold.get("arguments") or {})
    acceptable = gold.get("acceptable") if isinstance(gold.get("acceptable"), dict) else {}
    for p, values in acceptable.items():  # acceptable-only gold: the first non-empty value
        if p not in full and isinstance(values, list):
            first = next((v for v in values if v != ""), None)
            if first is not None:
                full[p] = first
    spec = find_spec(functions, gold["name"]) or {}
    required = set(schema_params(spec)[0])
    minimal = {
        p: v
        for p, v in full.items()
        if p in required or not (isinstance(acceptable.get(p), list) and "" in acceptable[p])
    }
    return ToolCall(gold["name"], full), ToolCall(gold["name"], minimal)


def false_alarm_reason(d: Diagnosis, call: ToolCall) -> str:
    """Why a correct call was flagged: the stage, and at stage 3 the kind of value of the first
    flagged argument (``date/time``, ``compound``, ``string``, ``number``, ``container``)."""
    if d.stage in (1, 2):
        return f"stage {d.stage}: " + ", ".join(d.failure_kinds())
    flagged = d.flagged(3)[0]
    v = call.arguments.get(flagged)
    if isinstance(v, list | dict):
        kind = "container"
    elif g.is_number(v):
        kind = "number"
    elif isinstance(v, str) and _DATE_LIKE.search(v):
        kind = "date/time"
    elif isinstance(v, str) and ", " in v:
        kind = "compound"
    else:
        kind = "string"
    return f"stage 3: {kind} not grounded"


# --------------------------------------------------------------------------- positives


def _typo(word: str, rng: random.Random) -> str:
    """One adjacent swap inside ``word`` (a deletion for words that read the same swapped)."""
    if len(word) < 4:
        return word + word[-1]
    for _ in range(8):
        i = rng.randrange(1, len(word) - 2)
        out = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        if out != word:
            return out
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1 :]


def _unstated_number(v: int | float, stated: Sequence[int | float]) -> int | float:
    cand = v * 7 + 13 if isinstance(v, int) else round(v * 7.3 + 13.7, 3)
    while any(g.numbers_equal(cand, s) for s in stated):
        cand = cand * 3 + 1
    return cand


def _acceptable(case: Case, param: str) -> list[Any]:
    gold = case.gold or {}
    acc = gold.get("acceptable") if isinstance(gold.get("acceptable"), dict) else {}
    values = list(acc.get(param) or [])
    if param in (gold.get("arguments") or {}):
        values.append(gold["arguments"][param])
    return values


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return n.norm_words(a) == n.norm_words(b)
    if g.is_number(a) and g.is_number(b):
        return g.numbers_equal(a, b)
    return a == b


def _values_by_param(cases: Iterable[Case]) -> dict[str, list[tuple[str, Any]]]:
    out: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for case in cases:
        calls = gold_calls(case)
        if calls is None:
            continue
        for p, v in calls[1].arguments.items():
            if isinstance(v, str | int | float) and not isinstance(v, bool) and v != "":
                out[p].append((case.id, v))
    return out


def positives(
    case: Case, base: ToolCall, pool: dict[str, list[tuple[str, Any]]], seed: int
) -> list[tuple[str, ToolCall, str]]:
    """``(kind, call, change)`` for every kind of :data:`KINDS` that can be built from
    ``base`` (the case's minimal gold)."""
    out: list[tuple[str, ToolCall, str]] = []
    registry = [str(f.get("name")) for f in case.functions]
    spec = find_spec(case.functions, base.name) or {}
    required, admissible = schema_params(spec)
    args = base.arguments

    def rng(kind: str) -> random.Random:
        return random.Random(f"{seed}:{case.id}:{kind}")

    def add(kind: str, arguments: dict[str, Any], change: str, name: str | None = None) -> None:
        out.append((kind, ToolCall(name or base.name, arguments), change))

    name = _typo(base.name, rng("misspelled_name"))
    if name not in registry:
        add("misspelled_name", dict(args), f"name {base.name!r} -> {name!r}", name)
    others = [r for r in registry if r != base.name]
    if others:
        other = rng("other_registry_name").choice(others)
        add("other_registry_name", dict(args), f"name -> registered {other!r}", other)
    invented = next(x for x in _INVENTED_NAMES if x not in registry)
    add("invented_name", dict(args), f"name -> {invented!r}", invented)

    present_required = [p for p in required if p in args]
    if present_required:
        p = rng("missing_required").choice(present_required)
        add("missing_required", {k: v for k, v in args.items() if k != p}, f"dropped {p!r}")
    if _SPURIOUS_PARAM not in admissible:
        add("spurious_param", {**args, _SPURIOUS_PARAM: "x"}, f"added {_SPURIOUS_PARAM!r}")
    long_names = [p for p in args if len(p) >= 5]
    if long_names:
        p = rng("drifted_param").choice(long_names)
        typo = _typo(p, rng("drifted_param:typo"))
        if typo not in admissible:
            drifted = {(typo if k == p else k): v for k, v in args.items()}
            add("drifted_param", drifted, f"param {p!r} -> {typo!r}")

    strings = [p for p, v in args.items() if isinstance(v, str) and v.strip()]
    numbers = [p for p, v in args.items() if g.is_number(v)]
    if strings:
        p = rng("unstated_string").choice(strings)
        words = n.norm_words(case.query)
        new = next((s for s in _UNSTATED_STRINGS if not n.words_state(s, words)), None)
        if new is not None:
            add("unstated_string", {**args, p: new}, f"{p}: {args[p]!r} -> {new!r}")
    if numbers:
        p = rng("unstated_number").choice(numbers)
        new_num = _unstated_number(args[p], n.number_evidence(case.query))
        add("unstated_number", {**args, p: new_num}, f"{p}: {args[p]!r} -> {new_num!r}")
    candidates = []
    for p, v in args.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            continue
        acceptable = _acceptable(case, p)
        for other_id, ov in pool.get(p, ()):
            if other_id == case.id or type(ov) is not type(v):
                continue
            if any(_same(ov, a) for a in acceptable) or g.exact_match(ov, case.query):
                continue
            candidates.append((p, ov))
    if candidates:
        p, ov = rng("other_case_value").choice(candidates)
        add("other_case_value", {**args, p: ov}, f"{p}: {args[p]!r} -> {ov!r} (another case)")
    pairs = [
        (a, b)
        for i, a in enumerate(args)
        for b in list(args)[i + 1 :]
        if type(args[a]) is type(args[b])
        and isinstance(args[a], str | int | float)
        and not isinstance(args[a], bool)
        and not _same(args[a], args[b])
    ]
    if pairs:
        a, b = rng("swapped_values").choice(pairs)
        add("swapped_values", {**args, a: args[b], b: args[a]}, f"swapped {a!r} and {b!r}")
    long_strings = [p for p in strings if len(args[p].strip()) >= 6]
    if long_strings:
        p = rng("truncated_string").choice(long_strings)
        cut = args[p].strip()[: len(args[p].strip()) // 2]
        add("truncated_string", {**args, p: cut}, f"{p}: {args[p]!r} -> {cut!r}")
    blankable = [p for p in present_required if p in strings]
    if blankable:
        p = rng("blanked_required").choice(blankable)
        add("blanked_required", {**args, p: ""}, f"{p}: {args[p]!r} -> ''")
    return out


# --------------------------------------------------------------------------- audit


def audit(
    cases: Sequence[Case],
    *,
    grounding: str | Grounding | None = None,
    seed: int = 0,
    judge: Judge | None = None,
) -> AuditResult:
    """Audit the cascade on ``cases`` (those without a gold call are skipped) in one
    grounding mode; see the module doc for what is built and measured."""
    mode = get_grounding(grounding)
    pool = _values_by_param(cases)
    rows: list[AuditRow] = []
    for case in cases:
        calls = gold_calls(case)
        if calls is None:
            continue
        category = str(case.meta.get("category") or case.meta.get("source") or "all")

        def score(call: ToolCall, case: Case = case) -> Diagnosis:
            return diagnose(call, case.functions, case.query, grounding=mode, judge=judge)

        base_ok = False
        for kind, call in zip(NEGATIVES, calls, strict=True):
            d = score(call)
            flagged = d.stage != 0
            detail = false_alarm_reason(d, call) if flagged else ""
            example = {"id": case.id, "query": case.query[:300], "call": call.to_dict()}
            if flagged:
                example["flagged"] = d.flagged(3) + d.flagged(2)
            rows.append(AuditRow(case.id, category, kind, False, d.stage, flagged, detail, example))
            if kind == "gold_minimal":
                base_ok = not flagged
        if not base_ok:
            continue
        for kind, call, change in positives(case, calls[1], pool, seed):
            d = score(call)
            rows.append(AuditRow(case.id, category, kind, True, d.stage, d.stage != 0, change))
    return AuditResult(mode.name, seed, rows)


def audit_table(results: Sequence[AuditResult]) -> Table:
    """Kinds down, one ``rate [lo, hi] (n)`` column per grounding mode side by side."""
    by_mode = [{e["kind"]: e for e in r.summary()} for r in results]
    kinds = [k for k in (*NEGATIVES, *KINDS) if any(k in m for m in by_mode)]
    rows = []
    for kind in kinds:
        row: list[Any] = [
            kind,
            "false alarm" if kind in NEGATIVES else "detection",
            KINDS.get(kind, "-"),
        ]
        for m in by_mode:
            e = m.get(kind)
            row.append(f"{pct_ci(e['rate'], e['lo'], e['hi'])} (n={e['n']})" if e else "-")
        rows.append(row)
    return Table(
        ["kind", "measures", "stage", *(r.grounding for r in results)],
        rows,
        title="Detector validity audit",
        caption="False alarms on gold calls and detection of calls made wrong on purpose "
        "(share flagged at any stage, Wilson 95%).",
        name="audit",
        align="llr" + "r" * len(results),
    )


#: the columns of ``audit.csv`` (:func:`summary_table`)
SUMMARY_COLUMNS: tuple[str, ...] = (
    "grounding",
    "category",
    "kind",
    "polarity",
    "stage",
    "n",
    "flagged",
    "rate",
    "lo",
    "hi",
    "at_stage",
)


def summary_table(results: Sequence[AuditResult]) -> Table:
    """Every summary entry of ``results`` as a table (``audit.csv``): per mode the overall
    entries, then those per category; one row per kind, :data:`SUMMARY_COLUMNS` as columns
    (an entry's value with ``str``, a missing one empty)."""
    rows = [
        ["" if e.get(k) is None else str(e.get(k)) for k in SUMMARY_COLUMNS]
        for r in results
        for e in (*r.summary(), *r.summary(by_category=True))
    ]
    return Table(SUMMARY_COLUMNS, rows, name="audit")


def write_audit(
    results: Sequence[AuditResult], out_dir: Path, extra: dict[str, Any] | None = None
) -> dict[str, Path]:
    """``audit.json`` (every summary, per category, false alarms by reason with examples, and
    ``extra``), ``audit.csv`` (:func:`summary_table`, written by
    :func:`~callscope.core.table_formats.write_table`) and ``audit.md`` (:func:`audit_table`,
    the headlines and the false alarms by reason); returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: out_dir / f"audit.{k}" for k in ("json", "csv", "md")}
    payload = {"audits": [r.to_dict() for r in results], **(extra or {})}
    paths["json"].write_text(json.dumps(payload, indent=1, ensure_ascii=True) + "\n")
    write_table(summary_table(results), paths["csv"])
    md = [audit_table(results).to_markdown(), ""]
    for r in results:
        md.append(f"- {r.headline()}")
    for r in results:
        reasons = r.false_alarm_reasons()
        if reasons:
            md += ["", f"False alarms on minimal gold by reason ({r.grounding} grounding):", ""]
            md += [f"- {x['reason']}: {x['count']}" for x in reasons]
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    return paths


def audit_counts(result: AuditResult) -> Counter[tuple[str, bool]]:
    """``(kind, flagged) -> count``: the raw counts a test can pin."""
    return Counter((r.kind, r.flagged) for r in result.rows)
