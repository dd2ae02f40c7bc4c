"""Detector audit over answers: what each detector catches when an answer of several calls, or
of none, is wrong (issue 28 item 7; the single-call audit is :mod:`callscope.saag.audit`).

On cases whose gold is an *answer* (``Case.gold`` a list of calls, or ``[]``: no call is
right) :func:`audit_answers` builds

* *negatives*, answers known to be right: ``gold_answer`` (every gold call in its minimal
  form, :func:`~callscope.saag.audit.gold_call_forms`, in the gold's order) on a case with
  call gold, and ``clean_abstention`` (prose, no call: the parser's ``NO_CALL_FOUND``) on a
  no-call case;
* *positives*, answers made wrong on purpose from that gold answer, one per kind of
  :data:`ANSWER_KINDS`:

  ``dropped_call``
      one gold call left out (answers of two or more calls);
  ``duplicated_call``
      one gold call repeated right after itself;
  ``extra_call``
      a call of another registered function (one the gold answer does not call) added at the
      end, with the arguments of one gold call (a model calling a distractor with the
      request's values);
  ``extra_call_filled``
      the same function added with its required parameters filled from the request as for
      ``call_on_no_call`` (a plausible distractor call: what ``extra_call`` leaves to the
      schema, this leaves to the values);
  ``unstated_value``
      one string value of one call replaced by a string the request does not state (as the
      single-call ``unstated_string``), else one number by an unstated number;
  ``swapped_values``
      the values of one parameter swapped between two calls, where each moved value is
      outside the acceptable values of its new call (in words, numbers and BFCL's own
      comparison) and the swapped answer is no reordering of the gold answer (so the swap is
      wrong, not a permutation);
  ``call_on_no_call``
      on a no-call case, one call of a registered function, each required parameter filled
      from the request where it can be: an enum's first member, a string the request's
      longest word, a number the request's first number (else 1), a boolean ``False``, an
      array ``[]``, an object ``{}``;

and runs two detectors on every answer, measured apart (:data:`DETECTORS`):

``cascade``
    gold-free: :func:`~callscope.saag.answer.diagnose_answer` in the audited grounding mode,
    told only whether the case expects a call (``Case.expects_call``, as the loop tells it);
    flagged when the answer did not pass or repeats a call
    (:func:`~callscope.saag.answer.repeated_positions`). It judges each call against the
    request and the registry, so it cannot know that a right call is missing, that two
    stated values sit in the wrong calls, or that a plausible call was not wanted.
``gold``
    extrinsic: :func:`~callscope.saag.answer.score_answer` against the gold answer; flagged
    when the answer is not solved (every gold call matched by a correct call, nothing
    extra; a no-call case: a clean abstention). It reads no grounding mode (the same in
    both).

Per kind and detector the audit reports the *false-alarm rate* on negatives and the
*detection rate* on positives (share flagged), each with its Wilson 95% interval
(:func:`callscope.core.stats.rate_ci`); for ``gold_answer`` also the cascade's per-call
false-alarm rate (calls of gold answers flagged / calls), the figure comparable with the
single-call audit's ``gold_minimal``. A detector's positives are built only from a case
whose negative it did not flag, so a detection is never a false alarm in disguise.
Perturbations are deterministic for ``seed`` (``random.Random`` seeded with the seed, the
case id and the kind).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.stats import rate_ci
from callscope.core.table import Table, pct_ci
from callscope.core.table_formats import write_table
from callscope.parse.text import NO_CALL_FOUND
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.answer import diagnose_answer, no_call_kind, repeated_positions, score_answer
from callscope.saag.audit import _UNSTATED_STRINGS, _same, _unstated_number, gold_call_forms
from callscope.saag.cascade import find_spec, schema_params
from callscope.saag.extrinsic import bfcl_values_equal
from callscope.saag.groundings import Grounding, Judge, get_grounding
from callscope.types import Case, ParseResult, ToolCall

#: the negatives: a gold answer of calls, a clean abstention on a no-call case
ANSWER_NEGATIVES: tuple[str, ...] = ("gold_answer", "clean_abstention")
#: every positive kind of answer (module docstring)
ANSWER_KINDS: tuple[str, ...] = (
    "dropped_call",
    "duplicated_call",
    "extra_call",
    "extra_call_filled",
    "unstated_value",
    "swapped_values",
    "call_on_no_call",
)
#: the detectors, measured apart (module docstring)
DETECTORS: tuple[str, ...] = ("cascade", "gold")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def is_answer_case(case: Case) -> bool:
    """Whether the answer audit reads ``case``: its gold is a list of calls or ``[]`` (a
    single gold call, a dict, is the single-call audit's)."""
    return isinstance(case.gold, list)


@dataclass
class AnswerAuditRow:
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
    #: calls the cascade flagged (failing or repeating); the gold detector: 0
    calls_flagged: int = 0
    #: for a positive, the change; for a flagged negative, why
    detail: str = ""
    example: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnswerAuditResult:
    """Every judged answer of one answer audit in one grounding mode."""

    grounding: str
    seed: int
    rows: list[AnswerAuditRow]

    def summary(self, by_category: bool = False) -> list[dict[str, Any]]:
        """One dict per detector, kind (and category): ``n``, ``flagged``, ``rate`` with
        Wilson bounds ``lo``/``hi``; for ``gold_answer`` also ``calls``, ``calls_flagged`` and
        the per-call ``call_rate`` with ``call_lo``/``call_hi``."""
        groups: dict[tuple[str, str, str], list[AnswerAuditRow]] = defaultdict(list)
        for r in self.rows:
            groups[(r.category if by_category else "all", r.detector, r.kind)].append(r)
        order = {k: i for i, k in enumerate((*ANSWER_NEGATIVES, *ANSWER_KINDS))}
        out = []
        for (cat, det, kind), rows in sorted(
            groups.items(), key=lambda kv: (kv[0][0], DETECTORS.index(kv[0][1]), order[kv[0][2]])
        ):
            k = sum(r.flagged for r in rows)
            rate, lo, hi = rate_ci(k, len(rows))
            entry: dict[str, Any] = {
                "grounding": self.grounding,
                "category": cat,
                "detector": det,
                "kind": kind,
                "polarity": "positive" if rows[0].positive else "negative",
                "n": len(rows),
                "flagged": k,
                "rate": rate,
                "lo": lo,
                "hi": hi,
            }
            if kind == "gold_answer":
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

    def headline(self) -> str:
        """One line per detector: false alarms on gold answers (and per call) and detection
        over every positive kind."""
        s = {(e["detector"], e["kind"]): e for e in self.summary()}
        parts = []
        for det in DETECTORS:
            bits = []
            neg = s.get((det, "gold_answer"))
            if neg is not None:
                bits.append(
                    f"false alarms on gold answers {pct_ci(neg['rate'], neg['lo'], neg['hi'])}% "
                    f"(n={neg['n']})"
                )
                if det == "cascade":
                    bits.append(
                        "per call "
                        f"{pct_ci(neg['call_rate'], neg['call_lo'], neg['call_hi'])}% "
                        f"(n={neg['calls']})"
                    )
            for kind in ANSWER_KINDS:
                e = s.get((det, kind))
                if e is not None:
                    bits.append(f"{kind} {pct_ci(e['rate'], e['lo'], e['hi'])}%")
            if bits:
                parts.append(f"{det}: " + ", ".join(bits))
        if not parts:
            return f"answer audit ({self.grounding} grounding): no answer gold"
        return f"answer audit ({self.grounding} grounding): " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "grounding": self.grounding,
            "seed": self.seed,
            "headline": self.headline(),
            "summary": self.summary(),
            "by_category": self.summary(by_category=True),
            "false_alarms": [
                {"detector": r.detector, "reason": r.detail, **r.example}
                for r in self.rows
                if not r.positive and r.flagged
            ][:20],
        }


# --------------------------------------------------------------------------- answers


def gold_answer(case: Case) -> tuple[list[ToolCall], list[dict[str, Any]]] | None:
    """The case's gold answer as calls in minimal form, with the gold calls it came from
    (``([], [])`` for a no-call case); ``None`` when the case is not an answer case or a gold
    call has no usable form."""
    if not is_answer_case(case):
        return None
    gold = [c for c in case.gold or [] if isinstance(c, dict)]
    calls = []
    for c in gold:
        forms = gold_call_forms(c, case.functions)
        if forms is None:
            return None
        calls.append(forms[1])
    return calls, gold


def _acceptable(gold: dict[str, Any], param: str) -> list[Any]:
    acc = gold.get("acceptable") if isinstance(gold.get("acceptable"), dict) else {}
    values = list(acc.get(param) or [])
    if param in (gold.get("arguments") or {}):
        values.append(gold["arguments"][param])
    return values


def _accepted(value: Any, gold: dict[str, Any], param: str) -> bool:
    """Whether ``value`` is one of the gold call's acceptable values for ``param``: equal in
    words or numbers (the single-call audit's comparison) or in BFCL's AST-checker comparison
    (:func:`~callscope.saag.extrinsic.bfcl_values_equal`)."""
    return any(_same(value, x) or bfcl_values_equal(value, x) for x in _acceptable(gold, param))


def _scalar(v: Any) -> bool:
    return isinstance(v, str | int | float) and not isinstance(v, bool)


def _filled(spec: dict[str, Any], query: str) -> dict[str, Any]:
    """The required parameters of ``spec``, each filled from ``query`` where it can be
    (module docstring, ``call_on_no_call``)."""
    required, _ = schema_params(spec)
    props = (spec.get("parameters") or {}).get("properties") or {}
    words = sorted(_WORD.findall(query), key=len, reverse=True)
    numbers = n.number_evidence(query)
    out: dict[str, Any] = {}
    for p in required:
        schema = props.get(p) or {}
        kind = schema.get("type")
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            out[p] = schema["enum"][0]
        elif kind == "integer":
            out[p] = next((int(x) for x in numbers if float(x).is_integer()), 1)
        elif kind in ("number", "float"):
            out[p] = float(numbers[0]) if numbers else 1.0
        elif kind == "boolean":
            out[p] = False
        elif kind in ("array", "tuple"):
            out[p] = []
        elif kind in ("object", "dict"):
            out[p] = {}
        else:
            out[p] = words[0] if words else "x"
    return out


def answer_positives(
    case: Case, base: list[ToolCall], gold: list[dict[str, Any]], seed: int
) -> list[tuple[str, list[ToolCall], str]]:
    """``(kind, answer, change)`` for every kind of :data:`ANSWER_KINDS` that can be built
    from ``base`` (the case's gold answer, minimal form; ``[]`` on a no-call case)."""
    out: list[tuple[str, list[ToolCall], str]] = []

    def rng(kind: str) -> random.Random:
        return random.Random(f"{seed}:{case.id}:{kind}")

    registry = [str(f.get("name")) for f in case.functions]
    if not base:  # a no-call case
        if registry:
            name = rng("call_on_no_call").choice(registry)
            spec = find_spec(case.functions, name) or {}
            call = ToolCall(name, _filled(spec, case.query))
            out.append(("call_on_no_call", [call], f"called {name!r} {call.arguments}"))
        return out
    if len(base) >= 2:
        i = rng("dropped_call").randrange(len(base))
        out.append(("dropped_call", base[:i] + base[i + 1 :], f"dropped call {i} ({base[i].name})"))
    i = rng("duplicated_call").randrange(len(base))
    out.append(("duplicated_call", base[: i + 1] + [base[i]] + base[i + 1 :], f"repeated call {i}"))
    called = {c.name for c in base}
    others = [r for r in registry if r not in called]
    if others:
        r = rng("extra_call")
        other = r.choice(others)
        src = r.randrange(len(base))
        extra = ToolCall(other, dict(base[src].arguments))
        out.append(("extra_call", [*base, extra], f"added {other!r} with call {src}'s arguments"))
        spec = find_spec(case.functions, other) or {}
        filled = ToolCall(other, _filled(spec, case.query))
        out.append(("extra_call_filled", [*base, filled], f"added {other!r} {filled.arguments}"))

    words = n.norm_words(case.query)
    new_str = next((s for s in _UNSTATED_STRINGS if not n.words_state(s, words)), None)
    strings = [
        (i, p)
        for i, c in enumerate(base)
        for p, v in c.arguments.items()
        if isinstance(v, str) and v.strip()
    ]
    numbers = [(i, p) for i, c in enumerate(base) for p, v in c.arguments.items() if g.is_number(v)]
    r = rng("unstated_value")
    if strings and new_str is not None:
        i, p = r.choice(strings)
        new: Any = new_str
    elif numbers:
        i, p = r.choice(numbers)
        new = _unstated_number(base[i].arguments[p], n.number_evidence(case.query))
    else:
        i = -1
    if i >= 0:
        old = base[i].arguments[p]
        changed = [*base]
        changed[i] = ToolCall(base[i].name, {**base[i].arguments, p: new})
        out.append(("unstated_value", changed, f"call {i} {p}: {old!r} -> {new!r}"))

    original = Counter(_frozen_call(c) for c in base)
    swaps = []
    for i, a in enumerate(base):
        for j in range(i + 1, len(base)):
            b = base[j]
            for p in [k for k in a.arguments if k in b.arguments]:  # a's order: seeded
                va, vb = a.arguments[p], b.arguments[p]
                if not (_scalar(va) and type(va) is type(vb)) or _same(va, vb):
                    continue
                if _accepted(vb, gold[i], p) or _accepted(va, gold[j], p):
                    continue
                swapped = [*base]
                swapped[i] = ToolCall(a.name, {**a.arguments, p: vb})
                swapped[j] = ToolCall(b.name, {**b.arguments, p: va})
                if Counter(_frozen_call(c) for c in swapped) != original:
                    swaps.append((swapped, f"swapped {p!r} between calls {i} and {j}"))
    if swaps:
        swapped, change = rng("swapped_values").choice(swaps)
        out.append(("swapped_values", swapped, change))
    return out


def _frozen_call(call: ToolCall) -> Any:
    return (call.name, repr(sorted(call.arguments.items(), key=lambda kv: kv[0])))


# --------------------------------------------------------------------------- audit


def _judged(
    case: Case,
    mode: Grounding,
    judge: Judge | None,
    calls: list[ToolCall],
    kind: str,
    positive: bool,
    detail: str,
) -> list[AnswerAuditRow]:
    """The answer ``calls`` on ``case`` judged by each detector (module docstring): one row
    per detector. The cascade is told whether the case expects a call, as the loop tells it
    (``Case.expects_call is not False``)."""
    category = str(case.meta.get("category") or case.meta.get("source") or "all")
    parsed = ParseResult(calls=tuple(calls)) if calls else ParseResult(error=NO_CALL_FOUND)
    v = diagnose_answer(
        parsed,
        case.functions,
        case.query,
        grounding=mode,
        judge=judge,
        expect_call=case.expects_call is not False,
    )
    repeats = set(repeated_positions(calls))
    failing = {i for i, c in enumerate(v.checked) if c.diagnosis.stage and c.call}
    bad_calls = len(failing | repeats)
    c_flag = not v.passed or bool(repeats)
    s = score_answer(calls, case.gold or [], case.functions, no_call_kind(parsed))
    example = {"id": case.id, "answer": [c.to_dict() for c in calls]}
    why_c = why_g = detail
    if not positive:
        why_c = f"stage {v.stage}" if not v.passed else ("repeated call" if repeats else "")
        why_g = f"not solved: pairs correct {list(s.correct)}" if not s.solved else ""
    return [
        AnswerAuditRow(
            case.id, category, kind, "cascade", positive, c_flag,
            v.stage, len(calls), bad_calls, why_c, example,
        ),
        AnswerAuditRow(
            case.id, category, kind, "gold", positive, not s.solved,
            0, len(calls), 0, why_g, example,
        ),
    ]  # fmt: skip


def audit_answers(
    cases: Sequence[Case],
    *,
    grounding: str | Grounding | None = None,
    seed: int = 0,
    judge: Judge | None = None,
) -> AnswerAuditResult:
    """Audit both detectors on the answer cases of ``cases`` (:func:`is_answer_case`; the
    others are skipped) in one grounding mode; see the module doc for what is built and
    measured."""
    mode = get_grounding(grounding)
    rows: list[AnswerAuditRow] = []
    for case in cases:
        answer = gold_answer(case)
        if answer is None:
            continue
        base, gold = answer

        neg_kind = "gold_answer" if base else "clean_abstention"
        negatives = _judged(case, mode, judge, base, neg_kind, False, "")
        rows += negatives
        clean = {r.detector for r in negatives if not r.flagged}
        if not clean:
            continue
        for kind, calls, change in answer_positives(case, base, gold, seed):
            judged = _judged(case, mode, judge, calls, kind, True, change)
            rows += [r for r in judged if r.detector in clean]
    return AnswerAuditResult(mode.name, seed, rows)


def answer_audit_table(results: Sequence[AnswerAuditResult]) -> Table:
    """Kinds down, per grounding mode one ``rate [lo, hi] (n)`` column per detector."""
    by_mode = [{(e["detector"], e["kind"]): e for e in r.summary()} for r in results]
    rows = []
    for kind in (*ANSWER_NEGATIVES, *ANSWER_KINDS):
        if not any((d, kind) in m for m in by_mode for d in DETECTORS):
            continue
        row: list[Any] = [kind, "false alarm" if kind in ANSWER_NEGATIVES else "detection"]
        for m in by_mode:
            for d in DETECTORS:
                e = m.get((d, kind))
                row.append(f"{pct_ci(e['rate'], e['lo'], e['hi'])} (n={e['n']})" if e else "-")
        rows.append(row)
    header = ["kind", "measures"] + [f"{r.grounding}: {d}" for r in results for d in DETECTORS]
    return Table(
        header,
        rows,
        title="Detector audit over answers",
        caption="False alarms on gold answers and clean abstentions, and detection of answers "
        "made wrong on purpose (share flagged, Wilson 95%): the gold-free cascade (failing "
        "or repeated calls) and the answer solve against gold, apart.",
        name="audit_answers",
        align="ll" + "r" * (len(header) - 2),
    )


#: the columns of ``audit_answers.csv`` (:func:`answer_summary_table`)
ANSWER_SUMMARY_COLUMNS: tuple[str, ...] = (
    "grounding",
    "category",
    "detector",
    "kind",
    "polarity",
    "n",
    "flagged",
    "rate",
    "lo",
    "hi",
    "calls",
    "calls_flagged",
    "call_rate",
    "call_lo",
    "call_hi",
)


def answer_summary_table(results: Sequence[AnswerAuditResult]) -> Table:
    """Every summary entry of ``results`` (overall, then per category) as a table, one row per
    detector and kind, :data:`ANSWER_SUMMARY_COLUMNS` as columns (a missing value empty)."""
    rows = [
        ["" if e.get(k) is None else str(e.get(k)) for k in ANSWER_SUMMARY_COLUMNS]
        for r in results
        for e in (*r.summary(), *r.summary(by_category=True))
    ]
    return Table(ANSWER_SUMMARY_COLUMNS, rows, name="audit_answers")


def answer_audit_counts(result: AnswerAuditResult) -> Counter[tuple[str, str, bool]]:
    """``(detector, kind, flagged) -> count``: the raw counts a test can pin."""
    return Counter((r.detector, r.kind, r.flagged) for r in result.rows)


def write_answer_audit(results: Sequence[AnswerAuditResult], out_dir: Path) -> dict[str, Path]:
    """``audit_answers.json`` (every summary, per category, the first false alarms),
    ``audit_answers.csv`` (:func:`answer_summary_table`) and ``audit_answers.md``
    (:func:`answer_audit_table` and the headlines); returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {k: out_dir / f"audit_answers.{k}" for k in ("json", "csv", "md")}
    payload = {"answer_audits": [r.to_dict() for r in results]}
    paths["json"].write_text(json.dumps(payload, indent=1, ensure_ascii=True) + "\n")
    write_table(answer_summary_table(results), paths["csv"])
    md = [answer_audit_table(results).to_markdown(), ""]
    md += [f"- {r.headline()}" for r in results]
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    return paths
