"""The one list of metrics callscope reports: :data:`METRIC_SPECS`.

Score output (:mod:`callscope.saag.score`), aggregation (:mod:`callscope.report.aggregate`),
run comparison (:mod:`callscope.report.compare`), the report tables and the HTML page (which
receives the list as JSON) all read their metric keys, labels and order from here.

Three kinds (SAAG paper, section 3, "Metric classes", and section 4):

* ``intrinsic``: the eight SAAG diagnostics of section 2, one cascade stage each
  (stage 1 registry conformance, section 2.1; stage 2 structural completeness, 2.2; stage 3
  argument value grounding, 2.3), computed by :mod:`callscope.saag.intrinsic` (formulas
  there). They are stage-conditional: the cascade halts at the first failing stage, so a
  later-stage metric is defined only where the earlier stages passed. The stage-3 metrics
  depend on the grounding mode: under ``lexical`` they are the paper's eqs. 6-9, under
  ``registry`` (the default) they count every value the mode accepts (each description says
  how).
* ``extrinsic``: name accuracy and argument precision, recall and F1 against the gold call,
  computed only afterwards (never inside the correction loop) by
  :func:`callscope.saag.extrinsic.extrinsic`.
* ``outcome``: what the correction loop (section 2.4) achieves per outcome: solve rate and
  attempts to solve.

>>> [m.key for m in specs("intrinsic") if m.stage == 3]
['avem', 'qslo', 'vhr']
>>> metric("avem").row_key, metric("name_acc").row_key
('avem', 'name_match')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

MetricKind = Literal["intrinsic", "extrinsic", "outcome"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric.

    ``key`` is its column in aggregate tables; ``row_key`` its key in a ``score`` output row
    (``None``: not in score rows); ``label`` its table label; ``short`` the label in running
    text and comparisons; ``stage`` its cascade stage (1-3, intrinsic only); ``kind`` (see the
    module doc); ``higher_is_better`` (``None``: a descriptive diagnostic with no better
    direction); ``rate``: per-row values are 0/1, so a mean is a rate (Wilson interval);
    ``description`` the definition and its source.
    """

    key: str
    label: str
    short: str
    kind: MetricKind
    higher_is_better: bool | None
    description: str
    stage: int | None = None
    row_key: str | None = None
    rate: bool = False
    #: for a categorical metric (FNEM: -1, 0, 1): the mean is the share of rows whose value
    #: is this one, so no category (FNEM's -1, "no name") is ever averaged as a number
    indicator: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def mean_value(self, value: Any) -> float | None:
        """What one row adds to this metric's mean: ``None`` where the row does not define
        it (absent, not a number), the indicator ``value == indicator`` for a categorical
        metric, else the value.

        >>> metric("fnem").mean_value(-1), metric("fnem").mean_value(1), metric("rpr").mean_value(0.5)
        (0.0, 1.0, 0.5)
        """
        if not isinstance(value, int | float):  # None, or not a number: not defined here
            return None
        if self.indicator is not None:
            return 1.0 if value == self.indicator else 0.0
        return float(value)


def _intrinsic(
    key: str,
    stage: int,
    higher: bool | None,
    description: str,
    rate: bool = False,
    indicator: int | None = None,
) -> MetricSpec:
    return MetricSpec(
        key=key,
        label=key.upper(),
        short=key.upper(),
        kind="intrinsic",
        higher_is_better=higher,
        description=description,
        stage=stage,
        row_key=key,
        rate=rate,
        indicator=indicator,
    )


#: every metric, in report order: the intrinsic ones in cascade order, then the extrinsic
#: ones, then the loop outcomes
METRIC_SPECS: tuple[MetricSpec, ...] = (
    _intrinsic(
        "fnem",
        1,
        True,
        "Function Name Exact Match: 1 if the predicted name is in the registry, 0 if "
        "not, -1 if no name was parsed (SAAG section 2.1, eq. 1); reported as the rate "
        "of FNEM = 1 (a -1 counts as 0, never as a number). Independent of the grounding mode.",
        rate=True,
        indicator=1,
    ),
    _intrinsic(
        "ncs",
        1,
        None,
        "Nearest Candidate Score, when FNEM = 0: max over trigram-sharing registry "
        "names c of 0.6 WRatio(name, c) / 100 + 0.4 Jaccard(name, c) over lowercased "
        "whitespace tokens; high means a recoverable misspelling, low a fabrication "
        "(SAAG section 2.1, eq. 2). Independent of the grounding mode.",
    ),
    _intrinsic(
        "rpr",
        2,
        True,
        "Required Parameter Recall: |A_req ∩ P| / |A_req|, the share of the required "
        "parameters present; 1 when none is required (SAAG section 2.2, eq. 3). "
        "Independent of the grounding mode.",
    ),
    _intrinsic(
        "pds",
        2,
        None,
        "Parameter Drift Score: mean over the out-of-schema parameters p of "
        "max over admissible a of WRatio(p, a) / 100; >= 0.8 marks drift (unless that "
        "name is already predicted), else spurious (SAAG section 2.2, eq. 4). "
        "Independent of the grounding mode.",
    ),
    _intrinsic(
        "spr",
        2,
        False,
        "Spurious Parameter Rate: share of predicted parameters that are neither "
        "admissible nor drifted, |spurious| / |P| (SAAG section 2.2, eq. 5; also counts "
        "a PDS >= 0.8 parameter whose target is already predicted, as the paper's text "
        "says). Independent of the grounding mode.",
    ),
    _intrinsic(
        "avem",
        3,
        True,
        "Argument Value Exact Match: share of the predicted arguments whose value the "
        "grounding mode accepts. Under lexical grounding this is the paper's "
        "|{i : ExactMatch(v_i, Q)}| / |P|, values found verbatim in the query, "
        "type-aware (SAAG section 2.3, eq. 6). Under registry grounding (the default) "
        "it is not eq. 6: it counts every accepted value (stated, normalised, unit, "
        "context, format, described, enum, default, judge), and not a value outside "
        "its parameter's enum even when the query states it.",
    ),
    _intrinsic(
        "qslo",
        3,
        True,
        "Query-Supported Lexical Overlap: mean PartialRatio(v, Q) / 100 over the string "
        "values that fail grounding; lexical, not semantic (SAAG section 2.3, eq. 7). "
        "Under lexical grounding those are the strings that fail exact match (the "
        "paper's); under registry grounding, those the mode does not accept. Q includes "
        "the conversation before the request when there is one.",
    ),
    _intrinsic(
        "vhr",
        3,
        False,
        "Value Hallucination Rate: mean per-argument hallucination h(v, Q) over the "
        "contextual arguments, 0 exactly when the paper's pass test "
        "sum of h = 0 holds (SAAG section 2.3, eqs. 8-9). Under lexical grounding h is "
        "eq. 8; under registry grounding an accepted value scores 0 and an unaccepted "
        "one eq. 8's h over the request and its context, never 0 (0.05 for a fragment "
        "of a word, 1 for a number when the request states numbers only in words).",
    ),
    MetricSpec(
        "name_acc",
        "Name acc",
        "name acc",
        "extrinsic",
        True,
        "Name accuracy: the predicted name equals the gold name (SAAG section 3, "
        "extrinsic metrics; Table 2).",
        row_key="name_match",
        rate=True,
    ),
    MetricSpec(
        "arg_precision",
        "Arg P",
        "arg P",
        "extrinsic",
        True,
        "Argument precision: correct arguments / predicted arguments, against the gold "
        "call (SAAG section 3, extrinsic metrics).",
        row_key="arg_precision",
    ),
    MetricSpec(
        "arg_recall",
        "Arg R",
        "arg R",
        "extrinsic",
        True,
        "Argument recall: correct arguments / gold arguments (with BFCL gold: the "
        "mandatory and the correct optional ones) (SAAG section 3, extrinsic metrics).",
        row_key="arg_recall",
    ),
    MetricSpec(
        "arg_f1",
        "Arg F1",
        "arg F1",
        "extrinsic",
        True,
        "Argument F1: 2PR / (P + R) of argument precision and recall, 0 when both are 0 "
        "(SAAG section 3, extrinsic metrics).",
        row_key="arg_f1",
    ),
    MetricSpec(
        "solve_rate",
        "Solve rate",
        "solve rate",
        "outcome",
        True,
        "Share of gold cases whose final attempt passes all three stages and names "
        "the gold function (SAAG section 4, Figs. 2-4).",
        row_key="solved",
        rate=True,
    ),
    MetricSpec(
        "attempts_to_solve",
        "Attempts to solve",
        "attempts",
        "outcome",
        False,
        "Mean attempts over solved outcomes (the correction loop, SAAG section 2.4; "
        "cumulative solve rate, Fig. 3).",
    ),
)

METRICS_BY_KEY: dict[str, MetricSpec] = {m.key: m for m in METRIC_SPECS}


def metric(key: str) -> MetricSpec:
    """The spec of ``key``; ``KeyError`` naming the known keys otherwise.

    >>> metric("vhr").higher_is_better, metric("vhr").stage
    (False, 3)
    """
    try:
        return METRICS_BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown metric {key!r}; known: {', '.join(METRICS_BY_KEY)}") from None


def keys(kind: MetricKind) -> tuple[str, ...]:
    """The keys of one kind, in list order."""
    return tuple(m.key for m in METRIC_SPECS if m.kind == kind)


def specs(kind: MetricKind) -> tuple[MetricSpec, ...]:
    """The specs of one kind, in list order."""
    return tuple(m for m in METRIC_SPECS if m.kind == kind)


#: the SAAG intrinsic metrics in cascade order (``fnem`` ... ``vhr``)
INTRINSIC_KEYS: tuple[str, ...] = keys("intrinsic")
#: the extrinsic metrics (``name_acc``, ``arg_precision``, ``arg_recall``, ``arg_f1``)
EXTRINSIC_KEYS: tuple[str, ...] = keys("extrinsic")
#: keys of the gold-dependent fields of a ``score`` row (``name_match`` ... ``solved``)
GOLD_ROW_KEYS: tuple[str, ...] = tuple(
    m.row_key for m in METRIC_SPECS if m.kind != "intrinsic" and m.row_key is not None
)
