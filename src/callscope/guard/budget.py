"""The proxy's one memory bound for bodies in flight (issue 47 point 7): every request body
(its declared ``Content-Length``, before a byte of it is read) and every upstream answer
(decoded, chunk by chunk, as it is read) is charged to one process-wide
:class:`MemoryBudget`; a request whose bodies would take the process past it is answered
503 (``over_memory_budget``) and what it held is given back when its answer has been sent.

A request's charges are kept on its :class:`Ledger`, found through a context variable
(:data:`LEDGER`), so that the upstream client charges the request it reads for (re-asks on
worker threads included: their context is the request's) without being told."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

#: the bound by default, MiB (``callscope serve --max-memory-mb``)
DEFAULT_MEMORY_MB = 256


class OverBudget(Exception):
    """Taking these bytes would pass the process's memory budget for bodies in flight."""


class MemoryBudget:
    """Bytes of bodies in flight, process-wide, at most :attr:`limit` (thread-safe)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> None:
        """Hold ``n`` more bytes, or raise :class:`OverBudget` (nothing held then)."""
        with self._lock:
            if self.used + n > self.limit:
                self.refused += 1
                raise OverBudget(
                    f"bodies in flight would pass the proxy's memory bound of "
                    f"{self.limit} bytes (--max-memory-mb); retry shortly"
                )
            self.used += n

    def give(self, n: int) -> None:
        with self._lock:
            self.used = max(0, self.used - n)


class Ledger:
    """What one request holds of a :class:`MemoryBudget`, given back at once by
    :meth:`release`."""

    def __init__(self, budget: MemoryBudget) -> None:
        self.budget = budget
        self.held = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> None:
        self.budget.take(n)
        with self._lock:
            self.held += n

    def release(self) -> None:
        with self._lock:
            held, self.held = self.held, 0
        self.budget.give(held)


#: the ledger of the request being served in this context (``None``: nothing is charged)
LEDGER: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("LEDGER", default=None)


def charge(n: int) -> None:
    """Charge ``n`` bytes to the current request's ledger (:class:`OverBudget` past the
    bound); nothing when no request is being served in this context."""
    ledger = LEDGER.get()
    if ledger is not None:
        ledger.take(n)


@contextlib.contextmanager
def request_ledger(budget: MemoryBudget | None) -> Iterator[Ledger | None]:
    """A ledger for one request for the ``with`` block, everything it held given back at
    its end."""
    if budget is None:
        yield None
        return
    ledger = Ledger(budget)
    token = LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        LEDGER.reset(token)
        ledger.release()
