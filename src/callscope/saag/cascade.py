"""The SAAG cascade: registry conformance -> structural completeness -> argument grounding.

``diagnose`` scores one tool call against a registry and the user's query and halts at the
first failing stage (SAAG paper, section 2); metrics of later stages stay ``None`` (they are
stage-conditional). This module owns the order of the stages, their pass tests, the registry
index (a spec by its name, a spec's parameters) and the verdict cache of repeated requests;
stage 1's name table and NCS matching at registry scale are
:mod:`callscope.saag.registry_names`; the metrics themselves (their
formulas, sources and what the grounding mode changes) are the pure functions of
:mod:`callscope.saag.intrinsic`, and stage 3's verdict on each value comes from the grounding
mode (:mod:`callscope.saag.groundings`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import fields
from operator import itemgetter
from typing import Any

from callscope.core.memo import LONG_TEXT, keeping, text_size
from callscope.parse import MAX_ARGUMENT_DEPTH
from callscope.records import Diagnosis
from callscope.saag import grounding as g
from callscope.saag import intrinsic as m
from callscope.saag.evidence import Evidence, scalar_key
from callscope.saag.groundings import (
    DEFAULT_GROUNDING,
    GROUNDINGS,
    ArgVerdict,
    Grounding,
    Judge,
    LexicalGrounding,
    RegistryGrounding,
    get_grounding,
)
from callscope.saag.registry_index import (  # noqa: F401 (importable from here)
    find_spec,
    forget_index,
    index_of,
    nearest_candidate,
    nearest_name,
    registry_token,
    required_params,
    schema_params,
    spec_properties,
)
from callscope.types import ToolCall


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


_CONTAINERS = (dict, list, tuple)
#: the verdict on a value nested deeper than the parser's limit: ungrounded, a hard drift
_TOO_DEEP = ArgVerdict(1.0, None, None)


#: the version of the cascade's verdicts, raised whenever a change alters any verdict (a
#: stage, a flagged argument, a metric's value). A run directory records the version its
#: outcomes were scored with and is not resumed by another (``runs.runner``), so one report
#: never mixes two. ``tests/test_cascade_version.py`` pins each version to a digest of the
#: audit's verdicts on BFCL, so a change that moves a verdict fails until it is raised.
#: 1: every run before versions were recorded. 2: stage 3 (registry mode) grounds a month of
#: a year, a description's template with stated placeholders, and reads ``""`` for an
#: optional parameter as the parameter left out. 3: stage 3 (registry mode) grounds values a
#: library links to the request's words (reason ``knowledge``, issue 37: countries, states,
#: currencies, languages, airports, cities, tickers, time zones, quantities in other units),
#: reads number words with text2num and units with pint, and more relative dates; every
#: diagnosis carries ``evidence``; a stage-3 drift is soft only when the value spells what the
#: text states (:func:`callscope.saag.grounding.soft_drift`, issue 40): a value naming another
#: entity of the same kind ("Berlin" for Paris) is hard; an answer without a readable call is
#: judged from its text (issue 36: broken always fails stage 1, gold-free abstention no verdict).
#: 4: stage 3 (registry mode, issue 37) also grounds numbers stated as phrases ("from rest"),
#: words with a typing slip ("Chcicago"), acronyms of stated words ("ssn"), dates and times
#: moved by a stated duration and the spans between two of them, key:value search syntaxes
#: and described values the description shows, an enum member named inside a word, a
#: musical note's sign; a numeric default is contradicted only by numbers outside the
#: request's dates and times, and a description's default ending its sentence ("Default is
#: 2.") is read. 5: an entity swapped for another of its kind is an invented value (issue
#: 46): a known entity (a country, city, US state, ticker, airport, currency) that reads as
#: a spelling of another entity of its kind the text names is a hard drift, not a soft one
#: ("Austria" for Australia, "Niger" for Nigeria, "GOOG" for GOOGL; both modes,
#: :func:`callscope.saag.grounding.swapped_entity`), and a request's word that is itself an
#: entity is no slip (registry mode: "Australia" for "Austria" is no longer grounded); the
#: audit has the ``same_kind_entity`` probe.
#: 6: stage 2 counts no argument spurious when the function's parameter schema says
#: ``additionalProperties`` (true, or a schema, which stage 3 then grounds it with:
#: :func:`~callscope.saag.registry_index.extra_schema`); BFCL's specs never say it, so its
#: digest is version 5's.
#: 7: stage 2 scores the drift (PDS) of at most :data:`MAX_DRIFT_SCORED` out-of-schema
#: arguments of a call, in its order; those past them are spurious (even where the schema
#: says ``additionalProperties``: unscored, they could hide a drift) and PDS is the mean over the scored
#: ones; a name the schema's ``required`` repeats is one required parameter (RPR and
#: ``missing`` count it once: :func:`~callscope.saag.registry_index.schema_params`). BFCL's
#: calls never pass 32 unknown names nor its specs repeat one: its digest is version 5's.
CASCADE_VERSION = 7

#: stage 2 scores the drift of at most this many out-of-schema arguments of one call (each
#: is a WRatio against every declared name: 4,000 unknown names against 4,000 declared ones
#: took 38 s); the rest are spurious, as an unknown name with no near declared one is
MAX_DRIFT_SCORED = 32


def grounding_modes() -> tuple[str, ...]:
    """The names :func:`diagnose` accepts as ``grounding=``, in registry order
    (:data:`~callscope.saag.groundings.GROUNDINGS`); ``lexical`` is the SAAG paper's, the
    default is :data:`~callscope.saag.groundings.DEFAULT_GROUNDING`.

    >>> grounding_modes()
    ('lexical', 'registry')
    """
    return tuple(GROUNDINGS)


#: verdicts kept for repeated requests (the same call on the same registry list, request,
#: context and grounding mode: a leaderboard's models answering a case alike, a case set
#: scored again, a correction loop): bounded (about 1.5 KB a verdict), oldest out first; 0
#: keeps none (``benchmarks/registry_scale.py`` measures the cascade itself so)
VERDICT_CACHE_SIZE = 16384
#: calls whose arguments print longer than this are not kept, nor calls on a request and
#: context longer than :data:`~callscope.core.memo.LONG_TEXT` characters
_VERDICT_MAX_CHARS = 2048
#: the characters of request, context and arguments all kept verdicts hold at most (a key
#: holds its texts: 16,384 requests of 8 KB would hold 128 MB), oldest out first
VERDICT_CACHE_CHARS = 16 * 2**20
#: key -> (mode, kept verdict, the key's characters); a key names its registry by its index's
#: token (:func:`~callscope.saag.registry_index.registry_token`): no verdict holds a registry
_verdicts: OrderedDict[tuple[Any, ...], tuple[Any, dict[str, Any], int]] = OrderedDict()
_verdicts_lock = threading.Lock()
_verdict_chars = 0


def _verdict_key(
    call: ToolCall | None,
    functions: Sequence[Any],
    query: str,
    mode: Any,
    context: Sequence[str],
) -> tuple[Any, ...] | None:
    """What a verdict depends on, or ``None`` when it is not kept (no call, a name or a
    request that is not a plain string, arguments that are not a plain dict or print long).
    Only atomic values, so the collector stops walking the keys."""
    if (
        call is None
        or type(call.name) is not str
        or type(call.arguments) is not dict
        or type(query) is not str
    ):
        return None
    try:
        args = repr(call.arguments)  # types apart: 1, 1.0, True and "1" differ
    except (RecursionError, ValueError):
        return None
    if len(args) > _VERDICT_MAX_CHARS:
        return None
    ctx = tuple(context) if context else ()
    if ctx and not all(type(c) is str for c in ctx):
        return None
    if len(query) + text_size(ctx) > LONG_TEXT:
        return None
    named = mode if isinstance(mode, str | tuple) else id(mode)
    return (registry_token(functions), len(functions), query, ctx, named, call.name, args)


#: the fields of a :class:`Diagnosis` in order, their values in one C call, and the fields
#: that hold a list and those that hold a dict
_FIELDS = tuple(f.name for f in fields(Diagnosis))
_FIELD_VALUES = itemgetter(*_FIELDS)
_LISTS = tuple(f.name for f in fields(Diagnosis) if f.default_factory is list)
_DICTS = tuple(f.name for f in fields(Diagnosis) if f.default_factory is dict)


def _kept(d: Diagnosis) -> dict[str, Any]:
    """A verdict as the cache keeps it: its fields, lists as tuples and dicts as tuples of
    pairs (immutable values the garbage collector stops walking: a cache of thousands of
    verdicts must not slow every other allocation). Never changed once made."""
    values = dict(zip(_FIELDS, _FIELD_VALUES(d.__dict__), strict=True))
    for name in _LISTS:
        values[name] = tuple(values[name])
    for name in _DICTS:
        values[name] = tuple(values[name].items())
    return values


def _revived(kept: dict[str, Any]) -> Diagnosis:
    """A new :class:`Diagnosis` from a kept verdict (its own lists and dicts): one copy of
    the kept fields in C, then a list or dict made for each field that holds one (2.5 ->
    1.0 us a hit with the fields zipped into a new dict)."""
    out = object.__new__(Diagnosis)
    values = kept.copy()
    for name in _LISTS:
        values[name] = list(values[name])
    for name in _DICTS:
        values[name] = dict(values[name])
    out.__dict__ = values
    return out


def _mode_key(mode: Grounding) -> Any:
    """A grounding mode object as the verdict cache tells modes apart (a mode named is its
    name): a built-in mode its settings (``RegistryGrounding`` its disabled rules); any other
    mode object is itself (kept with the verdict, compared by identity)."""
    if type(mode) is LexicalGrounding:
        return "lexical"
    if type(mode) is RegistryGrounding and type(mode.disabled) is frozenset:
        if not mode.disabled and mode.name == "registry":
            return "registry"  # the default mode as named: an atomic key the collector untracks
        return ("registry", mode.name, mode.disabled)
    return mode


#: the two built-in modes by name (entries of a read-only registry), one object each: they
#: hold their settings and nothing else, so one object serves every call that names them
_named_modes: dict[str, Grounding] = {}


def _named_mode(name: str) -> Grounding:
    """The mode ``name`` names (:func:`get_grounding`); a built-in one is kept."""
    mode = _named_modes.get(name)
    if mode is None:
        mode = get_grounding(name)
        if name in ("registry", "lexical") and type(mode) in (LexicalGrounding, RegistryGrounding):
            _named_modes[name] = mode
    return mode


def _soft(value: str, evidence: Evidence) -> bool:
    """:func:`~callscope.saag.grounding.soft_drift` of an ungrounded string over the evidence's
    text, remembered per request (:attr:`Evidence.memo`): the calls of one case repeat their
    flagged values, and the answer depends on the value and the text alone."""
    key = scalar_key(value)
    hit = evidence.memo.get(("soft", key)) if key is not None else None
    if hit is None:
        hit = g.soft_drift(value, evidence.all_text)
        if key is not None:
            evidence.remember(("soft", key), hit)
    return hit


def diagnose(
    call: ToolCall | None,
    functions: list[dict[str, Any]],
    query: str,
    *,
    grounding: str | Grounding | None = None,
    context: Sequence[str] = (),
    judge: Judge | None = None,
) -> Diagnosis:
    """Score ``call`` against the registry ``functions`` and the user ``query``.

    Stage 1 (registry conformance) reports FNEM and, for a name not in the registry, NCS;
    stage 2 (structural completeness) RPR, PDS and SPR, and fails on a missing, spurious or
    drifted parameter (an argument outside the schema's ``properties`` is not spurious when
    the schema says ``additionalProperties``: :func:`~callscope.saag.registry_index.extra_schema`;
    a near miss of a declared name is still drifted); stage 3 (argument grounding) AVEM, QSLO and VHR, and fails when any
    value is flagged (numeric, hard or soft drift: soft only for a slip in a stated value,
    :func:`callscope.saag.grounding.soft_drift`). The formulas are in
    :mod:`callscope.saag.intrinsic`.

    ``grounding`` names the stage-3 mode (:func:`grounding_modes`; default
    :data:`~callscope.saag.groundings.DEFAULT_GROUNDING`; ``"lexical"`` is the paper's);
    ``context`` is what the conversation said before the request (earlier user turns, tool
    results); ``judge`` is consulted for values the mode still flags.

    >>> from callscope.types import ToolCall
    >>> weather = [{"name": "get_weather", "parameters": {"type": "object", "properties": {
    ...     "city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}},
    ...     "required": ["city"]}}]
    >>> d = diagnose(ToolCall("get_weather", {"city": "Paris", "unit": "C"}), weather,
    ...              "Weather in Paris?", grounding="lexical")
    >>> d.stage, d.hard, d.avem
    (3, ['unit'], 0.5)
    >>> d = diagnose(ToolCall("get_weather", {"city": "Paris", "unit": "C"}), weather,
    ...              "Weather in Paris?")
    >>> d.stage, d.grounded, d.avem
    (0, {'city': 'stated', 'unit': 'enum'}, 1.0)
    """
    if grounding is None or isinstance(grounding, str):  # a name: no mode built for a hit
        mode: Grounding | None = None
        named: Any = grounding or DEFAULT_GROUNDING
    else:
        mode = grounding
        named = _mode_key(grounding)
    key = (  # (a registry no one keeps is indexed anew each call: no verdict of it is kept)
        _verdict_key(call, functions, query, named, context)
        if VERDICT_CACHE_SIZE
        and judge is None
        and isinstance(functions, list | tuple)
        and keeping()
        else None
    )
    if key is not None:
        hit = _verdicts.get(key)
        if hit is not None and (hit[0] is named or hit[0] == named):
            return _revived(hit[1])
    if mode is None:
        mode = _named_mode(named)
    d = _diagnose(call, functions, query, mode, context, judge)
    if key is not None:
        _keep_verdict(key, named, _kept(d))
    return d


def _keep_verdict(key: tuple[Any, ...], named: Any, kept: dict[str, Any]) -> None:
    """Keep a verdict under ``key`` (:func:`_verdict_key`), weighed by the characters of its
    texts, the oldest out while over :data:`VERDICT_CACHE_SIZE` or :data:`VERDICT_CACHE_CHARS`."""
    global _verdict_chars
    chars = len(key[2]) + text_size(key[3]) + len(key[6])  # request, context, arguments
    with _verdicts_lock:
        old = _verdicts.pop(key, None)
        _verdict_chars += chars - (old[2] if old is not None else 0)
        _verdicts[key] = (named, kept, chars)
        while len(_verdicts) > VERDICT_CACHE_SIZE or _verdict_chars > VERDICT_CACHE_CHARS:
            _verdict_chars -= _verdicts.popitem(last=False)[1][2]


def forget_registry(functions: Sequence[Any]) -> None:
    """Drop what the cascade keeps of the list ``functions`` (its owner lets it go: the
    guard's registry cache, :func:`callscope.guard.inputs.registry_of`): its index, the one
    holder of the list; its verdicts, keyed by the index's token, are then never found again
    and leave oldest first (no pass over them)."""
    forget_index(functions)


def _diagnose(
    call: ToolCall | None,
    functions: list[dict[str, Any]],
    query: str,
    mode: Grounding,
    context: Sequence[str],
    judge: Judge | None,
) -> Diagnosis:
    """:func:`diagnose` itself (its docstring), the grounding mode resolved."""
    registry = index_of(functions, specs=True)
    # Stage 1: registry conformance
    name = call.name if call is not None else None
    if not name:
        return Diagnosis(stage=1, fnem=m.fnem(name, False))
    spec = registry.by_name.get(name) if isinstance(name, str) else find_spec(functions, name)
    if spec is None:
        ncs, nearest = nearest_name(name, registry)
        return Diagnosis(
            stage=1, fnem=m.fnem(name, False), ncs=ncs, nearest=nearest, predicted=name
        )

    # Stage 2: structural completeness
    a_req, a_all, in_schema, props, extra = registry.shape(spec)
    arguments = call.arguments
    predicted = list(arguments)
    missing = [a for a in a_req if a not in arguments] if a_req else []
    drifted: list[str] = []
    spurious: list[str] = []
    targets: dict[str, str] = {}
    drift_scores: list[float] = []
    for p in predicted:
        if p in in_schema:
            continue
        if len(drift_scores) == MAX_DRIFT_SCORED:  # bounded work: the rest are not scored,
            spurious.append(p)  # and spurious even where the schema takes more arguments
            continue  # (else 32 harmless extras would hide a misspelt one behind them)
        best, best_name = m.drift_score(p, a_all)
        drift_scores.append(best)
        if best >= m.DRIFT_THRESHOLD and best_name is not None and best_name not in arguments:
            drifted.append(p)
            targets[p] = best_name
        elif extra is None:  # (a schema open to more arguments takes this one)
            spurious.append(p)
    d = Diagnosis(
        stage=2,
        fnem=m.fnem(name, True),
        rpr=m.rpr(a_req, arguments),
        pds=m.pds(drift_scores),
        spr=m.spr(spurious, predicted),
        missing=missing,
        drifted=drifted,
        spurious=spurious,
        drift_targets=targets,
        predicted=name,
    )
    if missing or spurious or drifted:
        return d

    # Stage 3: argument grounding. A value nested deeper than MAX_ARGUMENT_DEPTH (only reachable by
    # building a ToolCall in code: the parser refuses it) counts as ungrounded, a hard drift.
    # One pass in the model's argument order: each verdict, then what the metrics read of it.
    evidence = Evidence.of(query, context)
    all_text = evidence.all_text
    ground = mode.ground
    grounded: dict[str, str] = {}
    notes: dict[str, str] = {}
    unaccepted_strings: list[str] = []
    hs: list[float] = []
    for p, v in arguments.items():
        if isinstance(v, _CONTAINERS) and _too_deep(v):
            verdict = _TOO_DEEP
        else:
            verdict = ground(p, v, props.get(p, extra), evidence, arguments, p in a_req)
            if judge is not None and verdict.h and judge(p, v, all_text):
                verdict = ArgVerdict(0.0, "judge", v)
        if verdict.reason is not None:
            grounded[p] = verdict.reason
            if verdict.note is not None:
                notes[p] = verdict.note
        elif isinstance(v, str) and verdict.h is not None:
            unaccepted_strings.append(v)
        h = verdict.h
        if h is None:
            continue
        hs.append(h)
        if h > 0:
            leaf = verdict.leaf
            if g.is_number(leaf):
                d.numeric.append(p)
            elif leaf is None or not _soft(str(leaf), evidence):
                d.hard.append(p)
            else:
                d.soft.append(p)
    d.grounding = mode.name
    d.grounded = grounded
    d.evidence = notes
    d.avem = m.avem(grounded, predicted)
    d.qslo = m.qslo(unaccepted_strings, all_text)
    d.vhr = m.vhr(hs)
    d.stage = 3 if d.flagged(3) else 0
    return d
