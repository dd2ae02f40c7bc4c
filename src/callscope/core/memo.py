"""Memos of functions of text from outside (a request, an argument value, a parameter's
description), bounded in memory as well as in count.

``functools.lru_cache(maxsize=N)`` bounds how many calls it remembers, not how large they
are: a memo of 2,048 requests keeps 2,048 requests, whatever their length, and the proxy
accepts requests of 4 MiB. Stage 3 keeps about eight characters of derived text for every
character of a request it has read (its words, stems, numbers, lower case...): before this
module, 60 distinct requests of 1 MB held 457 MiB, and 2,048 of them would have held tens of
gigabytes.

:func:`text_cache` is ``lru_cache`` with a second memo for long calls: a call whose text
arguments hold more than :data:`LONG_TEXT` characters in all is remembered there, the newest
ones whose texts hold at most :data:`LONG_CHARS` characters together (and always the newest,
so that the several calls of one long request share one reading). A memo of ``maxsize``
entries then holds at most ``maxsize *`` :data:`LONG_TEXT` characters of short calls' texts
and :data:`LONG_CHARS` of long ones' (the newest call apart).

The long memo is bounded by characters, not by count: kept to its last two calls, eight
threads checking 20,000-character conversations at once pushed each other's requests out
between the calls of one answer, and each check cost 12.7-14.5 ms of CPU instead of 7.2-7.5
(answers of three calls; ``docs/proxy-bounds.md``).
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache, wraps
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: a call whose text arguments (strings, and the strings of a tuple) hold more characters
#: than this in all is a long call (BFCL's longest request: 4,739 characters)
LONG_TEXT = 8192
#: a :func:`text_cache` remembers the newest long calls whose texts hold at most this many
#: characters together (and the newest call, however long)
LONG_CHARS = 1_000_000


def text_size(args: tuple[Any, ...]) -> int:
    """The characters of ``args``' strings, and of the strings inside a tuple argument."""
    size = 0
    for a in args:
        if isinstance(a, str):
            size += len(a)
        elif isinstance(a, tuple):
            size += sum(len(x) for x in a if isinstance(x, str))
    return size


class _LongCalls:
    """The long calls of one :func:`text_cache`: oldest out first while their texts hold over
    ``budget`` characters, the newest always kept. Thread-safe; a call computed twice at once
    by two threads is kept once."""

    def __init__(self, fn: Callable[..., Any], budget: int) -> None:
        self.fn = fn
        self.budget = budget
        self.kept: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        with self.lock:
            hit = self.kept.get(key)
            if hit is not None:
                self.kept.move_to_end(key)
                return hit[0]
        value = self.fn(*args, **kwargs)
        size = text_size(args) + text_size(tuple(kwargs.values()))
        with self.lock:
            old = self.kept.pop(key, None)
            self.chars += size - (old[1] if old is not None else 0)
            self.kept[key] = (value, size)
            while self.chars > self.budget and len(self.kept) > 1:
                self.chars -= self.kept.popitem(last=False)[1][1]
        return value

    def clear(self) -> None:
        with self.lock:
            self.kept.clear()
            self.chars = 0


def text_cache(maxsize: int, *, long_chars: int = LONG_CHARS) -> Callable[[F], F]:
    """A decorator: ``lru_cache(maxsize)`` for the calls whose text arguments hold at most
    :data:`LONG_TEXT` characters (:func:`text_size`), a memo of at most ``long_chars``
    characters of texts for the others (see the module doc). Arguments hashable, as
    ``lru_cache`` wants; a function of one parameter takes it by position. The result has
    ``cache_clear()``, and ``cache_info()`` of the short calls."""

    def decorate(fn: F) -> F:
        short = lru_cache(maxsize=maxsize)(fn)
        long = _LongCalls(fn, long_chars)
        if len(inspect.signature(fn).parameters) == 1:

            @wraps(fn)
            def one(arg: Any) -> Any:  # the common case, one text: no loop
                if type(arg) is str:
                    return short(arg) if len(arg) <= LONG_TEXT else long(arg)
                return (short if text_size((arg,)) <= LONG_TEXT else long)(arg)

            cached: Any = one
        else:

            @wraps(fn)
            def cached(*args: Any, **kwargs: Any) -> Any:
                size = text_size(args) + (text_size(tuple(kwargs.values())) if kwargs else 0)
                return (short if size <= LONG_TEXT else long)(*args, **kwargs)

        def cache_clear() -> None:
            short.cache_clear()
            long.clear()

        cached.cache_clear = cache_clear
        cached.cache_info = short.cache_info
        return cached  # type: ignore[no-any-return]

    return decorate


_transient: ContextVar[bool] = ContextVar("callscope_transient", default=False)


@contextmanager
def transient() -> Iterator[None]:
    """Inside (this thread or task), the process-wide memos that hold a registry (the cascade's
    verdicts, the registry indexes) keep nothing new: for work whose registry no one else keeps
    (the guard's check of a request whose tools it does not keep, see
    :func:`callscope.guard.inputs.registry_of`), so that a stream of distinct registries
    cannot pile up in them."""
    token = _transient.set(True)
    try:
        yield
    finally:
        _transient.reset(token)


def keeping() -> bool:
    """Whether the memos that hold a registry may keep a new entry (outside :func:`transient`)."""
    return not _transient.get()
