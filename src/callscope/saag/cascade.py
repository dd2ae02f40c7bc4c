"""The SAAG cascade: registry conformance -> structural completeness -> argument grounding.

``diagnose`` scores one tool call against a registry and the user's query and halts at the
first failing stage (SAAG paper, section 2); metrics of later stages stay ``None`` (they are
stage-conditional). This module owns the order of the stages, their pass tests and the
registry index that makes stage 1 fast on large registries; the metrics themselves (their
formulas, sources and what the grounding mode changes) are the pure functions of
:mod:`callscope.saag.intrinsic`, and stage 3's verdict on each value comes from the grounding
mode (:mod:`callscope.saag.groundings`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import fields
from functools import lru_cache
from operator import itemgetter
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel

from callscope.parse import MAX_ARGUMENT_DEPTH
from callscope.records import Diagnosis
from callscope.saag import grounding as g
from callscope.saag import intrinsic as m
from callscope.saag.evidence import Evidence
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


# --------------------------------------------------------------------------- stage 1


def _trigrams(s: str) -> set[str]:
    s = s.lower()
    return {s[i : i + 3] for i in range(len(s) - 2)}


class _NameTable:
    """Stage 1's NCS view of a registry's names, keyed by their content (a registry copied
    into every row of a results file is read once, :func:`_name_table`): the names and
    their lowercased forms; for a registry of more than :data:`_SMALL` names, built on the
    first NCS over it at C level (numpy), their lengths, which are plain (:func:`_plain`)
    and every lowercased trigram as a sorted posting table; each lowercased whitespace
    token's positions (built on the first name that needs them)."""

    __slots__ = ("names", "lowered", "lengths", "plain", "slices", "owner", "_tokens")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.lowered = [n.lower() for n in names]
        self._tokens: dict[str, list[int]] | None = None
        if len(names) > _SMALL:
            self._index()

    def _index(self) -> None:
        import numpy as np  # lazy: only a large registry's unknown name needs it

        count = len(self.names)
        self.lengths = np.fromiter(map(len, self.names), dtype=np.int64, count=count)
        self.plain = np.fromiter(map(_plain, self.names), dtype=bool, count=count)
        # every lowercased trigram of every name as one integer (three code points of 21
        # bits), with the position of its name
        joined = "".join(self.lowered)
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        points = points.astype(np.uint64)
        ends = np.cumsum(np.fromiter(map(len, self.lowered), dtype=np.int64, count=count))
        if len(points) >= 3:
            codes = (points[:-2] << np.uint64(42)) | (points[1:-1] << np.uint64(21)) | points[2:]
            at = np.arange(len(points) - 2)
            owner = np.searchsorted(ends, at, side="right")
            inside = at + 2 < ends[owner]  # the three characters are of one name
            codes, owner = codes[inside], owner[inside]
        else:
            codes, owner = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        # sorted by trigram: each distinct trigram's names are one slice of ``owner``
        order = np.argsort(codes, kind="stable")
        codes, self.owner = codes[order], owner[order]
        distinct, starts = np.unique(codes, return_index=True)
        bounds = np.append(starts, len(codes)).tolist()
        mask = (1 << 21) - 1
        self.slices = {
            chr(c >> 42) + chr((c >> 21) & mask) + chr(c & mask): (bounds[j], bounds[j + 1])
            for j, c in enumerate(distinct.tolist())
        }

    def sharing(self, grams: set[str]) -> Any:
        """The positions (ascending) of the names sharing one of ``grams`` (lowercased
        trigrams): one slice of the posting table per trigram."""
        import numpy as np

        owner, slices = self.owner, self.slices
        parts = [owner[ab[0] : ab[1]] for g in grams if (ab := slices.get(g)) is not None]
        mask = np.zeros(len(self.names), dtype=bool)
        if parts:
            mask[np.concatenate(parts)] = True
        return np.flatnonzero(mask)

    def token_positions(self, token: str) -> list[int]:
        """The positions of the names one of whose lowercased whitespace tokens is
        ``token``."""
        if self._tokens is None:
            tokens: dict[str, list[int]] = {}
            for i, low in enumerate(self.lowered):
                for tok in set(low.split()):
                    tokens.setdefault(tok, []).append(i)
            self._tokens = tokens
        return self._tokens.get(token, [])


def _plain(name: str) -> bool:
    """Printable ASCII without a space: one whitespace token, the same for rapidfuzz and
    ``str.split``."""
    return name.isascii() and name.isprintable() and " " not in name


#: a registry of at most this many names is scored name by name (no index: numpy's fixed cost
#: is more than the scoring it would save)
_SMALL = 64


@lru_cache(maxsize=64)
def _name_table(names: tuple[str, ...]) -> _NameTable:
    """The :class:`_NameTable` of a registry's names, once per distinct content (the last 64
    kept)."""
    return _NameTable(names)


#: what stage 2 and 3 read of a spec: A_req, A_all, the set of A_all, the properties
_Shape = tuple[list[str], list[str], frozenset[str], dict[str, Any]]


class _RegistryIndex:
    """Stage 1's view of one registry list: the first spec of each string name and (on the
    first NCS) the content-keyed :class:`_NameTable` of its names (``str`` of each
    ``name``, or of each element of a list of names)."""

    __slots__ = ("source", "size", "specs", "by_name", "_table", "_shapes")

    def __init__(self, source: Sequence[Any], specs: bool, by_name: dict[str, Any]) -> None:
        self.source = source
        self.size = len(source)
        self.specs = specs
        self.by_name = by_name
        self._table: _NameTable | None = None
        self._shapes: dict[int, tuple[dict[str, Any], _Shape]] = {}

    def shape(self, spec: dict[str, Any]) -> _Shape:
        """``(A_req, A_all, set(A_all), properties)`` of one spec of this registry, read
        once per spec (:func:`schema_params`, :func:`spec_properties`)."""
        hit = self._shapes.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        a_req, a_all = schema_params(spec)
        shape = (a_req, a_all, frozenset(a_all), spec_properties(spec))
        self._shapes[id(spec)] = (spec, shape)
        return shape

    def table(self) -> _NameTable:
        if self._table is None:
            source = self.source
            names = [str(f.get("name")) for f in source] if self.specs else map(str, source)
            self._table = _name_table(tuple(names))
        return self._table


#: registries whose index is kept (each entry holds its list, so its ``id`` is not reused)
_INDEX_CACHE_SIZE = 4096
_index_cache: OrderedDict[tuple[int, bool], _RegistryIndex] = OrderedDict()
_index_lock = threading.Lock()
#: the index returned last, ``(source, specs, index)``: the calls of one case (its attempts,
#: modes and metrics) ask for the same registry in a row, and are answered without the lock
#: (one tuple read, atomic under the GIL; a stale answer is only ever a valid index)
_last_index: tuple[Sequence[Any], bool, _RegistryIndex] | None = None


def _registry_index(source: Sequence[Any], *, specs: bool) -> _RegistryIndex:
    """The index of ``source`` (function specs when ``specs``, else names), cached by the
    identity of the list: a registry is indexed once however many calls are scored against
    it. Appending to or removing from a cached list rebuilds its index; replacing an element
    in place, or renaming a spec, is not noticed (registries are not edited once scored)."""
    global _last_index
    last = _last_index
    if last is not None and last[0] is source and last[1] == specs and last[2].size == len(source):
        return last[2]
    key = (id(source), specs)
    with _index_lock:
        idx = _index_cache.get(key)
        if idx is not None and idx.source is source and idx.size == len(source):
            _index_cache.move_to_end(key)
            _last_index = (source, specs, idx)
            return idx
    by_name: dict[str, Any] = {}
    if specs:  # one pass; the names' strings are made on the first NCS (:meth:`table`)
        for f in source:
            raw = f.get("name")
            if isinstance(raw, str) and raw not in by_name:
                by_name[raw] = f
    idx = _RegistryIndex(source, specs, by_name)
    with _index_lock:
        _index_cache[key] = idx
        _index_cache.move_to_end(key)
        while len(_index_cache) > _INDEX_CACHE_SIZE:
            _index_cache.popitem(last=False)
        _last_index = (source, specs, idx)
    return idx


#: names whose WRatio, as rapidfuzz's batch scorer reports it, or whose bound is, within this
#: of the best are scored again one by one: a batch score is not exact within about 1e-6,
#: and every equal score must be seen for the first-on-ties rule
_WRATIO_SLACK = 1.0


def _nearest(name: str, idx: _RegistryIndex) -> tuple[float, str | None]:
    """NCS over an index; the same floats and argmax as scoring every name in order.

    Candidates are the names sharing a lowercased trigram with ``name``
    (:meth:`_NameTable.sharing`). Those sharing a whitespace token with it (a
    Jaccard term above 0) are scored exactly. For the others the Jaccard term is 0, so only
    those with the highest WRatio can win. One rapidfuzz batch pass (Indel distance, C level,
    every name) gives each name's ``ratio`` and LCS ``L``, from which WRatio is known or
    bounded without computing it (rapidfuzz's definition, for a pair of one-token strings, the
    shorter of length ``s``, ``lr`` the length ratio): ``lr < 1.5``: WRatio = ratio;
    otherwise WRatio = max(ratio, k partial_ratio) <= max(ratio, k 200 L / (s + L)), ``k``
    0.9 (``lr <= 8``) or 0.6; any other pair: <= max(ratio, 95) or max(ratio, 100 k). The
    names are walked by that bound, highest first; the walk ends below the best WRatio found
    less ``_WRATIO_SLACK``; the names within the slack are scored exactly
    (:func:`~callscope.saag.intrinsic.ncs_score`). Ties go to the first registry position.
    """
    grams = _trigrams(name)
    if not grams:
        return 0.0, None
    table = idx.table()
    names = table.names
    if len(names) <= _SMALL:  # the definition itself: every candidate scored
        best, best_i = 0.0, -1
        for i, lowered in enumerate(table.lowered):
            if any(g in lowered for g in grams):
                score = m.ncs_score(name, names[i])
                if best_i < 0 or score > best:
                    best, best_i = score, i
        return (best, names[best_i]) if best_i >= 0 else (0.0, None)
    import numpy as np  # lazy: the table imported it already

    low = name.lower()
    candidates = table.sharing(grams)
    if not len(candidates):
        return 0.0, None
    exact: set[int] = set()
    for tok in set(low.split()):
        positions = table.token_positions(tok)
        if positions:
            exact.update(np.intersect1d(positions, candidates).tolist())
    n = len(name)
    picked = candidates.tolist()
    pool = [names[picked[0]]] if len(picked) == 1 else list(itemgetter(*picked)(names))
    lengths = table.lengths[candidates]
    dist = process.cdist([name], pool, scorer=Indel.distance, dtype=np.int64, workers=1)[0]
    # every candidate has a character (it shares a trigram): no length below 1
    total = lengths + n
    ratio = 100.0 - 100.0 * dist / total
    shorter = np.minimum(lengths, n)
    long_ratio = np.maximum(lengths, n) / shorter
    near = long_ratio < 1.5
    one_token = table.plain[candidates] if _plain(name) else np.zeros(len(pool), dtype=bool)
    known = one_token & near  # the bound is the WRatio itself
    lcs = (total - dist) * 0.5
    partial = np.where(one_token, np.minimum(100.0, 200.0 * lcs / (shorter + lcs)), 100.0)
    cap = np.where(long_ratio <= 8.0, 0.9, 0.6) * partial
    cap[near] = 95.0
    bound = np.maximum(ratio, cap)
    bound[known] = ratio[known]
    # the best known WRatio is a floor of the best: only the names bounded above it less
    # the slack are walked (all of them when none is known)
    floor = float(bound[known].max()) if known.any() else -1.0
    walk = np.flatnonzero(bound >= floor - _WRATIO_SLACK)
    walk = walk[np.argsort(-bound[walk], kind="stable")]
    best = -1.0
    scored: list[tuple[float, int]] = []
    for k, b, is_known, i in zip(
        walk.tolist(),
        bound[walk].tolist(),
        known[walk].tolist(),
        candidates[walk].tolist(),
        strict=True,
    ):
        if b < best - _WRATIO_SLACK:
            break
        w = b if is_known else fuzz.WRatio(name, pool[k])
        scored.append((w, i))
        best = max(best, w)
    exact.update(i for w, i in scored if w >= best - _WRATIO_SLACK)
    top, top_i = max(((m.ncs_score(name, names[i]), i) for i in exact), key=_by_score_then_first)
    return top, names[top_i]


def _by_score_then_first(scored: tuple[float, int]) -> tuple[float, int]:
    return scored[0], -scored[1]


def nearest_candidate(name: str, registry: list[str]) -> tuple[float, str | None]:
    """The Nearest Candidate Score and its name (SAAG paper, section 2.1, eq. 2)::

        NCS(ŷ, R) = max over c ∈ C of [0.6 WRatio(ŷ, c) / 100 + 0.4 Jaccard(ŷ, c)]

    over the names ``C`` of ``registry`` sharing a lowercased trigram with ``name`` (each term
    :func:`~callscope.saag.intrinsic.ncs_score`), and the argmax name (first on ties);
    ``(0, None)`` without candidates. The registry is indexed once per list
    (:func:`_registry_index`). Independent of the grounding mode.

    >>> ncs, name = nearest_candidate("get_weathr", ["get_weather", "book_flight"])
    >>> round(ncs, 4), name
    (0.5714, 'get_weather')
    >>> nearest_candidate("zz", ["get_weather"])
    (0.0, None)
    """
    return _nearest(name, _registry_index(registry, specs=False))


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
    """The first spec in ``functions`` named ``name`` (``None`` when there is none); a
    string name in a list or tuple is looked up in the registry's index."""
    if isinstance(name, str) and isinstance(functions, list | tuple):
        return _registry_index(functions, specs=True).by_name.get(name)
    for spec in functions:
        if spec.get("name") == name:
            return spec
    return None


def required_params(functions: Sequence[dict[str, Any]] | None, name: Any) -> list[str]:
    """A_req of the first spec in ``functions`` named ``name`` (``[]`` when there is none):
    ``schema_params(find_spec(functions, name) or {})[0]``, read once per spec of a list or
    tuple registry (its index). The caller must not modify the list."""
    if not functions:
        return []
    if isinstance(name, str) and isinstance(functions, list | tuple):
        registry = _registry_index(functions, specs=True)
        spec = registry.by_name.get(name)
        return [] if spec is None else registry.shape(spec)[0]
    return schema_params(find_spec(functions, name) or {})[0]


def spec_properties(spec: dict[str, Any]) -> dict[str, Any]:
    """The ``properties`` of a function spec's parameter schema (``{}`` when it has none or
    they are not an object)."""
    params = spec.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    return props if isinstance(props, dict) else {}


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
CASCADE_VERSION = 5


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
#: calls whose arguments print longer than this are not kept
_VERDICT_MAX_CHARS = 2048
_verdicts: OrderedDict[tuple[Any, ...], tuple[Sequence[Any], Any, dict[str, Any]]] = OrderedDict()
_verdicts_lock = threading.Lock()


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
    named = mode if isinstance(mode, str | tuple) else id(mode)
    return (id(functions), len(functions), query, ctx, named, call.name, args)


#: the fields of a :class:`Diagnosis`, in order, and which hold a list or a dict
_FIELDS = tuple(f.name for f in fields(Diagnosis))
_LISTS = frozenset(f.name for f in fields(Diagnosis) if f.default_factory is list)
_DICTS = frozenset(f.name for f in fields(Diagnosis) if f.default_factory is dict)
_LIST_AT = tuple((i, k) for i, k in enumerate(_FIELDS) if k in _LISTS)
_DICT_AT = tuple((i, k) for i, k in enumerate(_FIELDS) if k in _DICTS)


def _kept(d: Diagnosis) -> tuple[Any, ...]:
    """A verdict as the cache keeps it: its field values in order, lists as tuples and dicts
    as tuples of pairs (immutable values the garbage collector stops walking: a cache of
    thousands of verdicts must not slow every other allocation)."""
    values = d.__dict__
    return tuple(
        tuple(values[k]) if k in _LISTS else tuple(values[k].items()) if k in _DICTS else values[k]
        for k in _FIELDS
    )


def _revived(kept: tuple[Any, ...]) -> Diagnosis:
    """A new :class:`Diagnosis` from a kept verdict (its own lists and dicts)."""
    out = object.__new__(Diagnosis)
    values = dict(zip(_FIELDS, kept, strict=True))
    for i, name in _LIST_AT:
        values[name] = list(kept[i])
    for i, name in _DICT_AT:
        values[name] = dict(kept[i])
    out.__dict__ = values
    return out


def _mode_key(mode: Grounding) -> Any:
    """A grounding mode object as the verdict cache tells modes apart (a mode named is its
    name): a built-in mode its settings (``RegistryGrounding`` its disabled rules); any other
    mode object is itself (kept with the verdict, compared by identity)."""
    if type(mode) is LexicalGrounding:
        return "lexical"
    if type(mode) is RegistryGrounding and type(mode.disabled) is frozenset:
        return ("registry", mode.name, mode.disabled)
    return mode


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
    drifted parameter; stage 3 (argument grounding) AVEM, QSLO and VHR, and fails when any
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
    key = (
        _verdict_key(call, functions, query, named, context)
        if VERDICT_CACHE_SIZE and judge is None and isinstance(functions, list | tuple)
        else None
    )
    if key is not None:
        hit = _verdicts.get(key)
        if hit is not None and hit[0] is functions and (hit[1] is named or hit[1] == named):
            return _revived(hit[2])
    if mode is None:
        mode = get_grounding(named)
    d = _diagnose(call, functions, query, mode, context, judge)
    if key is not None:
        kept = _kept(d)
        with _verdicts_lock:
            _verdicts[key] = (functions, named, kept)
            while len(_verdicts) > VERDICT_CACHE_SIZE:
                _verdicts.popitem(last=False)
    return d


def _diagnose(
    call: ToolCall | None,
    functions: list[dict[str, Any]],
    query: str,
    mode: Grounding,
    context: Sequence[str],
    judge: Judge | None,
) -> Diagnosis:
    """:func:`diagnose` itself (its docstring), the grounding mode resolved."""
    registry = _registry_index(functions, specs=True)
    # Stage 1: registry conformance
    name = call.name if call is not None else None
    if not name:
        return Diagnosis(stage=1, fnem=m.fnem(name, False))
    spec = registry.by_name.get(name) if isinstance(name, str) else find_spec(functions, name)
    if spec is None:
        ncs, nearest = _nearest(name, registry)
        return Diagnosis(
            stage=1, fnem=m.fnem(name, False), ncs=ncs, nearest=nearest, predicted=name
        )

    # Stage 2: structural completeness
    a_req, a_all, in_schema, props = registry.shape(spec)
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
        best, best_name = m.drift_score(p, a_all)
        drift_scores.append(best)
        if best >= m.DRIFT_THRESHOLD and best_name is not None and best_name not in arguments:
            drifted.append(p)
            targets[p] = best_name
        else:
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
            verdict = ground(p, v, props.get(p), evidence, arguments, p in a_req)
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
            elif leaf is None or not g.soft_drift(str(leaf), all_text):
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
