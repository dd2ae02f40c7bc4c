"""The SAAG cascade: registry conformance -> structural completeness -> argument grounding.

``diagnose`` scores one tool call against a registry and the user's query and halts at the
first failing stage; metrics of later stages stay ``None`` (they are stage-conditional).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from statistics import fmean
from typing import Any

from rapidfuzz import fuzz

from callscope.parse import MAX_ARGUMENT_DEPTH
from callscope.saag import grounding as g
from callscope.types import ToolCall

#: γ_pds: PDS at or above this makes an out-of-schema parameter *drifted* rather than spurious
#: (SAAG paper, Eq. 4 and App. A: "the parameter drift threshold is γ_pds = 0.8")
DRIFT_THRESHOLD = 0.8
#: NCS = max over candidates of 0.6 WRatio + 0.4 Jaccard (SAAG paper, Eq. 2)
NCS_WRATIO_WEIGHT = 0.6
NCS_JACCARD_WEIGHT = 0.4


def _too_deep(value: Any) -> bool:
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if (
            depth > MAX_ARGUMENT_DEPTH
        ):  # the parser's limit: a call it accepts is never refused here
            return True
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list | tuple):
            stack.extend((x, depth + 1) for x in v)
    return False


@dataclass
class Diagnosis:
    """The cascade's verdict on one call. ``stage`` is 0 when all stages pass, else the first
    failing stage (1, 2 or 3). Failure detail lists keep the model's argument order."""

    stage: int
    fnem: int
    ncs: float | None = None
    nearest: str | None = None
    rpr: float | None = None
    pds: float | None = None
    spr: float | None = None
    avem: float | None = None
    qslo: float | None = None
    vhr: float | None = None
    missing: list[str] = field(default_factory=list)
    drifted: list[str] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)
    numeric: list[str] = field(default_factory=list)
    hard: list[str] = field(default_factory=list)
    soft: list[str] = field(default_factory=list)
    #: for each drifted parameter, the schema name it most resembles
    drift_targets: dict[str, str] = field(default_factory=dict)
    #: the predicted name, when one was parsed (used by the stage-1 message)
    predicted: str | None = None

    @property
    def passed(self) -> bool:
        return self.stage == 0

    def failure_kinds(self) -> list[str]:
        """Failure kinds present at the failing stage: wrong_name / no_name (1), missing /
        spurious / drifted (2), numeric / hard / soft (3)."""
        if self.stage == 1:
            return ["no_name" if self.fnem == -1 else "wrong_name"]
        kinds = []
        for kind in ("missing", "spurious", "drifted", "numeric", "hard", "soft"):
            if getattr(self, kind):
                kinds.append(kind)
        return kinds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- stage 1


def _trigrams(s: str) -> set[str]:
    s = s.lower()
    return {s[i : i + 3] for i in range(len(s) - 2)}


def _jaccard(a: str, b: str) -> float:
    ta, tb = set(a.lower().split()), set(b.lower().split())
    union = ta | tb
    return len(ta & tb) / len(union) if union else 0.0


@lru_cache(maxsize=256)
def _registry_trigrams(registry: tuple[str, ...]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Trigram sets of a registry, computed once per registry (large registries repeat)."""
    return tuple((name, frozenset(_trigrams(name))) for name in registry)


def nearest_candidate(name: str, registry: list[str]) -> tuple[float, str | None]:
    """NCS and the argmax registry name (first on ties); (0, None) without candidates."""
    grams = _trigrams(name)
    best, best_name = 0.0, None
    for cand, cand_grams in _registry_trigrams(tuple(registry)):
        if not grams & cand_grams:
            continue
        score = NCS_WRATIO_WEIGHT * fuzz.WRatio(name, cand) / 100.0 + NCS_JACCARD_WEIGHT * _jaccard(
            name, cand
        )
        if best_name is None or score > best:
            best, best_name = score, cand
    return best, best_name


# --------------------------------------------------------------------------- stage 2


def schema_params(spec: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(A_req, A_all) from a function spec's JSON schema, in schema order."""
    params = spec.get("parameters") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    a_all = [str(k) for k in props] if isinstance(props, dict) else []
    req = params.get("required") if isinstance(params, dict) else None
    a_req = [str(r) for r in req] if isinstance(req, list) else []
    return a_req, a_all


# --------------------------------------------------------------------------- cascade


def find_spec(functions: Sequence[dict[str, Any]], name: Any) -> dict[str, Any] | None:
    """The first spec in ``functions`` named ``name`` (``None`` when there is none)."""
    for spec in functions:
        if spec.get("name") == name:
            return spec
    return None


def diagnose(call: ToolCall | None, functions: list[dict[str, Any]], query: str) -> Diagnosis:
    """Score ``call`` against the registry ``functions`` and the user ``query``."""
    registry = [str(f.get("name")) for f in functions]
    # Stage 1: registry conformance
    if call is None or not call.name:
        return Diagnosis(stage=1, fnem=-1)
    spec = find_spec(functions, call.name)
    if spec is None:
        ncs, nearest = nearest_candidate(call.name, registry)
        return Diagnosis(stage=1, fnem=0, ncs=ncs, nearest=nearest, predicted=call.name)

    # Stage 2: structural completeness
    a_req, a_all = schema_params(spec)
    predicted = list(call.arguments)
    pset = set(predicted)
    rpr = sum(1 for a in a_req if a in pset) / len(a_req) if a_req else 1.0
    missing = [a for a in a_req if a not in pset]
    drifted: list[str] = []
    spurious: list[str] = []
    targets: dict[str, str] = {}
    pds_values: list[float] = []
    for p in predicted:
        if p in a_all:
            continue
        best, best_name = 0.0, None
        for a in a_all:
            score = fuzz.WRatio(p, a) / 100.0
            if best_name is None or score > best:
                best, best_name = score, a
        pds_values.append(best)
        if best >= DRIFT_THRESHOLD and best_name is not None and best_name not in pset:
            drifted.append(p)
            targets[p] = best_name
        else:
            spurious.append(p)
    pds = fmean(pds_values) if pds_values else None
    spr = len(spurious) / len(predicted) if predicted else 0.0
    d = Diagnosis(
        stage=2,
        fnem=1,
        rpr=rpr,
        pds=pds,
        spr=spr,
        missing=missing,
        drifted=drifted,
        spurious=spurious,
        drift_targets=targets,
        predicted=call.name,
    )
    if rpr < 1.0 or spr > 0.0 or drifted:
        return d

    # Stage 3: argument grounding. A value nested deeper than MAX_ARGUMENT_DEPTH (only reachable by
    # building a ToolCall in code: the parser refuses it) counts as ungrounded, a hard drift.
    deep = {p for p, v in call.arguments.items() if _too_deep(v)}
    em = {p: p not in deep and g.exact_match(v, query) for p, v in call.arguments.items()}
    d.avem = sum(em.values()) / len(predicted) if predicted else None
    overlaps = [
        g.partial_ratio(v, query) / 100.0
        for p, v in call.arguments.items()
        if isinstance(v, str) and not em[p]
    ]
    d.qslo = fmean(overlaps) if overlaps else None
    hs: list[float] = []
    for p, v in call.arguments.items():
        h = 1.0 if p in deep else g.hallucination(v, query)
        if h is None:
            continue
        hs.append(h)
        if h > 0:
            leaf = None if p in deep else g.worst_leaf(v, query)
            if g.is_number(leaf):
                d.numeric.append(p)
            elif leaf is None or g.partial_ratio(str(leaf), query) < g.HARD_DRIFT_BELOW:
                d.hard.append(p)
            else:
                d.soft.append(p)
    d.vhr = fmean(hs) if hs else None
    d.stage = 3 if any(h > 0 for h in hs) else 0
    return d
