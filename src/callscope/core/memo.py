"""Memos of functions of text from outside (a request, an argument value, a parameter's
description), bounded in memory as well as in count.

``functools.lru_cache(maxsize=N)`` bounds how many calls it remembers, not how large they
are: a memo of 2,048 requests keeps 2,048 requests, whatever their length, and the proxy
accepts requests of 4 MiB. Stage 3 keeps about eight characters of derived text for every
character of a request it has read (its words, stems, numbers, lower case...): before this
module, 60 distinct requests of 1 MB held 457 MiB, and 2,048 of them would have held tens of
gigabytes.

:func:`text_cache` is ``lru_cache`` with a second, small memo for long calls: a call whose
text arguments hold more than :data:`LONG_TEXT` characters in all is remembered in it, the
last :data:`LONG_CALLS` such calls only (the several calls of one long request still share
one reading). A memo of ``maxsize`` entries then holds at most ``maxsize *``
:data:`LONG_TEXT` characters of arguments, plus its long calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache, wraps
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: a call whose text arguments (strings, and the strings of a tuple) hold more characters
#: than this in all is a long call (BFCL's longest request: 4,739 characters)
LONG_TEXT = 8192
#: a :func:`text_cache` remembers this many long calls (the last ones)
LONG_CALLS = 2


def text_size(args: tuple[Any, ...]) -> int:
    """The characters of ``args``' strings, and of the strings inside a tuple argument."""
    size = 0
    for a in args:
        if isinstance(a, str):
            size += len(a)
        elif isinstance(a, tuple):
            size += sum(len(x) for x in a if isinstance(x, str))
    return size


def text_cache(maxsize: int, *, long_calls: int = LONG_CALLS) -> Callable[[F], F]:
    """A decorator: ``lru_cache(maxsize)`` for the calls whose text arguments hold at most
    :data:`LONG_TEXT` characters (:func:`text_size`), ``lru_cache(long_calls)`` for the
    others (see the module doc). Arguments hashable, as ``lru_cache`` wants; a function of
    one parameter takes it by position. The result has ``cache_clear()``, and
    ``cache_info()`` of the short calls."""

    def decorate(fn: F) -> F:
        short = lru_cache(maxsize=maxsize)(fn)
        long = lru_cache(maxsize=long_calls)(fn)
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
            long.cache_clear()

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
