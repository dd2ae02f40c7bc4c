"""A registry list as the cascade reads it: a spec by its name, a spec's parameters, and the
Nearest Candidate Score of a name not in it.

:func:`index_of` indexes a registry list once, by its identity, however many calls are scored
against it (:class:`RegistryIndex`: the first spec of each name, each spec's ``(A_req, A_all,
properties)`` read once, and on the first NCS the content-keyed name table of
:mod:`callscope.saag.registry_names`). :func:`find_spec`, :func:`required_params`,
:func:`schema_params` and :func:`spec_properties` are the one reading of a spec's name and
parameter schema for the whole package (:mod:`callscope.saag.cascade` re-exports them);
:func:`nearest_candidate` is stage 1's NCS over a list of names.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from callscope.core.memo import keeping
from callscope.records.wire import FunctionSpec, JsonObject
from callscope.saag.registry_names import (
    NameKey,
    NameTable,
    forget_names,
    name_table,
    nearest,
    trigrams,
)

#: what stage 2 and 3 read of a spec: A_req, A_all, the set of A_all, the properties
_Shape = tuple[list[str], list[str], frozenset[str], JsonObject, JsonObject | None]


class RegistryIndex:
    """Stage 1's view of one registry list: the first spec of each string name and (on the
    first NCS) the key of the content-keyed :class:`NameTable` of its names (``str`` of each
    ``name``, or of each element of a list of names). The table itself is the memo's
    (:func:`~callscope.saag.registry_names.name_table`, bounded by characters), not the
    index's: 64 registries the guard keeps, of 1,200 CJK names of 100 characters, would hold
    about 2 GB of tables.

    ``token``: a number no other index of the process has, what the memos of verdicts and
    scores key a registry by (:func:`registry_token`), so that they hold no registry: one that
    the index cache lets go leaves their entries unreachable, never its list alive."""

    __slots__ = ("source", "size", "specs", "by_name", "names", "token", "_shapes")

    def __init__(
        self, source: Sequence[Any], specs: bool, by_name: dict[str, FunctionSpec]
    ) -> None:
        self.source = source
        self.size = len(source)
        self.specs = specs
        self.by_name = by_name
        self.names: NameKey | None = None
        self.token = next(_tokens)
        self._shapes: dict[int, tuple[FunctionSpec, _Shape]] = {}

    def shape(self, spec: FunctionSpec) -> _Shape:
        """``(A_req, A_all, set(A_all), properties, extra)`` of one spec of this registry,
        read once per spec (:func:`schema_params`, :func:`spec_properties`,
        :func:`extra_schema`)."""
        hit = self._shapes.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        a_req, a_all = schema_params(spec)
        shape = (a_req, a_all, frozenset(a_all), spec_properties(spec), extra_schema(spec))
        self._shapes[id(spec)] = (spec, shape)
        return shape

    def table(self) -> NameTable:
        names = self.names
        if names is None:
            source = self.source
            read = [str(f.get("name")) for f in source] if self.specs else map(str, source)
            names = self.names = NameKey(read)
        if keeping():
            return name_table(names)  # type: ignore[no-any-return]
        # a registry no one keeps (:func:`~callscope.core.memo.transient`): nor its table
        return name_table.__wrapped__(names)  # type: ignore[attr-defined,no-any-return]


#: registries whose index is kept (each entry holds its list, so its ``id`` is not reused):
#: at most this many, of at most :data:`_INDEX_CACHE_SPECS` specs (or names) together, the
#: newest always. The one holder of registry lists among the cascade's memos (the verdicts
#: and scores key a registry by its index's token): a results file whose every row carries a
#: new registry of 2,000 tools held one per row (400 rows: 1 GB)
_INDEX_CACHE_SIZE = 4096
_INDEX_CACHE_SPECS = 65_536
_index_cache: OrderedDict[tuple[int, bool], RegistryIndex] = OrderedDict()
_index_specs = 0  # the specs (or names) of the kept indexes together
_tokens = itertools.count()
_index_lock = threading.Lock()
#: the index returned last, ``(source, specs, index)``: the calls of one case (its attempts,
#: modes and metrics) ask for the same registry in a row, and are answered without the lock
#: (one tuple read, atomic under the GIL; a stale answer is only ever a valid index)
_last_index: tuple[Sequence[Any], bool, RegistryIndex] | None = None


def index_of(source: Sequence[Any], *, specs: bool) -> RegistryIndex:
    """The index of ``source`` (function specs when ``specs``, else names), cached by the
    identity of the list: a registry is indexed once however many calls are scored against
    it. Appending to or removing from a cached list rebuilds its index; replacing an element
    in place, or renaming a spec, is not noticed (registries are not edited once scored)."""
    global _last_index, _index_specs
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
    by_name: dict[str, FunctionSpec] = {}
    if specs:  # one pass; the names' strings are made on the first NCS (:meth:`table`)
        for f in source:
            raw = f.get("name")
            if isinstance(raw, str) and raw not in by_name:
                by_name[raw] = f
    idx = RegistryIndex(source, specs, by_name)
    if not keeping():  # (the guard's check of a registry it does not keep)
        return idx
    with _index_lock:
        old = _index_cache.pop(key, None)
        _index_specs += idx.size - (old.size if old is not None else 0)
        _index_cache[key] = idx
        while len(_index_cache) > 1 and (
            len(_index_cache) > _INDEX_CACHE_SIZE or _index_specs > _INDEX_CACHE_SPECS
        ):
            _index_specs -= _index_cache.popitem(last=False)[1].size
        _last_index = (source, specs, idx)
    return idx


def registry_token(source: Any) -> int | None:
    """The token of ``source``'s index (:attr:`RegistryIndex.token`) for a registry list or
    tuple, what a memo of verdicts or scores keys it by instead of holding it; ``None`` for
    anything else (no registry, a caller's own sequence type)."""
    last = _last_index  # (index_of's own first test, inline: a memo asks this on every hit)
    if last is not None and last[0] is source and last[1] and last[2].size == len(source):
        return last[2].token
    if not isinstance(source, list | tuple):
        return None
    return index_of(source, specs=True).token


def forget_index(source: Sequence[Any]) -> None:
    """Drop the indexes of the list ``source`` and the name table they read (its owner lets
    it go: the guard's registry cache, :func:`callscope.guard.inputs.registry_of`)."""
    global _last_index, _index_specs
    gone: list[RegistryIndex] = []
    with _index_lock:
        for specs in (True, False):
            idx = _index_cache.get((id(source), specs))
            if idx is not None and idx.source is source:
                gone.append(_index_cache.pop((id(source), specs)))
                _index_specs -= idx.size
        last = _last_index
        if last is not None and last[0] is source:
            gone.append(last[2])
            _last_index = None
    for idx in gone:
        if idx.names is not None:
            forget_names(idx.names)


def nearest_name(name: str, idx: RegistryIndex) -> tuple[float, str | None]:
    """NCS over an index (:func:`~callscope.saag.registry_names.nearest`); the name table is
    read only for a name with a trigram."""
    if not trigrams(name):
        return 0.0, None
    return nearest(name, idx.table())


def nearest_candidate(name: str, registry: list[str]) -> tuple[float, str | None]:
    """The Nearest Candidate Score and its name (SAAG paper, section 2.1, eq. 2)::

        NCS(ŷ, R) = max over c ∈ C of [0.6 WRatio(ŷ, c) / 100 + 0.4 Jaccard(ŷ, c)]

    over the names ``C`` of ``registry`` sharing a lowercased trigram with ``name`` (each term
    :func:`~callscope.saag.intrinsic.ncs_score`), and the argmax name (first on ties);
    ``(0, None)`` without candidates. The registry is indexed once per list
    (:func:`index_of`). Independent of the grounding mode.

    >>> ncs, name = nearest_candidate("get_weathr", ["get_weather", "book_flight"])
    >>> round(ncs, 4), name
    (0.5714, 'get_weather')
    >>> nearest_candidate("zz", ["get_weather"])
    (0.0, None)
    """
    return nearest_name(name, index_of(registry, specs=False))


def schema_params(spec: FunctionSpec) -> tuple[list[str], list[str]]:
    """(A_req, A_all) from a function spec's JSON schema, in schema order; a name the
    ``required`` list repeats is one required parameter (its first place kept: a list of
    80,000 ``"unit"`` asks for one unit, once).

    >>> schema_params({"parameters": {"properties": {"a": {}, "b": {}},
    ...                               "required": ["b", "a", "b"]}})
    (['b', 'a'], ['a', 'b'])
    """
    params = spec.get("parameters") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    a_all = [str(k) for k in props] if isinstance(props, dict) else []
    req = params.get("required") if isinstance(params, dict) else None
    a_req = list(dict.fromkeys(str(r) for r in req)) if isinstance(req, list) else []
    return a_req, a_all


def find_spec(functions: Sequence[FunctionSpec], name: Any) -> FunctionSpec | None:
    """The first spec in ``functions`` named ``name`` (``None`` when there is none); a
    string name in a list or tuple is looked up in the registry's index."""
    if isinstance(name, str) and isinstance(functions, list | tuple):
        return index_of(functions, specs=True).by_name.get(name)
    for spec in functions:
        if spec.get("name") == name:
            return spec
    return None


def required_params(functions: Sequence[FunctionSpec] | None, name: Any) -> list[str]:
    """A_req of the first spec in ``functions`` named ``name`` (``[]`` when there is none):
    ``schema_params(find_spec(functions, name) or {})[0]``, read once per spec of a list or
    tuple registry (its index). The caller must not modify the list."""
    if not functions:
        return []
    if isinstance(name, str) and isinstance(functions, list | tuple):
        registry = index_of(functions, specs=True)
        spec = registry.by_name.get(name)
        return [] if spec is None else registry.shape(spec)[0]
    return schema_params(find_spec(functions, name) or {})[0]


def extra_schema(spec: FunctionSpec) -> JsonObject | None:
    """The schema an argument outside ``properties`` takes when the spec's parameter schema
    says so explicitly: ``{}`` for ``"additionalProperties": true``, the schema given for
    ``"additionalProperties": {...}``; ``None`` otherwise (the SAAG rule: such an argument
    is spurious; an absent ``additionalProperties`` does not open a tool's schema, nor do
    ``patternProperties``, which would mean matching the registry's own patterns).

    >>> extra_schema({"parameters": {"additionalProperties": True}})
    {}
    >>> extra_schema({"parameters": {"properties": {}}}) is None
    True
    """
    params = spec.get("parameters")
    extra = params.get("additionalProperties") if isinstance(params, dict) else None
    if extra is True:
        return {}
    return extra if isinstance(extra, dict) else None


def spec_properties(spec: FunctionSpec) -> JsonObject:
    """The ``properties`` of a function spec's parameter schema (``{}`` when it has none or
    they are not an object)."""
    params = spec.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    return props if isinstance(props, dict) else {}
