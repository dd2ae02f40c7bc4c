"""Score rows ``{id, query, functions, output, gold?}`` -> the ``score`` output format.

The metric keys and their order come from :mod:`callscope.saag.metrics`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from callscope.parse import parse_output
from callscope.records import Diagnosis, ScoreRow
from callscope.saag.answer import deciding_call, diagnose_answer, repeated_positions, score_answer
from callscope.saag.correction import AnswerVerdict, CheckedCall, answer_correction, call_fix
from callscope.saag.extrinsic import extrinsic
from callscope.saag.groundings import Grounding, Judge, get_grounding
from callscope.saag.messages import correction_message
from callscope.saag.metrics import GOLD_ROW_KEYS, INTRINSIC_KEYS, METRIC_SPECS
from callscope.types import Case, ParseResult

#: the intrinsic metric keys of a score row, in cascade order (:data:`METRIC_SPECS
#: <callscope.saag.metrics.METRIC_SPECS>`)
METRICS: tuple[str, ...] = INTRINSIC_KEYS
#: the gold-dependent keys of a score row (present only when the row has a gold call)
GOLD_KEYS: tuple[str, ...] = GOLD_ROW_KEYS


def score_parsed(
    parsed: ParseResult,
    case: Case,
    grounding: str | Grounding | None = None,
    judge: Judge | None = None,
    *,
    expect_call: bool | None = None,
) -> tuple[AnswerVerdict, ScoreRow]:
    """Diagnose every call of the answer ``parsed`` for ``case`` in the ``grounding`` mode
    (:mod:`callscope.saag.groundings`; default the registry-aware one) and return the
    answer's verdict and its ``score`` row (:func:`answer_row`). ``expect_call`` (default:
    ``case.expects_call``) says whether an answer without a call fails at stage 1 or is an
    abstention (:func:`~callscope.saag.answer.diagnose_answer`).

    With gold, the row also has the answer's extrinsic metrics
    (:func:`callscope.saag.answer.score_answer`: ``calls_made``, ``calls_expected``,
    ``missing_calls``, ``extra_calls``, name and argument precision / recall / F1 over the
    matched pairs, ``answer_solved``) and the one-call keys ``name_match``,
    ``arg_precision``, ``arg_recall``, ``arg_f1`` and ``solved``:

    * one gold call (every earlier cases file): the SAAG paper's extrinsic metrics of the model
      call matched to it (the first call when none matches better), and the paper's solve
      (section 3: the answer passes all three stages and the name matches the gold's); an
      answer of one call scores exactly as before;
    * a list of gold calls (``[]``: no call is right): ``name_match`` is every name right and
      nothing extra, the argument metrics and ``solved`` are the answer's."""
    mode = get_grounding(grounding)
    verdict = diagnose_answer(
        parsed, case.functions, case.query, grounding=mode, judge=judge,
        expect_call=case.expects_call if expect_call is None else expect_call,
    )  # fmt: skip
    return verdict, verdict_row(verdict, case, mode.name)


def verdict_row(verdict: AnswerVerdict, case: Case, grounding: str) -> ScoreRow:
    """The ``score`` row of an answer computed from its verdict (issue 48: the cascade is not
    run here): :func:`answer_row` and, with gold, the extrinsic metrics of the verdict's calls
    against the case's gold (:func:`score_parsed` says which)."""
    row = answer_row(case.id, verdict, grounding)
    gold = case.gold_calls
    if gold is None:
        return row
    calls = verdict.calls
    scores = score_answer(calls, gold, case.functions, verdict.no_call)
    row.update(scores.to_row())
    if isinstance(case.gold, dict):
        model = scores.pairs[0][0] if scores.pairs else None
        call = calls[model] if model is not None else None
        ext = extrinsic(call, case.gold, case.functions)
        row.update(ext)
        row["solved"] = verdict.passed and bool(ext["name_match"])
    else:
        row.update(
            name_match=scores.name_precision == 1.0 and scores.name_recall == 1.0,
            arg_precision=scores.arg_precision,
            arg_recall=scores.arg_recall,
            arg_f1=scores.arg_f1,
            solved=scores.solved,
        )
    return row


def turn_row(verdict: AnswerVerdict, case: Case, grounding: str, action: str) -> ScoreRow:
    """The ``score`` row of a turn the guard checked (:mod:`callscope.guard.record`): the
    answer's row (:func:`verdict_row`) with the guard's ``action`` class and ``stages`` (each
    checked call's stage, by position). A turn without a checked call (prose, a final answer)
    has ``stage`` ``None`` and only its ``answer``: the guard checked nothing."""
    stages = [c.diagnosis.stage for c in verdict.checked]
    if not stages:
        return {"id": case.id, "stage": None, "answer": verdict.no_call, "action": action,
                "stages": stages}  # fmt: skip
    row = verdict_row(verdict, case, grounding)
    row.update(action=action, stages=stages)
    return row


def diagnosis_row(
    case_id: str, d: Diagnosis, grounding: str, parse_error: str | None = None
) -> ScoreRow:
    """The gold-free part of a ``score`` row for one call's diagnosis made in the ``grounding``
    mode: ``id``, ``stage``, the metrics, the failure lists, the fix, the parse error, the
    mode's name and the grounded values; ``evidence`` (only when some value was grounded
    through a library) each such argument's evidence line."""
    row: ScoreRow = {"id": case_id, "stage": d.stage}
    for m in METRICS:
        row[m] = getattr(d, m)
    row.update(
        nearest=d.nearest,
        missing=d.missing,
        drifted=d.drifted,
        spurious=d.spurious,
        fix=correction_message(d),
        parse_error=parse_error,
        grounding=grounding,
        grounded=d.grounded,
    )
    if d.evidence:  # issue 37: which library matched which words of the request to a value
        row["evidence"] = d.evidence
    return row


def call_verdict(position: int, checked: CheckedCall, fix: str | None) -> dict[str, Any]:
    """One call's verdict as an answer row lists it: its position (0-based), name, stage,
    failure kinds, the eight metrics and its correction ``fix``; a call that could not be
    read also its ``parse_error``."""
    d = checked.diagnosis
    out: dict[str, Any] = {
        "position": position,
        "name": checked.call.name if checked.call is not None else None,
        "stage": d.stage,
        "kinds": [str(k) for k in d.failure_kinds()],
    }
    out.update({m: getattr(d, m) for m in METRICS})
    out["fix"] = fix
    if checked.call is None and checked.reason is not None:
        out["parse_error"] = checked.reason
    if d.evidence:  # issue 37: see diagnosis_row
        out["evidence"] = d.evidence
    return out


def answer_row(case_id: str, verdict: AnswerVerdict, grounding: str) -> ScoreRow:
    """The gold-free ``score`` row of an answer: ``stage`` is the answer's earliest failing
    stage (0: every call passed, or a clean abstention where no call was expected; ``None``:
    no call, and nobody said whether one was expected), ``answer`` what it is (``calls``,
    ``abstained``, ``broken``, ``empty``), ``calls`` each call's verdict by position
    (:func:`call_verdict`), ``repeated`` the positions of calls repeating an earlier one (only
    when some do). The top-level metrics and lists are those of the call the stage comes
    from (:func:`~callscope.saag.answer.deciding_call`): for an answer of one call, exactly
    the row of that call; ``fix`` is the structured correction the loop sends: each failing call named by position
    when there are several, and the calls that passed to keep.
    """
    deciding = deciding_call(verdict)
    # each call's correction, made once (the row's fix and its call list both show it)
    fixes = {id(c): call_fix(c) for c in verdict.checked}
    if deciding is None:  # no call to diagnose: a clean abstention (0) or no verdict (None)
        row: ScoreRow = {"id": case_id, "stage": verdict.stage}
        row.update(dict.fromkeys(METRICS))
        row.update(
            nearest=None, missing=[], drifted=[], spurious=[], fix=None,
            parse_error=verdict.parse_error, grounding=grounding, grounded={},
        )  # fmt: skip
    else:
        row = diagnosis_row(case_id, deciding.diagnosis, grounding, verdict.parse_error)
        row["stage"] = verdict.stage
        row["fix"] = answer_correction(verdict.checked, lambda c: fixes[id(c)])
    row["answer"] = verdict.no_call or "calls"
    row["calls"] = [  # an answer that made calls lists its unreadable ones at their positions
        call_verdict(i, c, fixes[id(c)])
        for i, c in enumerate(verdict.checked)
        if c.call is not None or verdict.no_call is None
    ]
    if verdict.calls and (again := repeated_positions(verdict.calls)):
        row["repeated"] = list(again)
    return row


def score_row(
    row: dict[str, Any],
    grounding: str | Grounding | None = None,
    judge: Judge | None = None,
    *,
    expect_call: bool | None = None,
) -> ScoreRow:
    """Score one input row (in the ``grounding`` mode). ``expect_call`` is what a row that
    does not say (no gold, no ``meta.expects_call``) expects: ``True`` (the SAAG paper's
    setting: every case offers functions for a request that needs one, so no call fails at
    stage 1), ``False`` (no call passes) or ``None`` (unknown: an answer without a call gets
    ``stage: null``). A malformed row yields ``{"id", "error"}`` instead of raising."""
    rid = row.get("id") if isinstance(row, dict) else None
    if isinstance(rid, int) and not isinstance(rid, bool) and rid.bit_length() > 14_000:
        rid = hex(rid)  # over Python's int/str digit limit: kept, as text that can be printed
    try:
        case = Case.from_dict(row)
    except ValueError as exc:
        return {"id": rid, "error": f"malformed row: {exc}"}
    if "output" not in row:
        return {"id": rid, "error": "malformed row: no 'output'"}
    expected = case.expects_call if case.expects_call is not None else expect_call
    _, out = score_parsed(parse_output(row["output"]), case, grounding, judge, expect_call=expected)
    out["id"] = rid  # keep the caller's id as given (Case ids are strings)
    return out


@dataclass
class ScoreSummary:
    """Per-stage failure counts and the mean of each metric over rows where it is defined."""

    rows: int = 0
    errors: int = 0
    stages: Counter[int] = field(default_factory=Counter)
    #: answers without a call that no call was expected of (``abstained``, ``empty``): not in
    #: ``stages`` (nothing was diagnosed); a broken call is a stage-1 failure, counted there
    abstentions: Counter[str] = field(default_factory=Counter)
    #: answers without a call where nobody said whether one was expected (``stage: null``):
    #: neither passed nor failed
    no_verdict: Counter[str] = field(default_factory=Counter)
    means: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class _ExactSum:
    """A running sum whose total is ``math.fsum`` of every value added (Shewchuk's
    non-overlapping partials, as ``math.fsum`` keeps them): O(1) memory in practice."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        i = 0
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        self.partials[i:] = [x]

    def total(self) -> float:
        return math.fsum(self.partials)


def _spec(row_key: str) -> Callable[[Any], float | None]:
    """What one row's ``row_key`` value adds to its mean (:meth:`MetricSpec.mean_value
    <callscope.saag.metrics.MetricSpec.mean_value>`: FNEM as the rate of FNEM = 1, never its
    -1 as a number); a key without a spec adds its number."""
    for spec in METRIC_SPECS:
        if spec.row_key == row_key:
            return spec.mean_value
    return lambda v: float(v) if isinstance(v, int | float) else None


class SummaryAccumulator:
    """:func:`summarize` one row at a time (``add``), for a stream of rows of any length;
    ``summary()`` gives the same :class:`ScoreSummary` as :func:`summarize` over the rows
    added: each mean is ``fsum / n`` (``statistics.fmean``'s definition) of the defined values."""

    def __init__(self) -> None:
        self.rows = 0
        self.errors = 0
        self.stages: Counter[int] = Counter()
        self.abstentions: Counter[str] = Counter()
        self.no_verdict: Counter[str] = Counter()
        self.specs = {key: _spec(key) for key in (*METRICS, *GOLD_KEYS)}
        self.sums = {key: _ExactSum() for key in self.specs}
        self.counts = dict.fromkeys(self.sums, 0)

    def add(self, row: dict[str, Any]) -> None:
        self.rows += 1
        if "error" in row:
            self.errors += 1
            return
        stage = row.get("stage")
        if stage is None:
            self.no_verdict[str(row.get("answer"))] += 1
        elif row.get("answer") in ("abstained", "empty") and stage == 0:
            self.abstentions[row["answer"]] += 1
        else:
            self.stages[stage] += 1
        for key, acc in self.sums.items():
            value = self.specs[key](row.get(key))
            if value is not None:
                acc.add(value)
                self.counts[key] += 1

    def summary(self) -> ScoreSummary:
        s = ScoreSummary(
            rows=self.rows,
            errors=self.errors,
            stages=Counter(self.stages),
            abstentions=Counter(self.abstentions),
            no_verdict=Counter(self.no_verdict),
        )
        for key, acc in self.sums.items():
            n = self.counts[key]
            s.counts[key] = n
            s.means[key] = acc.total() / n if n else None
        return s


def summarize(rows: Iterable[dict[str, Any]]) -> ScoreSummary:
    """Rows (any iterable, read once) -> per-stage counts of the scored rows, how many were
    malformed, and each metric's mean (``fsum / n``) over the rows where it is defined."""
    acc = SummaryAccumulator()
    for row in rows:
        acc.add(row)
    return acc.summary()
