"""The SAAG paper's eight intrinsic metrics (section 2, eqs. 1-9), one pure function each.

:func:`callscope.saag.cascade.diagnose` runs the three stages and calls these functions for
the numbers it reports in a :class:`~callscope.records.Diagnosis`;
:data:`~callscope.saag.metrics.METRIC_SPECS` describes them to the tables. Each docstring
states the formula, its source, and what the grounding mode changes. Notation as in the
paper: ``R`` the registry's function names, ``ŷ`` the predicted name, ``P`` the predicted
parameters (``v_i`` the value of the i-th), ``A_req`` and ``A_all`` the function's required
and admissible parameters, ``Q`` the user's query.

The metrics are stage-conditional (paper, section 3, "Metric classes"): the cascade halts at
the first failing stage, so a metric of a later stage exists only where the earlier ones
passed. Stages 1 and 2 (FNEM, NCS, RPR, PDS, SPR) do not depend on the grounding mode. Stage 3
(AVEM, QSLO, VHR) reads the verdict of the mode (:mod:`callscope.saag.groundings`) on each
value: ``lexical`` is the paper's definition (a value is grounded when it occurs verbatim in
``Q``, :func:`callscope.saag.grounding.exact_match`, and scores the paper's
h(v), :func:`callscope.saag.grounding.hallucination`); ``registry``, the default, also accepts
values the request states in another form or the schema justifies (reasons ``normalised``,
``unit``, ``context``, ``format``, ``described``, ``enum``, ``default``; ``judge`` in any mode
when a judge is given), so its AVEM, QSLO and VHR are not the paper's eqs. 6-9 (each function
says how).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from rapidfuzz import fuzz

from callscope.core.memo import text_cache
from callscope.saag import grounding as g

#: γ_pds: PDS at or above this makes an out-of-schema parameter *drifted* rather than spurious
#: (SAAG paper, Eq. 4 and App. A: "the parameter drift threshold is γ_pds = 0.8")
DRIFT_THRESHOLD = 0.8
#: NCS = max over candidates of 0.6 WRatio + 0.4 Jaccard (SAAG paper, Eq. 2)
NCS_WRATIO_WEIGHT = 0.6
NCS_JACCARD_WEIGHT = 0.4


def mean(values: Sequence[float]) -> float:
    """``statistics.fmean`` of a non-empty sequence, the same float (``fsum / n``) without its
    per-call overhead.

    >>> mean([0.25, 0.5])
    0.375
    """
    return math.fsum(values) / len(values)


# --------------------------------------------------------------------------- stage 1


def fnem(name: Any, registered: bool) -> int:
    """Function Name Exact Match (SAAG paper, section 2.1, eq. 1)::

        FNEM(ŷ, R) = -1 if ŷ = ∅,  0 if ŷ ∉ R,  1 if ŷ ∈ R

    ``name`` is the parsed name (empty or ``None``: nothing parsed), ``registered`` whether
    ``R`` holds it. Independent of the grounding mode.

    >>> fnem("get_weather", True), fnem("get_wether", False), fnem(None, False)
    (1, 0, -1)
    """
    if not name:
        return -1
    return 1 if registered else 0


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the lowercased whitespace tokens of ``a`` and ``b`` (NCS's
    token term, SAAG paper eq. 2); 0 when both are empty.

    >>> jaccard("Get Weather", "get forecast")
    0.3333333333333333
    """
    ta, tb = set(a.lower().split()), set(b.lower().split())
    union = ta | tb
    return len(ta & tb) / len(union) if union else 0.0


def ncs_score(name: str, candidate: str) -> float:
    """One candidate's term of the Nearest Candidate Score (SAAG paper, section 2.1, eq. 2)::

        NCS(ŷ, R) = max over c ∈ C of [0.6 WRatio(ŷ, c) / 100 + 0.4 Jaccard(ŷ, c)]

    with ``C`` the names of ``R`` sharing a lowercased trigram with ``ŷ`` (the max is
    :func:`callscope.saag.cascade.nearest_candidate`), WRatio RapidFuzz's weighted ratio and
    :func:`jaccard` over whitespace tokens. Computed in this one evaluation order, so every path
    of the search gives the same float. Reported only when FNEM = 0; high means a recoverable
    misspelling, low a fabrication. Independent of the grounding mode.

    >>> round(ncs_score("get_weathr", "get_weather"), 4)
    0.5714
    """
    w = fuzz.WRatio(name, candidate)
    return NCS_WRATIO_WEIGHT * w / 100.0 + NCS_JACCARD_WEIGHT * jaccard(name, candidate)


# --------------------------------------------------------------------------- stage 2


def rpr(a_req: Sequence[str], arguments: Collection[str]) -> float:
    """Required Parameter Recall (SAAG paper, section 2.2, eq. 3)::

        RPR = |A_req ∩ P| / |A_req|

    1.0 when the function requires nothing (the paper leaves 0/0 undefined; nothing is
    missing); a name the schema's ``required`` repeats is in ``A_req`` once. ``arguments``: the predicted parameter names ``P``. Independent of the grounding
    mode; RPR < 1 fails stage 2.

    >>> rpr(["bill_amount", "tip_percentage"], {"bill_amount": 84.5})
    0.5
    >>> rpr([], {})
    1.0
    """
    if not a_req:
        return 1.0
    present = sum(1 for a in a_req if a in arguments)
    return present / len(a_req)


#: pairs of names whose WRatio :func:`wratio` remembers, and the longest pair (characters)
#: it keeps: a model repeats its out-of-schema names, and registries their parameter names
_WRATIO_PAIRS = 16384
_WRATIO_MAX_CHARS = 256


@text_cache(_WRATIO_PAIRS)
def _wratio_memo(a: str, b: str) -> float:
    return fuzz.WRatio(a, b)  # type: ignore[no-any-return]


def wratio(a: Any, b: Any) -> float:
    """``rapidfuzz.fuzz.WRatio(a, b)`` (0-100), remembered for the last few thousand pairs
    of short strings (each costs microseconds; the same float either way).

    >>> wratio("tip_percent", "tip_percentage")
    88.0
    """
    if type(a) is str and type(b) is str and len(a) + len(b) <= _WRATIO_MAX_CHARS:
        return _wratio_memo(a, b)
    return fuzz.WRatio(a, b)  # type: ignore[no-any-return]


def drift_score(param: str, a_all: Sequence[str]) -> tuple[float, str | None]:
    """Parameter Drift Score of one out-of-schema parameter ``p ∈ P \\ A_all`` (SAAG paper,
    section 2.2, eq. 4), and the admissible name it most resembles (the first on ties;
    ``None`` when ``A_all`` is empty, score 0)::

        PDS(p, A_all) = max over a ∈ A_all of WRatio(p, a) / 100

    ``p`` is *drifted* when PDS >= :data:`DRIFT_THRESHOLD` (0.8) and that name is not itself
    predicted, *spurious* otherwise. Independent of the grounding mode.

    >>> drift_score("tip_percent", ["bill_amount", "tip_percentage"])
    (0.88, 'tip_percentage')
    >>> drift_score("colour", [])
    (0.0, None)
    """
    best, best_name = 0.0, None
    for a in a_all:
        score = wratio(param, a) / 100.0
        if best_name is None or score > best:
            best, best_name = score, a
    return best, best_name


def pds(scores: Sequence[float]) -> float | None:
    """The PDS a diagnosis reports: the mean of :func:`drift_score` over the out-of-schema
    parameters ``P \\ A_all`` (eq. 4 is per parameter; a diagnosis reports their mean; the
    cascade scores at most the first :data:`~callscope.saag.cascade.MAX_DRIFT_SCORED` of a
    call, the rest spurious), and ``None`` when every predicted parameter is admissible. A
    descriptive diagnostic; independent of the grounding mode.

    >>> pds([0.88, 0.5]), pds([])
    (0.69, None)
    """
    return mean(scores) if scores else None


def spr(spurious: Sequence[str], predicted: Sequence[str]) -> float:
    """Spurious Parameter Rate (SAAG paper, section 2.2, eq. 5)::

        SPR = |{p ∈ P \\ A_all : p spurious}| / |P|

    ``spurious``: the out-of-schema parameters the cascade does not count as drifted, those
    with PDS < 0.8 (eq. 5's set, PDS by :func:`drift_score`) and also a parameter with
    PDS >= 0.8 whose nearest admissible name is already predicted (the paper's text after
    eq. 4 calls it spurious; eq. 5's set leaves it out). A parameter schema that says
    ``"additionalProperties": true`` (or gives a schema for them) admits every other name:
    ``A_all`` is then open, and only drifted names are counted, not spurious ones
    (callscope's reading of JSON Schema; the paper's registries never say it). 0.0 when
    nothing is predicted. Independent of the grounding mode; SPR > 0 fails stage 2.

    >>> spr(["colour"], ["bill_amount", "colour"]), spr([], [])
    (0.5, 0.0)
    """
    return len(spurious) / len(predicted) if predicted else 0.0


# --------------------------------------------------------------------------- stage 3


def avem(grounded: Collection[str], predicted: Sequence[str]) -> float | None:
    """Argument Value Exact Match as the cascade reports it: the share of the predicted
    parameters whose value the grounding mode accepts, ``|grounded| / |P|`` (``None`` when
    nothing is predicted). ``grounded``: the accepted parameters (a diagnosis's ``grounded``).

    The paper's AVEM (SAAG paper, section 2.3, eq. 6) is::

        AVEM = |{i : ExactMatch(v_i, Q) = 1}| / |P|

    (strings at word boundaries, case-insensitive; numbers against the query's number tokens;
    lists element by element; :func:`callscope.saag.grounding.exact_match`). That is this
    function under the ``lexical`` grounding without a judge, where the only reason is
    ``stated``. Under ``registry``, the default, it is *not* eq. 6: it counts every accepted
    value, whatever its reason (``stated``, ``normalised``, ``unit``, ``context``, ``format``,
    ``described``, ``enum``, ``default``, and ``judge`` when a judge is given), and a value
    outside its parameter's ``enum`` is not counted even when the query states it verbatim.

    >>> avem({"city": "stated"}, ["city", "unit"])
    0.5
    >>> avem({"city": "stated", "unit": "enum"}, ["city", "unit"])
    1.0
    """
    return len(grounded) / len(predicted) if predicted else None


def qslo(values: Sequence[str], text: str) -> float | None:
    """Query-Supported Lexical Overlap (SAAG paper, section 2.3, eq. 7) over ``values``, the
    top-level string values the grounding mode does not accept (and does not treat as
    assumed)::

        QSLO = (1 / |S|) Σ over i ∈ S of PartialRatio(v_i, Q) / 100

    PartialRatio is RapidFuzz's, of the lowercased strings
    (:func:`callscope.saag.grounding.partial_ratio`; 0 for a pair whose alignment would
    exceed its work bound, a long value in a long text); ``None`` when ``S`` is empty. Lexical,
    not semantic. What the mode changes: under ``lexical`` ``S`` is the paper's (strings that
    fail ExactMatch); under ``registry`` it leaves out every accepted string, and a blank
    optional string (assumed); in both modes ``text`` is the request with the conversation
    before it (:attr:`callscope.saag.evidence.Evidence.all_text`), which is the paper's ``Q``
    when there is no context.

    >>> qslo(["Pariss", "celsius"], "Weather in Paris?")
    0.6166666666666667
    >>> qslo([], "Weather in Paris?") is None
    True
    """
    if not values:
        return None
    return mean([g.partial_ratio(v, text) / 100.0 for v in values])


def vhr(hs: Sequence[float]) -> float | None:
    """Value Hallucination Rate: the mean of the per-argument hallucination scores ``hs``
    over the arguments that have one (SAAG paper, section 2.3, eqs. 8-9); ``None`` when every
    argument is assumed. Under ``lexical`` each score is the paper's eq. 8
    (:func:`callscope.saag.grounding.hallucination`)::

        h(v, Q) = 0 if ExactMatch(v, Q);  1 - PartialRatio(v, Q) / 100 for a string;
                  1 for a number when Q holds a digit;  excluded (assumed) otherwise

    and the arguments scored are eq. 9's contextual subset ``G``. Eq. 9 states the pass test,
    ``VHR_ctx = Σ over i ∈ G of h(v_i, Q) = 0``; the cascade reports the mean, which is 0
    exactly when that sum is. Under ``registry`` an accepted value scores 0 and an unaccepted
    one the paper's h over the request and its context, raised to be non-zero (a fragment of
    a word: :data:`callscope.saag.groundings.FRAGMENT_H`; a number when the request states
    numbers only in words: 1). In every mode a value nested deeper than the parser allows
    scores 1.

    >>> vhr([0.0, 0.6]), vhr([])
    (0.3, None)
    """
    return mean(hs) if hs else None
