"""The one detector audit engine: answers known to be right and answers made wrong on purpose,
judged by each detector, with false-alarm and detection rates (beyond the SAAG paper, which
never measures its detectors).

An audit is a *design* (:class:`AuditDesign`) run by :func:`run_audit`. A design says which
cases it reads and, for each, its *negatives* (answers known to be right) and its
*positives* (answers made wrong on purpose, one per kind it builds), each a
:class:`Probe`: a kind, an answer of 0..n calls and the change made. Two designs are
registered (:func:`callscope.saag.audit_designs.audit_designs`):

``calls``
    the single-call audit (:mod:`callscope.saag.audit`): a case with one gold call; every
    probe is an answer of one call, and the cascade is the detector. It is the one-call case
    of the engine: a one-call answer's cascade verdict is that call's diagnosis.
``answers``
    the answer audit (:mod:`callscope.saag.answer_audit`): a case whose gold is an answer (a
    list of calls, or ``[]``: no call is right); the cascade and the gold solve are the
    detectors.

The detectors (:data:`DETECTORS`), each flagging an answer on a case:

``cascade``
    gold-free: :func:`~callscope.saag.answer.diagnose_answer` in the audited grounding mode,
    told only whether the case expects a call (``Case.expects_call is not False``, as the
    loop tells it); flagged when the answer did not pass or repeats a call
    (:func:`~callscope.saag.answer.repeated_positions`). For an answer of one call: flagged
    when the call's stage is not 0.
``gold``
    extrinsic: :func:`~callscope.saag.answer.score_answer` against the case's gold answer;
    flagged when the answer is not solved. It reads no grounding mode.

Per kind and detector the audit reports the *false-alarm rate* on negatives and the
*detection rate* on positives (share flagged), each with its Wilson 95% interval
(:func:`callscope.core.stats.rate_ci`); for a kind the design claims a cascade stage for,
``at_stage`` (positives flagged at that stage); for a kind the design names
``confident_only``, a detection needs a flag a gated guard acts on (:attr:`Judged.confident`:
a soft drift alone is let through, so it is a miss); for the design's ``per_call`` negatives the
cascade's per-call false-alarm rate (calls flagged / calls; :data:`CALL_DETECTORS`). A
detector's positives are built only from a case whose base negatives (``AuditDesign.base``)
it did not flag, so a detection is never a false alarm of the base answer in disguise.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.stats import rate_ci
from callscope.core.table import Table, pct_ci
from callscope.core.table_formats import write_table
from callscope.parse.text import NO_CALL_FOUND
from callscope.records import Diagnosis
from callscope.saag import grounding as g
from callscope.saag.answer import (
    deciding_call,
    diagnose_answer,
    no_call_kind,
    repeated_positions,
    score_answer,
)
from callscope.saag.cascade import find_spec, spec_properties
from callscope.saag.gated import confident_kinds
from callscope.saag.groundings import Grounding, Judge, get_grounding
from callscope.saag.value_rules import outside_enum
from callscope.types import Case, ParseResult, ToolCall


@dataclass(frozen=True)
class Probe:
    """One answer to judge: its kind, its calls (``[]``: no call) and the change made (a
    positive's; ``""`` for a negative)."""

    kind: str
    calls: list[ToolCall]
    change: str = ""


@dataclass(frozen=True)
class Judged:
    """What one detector said of one answer."""

    flagged: bool
    #: the cascade's earliest failing stage (0: passed; the gold detector: 0)
    stage: int
    #: calls the detector flagged (the cascade: failing or repeating; the gold detector: 0)
    calls_flagged: int
    #: why it flagged (``""`` when it did not)
    reason: str
    #: the names of the flagged arguments of the deciding call (the cascade; stage 3, then 2)
    arguments: tuple[str, ...] = ()
    #: the flag is one a gated guard acts on: not a soft drift alone (the cascade:
    #: :func:`~callscope.saag.gated.confident_kinds` of a call, or a repeated call; the gold
    #: detector: every flag)
    confident: bool = True


@dataclass(frozen=True)
class AuditDesign:
    """What one audit builds and how it is presented (module docstring)."""

    name: str
    #: whether the design reads a case
    reads: Callable[[Case], bool]
    #: negative kinds, in report order
    negatives: tuple[str, ...]
    #: positive kinds, in report order, with the cascade stage each claims (``None``: none)
    kinds: Mapping[str, int | None]
    detectors: tuple[str, ...]
    #: the negatives positives are built from: a detector flagging one gets no positives
    base: frozenset[str]
    #: negatives whose per-call false-alarm rate is reported
    per_call: frozenset[str]
    #: whatever the positives need from all cases at once (a pool of values), made once
    prepare: Callable[[Sequence[Case]], Any]
    #: the case's negatives (``None``: the case has no usable gold)
    build_negatives: Callable[[Case], list[Probe] | None]
    #: the case's positives: ``(case, prepared, seed)``
    build_positives: Callable[[Case, Any, int], list[Probe]]
    headline: Callable[[AuditResult], str]
    #: output file stem and the JSON key of its list of audits
    stem: str
    json_key: str
    #: the CSV columns (:func:`summary_table`)
    columns: tuple[str, ...]
    title: str
    caption: str
    #: what the base negatives are called in the report ("minimal gold")
    base_label: str
    #: positive kinds a detector detects only with a confident flag (:attr:`Judged.confident`):
    #: a soft drift alone, which the gated guard lets through, is a miss
    confident_only: frozenset[str] = frozenset()

    @property
    def order(self) -> tuple[str, ...]:
        return (*self.negatives, *self.kinds)


@dataclass
class AuditRow:
    """One answer judged by one detector."""

    case_id: str
    category: str
    kind: str
    detector: str
    positive: bool
    flagged: bool
    #: the cascade's earliest failing stage (0: passed; the gold detector: 0)
    stage: int = 0
    calls: int = 0
    calls_flagged: int = 0
    #: for a positive, the change; for a flagged negative, why
    detail: str = ""
    #: for a flagged negative: the case, its request and the answer
    example: dict[str, Any] = field(default_factory=dict)


@dataclass
class AuditResult:
    """Every judged answer of one audit design in one grounding mode."""

    design: AuditDesign
    grounding: str
    seed: int
    rows: list[AuditRow]

    def summary(self, by_category: bool = False) -> list[dict[str, Any]]:
        """One dict per detector and kind (and category): ``n``, ``flagged``, ``rate`` with
        Wilson bounds ``lo``/``hi``; ``stage`` (the kind's claimed stage) and for a positive
        with one ``at_stage``; for a ``per_call`` negative ``calls``, ``calls_flagged`` and the
        per-call ``call_rate`` with ``call_lo``/``call_hi``."""
        design = self.design
        groups: dict[tuple[str, str, str], list[AuditRow]] = defaultdict(list)
        for r in self.rows:
            groups[(r.category if by_category else "all", r.detector, r.kind)].append(r)
        order = {k: i for i, k in enumerate(design.order)}
        out = []
        for (cat, det, kind), rows in sorted(
            groups.items(),
            key=lambda kv: (kv[0][0], design.detectors.index(kv[0][1]), order[kv[0][2]]),
        ):
            k = sum(r.flagged for r in rows)
            rate, lo, hi = rate_ci(k, len(rows))
            stage = design.kinds.get(kind)
            entry: dict[str, Any] = {
                "grounding": self.grounding,
                "category": cat,
                "detector": det,
                "kind": kind,
                "polarity": "positive" if rows[0].positive else "negative",
                "stage": stage,
                "n": len(rows),
                "flagged": k,
                "rate": rate,
                "lo": lo,
                "hi": hi,
            }
            if rows[0].positive and stage is not None:
                entry["at_stage"] = sum(r.flagged and r.stage == stage for r in rows)
            if kind in design.per_call and det in CALL_DETECTORS:
                calls = sum(r.calls for r in rows)
                flagged_calls = sum(r.calls_flagged for r in rows)
                c_rate, c_lo, c_hi = rate_ci(flagged_calls, calls)
                entry |= {
                    "calls": calls,
                    "calls_flagged": flagged_calls,
                    "call_rate": c_rate,
                    "call_lo": c_lo,
                    "call_hi": c_hi,
                }
            out.append(entry)
        return out

    def false_alarm_reasons(self, examples: int = 3) -> list[dict[str, Any]]:
        """Flagged base negatives grouped by detector and reason, most frequent first, with
        examples."""
        groups: dict[tuple[str, str], list[AuditRow]] = defaultdict(list)
        for r in self.rows:
            if r.kind in self.design.base and r.flagged:
                groups[(r.detector, r.detail)].append(r)
        return [
            {
                "detector": det,
                "reason": reason,
                "count": len(rows),
                "examples": [r.example for r in rows[:examples]],
            }
            for (det, reason), rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounding": self.grounding,
            "seed": self.seed,
            "headline": self.headline(),
            "summary": self.summary(),
            "by_category": self.summary(by_category=True),
            "false_alarm_reasons": self.false_alarm_reasons(),
            "false_alarms": [
                {"detector": r.detector, "kind": r.kind, "reason": r.detail, **r.example}
                for r in self.rows
                if not r.positive and r.flagged
            ][:20],
        }

    def headline(self) -> str:
        return self.design.headline(self)


# --------------------------------------------------------------------------- detectors

_DATE_LIKE = re.compile(r"\d{1,4}[-/.:]\d{1,2}")


def false_alarm_reason(
    d: Diagnosis, call: ToolCall, functions: Sequence[dict[str, Any]] = ()
) -> str:
    """Why a call was flagged: the stage, and at stage 3 the kind of value of the first
    flagged argument (``date/time``, ``compound``, ``string``, ``number``, ``container``), or
    ``value outside its enum`` when the parameter's schema (in ``functions``) rules the value
    out: on gold, the gold contradicts its own schema."""
    if d.stage in (1, 2):
        return f"stage {d.stage}: " + ", ".join(d.failure_kinds())
    param = d.flagged(3)[0]
    v = call.arguments.get(param)
    spec = find_spec(functions, call.name) if functions else None
    if outside_enum(v, spec_properties(spec).get(param) if spec else None):
        return "stage 3: value outside its enum"
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


def _parsed(calls: list[ToolCall]) -> ParseResult:
    return ParseResult(calls=tuple(calls)) if calls else ParseResult(error=NO_CALL_FOUND)


def cascade_detector(
    case: Case, calls: list[ToolCall], mode: Grounding, judge: Judge | None
) -> Judged:
    """The gold-free cascade on the answer (module docstring); the reason of a flag is the
    deciding call's (:func:`false_alarm_reason`), or ``repeated call``."""
    v = diagnose_answer(
        _parsed(calls),
        case.functions,
        case.query,
        grounding=mode,
        judge=judge,
        expect_call=case.expects_call is not False,
    )
    repeats = set(repeated_positions(calls))
    failing = {i for i, c in enumerate(v.checked) if c.diagnosis.stage and c.call}
    stage = v.stage or 0
    if v.passed:
        return Judged(bool(repeats), stage, len(repeats), "repeated call" if repeats else "")
    deciding = deciding_call(v)
    if deciding is None or deciding.call is None:
        return Judged(True, stage, len(failing | repeats), f"stage {stage}: no call")
    d = deciding.diagnosis
    reason = false_alarm_reason(d, deciding.call, case.functions)
    confident = bool(repeats) or any(
        confident_kinds(c.diagnosis) for c in v.checked if c.call and c.diagnosis.stage
    )
    flagged = (*d.flagged(3), *d.flagged(2))
    return Judged(True, stage, len(failing | repeats), reason, flagged, confident)


def gold_detector(
    case: Case, calls: list[ToolCall], mode: Grounding, judge: Judge | None
) -> Judged:
    """The answer solve against the case's gold answer (module docstring)."""
    s = score_answer(calls, case.gold or [], case.functions, no_call_kind(_parsed(calls)))
    return Judged(
        not s.solved, 0, 0, "" if s.solved else f"not solved: pairs correct {list(s.correct)}"
    )


#: every detector, by name (module docstring)
DETECTORS: dict[str, Callable[[Case, list[ToolCall], Grounding, Judge | None], Judged]] = {
    "cascade": cascade_detector,
    "gold": gold_detector,
}

#: the detectors that judge an answer call by call: only they have a per-call false-alarm rate
#: (the gold solve judges the answer whole, so its ``calls_flagged`` is always 0)
CALL_DETECTORS = frozenset({"cascade"})


# --------------------------------------------------------------------------- engine


def _category(case: Case) -> str:
    return str(case.meta.get("category") or case.meta.get("source") or "all")


def _rows(
    case: Case,
    probe: Probe,
    positive: bool,
    detectors: Sequence[str],
    mode: Grounding,
    judge: Judge | None,
    confident_only: frozenset[str] = frozenset(),
) -> list[AuditRow]:
    rows = []
    for det in detectors:
        j = DETECTORS[det](case, probe.calls, mode, judge)
        # a positive of a confident-only kind is missed by a soft drift alone
        flagged = j.flagged and (j.confident or probe.kind not in confident_only)
        example: dict[str, Any] = {}
        if j.flagged and not positive:
            example = {
                "id": case.id,
                "query": case.query[:300],
                "answer": [c.to_dict() for c in probe.calls],
            }
            if j.arguments:
                example["flagged"] = list(j.arguments)
        detail = probe.change if positive else j.reason
        rows.append(
            AuditRow(
                case.id, _category(case), probe.kind, det, positive, flagged,
                j.stage, len(probe.calls), j.calls_flagged, detail, example,
            )
        )  # fmt: skip
    return rows


def run_audit(
    cases: Sequence[Case],
    design: AuditDesign,
    *,
    grounding: str | Grounding | None = None,
    seed: int = 0,
    judge: Judge | None = None,
) -> AuditResult:
    """Run ``design`` on the cases it reads in one grounding mode (module docstring).
    Perturbations are deterministic for ``seed``."""
    mode = get_grounding(grounding)
    cases = [c for c in cases if design.reads(c)]
    prepared = design.prepare(cases)
    rows: list[AuditRow] = []
    for case in cases:
        negatives = design.build_negatives(case)
        if negatives is None:
            continue
        flagged_base: set[str] = set()
        for probe in negatives:
            judged = _rows(case, probe, False, design.detectors, mode, judge)
            rows += judged
            if probe.kind in design.base:
                flagged_base |= {r.detector for r in judged if r.flagged}
        clean = [d for d in design.detectors if d not in flagged_base]
        if not clean:
            continue
        for probe in design.build_positives(case, prepared, seed):
            rows += _rows(case, probe, True, clean, mode, judge, design.confident_only)
    return AuditResult(design, mode.name, seed, rows)


def _design(results: Sequence[AuditResult]) -> AuditDesign:
    designs = {r.design.name for r in results}
    if len(designs) != 1:
        raise ValueError(f"one table holds one audit design, got {sorted(designs)}")
    return results[0].design


def audit_table(results: Sequence[AuditResult]) -> Table:
    """Kinds down (with the stage each claims, where the design claims stages); per grounding
    mode one ``rate [lo, hi] (n)`` column per detector."""
    design = _design(results)
    stages = any(s is not None for s in design.kinds.values())
    by_mode = [{(e["detector"], e["kind"]): e for e in r.summary()} for r in results]
    rows = []
    for kind in design.order:
        if not any((d, kind) in m for m in by_mode for d in design.detectors):
            continue
        row: list[Any] = [kind, "detection" if kind in design.kinds else "false alarm"]
        if stages:
            row.append("-" if design.kinds.get(kind) is None else design.kinds[kind])
        for m in by_mode:
            for d in design.detectors:
                e = m.get((d, kind))
                row.append(f"{pct_ci(e['rate'], e['lo'], e['hi'])} (n={e['n']})" if e else "-")
        rows.append(row)
    one = len(design.detectors) == 1
    header = ["kind", "measures", *(["stage"] if stages else [])] + [
        r.grounding if one else f"{r.grounding}: {d}" for r in results for d in design.detectors
    ]
    return Table(
        header,
        rows,
        title=design.title,
        caption=design.caption,
        name=design.stem,
        align="ll" + "r" * (len(header) - 2),
    )


def summary_table(results: Sequence[AuditResult]) -> Table:
    """Every summary entry of ``results`` (per mode overall, then per category) as a table,
    one row per detector and kind, the design's columns (an entry's value with ``str``, a
    missing one empty)."""
    design = _design(results)
    rows = [
        ["" if e.get(k) is None else str(e.get(k)) for k in design.columns]
        for r in results
        for e in (*r.summary(), *r.summary(by_category=True))
    ]
    return Table(design.columns, rows, name=design.stem)


def write_audit(
    results: Sequence[AuditResult], out_dir: Path, extra: dict[str, Any] | None = None
) -> dict[str, Path]:
    """``<stem>.json`` (every summary, per category, false alarms by reason with examples, the
    first false alarms, and ``extra``), ``<stem>.csv`` (:func:`summary_table`, written by
    :func:`~callscope.core.table_formats.write_table`) and ``<stem>.md`` (:func:`audit_table`,
    the headlines and the false alarms by reason); returns the paths."""
    design = _design(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: out_dir / f"{design.stem}.{k}" for k in ("json", "csv", "md")}
    payload = {design.json_key: [r.to_dict() for r in results], **(extra or {})}
    paths["json"].write_text(json.dumps(payload, indent=1, ensure_ascii=True) + "\n")
    write_table(summary_table(results), paths["csv"])
    md = [audit_table(results).to_markdown(), ""]
    md += [f"- {r.headline()}" for r in results]
    one = len(design.detectors) == 1
    for r in results:
        reasons = r.false_alarm_reasons()
        if reasons:
            md += ["", f"False alarms on {design.base_label} by reason ({r.grounding} grounding):"]
            md += [""] + [
                f"- {'' if one else x['detector'] + ': '}{x['reason']}: {x['count']}"
                for x in reasons
            ]
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    return paths


def audit_counts(result: AuditResult) -> Counter[tuple[str, str, bool]]:
    """``(detector, kind, flagged) -> count``: the raw counts a test can pin."""
    return Counter((r.detector, r.kind, r.flagged) for r in result.rows)
