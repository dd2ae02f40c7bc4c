"""One entry point for building a registry-scale benchmark from a named source.

The single-call sources are a :class:`~callscope.core.registry.Registry`, :data:`SOURCES`
(name -> :class:`Source`): a source string is ``<name>`` or ``<name>:<argument>`` (``bfcl``,
``glaive:PATH``); :func:`load_source` looks the name up and its ``ConfigError`` lists the
registered forms (:func:`source_forms`). A source with categories (``bfcl``) also takes
``categories`` (:func:`load_source`, :func:`build_benchmark`): BFCL's single-turn categories
named as BFCL's data files name them (``parallel``, ``irrelevance``, ...; none: the default
four, :data:`~callscope.benchmarks.bfcl.single.DEFAULT_CATEGORIES`). Adding a source is one loader
``(argument, allow_download) -> (cases, dropped counts)`` and one :func:`register_source` line;
another installed package adds one with an entry point in the ``callscope.sources`` group
whose object is a :class:`Source` (the entry point's name is the source's name).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from callscope.benchmarks.bfcl.single import (
    DEFAULT_CATEGORIES,
    load_bfcl_detailed,
    load_bfcl_single_detailed,
)
from callscope.benchmarks.glaive import load_glaive
from callscope.benchmarks.registry_builder import build_registry_benchmark
from callscope.core.registry import Registry
from callscope.errors import ConfigError
from callscope.types import Case

BFCL_SOURCE = "bfcl"
GLAIVE_PREFIX = "glaive:"

#: a source loader: the text after ``<name>:`` ("" for a bare name) and whether downloads
#: are allowed -> the source's single-call cases and the counts of rows it dropped, by reason
Loader = Callable[[str, bool], tuple[list[Case], Counter[str]]]
#: a loader of named categories -> the cases and the counts of rows dropped, by reason
CategoryLoader = Callable[[Sequence[str]], tuple[list[Case], Counter[str]]]


@dataclass
class BuiltBenchmark:
    """Built cases, the number of usable source cases, the dropped rows by reason, and the
    usable source cases per ``meta["category"]`` (when the source sets one)."""

    cases: list[Case]
    source_cases: int
    dropped: Counter[str] = field(default_factory=Counter)
    per_category: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Source:
    """One benchmark source: its ``name``, the ``form`` shown in help and errors, whether it
    takes an argument after ``name:`` (``argument``), a one-line ``description`` and its
    ``loader``; ``category_loader``: for a source with named categories, category names ->
    (cases, dropped counts)."""

    name: str
    form: str
    argument: bool
    description: str
    loader: Loader
    category_loader: CategoryLoader | None = None


def _plugin_source(registry: Registry[Source], name: str, obj: Any) -> None:
    """Register an entry point's :class:`Source`, whose name is the entry point's name."""
    if not isinstance(obj, Source):
        raise TypeError(f"entry point {name!r} is a {type(obj).__name__}, not a Source")
    if obj.name != name:
        raise ConfigError(f"entry point {name!r} holds the source {obj.name!r}")
    registry.register(name, obj, replace=False)


#: name -> source, in help order (plugins: the ``callscope.sources`` entry points)
SOURCES: Registry[Source] = Registry(
    "source", entry_point_group="callscope.sources", on_plugin=_plugin_source
)


def register_source(source: Source) -> Source:
    """Add (or replace) the source called ``source.name``; returns it (``ConfigError`` for a
    name that is empty or holds ``:``)."""
    return SOURCES.register(source.name, source)


def source_forms() -> list[tuple[str, str]]:
    """``(form, description)`` of every registered source, in registry order."""
    return [(s.form, s.description) for s in SOURCES.values()]


def split_categories(text: str) -> tuple[str, ...]:
    """Comma-separated category names, blanks and repeats dropped, order kept.

    >>> split_categories("parallel, irrelevance,parallel,")
    ('parallel', 'irrelevance')
    """
    return tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))


def _dropped(load: Any) -> Counter[str]:
    return Counter(
        {f"{cat}:{why}": k for cat, reasons in load.skipped.items() for why, k in reasons.items()}
    )


def _bfcl_categories(categories: Sequence[str]) -> tuple[list[Case], Counter[str]]:
    """BFCL's named single-turn categories (offline); dropped rows as ``category:why``.
    ``ValueError`` naming the choices for an unknown category."""
    load = load_bfcl_detailed(categories)
    return list(load.cases), _dropped(load)


def _bfcl(_argument: str, _allow_download: bool) -> tuple[list[Case], Counter[str]]:
    """The installed bfcl-eval single-call data (offline): the default four categories;
    dropped rows as ``category:why``."""
    load = load_bfcl_single_detailed(DEFAULT_CATEGORIES)
    return list(load.cases), _dropped(load)


def _glaive(argument: str, allow_download: bool) -> tuple[list[Case], Counter[str]]:
    """A Glaive file, or ``hf:glaiveai/glaive-function-calling-v2`` (downloaded only with
    ``allow_download``)."""
    g = load_glaive(argument, allow_hub=allow_download)
    return g.cases, Counter(g.dropped)


register_source(
    Source(
        BFCL_SOURCE,
        "bfcl",
        False,
        "BFCL single-turn categories from the installed bfcl-eval (offline; default: the "
        "single-call simple_python, live_simple, multiple, live_multiple)",
        _bfcl,
        category_loader=_bfcl_categories,
    )
)
register_source(
    Source(
        GLAIVE_PREFIX.rstrip(":"),
        "glaive:PATH",
        True,
        "a Glaive function-calling file (or glaive:hf:<dataset>)",
        _glaive,
    )
)


def load_source(
    source: str, *, allow_download: bool = False, categories: Sequence[str] | None = None
) -> tuple[list[Case], Counter[str]]:
    """Source cases of ``source`` (a registered form: ``bfcl``, the installed bfcl-eval
    data, offline; ``categories``: BFCL's single-turn categories to build instead of the
    default four; ``glaive:PATH`` / ``glaive:hf:glaiveai/glaive-function-calling-v2``,
    downloaded only with ``allow_download``). ``ConfigError`` listing the registered forms for
    anything else."""
    name, sep, argument = source.partition(":")
    entry = SOURCES.get(name, None)
    if entry is None or bool(sep) != entry.argument:
        forms = " or ".join(repr(form) for form, _ in source_forms())
        raise ConfigError(f"unknown benchmark source {source!r}: use {forms}")
    if categories:
        if entry.category_loader is None:
            raise ConfigError(f"the benchmark source {source!r} has no categories to choose")
        return entry.category_loader(categories)
    return entry.loader(argument, allow_download)


def build_benchmark(
    source: str,
    *,
    scales: Sequence[int] = (5, 10, 15),
    n: int | None = 300,
    seed: int = 0,
    distractors: str = "uniform",
    gold_position: str = "random",
    allow_download: bool = False,
    categories: Sequence[str] | None = None,
) -> BuiltBenchmark:
    """Source cases → one case per (query, scale) with nested registries (``categories``:
    :func:`load_source`'s)."""
    cases, dropped = load_source(source, allow_download=allow_download, categories=categories)
    if n is not None and n > len(cases):
        why = (
            "; dropped: " + ", ".join(f"{k} {reason}" for reason, k in sorted(dropped.items()))
            if dropped
            else "; it holds no rows"
        )
        raise ValueError(
            f"asked for n={n} queries but {source} yields only {len(cases)}{why}"
            + (f": ask for at most {len(cases)} (--n {len(cases)})" if cases else "")
        )
    built = build_registry_benchmark(
        cases,
        scales=scales,
        n=n,
        seed=seed,
        distractors=distractors,
        gold_position=gold_position,  # type: ignore[arg-type]
    )
    per_category = Counter(str(c.meta["category"]) for c in cases if "category" in c.meta)
    return BuiltBenchmark(
        cases=built, source_cases=len(cases), dropped=dropped, per_category=per_category
    )
