"""The single-call audit: how far the cascade's diagnosis of one call can be trusted on a
benchmark (beyond the SAAG paper, which never measures its detectors).

The ``calls`` design of the one audit engine (:mod:`callscope.saag.audit_engine`): every probe
is an answer of one call, judged by the cascade (a one-call answer's verdict is that call's
diagnosis). Every stage of the cascade is a detector; on any cases with a gold call
:func:`audit` builds

* *negatives*, calls known to be correct: the gold call in full (``gold_full``: every
  argument the gold gives) and minimal (``gold_minimal``: arguments BFCL's answer lets a
  model omit left out; for gold without acceptable sets, the same as full);
* *positives*, calls made wrong on purpose from the minimal gold, one per failure kind the
  cascade claims to detect (:data:`KINDS`): stage 1 ``misspelled_name``, ``other_registry_name``,
  ``invented_name``; stage 2 ``missing_required``, ``spurious_param``, ``drifted_param``;
  stage 3 ``unstated_string``, ``unstated_number``, ``defaulted_number`` (a number the
  request states replaced by the parameter's own numeric default: what a model does when it
  ignores the user's "round to 3 decimals"), ``other_case_value``, ``swapped_values``,
  ``truncated_string``, ``blanked_required`` (a required string argument set to ``""``: the
  registry mode reads ``""`` as "left out" only for optional parameters),
  ``same_kind_entity`` (issue 46: a string that is a known entity, a country, city, US
  state, ticker, airport or currency, replaced by the nearest other entity of the same
  table, :func:`~callscope.saag.normalise.knowledge.entities.entity_swaps`: "Austria" for
  "Australia"; detected only when flagged as more than a soft drift, which the gated guard
  lets through, :data:`CONFIDENT_ONLY`),

scores them all and reports, per kind (and per benchmark category), the *false-alarm rate*
on negatives (share flagged at any stage) and the *detection rate* on positives (share
flagged at any stage; ``at_stage`` also gives the share flagged at the kind's own stage),
each with its Wilson 95% interval (:func:`callscope.core.stats.wilson`).

A positive is built only from a case whose minimal gold passes in the same mode (the
design's base), so a detection is never a false alarm of the base call in disguise; positives
that cannot be built for a case (no string argument, one-function registry, ...) are skipped
and counted by ``n``. Every perturbation is deterministic for ``seed`` (``random.Random``
seeded with the seed, the case id and the kind).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from callscope.core.stats import rate_ci, seeded_rng
from callscope.core.table import pct_ci
from callscope.records import FailureKind
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.audit_engine import AuditDesign, AuditResult, Probe, run_audit
from callscope.saag.cascade import find_spec, schema_params, spec_properties
from callscope.saag.groundings import Grounding, Judge
from callscope.saag.normalise.knowledge.entities import entity_swaps
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
    "defaulted_number": 3,
    "other_case_value": 3,
    "swapped_values": 3,
    "truncated_string": 3,
    "blanked_required": 3,
    "same_kind_entity": 3,
    # the kinds whose entry carries an audit probe (records.KindInfo.probe), by kind name
    **{k.value: k.stage for k in FailureKind if k.info.probe is not None},
}
#: kinds detected only by a flag the gated guard acts on (a soft drift alone is a miss)
CONFIDENT_ONLY = frozenset({"same_kind_entity"})
_INVENTED_NAMES = (
    "quantum_ledger_sync",
    "fetch_orbital_manifest",
    "compose_weather_haiku",
    "zyxt_process_blob",
)
_UNSTATED_STRINGS = ("Zanzibar Quartz", "periwinkle_mode", "Vostok-7", "unknown_xyzzy")
_SPURIOUS_PARAM = "zq_extra_flag"


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


def scalar(v: Any) -> bool:
    """A string or a number (not a boolean): a value a perturbation may move or replace."""
    return isinstance(v, str | int | float) and not isinstance(v, bool)


def acceptable_values(gold: dict[str, Any], param: str) -> list[Any]:
    """The values one gold call accepts for ``param``: its ``acceptable`` list, then its
    argument."""
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
            if scalar(v) and v != "":
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
        return seeded_rng(seed, case.id, kind)

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
    if numbers:
        props = spec_properties(spec)
        stated = n.number_evidence(case.query)
        defaulted = [
            (p, d)
            for p in numbers
            if any(g.numbers_equal(args[p], x) for x in stated)
            for d in n.schema_defaults(props.get(p))[:1]
            if g.is_number(d) and not g.numbers_equal(d, args[p])
        ]
        if defaulted:
            p, d = rng("defaulted_number").choice(defaulted)
            add("defaulted_number", {**args, p: d}, f"{p}: {args[p]!r} -> default {d!r}")
    candidates = []
    for p, v in args.items():
        if not scalar(v):
            continue
        acceptable = acceptable_values(case.gold or {}, p)
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
        if type(args[a]) is type(args[b]) and scalar(args[a]) and not _same(args[a], args[b])
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
    swaps = [swap for p in strings if (swap := _entity_swap(case, p, args[p])) is not None]
    if swaps:
        p, new, table = rng("same_kind_entity").choice(swaps)
        add("same_kind_entity", {**args, p: new}, f"{p}: {args[p]!r} -> {new!r} (another {table})")
    props = spec_properties(spec)
    for kind in FailureKind:  # the probes the kinds' own entries carry
        probe = kind.info.probe
        made = probe(args, props, rng(kind.value)) if probe is not None else None
        if made is not None:
            add(kind.value, *made)
    return out


def _entity_swap(case: Case, param: str, value: str) -> tuple[str, str, str] | None:
    """``(param, new value, table)``: ``value`` (its part before a first comma: "Berkeley" of
    "Berkeley, CA") replaced by the nearest other entity of its table that the case neither
    accepts nor states; ``None`` when ``value`` is no entity."""
    head, sep, tail = value.strip().partition(",")
    swap = entity_swaps(head.strip())
    if swap is None:
        return None
    acceptable = acceptable_values(case.gold or {}, param)
    for name in swap.names:
        new = name + sep + tail
        if g.exact_match(name, case.query) or any(_same(new, a) for a in acceptable):
            continue
        return param, new, swap.table
    return None


# --------------------------------------------------------------------------- audit


def _negatives(case: Case) -> list[Probe] | None:
    calls = gold_calls(case)
    if calls is None:
        return None
    return [Probe(kind, [call]) for kind, call in zip(NEGATIVES, calls, strict=True)]


def _positives(case: Case, pool: dict[str, list[tuple[str, Any]]], seed: int) -> list[Probe]:
    calls = gold_calls(case)
    if calls is None:
        return []
    return [
        Probe(kind, [call], change) for kind, call, change in positives(case, calls[1], pool, seed)
    ]


def _headline(result: AuditResult) -> str:
    """One line: false alarms on minimal gold and detection per stage."""
    s = {e["kind"]: e for e in result.summary()}
    neg = s.get("gold_minimal")
    if neg is None:
        return f"audit ({result.grounding} grounding): no gold calls"
    parts = [f"false alarms on gold {pct_ci(neg['rate'], neg['lo'], neg['hi'])}% (n={neg['n']})"]
    for stage in (1, 2, 3):
        rows = [r for r in result.rows if r.positive and KINDS[r.kind] == stage]
        if rows:
            rate, lo, hi = rate_ci(sum(r.flagged for r in rows), len(rows))
            parts.append(f"detects stage-{stage} errors {pct_ci(rate, lo, hi)}%")
    return f"diagnosis audit ({result.grounding} grounding): " + "; ".join(parts)


#: the columns of ``audit.csv`` (:func:`~callscope.saag.audit_engine.summary_table`)
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

#: the single-call design of the audit engine (module docstring)
CALL_AUDIT = AuditDesign(
    name="calls",
    reads=lambda case: isinstance(case.gold, dict) and bool(case.gold),
    negatives=NEGATIVES,
    kinds=KINDS,
    detectors=("cascade",),
    base=frozenset({"gold_minimal"}),
    per_call=frozenset(),
    prepare=_values_by_param,
    build_negatives=_negatives,
    build_positives=_positives,
    headline=_headline,
    stem="audit",
    json_key="audits",
    columns=SUMMARY_COLUMNS,
    title="Detector validity audit",
    caption="False alarms on gold calls and detection of calls made wrong on purpose "
    "(share flagged at any stage, Wilson 95%).",
    base_label="minimal gold",
    confident_only=CONFIDENT_ONLY,
)


def audit(
    cases: Sequence[Case],
    *,
    grounding: str | Grounding | None = None,
    seed: int = 0,
    judge: Judge | None = None,
) -> AuditResult:
    """Audit the cascade on ``cases`` (those without a gold call are skipped) in one
    grounding mode: :data:`CALL_AUDIT` run by the engine; see the module doc for what is built
    and measured."""
    return run_audit(cases, CALL_AUDIT, grounding=grounding, seed=seed, judge=judge)
