"""What one stored outcome counts as in the report: the per-outcome definitions every
aggregate, the call flow and the case browser apply (pure functions over one outcome dict).

An outcome dict is what :meth:`callscope.store.run_store.RunStore.outcomes` yields (keys
``model, case_id, mode, scale, n_attempts, solved_at, error, error_kind, final, first``),
as :func:`callscope.report.load.iter_outcomes` enriches it (``first_diagnosis``,
``final_diagnosis``, ``trajectory``, ``has_gold``). This module says, for one such outcome:

* whether it ended in a model error (no final prediction), has a gold call, was solved;
* its value of each metric: **intrinsic** metrics (FNEM, NCS, RPR, PDS, SPR, AVEM, QSLO, VHR)
  from the final attempt, None where the cascade did not reach the metric's stage or the
  outcome ended in a model error; FNEM is 1.0 for FNEM = 1, else 0.0 (the paper's -1 "no name
  parsed" and 0 "not in the registry" both count 0). **Extrinsic** metrics (name accuracy,
  argument precision, recall, F1) of the final attempt, 0.0 for a model error, None without
  gold;
* attempt 1's stage and failure kinds (:class:`callscope.records.FailureKind`), and the
  call-flow segment of any attempt (:func:`segment_of`);
* the labels and sort orders of scales and modes;
* the final answer's answer-level facts (:func:`answer_of`: what the answer is, calls made and
  expected, missing and extra calls, the answer's name and argument precision / recall / F1,
  its solve, BFCL's relevance credit) and attempt 1's calls (:func:`call_stages_of`), read
  from the score rows' answer keys (issue 28; :func:`callscope.saag.score.score_parsed`).
  Rows scored before answers were the unit lack those keys: both give None, and the report
  shows nothing of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from callscope.records import STAGES, FailureKind, ScoreRow, failure_kinds_of, stage_segment
from callscope.saag.answer import NO_CALL_KINDS
from callscope.saag.metrics import EXTRINSIC_KEYS, INTRINSIC_KEYS, specs
from callscope.saag.metrics import metric as metric_spec
from callscope.types import LOOP_MODES

OutcomeRow = dict[str, Any]

#: metric keys, from the one spec list :data:`callscope.saag.metrics.METRIC_SPECS`
INTRINSIC: tuple[str, ...] = INTRINSIC_KEYS
EXTRINSIC: tuple[str, ...] = EXTRINSIC_KEYS
#: how attempt 1 ended: passed all stages, failed first at stage 1, 2 or 3, or no reply
STAGE_LABELS: tuple[str, ...] = (
    *(s.segment for s in STAGES if s.number is not None),
    "error",
)
MODE_ORDER: tuple[str, ...] = LOOP_MODES
#: the scale label of rows pooled over scales, and of cases without a registry scale
ALL = "all"
NO_SCALE = "-"

#: a case's category when its ``meta`` has none (:func:`category_of`)
NO_CATEGORY = "-"
#: what an answer is (:data:`callscope.saag.score` rows' ``answer``), then ``error``: the
#: outcome ended in a model error (no answer)
ANSWER_KINDS: tuple[str, ...] = ("calls", *NO_CALL_KINDS, "error")

#: extrinsic metric -> its key in a score row, where the two differ (``name_acc`` ->
#: ``name_match``)
_EXTRINSIC_KEY = {m.key: m.row_key for m in specs("extrinsic") if m.row_key not in (None, m.key)}


# --------------------------------------------------------------------------- labels and order


def scale_label(scale: int | str | None) -> str:
    """``5 -> "5"``, ``None -> "-"``; strings pass through."""
    if scale is None:
        return NO_SCALE
    return str(scale)


def scale_sort_key(label: str) -> tuple[int, float, str]:
    """Numeric scales ascending, then ``"-"``, then ``"all"``."""
    try:
        return (0, float(label), "")
    except ValueError:
        return (1 if label == NO_SCALE else 2, 0.0, label)


def mode_sort_key(mode: str) -> tuple[int, str]:
    return (MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER), mode)


# --------------------------------------------------------------------------- outcome


def is_error(o: OutcomeRow) -> bool:
    """The outcome ended in a model error (no final prediction)."""
    return bool(o.get("error"))


def has_gold(o: OutcomeRow) -> bool:
    if "has_gold" in o:
        return bool(o["has_gold"])
    final = o.get("final") or {}
    return is_error(o) or "name_match" in final or "name_match" in (o.get("first") or {})


def is_solved(o: OutcomeRow) -> bool:
    return not is_error(o) and o.get("solved_at") is not None


def intrinsic_value(o: OutcomeRow, metric: str) -> float | None:
    """The final attempt's value of ``metric`` or None where undefined (or a model error)."""
    if is_error(o):
        return None
    return metric_spec(metric).mean_value((o.get("final") or {}).get(metric))


def extrinsic_value(o: OutcomeRow, metric: str) -> float | None:
    """The final attempt's extrinsic metric; 0.0 for a model error; None without gold."""
    if not has_gold(o):
        return None
    if is_error(o):
        return 0.0
    v = (o.get("final") or {}).get(_EXTRINSIC_KEY.get(metric, metric))
    return float(v) if v is not None else 0.0


def gold_args(row: ScoreRow) -> bool:
    """The attempt's arguments are the gold ones (argument precision = recall = 1)."""
    return row.get("arg_precision") == 1.0 and row.get("arg_recall") == 1.0


# --------------------------------------------------------------------------- stages and kinds


def first_stage(o: OutcomeRow) -> str:
    """Attempt 1's verdict: ``passed``, ``stage1``..``stage3`` or ``error`` (no reply)."""
    first = o.get("first")
    if not first or first.get("stage") is None:
        return "error"
    return stage_segment(int(first["stage"]))


def first_kinds(o: OutcomeRow) -> list[FailureKind]:
    """Failure kinds of attempt 1 (several may apply): from its diagnosis when loaded, else
    from the attempt-1 score row (which lacks the stage-3 lists numeric/hard/soft)."""
    return attempt_kinds(o.get("first"), o.get("first_diagnosis"))


def attempt_kinds(row: ScoreRow | None, diagnosis: Mapping[str, Any] | None) -> list[FailureKind]:
    """Failure kinds of one attempt (:func:`callscope.records.failure_kinds_of`), from its
    score ``row`` and (when loaded) its cascade ``diagnosis``: ``[]`` when it passed or has
    no reply."""
    if not row or row.get("stage") in (None, 0):
        return []
    diag: Mapping[str, Any] = diagnosis or row
    return failure_kinds_of(int(row["stage"]), diag.get("fnem"), diag)


def segment_of(row: ScoreRow | None, diagnosis: Mapping[str, Any] | None) -> str:
    """The call-flow segment of one attempt (:data:`callscope.report.flow.SEGMENTS`): from its
    score ``row`` (``None``: no reply, ``error``) and its cascade ``diagnosis`` (for the
    stage-3 kinds; see :func:`attempt_kinds`): ``passed``, the first failure kind in cascade
    order, or ``stage<k>`` for a failure without a recorded kind."""
    if not row or row.get("stage") is None:
        return "error"
    stage = int(row["stage"])
    if stage == 0:
        return "passed"
    kinds = attempt_kinds(row, diagnosis)
    return kinds[0].value if kinds else stage_segment(stage)


# --------------------------------------------------------------------------- answers


class AnswerFacts(NamedTuple):
    """The answer-level facts of an outcome's final attempt (:func:`answer_of`).

    ``kind``: one of :data:`ANSWER_KINDS`; ``calls_made``: the answer's calls; with gold
    (``calls_expected`` not None): ``missing`` / ``extra`` = max(0, expected - made) /
    max(0, made - expected), the answer's name and argument precision, recall, F1 over the
    optimal one-to-one matching of its calls to the gold calls
    (:func:`callscope.saag.answer.score_answer`), ``solved`` (every gold call matched by a
    correct call, nothing extra); ``bfcl_credit``: on a no-call case (``calls_expected == 0``),
    whether BFCL's relevance checker credits the answer (no call decodes), else None. Without
    gold the gold-dependent fields are None. A model error: ``kind == "error"``, no call made,
    every gold call missing, the metrics 0 and unsolved (the convention of the extrinsic
    metrics, :func:`extrinsic_value`), no BFCL credit (None: no answer to credit)."""

    kind: str
    calls_made: int
    calls_expected: int | None
    missing: int | None
    extra: int | None
    name_precision: float | None
    name_recall: float | None
    name_f1: float | None
    arg_precision: float | None
    arg_recall: float | None
    arg_f1: float | None
    solved: bool | None
    bfcl_credit: bool | None


#: the answer-level metrics of :class:`AnswerFacts`, in table order, with their row keys
ANSWER_METRICS: tuple[tuple[str, str], ...] = (
    ("name_precision", "name_precision"),
    ("name_recall", "name_recall"),
    ("name_f1", "name_f1"),
    ("arg_precision", "answer_arg_precision"),
    ("arg_recall", "answer_arg_recall"),
    ("arg_f1", "answer_arg_f1"),
)


def category_of(meta: Mapping[str, Any] | None) -> str:
    """A case's category: its ``meta["category"]`` (the BFCL builder records BFCL's category
    there, and the registry-scale builder keeps it), else :data:`NO_CATEGORY`."""
    value = (meta or {}).get("category")
    return str(value) if value not in (None, "") else NO_CATEGORY


def answer_of(o: OutcomeRow) -> AnswerFacts | None:
    """The final attempt's :class:`AnswerFacts`; None when its score row was made before
    answers were the unit (no ``answer`` key) or, for a model error, when the outcome's case
    is not known (``calls_expected`` absent: :func:`callscope.report.load.iter_outcomes` adds
    it; None without gold).
    """
    if is_error(o):
        if "calls_expected" not in o:
            return None
        expected = o["calls_expected"]
        gold = expected is not None
        zero = 0.0 if gold else None
        return AnswerFacts(
            "error", 0, expected, expected, 0 if gold else None,
            zero, zero, zero, zero, zero, zero, False if gold else None, None,
        )  # fmt: skip
    final = o.get("final") or {}
    if "answer" not in final:
        return None
    made = final.get("calls_made")
    if made is None:
        made = len(final.get("calls") or ())
    expected = final.get("calls_expected")
    if expected is None:
        return AnswerFacts(str(final["answer"]), int(made), *([None] * 11))
    values = [float(final.get(key) or 0.0) for _, key in ANSWER_METRICS]
    return AnswerFacts(
        str(final["answer"]),
        int(made),
        int(expected),
        int(final.get("missing_calls") or 0),
        int(final.get("extra_calls") or 0),
        *values,
        bool(final.get("answer_solved")),
        final.get("bfcl_credit") if int(expected) == 0 else None,
    )


def call_stages_of(row: ScoreRow | None) -> tuple[int, ...] | None:
    """The stage of each call of an attempt's answer, by position (0: the call passed every
    stage; 1-3: the stage that stopped it), from the score row's ``calls`` list; ``()`` for an
    answer without a call; None for no reply or a row made before answers were the unit."""
    if not row or "calls" not in row:
        return None
    return tuple(int(c.get("stage") or 0) for c in row["calls"] or ())
