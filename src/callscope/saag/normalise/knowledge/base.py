"""What every knowledge normaliser shares: :class:`Match` (the evidence), the
:class:`Normaliser` and :class:`StatedText` interfaces, and how a name is stated.

Part of :mod:`callscope.saag.normalise.knowledge`."""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, TypeVar

from callscope.core.memo import text_cache
from callscope.saag.normalise.words import norm_words, stem

#: values longer than this are not looked up (names, codes and quantities are short)
MAX_VALUE_CHARS = 64
#: the longest run of request words read as one name ("Bosnia and Herzegovina" is 3)
MAX_SPAN_WORDS = 5

_T = TypeVar("_T")


#: whether :func:`long_lived` freezes: on only in a process callscope owns (its console
#: script, :func:`own_the_process`), never inside a host's process (an agent, LiteLLM)
_FREEZE = False


#: the garbage collector's youngest-generation threshold in a batch command callscope owns
#: (CPython's default is 700 allocations): a first pass over new requests allocates the
#: verdicts, the parses and the per-request evidence it keeps, and with the default the
#: collector ran about every seven calls and walked the young caches each time. Measured:
#: ``callscope score`` on BFCL's 10,511 harness calls 5.37-6.48 s -> 4.72-4.77 s, the same
#: output, the same peak memory (``docs/performance.md``)
OWN_GC_THRESHOLD = 20_000


def own_the_process(batch: bool = True) -> None:
    """Say that this process is callscope's own (the ``callscope`` command, a benchmark):
    the knowledge tables loaded from now on are frozen (:func:`long_lived`); in a ``batch``
    command the collector's youngest generation also waits for :data:`OWN_GC_THRESHOLD`
    allocations, its older generations keeping their settings. A server (``callscope
    serve``) keeps CPython's thresholds: its requests leave short-lived cycles, and with the
    raised threshold its heap grew 1.6-2.6 MiB over ten bursts of 500 requests against
    0.2-0.4 MiB (``benchmarks/proxy_load.py``). A library import changes neither: the host's
    process keeps its own collector."""
    global _FREEZE
    _FREEZE = True
    if batch:
        _young, middle, old = gc.get_threshold()
        gc.set_threshold(OWN_GC_THRESHOLD, middle, old)


def long_lived(table: _T) -> _T:
    """``table``, just loaded for the rest of the process; in a process callscope owns
    (:func:`own_the_process`), after moving every object alive to the garbage collector's
    permanent generation (``gc.freeze()``): each knowledge loader returns through it, once
    per process (issue 49).

    Why: the tables hold hundreds of thousands of objects that live as long as the process,
    and CPython's collector walked them all on every full collection. The caches of a first
    pass over new requests grow the heap and bring such collections: on BFCL's cold half
    (``benchmarks/bfcl_throughput.py``) one cost ~180 ms, about 30 us a call, and ~28 ms with
    the tables frozen. The effect is process-wide: whatever is alive when a table loads is no
    longer walked, and a reference cycle among those objects that becomes garbage later stays
    in memory until ``gc.unfreeze()``. That is harmless in callscope's own command, which
    holds little else, and a slow leak in a host's long-running process (an agent, a LiteLLM
    server: its requests in flight would be frozen too), so a library import never freezes."""
    if _FREEZE:
        gc.freeze()
    return table


@dataclass(frozen=True)
class Match:
    """One equivalence: ``words`` of the request name ``value``, by ``source`` (a library and
    what in it joins them)."""

    words: str
    value: str
    source: str

    def note(self) -> str:
        """The evidence as one line: ``'Los Angeles' -> LAX by airportsdata (...)``."""
        return f"'{self.words}' → {self.value} by {self.source}"


class StatedText(Protocol):
    """What a normaliser reads of the request (:class:`callscope.saag.evidence.Evidence`)."""

    query: str
    words: str  # norm_words(query)
    stemmed: str  # the words of ``words`` stemmed, padded with spaces


class Normaliser(Protocol):
    """One kind of value, known through one library."""

    name: str

    def match(self, value: str | int | float, text: StatedText) -> Match | None: ...


def stem_words(text: str) -> str:
    """``text``'s :func:`norm_words` with every word stemmed, padded with spaces ("Canadian
    dollars" -> " canadian dollar ")."""
    return " " + " ".join(stem(w) for w in norm_words(text).split()) + " "


def name_stated(name: str, text: StatedText) -> bool:
    """``name`` occurs in the request as whole words, up to inflection ("Canadian Dollar" is
    stated by "Canadian dollars")."""
    if not name or len(name) > 4 * MAX_VALUE_CHARS:
        return False
    if norm_words(name) in text.words:
        return True
    needle = _stemmed_name(name)
    return needle.strip() != "" and needle in text.stemmed


#: :func:`stem_words` of a library's names (short: :func:`name_stated` bounds them), kept
_stemmed_name = lru_cache(maxsize=4096)(stem_words)


#: a maximal run of ASCII letters, at least two long (one linear regex scan)
_ASCII_RUN = re.compile(r"[A-Za-z]{2,}")


@text_cache(2048)
def upper_tokens(query: str) -> frozenset[str]:
    """The request's all-capital tokens of 2-3 letters ("LAX", "CA", "JP"): codes a user
    writes as codes."""
    return frozenset(w for w in _ASCII_RUN.findall(query) if len(w) <= 3 and w.isupper())
