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

judged by the two detectors of the one audit engine (:mod:`callscope.saag.audit_engine`,
``cascade`` and ``gold``, measured apart): this is its ``answers`` design
(:data:`ANSWER_AUDIT`), of which the single-call audit is the one-call case. The cascade judges
each call against the request and the registry, so it cannot know that a right call is
missing, that two stated values sit in the wrong calls, or that a plausible call was not
wanted; the gold solve reads no grounding mode (the same in both).

Per kind and detector the audit reports the *false-alarm rate* on negatives and the
*detection rate* on positives (share flagged), each with its Wilson 95% interval; for
``gold_answer`` also the cascade's per-call false-alarm rate (calls of gold answers flagged /
calls), the figure comparable with the single-call audit's ``gold_minimal``. A detector's
positives are built only from a case whose negative it did not flag. Perturbations are
deterministic for ``seed`` (``random.Random`` seeded with the seed, the case id and the kind).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from callscope.core.stats import seeded_rng
from callscope.core.table import pct_ci
from callscope.saag import grounding as g
from callscope.saag import normalise as n
from callscope.saag.audit import (
    _UNSTATED_STRINGS,
    _same,
    _unstated_number,
    acceptable_values,
    gold_call_forms,
    scalar,
)
from callscope.saag.audit_engine import AuditDesign, AuditResult, Probe, run_audit
from callscope.saag.cascade import find_spec, schema_params
from callscope.saag.extrinsic import bfcl_values_equal
from callscope.saag.groundings import Grounding, Judge
from callscope.types import Case, ToolCall

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
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def is_answer_case(case: Case) -> bool:
    """Whether the answer audit reads ``case``: its gold is a list of calls or ``[]`` (a
    single gold call, a dict, is the single-call audit's)."""
    return isinstance(case.gold, list)


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


def _accepted(value: Any, gold: dict[str, Any], param: str) -> bool:
    """Whether ``value`` is one of the gold call's acceptable values for ``param``: equal in
    words or numbers (the single-call audit's comparison) or in BFCL's AST-checker comparison
    (:func:`~callscope.saag.extrinsic.bfcl_values_equal`)."""
    return any(
        _same(value, x) or bfcl_values_equal(value, x) for x in acceptable_values(gold, param)
    )


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
            out[p] = next((int(x) for x in numbers if isinstance(x, int) or x.is_integer()), 1)
        elif kind in ("number", "float"):  # the first number a float holds (not 400 digits)
            out[p] = next((float(x) for x in numbers if abs(x) < 1e308), 1.0)
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
        return seeded_rng(seed, case.id, kind)

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
                if not (scalar(va) and type(va) is type(vb)) or _same(va, vb):
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


def _negatives(case: Case) -> list[Probe] | None:
    answer = gold_answer(case)
    if answer is None:
        return None
    base = answer[0]
    return [Probe("gold_answer" if base else "clean_abstention", base)]


def _positives(case: Case, _: Any, seed: int) -> list[Probe]:
    answer = gold_answer(case)
    if answer is None:
        return []
    return [
        Probe(kind, calls, change) for kind, calls, change in answer_positives(case, *answer, seed)
    ]


def _headline(result: AuditResult) -> str:
    """One line per detector: false alarms on gold answers (and per call) and detection over
    every positive kind."""
    s = {(e["detector"], e["kind"]): e for e in result.summary()}
    parts = []
    for det in result.design.detectors:
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
        return f"answer audit ({result.grounding} grounding): no answer gold"
    return f"answer audit ({result.grounding} grounding): " + "; ".join(parts)


#: the columns of ``audit_answers.csv`` (:func:`~callscope.saag.audit_engine.summary_table`)
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

#: the answer design of the audit engine (module docstring)
ANSWER_AUDIT = AuditDesign(
    name="answers",
    reads=is_answer_case,
    negatives=ANSWER_NEGATIVES,
    kinds=dict.fromkeys(ANSWER_KINDS),
    detectors=("cascade", "gold"),
    base=frozenset(ANSWER_NEGATIVES),
    per_call=frozenset({"gold_answer"}),
    prepare=lambda cases: None,
    build_negatives=_negatives,
    build_positives=_positives,
    headline=_headline,
    stem="audit_answers",
    json_key="answer_audits",
    columns=ANSWER_SUMMARY_COLUMNS,
    title="Detector audit over answers",
    caption="False alarms on gold answers and clean abstentions, and detection of answers "
    "made wrong on purpose (share flagged, Wilson 95%): the gold-free cascade (failing "
    "or repeated calls) and the answer solve against gold, apart.",
    base_label="gold answers and clean abstentions",
)


def audit_answers(
    cases: Sequence[Case],
    *,
    grounding: str | Grounding | None = None,
    seed: int = 0,
    judge: Judge | None = None,
) -> AuditResult:
    """Audit both detectors on the answer cases of ``cases`` (:func:`is_answer_case`; the
    others are skipped) in one grounding mode: :data:`ANSWER_AUDIT` run by the engine; see
    the module doc for what is built and measured."""
    return run_audit(cases, ANSWER_AUDIT, grounding=grounding, seed=seed, judge=judge)
