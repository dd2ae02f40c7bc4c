"""Reading and checking an upstream answer (:func:`judge`, a pure function), and the worker
processes that do it for large answers (:class:`HeavyChecks`).

``json`` holds the interpreter lock for the whole of a decode: on a thread, one 60 MB answer
stops the event loop for ~0.2 s, and three at once stopped every other request for seconds
(issue 47, point 6). An answer over :data:`THREAD_CHECK_BYTES` is therefore read and checked
in one of :data:`HEAVY_WORKERS` worker processes (started on the first such answer), and only
what it found comes back: the answer's value and its verdict (unpickled in about a third of
the time the JSON decode takes: a string is one copy). The workers start with the first large
answer, which, like any other while they start, is checked on a thread. A worker that dies
(killed, out of memory) breaks only its pool: the answer in hand is checked on a thread, and
the next large answer starts a new pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from callscope.core.jsonl import TooDeep
from callscope.guard.check import TurnVerdict, check, message_of
from callscope.guard.inputs import later_choices
from callscope.guard.proxy.request import loads_answer
from callscope.records.wire import ChatCompletion, ChatMessage, FunctionCall

#: an upstream answer too long to check on the event loop
#: (:func:`callscope.guard.inputs.checks_inline`, the one rule) but up to this size with its
#: request is checked on a worker thread (its decode holds the lock a few ms at most); a
#: larger one in a worker process (a long conversation too: stage 3 reads all of it, and
#: its scans hold the lock)
THREAD_CHECK_BYTES = 1024 * 1024
#: how much lower the workers' priority is than the server's (``os.nice``)
WORKER_NICENESS = 10
#: worker processes for large answers (each holds at most one answer, ~3x its size, at once)
HEAVY_WORKERS = 2


@dataclass(frozen=True)
class Judged:
    """What reading and checking one upstream answer found. ``outcome``: ``checked`` (then
    ``data`` is the answer and ``verdict`` its calls' verdict), ``not_json`` (the proxy
    cannot read it as JSON: not UTF-8, an integer over the digit limit, a number no float
    can carry, ``NaN``; ``reason`` says which), ``too_deep`` (nested past the reader's
    bound), ``unreadable`` (JSON, but no first choice's message: nothing to check) or
    ``no_calls`` (a message without ``tool_calls`` or a legacy ``function_call``).
    ``failing_choices``: in an answer of several choices (``n > 1``), the positions of those
    whose calls fail (each checked as the first is; empty for an answer of one choice)."""

    outcome: str
    data: Any = None
    verdict: TurnVerdict | None = None
    reason: str = ""
    failing_choices: tuple[int, ...] = ()


def legacy_as_tool_calls(
    data: ChatCompletion, message: ChatMessage, call: FunctionCall
) -> ChatCompletion | ChatMessage:
    """``data`` with its legacy ``function_call`` as the one entry of ``tool_calls`` (what
    the check reads); ``data`` itself is not changed."""
    legacy = {"id": "function_call", "type": "function", "function": call}
    as_tools = {**message, "tool_calls": [legacy]}
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return {**data, "choices": [{**choices[0], "message": as_tools}, *choices[1:]]}
    return as_tools


def judge(content: bytes, tools: list[Any], messages: list[Any], grounding: str | None) -> Judged:
    """Read upstream's answer ``content`` and check its calls against ``tools`` and the
    conversation ``messages``. A legacy ``message.function_call`` is checked as the one call
    it is."""
    try:
        data = loads_answer(content)
    except TooDeep:
        return Judged("too_deep")
    except ValueError as exc:  # its calls, if any, cannot be read: never relayed unchecked
        return Judged("not_json", reason=f"{type(exc).__name__}: {str(exc)[:200]}")
    try:
        message = message_of(data)
    except (TypeError, ValueError):
        return Judged("unreadable")
    checked = data
    if not message.get("tool_calls"):
        legacy = message.get("function_call")
        if not isinstance(legacy, dict):
            return Judged("no_calls")
        checked = legacy_as_tool_calls(data, message, legacy)
    later = later_choices(data)
    failing = tuple(
        i
        for i, m in later
        if m.get("tool_calls") and not check(m, tools, messages, grounding).passed
    )
    verdict = check(checked, tools, messages, grounding)
    if later and not verdict.passed:
        failing = (0, *failing)  # (repairing the first would drop the others)
    return Judged("checked", data, verdict, "", failing)


def _quiet_worker() -> None:
    """A worker's start: a lower priority than the server's, so that on a busy machine the
    event loop is not the one kept waiting for a core; Ctrl-C reaches the whole process
    group, and the server, not each worker, decides what it ends."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _up() -> bool:
    """A worker's first task: done once the workers have started (imports included)."""
    return True


class HeavyChecks:
    """:func:`judge` (or another reader, :meth:`run`) in worker processes (module docstring).
    The workers start with the first large answer; until they are up (about a second, once), large answers are checked on a
    thread, so no answer waits for them. :attr:`done` counts the answers they checked and
    :attr:`state` says whether they are up (``/callscope/health`` shows both)."""

    def __init__(self, workers: int = HEAVY_WORKERS) -> None:
        self.workers = workers
        self.done = 0
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._up: concurrent.futures.Future[bool] | None = None
        #: large answers checked on threads at once while there are no workers (as many)
        self._threads: anyio.CapacityLimiter | None = None
        self._lock = threading.Lock()

    @property
    def state(self) -> str:
        """``not started``, ``starting`` or ``ready``."""
        up = self._up
        if self._pool is None or up is None:
            return "not started"
        return "ready" if up.done() else "starting"

    def _ready_pool(self) -> concurrent.futures.ProcessPoolExecutor | None:
        """The pool once its workers are up, else ``None`` (the pool started if it was not,
        and dropped if its start failed)."""
        with self._lock:
            if self._pool is None:
                # spawn: a fork of a process running threads (uvicorn's, the store writer's)
                # may copy a lock another thread holds
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_quiet_worker,
                )
                self._up = self._pool.submit(_up)
            pool, up = self._pool, self._up
        assert up is not None
        if not up.done():
            return None
        if up.exception() is not None:
            self._drop(pool)
            return None
        return pool

    def _drop(self, pool: concurrent.futures.ProcessPoolExecutor) -> None:
        """Forget a broken pool: the next large answer starts another."""
        with self._lock:
            if self._pool is pool:
                self._pool = self._up = None
        pool.shutdown(wait=False, cancel_futures=True)

    async def judge(
        self, content: bytes, tools: list[Any], messages: list[Any], grounding: str | None
    ) -> Judged:
        """:func:`judge` in a worker (on a thread while there is none)."""
        judged: Judged = await self.run(judge, content, tools, messages, grounding)
        return judged

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker, or on a thread while there is none (``fn``: a
        module-level function, its arguments and result picklable)."""
        pool = self._ready_pool()
        if pool is not None:
            try:
                result = await asyncio.wrap_future(pool.submit(fn, *args))
            except BrokenProcessPool:  # a worker died: this one on a thread
                self._drop(pool)
            else:
                self.done += 1
                return result
        if self._threads is None:  # made inside the event loop, on first use
            self._threads = anyio.CapacityLimiter(self.workers)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._threads)

    def close(self) -> None:
        """End the workers (an answer they are checking is dropped: its client has gone)."""
        with self._lock:
            pool, self._pool, self._up = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
