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

A call's characters are :func:`text_size`'s: a number or any other non-string element counts
one, so a tuple of 60,000 numbers (an all-number ``enum``) is a long call, not a short one of
no characters that the short memo kept 4,096 times over. :func:`sized_cache` bounds every call
by characters, short ones too (a registry's name table).
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
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


def text_size(args: Iterable[Any]) -> int:
    """The characters of ``args``: a string's length, the sizes of the elements of a tuple
    or frozenset (nested ones too), and 1 for anything else (a number, ``None``, a bool), so
    that a tuple of numbers (an all-number ``enum``) weighs its length and not nothing."""
    size = 0
    for a in args:
        if isinstance(a, str):
            size += len(a)
        elif isinstance(a, tuple | frozenset):
            size += _nested_size(a)
        else:
            size += 1
    return size


def _nested_size(items: tuple[Any, ...] | frozenset[Any]) -> int:
    """:func:`text_size` of a container's elements, iteratively (no recursion limit)."""
    size = 0
    stack = [items]
    while stack:
        for x in stack.pop():
            if isinstance(x, str):
                size += len(x)
            elif isinstance(x, tuple | frozenset):
                stack.append(x)
            else:
                size += 1
    return size


class _LongCalls:
    """The long calls of one :func:`text_cache` (or every call of a :func:`sized_cache`):
    oldest out first while their texts hold over ``budget`` characters or there are more than
    ``maxsize`` of them, the newest always kept. Thread-safe; a call computed twice at once
    by two threads is kept once."""

    def __init__(self, fn: Callable[..., Any], budget: int, maxsize: int | None = None) -> None:
        self.fn = fn
        self.budget = budget
        self.maxsize = maxsize
        self.kept: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()
        #: the call asked last and its value (always one of ``kept``): answered without the
        #: lock, as the calls of one request or registry come in a row
        self.last: tuple[Any, Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        last = self.last
        if last is not None and last[0] == key:
            return last[1]
        with self.lock:
            hit = self.kept.get(key)
            if hit is not None:
                self.kept.move_to_end(key)
                self.last = (key, hit[0])
                return hit[0]
        value = self.fn(*args, **kwargs)
        size = text_size(args) + text_size(tuple(kwargs.values()))
        with self.lock:
            old = self.kept.pop(key, None)
            self.chars += size - (old[1] if old is not None else 0)
            self.kept[key] = (value, size)
            self.last = (key, value)
            limit = self.maxsize
            while len(self.kept) > 1 and (
                self.chars > self.budget or (limit is not None and len(self.kept) > limit)
            ):
                self.chars -= self.kept.popitem(last=False)[1][1]
        return value

    def forget(self, *args: Any) -> None:
        """Drop the call of ``args`` (positional) if it is kept."""
        with self.lock:
            old = self.kept.pop(args, None)
            if old is not None:
                self.chars -= old[1]
            self.last = None

    def clear(self) -> None:
        with self.lock:
            self.kept.clear()
            self.chars = 0
            self.last = None


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


def sized_cache(maxsize: int, max_chars: int) -> Callable[[F], F]:
    """A decorator: a memo of at most ``maxsize`` calls whose texts (:func:`text_size`) hold
    at most ``max_chars`` characters together, short calls and long alike (the newest always
    kept, the oldest out first): for results that weigh far more than their texts (a
    registry's name table: about 265 bytes per character of CJK names), where
    :func:`text_cache`'s ``maxsize`` short calls of up to :data:`LONG_TEXT` characters each
    would be too much. Arguments hashable and positional. The result has ``cache_clear()``,
    ``cache_forget(*args)`` (drop one call: its owner let it go) and ``cache_chars()`` (the
    characters kept); ``__wrapped__`` is the function itself (a call that keeps nothing)."""

    def decorate(fn: F) -> F:
        kept = _LongCalls(fn, max_chars, maxsize)

        @wraps(fn)
        def cached(*args: Any) -> Any:
            return kept(*args)

        cached.cache_clear = kept.clear  # type: ignore[attr-defined]
        cached.cache_forget = kept.forget  # type: ignore[attr-defined]
        cached.cache_chars = lambda: kept.chars  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

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
