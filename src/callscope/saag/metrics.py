"""The one list of metrics callscope reports: :data:`METRIC_SPECS`.

Score output (:mod:`callscope.saag.score`), aggregation (:mod:`callscope.report.aggregate`),
run comparison (:mod:`callscope.report.compare`), the report tables and the HTML page (which
receives the list as JSON) all read their metric keys, labels and order from here.

Three kinds (SAAG paper, section 3, "Metrics", and section 4):

* ``intrinsic``: the eight SAAG diagnostics of section 2, one cascade stage each
  (stage 1 registry conformance, section 2.1; stage 2 structural completeness, 2.2; stage 3
  argument value grounding, 2.3). They are stage-conditional: the cascade halts at the first
  failing stage, so a later-stage metric is defined only where the earlier stages passed.
* ``extrinsic``: name accuracy and argument precision, recall and F1 against the gold call,
  computed only afterwards (never inside the correction loop).
* ``outcome``: what the correction loop (section 2.4) achieves per outcome: solve rate and
  attempts to solve.
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _intrinsic(
    key: str, stage: int, higher: bool | None, description: str, rate: bool = False
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
        "of FNEM = 1.",
        rate=True,
    ),
    _intrinsic(
        "ncs",
        1,
        None,
        "Nearest Candidate Score, when FNEM = 0: max over trigram-sharing registry "
        "names of 0.6 WRatio + 0.4 token Jaccard; high means a recoverable misspelling, "
        "low a fabrication (SAAG section 2.1, eq. 2).",
    ),
    _intrinsic(
        "rpr",
        2,
        True,
        "Required Parameter Recall: share of the required parameters present "
        "(SAAG section 2.2, eq. 3).",
    ),
    _intrinsic(
        "pds",
        2,
        None,
        "Parameter Drift Score: mean over unknown parameters of the best WRatio / 100 "
        "against the admissible ones; >= 0.8 marks drift, else spurious "
        "(SAAG section 2.2, eq. 4).",
    ),
    _intrinsic(
        "spr",
        2,
        False,
        "Spurious Parameter Rate: share of predicted parameters that are neither "
        "admissible nor drifted (SAAG section 2.2, eq. 5).",
    ),
    _intrinsic(
        "avem",
        3,
        True,
        "Argument Value Exact Match: share of argument values found verbatim in the "
        "query, type-aware (SAAG section 2.3, eq. 6).",
    ),
    _intrinsic(
        "qslo",
        3,
        True,
        "Query-Supported Lexical Overlap: mean PartialRatio / 100 of string values "
        "against the query; lexical, not semantic (SAAG section 2.3, eq. 7).",
    ),
    _intrinsic(
        "vhr",
        3,
        False,
        "Value Hallucination Rate: mean per-argument hallucination h(v, Q) over the "
        "contextual arguments (SAAG section 2.3, eqs. 8-9).",
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
        "Argument precision against the gold arguments (SAAG section 3, extrinsic metrics).",
        row_key="arg_precision",
    ),
    MetricSpec(
        "arg_recall",
        "Arg R",
        "arg R",
        "extrinsic",
        True,
        "Argument recall against the gold arguments (SAAG section 3, extrinsic metrics).",
        row_key="arg_recall",
    ),
    MetricSpec(
        "arg_f1",
        "Arg F1",
        "arg F1",
        "extrinsic",
        True,
        "Argument F1 against the gold arguments (SAAG section 3, extrinsic metrics).",
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
    """The spec of ``key``; ``KeyError`` naming the known keys otherwise."""
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
