"""The one progress display of every driver (``run``, ``experiment``, ``demo``, ``calibrate``).

On a terminal it is rich's live bar. When stderr is not a terminal (CI, ``nohup``, output
redirected to a file) a live bar would print nothing until it ends, so :class:`RunProgress`
prints plain lines instead: one when it starts, one every ``interval`` seconds (default
:data:`DEFAULT_INTERVAL`, from a timer thread, so a line comes even while a long case is
still running) and one when it ends, each ``description: done/total (percent), rate,
elapsed, ETA``.

``CALLSCOPE_PROGRESS`` chooses the style (``bar``, ``plain`` or ``off``; unset: ``bar`` on a
terminal, ``plain`` otherwise) and ``CALLSCOPE_PROGRESS_INTERVAL`` the seconds between plain
lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: seconds between two plain progress lines (the goal: a line at least every 30 s)
DEFAULT_INTERVAL = 20.0
STYLE_ENV = "CALLSCOPE_PROGRESS"
INTERVAL_ENV = "CALLSCOPE_PROGRESS_INTERVAL"
STYLES = ("bar", "plain", "off")


def format_duration(seconds: float) -> str:
    """``seconds`` as ``1h02m``, ``4m05s`` or ``12s``.

    >>> format_duration(3725), format_duration(245), format_duration(9.6)
    ('1h02m', '4m05s', '10s')
    """
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def progress_line(
    description: str, done: int, total: int, ran: int, elapsed: float, unit: str = "runs"
) -> str:
    """One plain progress line. ``done`` counts everything finished (resumed ones included),
    ``ran`` only what this process ran in ``elapsed`` seconds: the rate and the ETA
    (remaining / rate) use ``ran``; no ETA before the first one finished.

    >>> progress_line("demo", 12, 36, 10, 250.0)
    'demo: 12/36 (33%), 0.040 runs/s, elapsed 4m10s, ETA 10m00s'
    >>> progress_line("demo", 0, 36, 0, 3.0)
    'demo: 0/36 (0%), elapsed 3s, ETA unknown'
    >>> progress_line("demo", 36, 36, 36, 900.0)
    'demo: 36/36 (100%), 0.040 runs/s, elapsed 15m00s, done'
    """
    pct = f"{100 * done / total:.0f}%" if total else "100%"
    parts = [f"{description}: {done}/{total} ({pct})"]
    rate = ran / elapsed if elapsed > 0 and ran else 0.0
    if rate:
        parts.append(f"{rate:.3f} {unit}/s")
    parts.append(f"elapsed {format_duration(elapsed)}")
    if done >= total:
        parts.append("done")
    elif rate:
        parts.append(f"ETA {format_duration((total - done) / rate)}")
    else:
        parts.append("ETA unknown")
    return ", ".join(parts)


def _style(enabled: bool, stream: TextIO) -> str:
    if not enabled:
        return "off"
    chosen = os.environ.get(STYLE_ENV, "").strip().lower()
    if chosen in STYLES:
        return chosen
    return "bar" if Console(file=stream).is_terminal else "plain"


def _interval() -> float:
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


class RunProgress:
    """``with RunProgress(description, total, completed=skipped) as p: ... p.advance()``.

    ``enabled=False`` (``--quiet``) shows nothing. The style (bar / plain lines / off) is
    chosen once, from :data:`STYLE_ENV` or whether ``stream`` (default stderr) is a
    terminal. ``clock`` is for tests."""

    def __init__(
        self,
        description: str,
        total: int,
        *,
        completed: int = 0,
        enabled: bool = True,
        unit: str = "runs",
        stream: TextIO | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.description = description
        self.total = total
        self.start_done = completed
        self.done = completed
        self.unit = unit
        self._stream = stream
        self.style = _style(enabled, stream if stream is not None else _stderr())
        self.interval = interval if interval is not None else _interval()
        self._clock = clock
        self._started = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Progress | None = None
        self._task: int | None = None

    # -- the plain lines -------------------------------------------------------------

    def line(self) -> str:
        """The current plain progress line."""
        with self._lock:
            done, ran = self.done, self.done - self.start_done
        return progress_line(
            self.description, done, self.total, ran, self._clock() - self._started, self.unit
        )

    def _emit(self) -> None:
        stream = self._stream if self._stream is not None else _stderr()
        stream.write(self.line() + "\n")
        stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._emit()

    # -- context ---------------------------------------------------------------------

    def __enter__(self) -> RunProgress:
        self._started = self._clock()
        if self.style == "bar":
            console = (
                Console(file=self._stream) if self._stream is not None else Console(stderr=True)
            )
            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TaskProgressColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=console,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(
                escape(self.description), total=self.total, completed=self.done, rate=""
            )
        elif self.style == "plain":
            self._emit()
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def advance(self, n: int = 1) -> None:
        """``n`` more finished."""
        with self._lock:
            self.done += n
            done, ran = self.done, self.done - self.start_done
        if self._bar is not None and self._task is not None:
            elapsed = self._clock() - self._started
            rate = f"{ran / elapsed:.2f} {self.unit}/s" if elapsed > 0 and ran else ""
            self._bar.update(self._task, completed=done, rate=rate)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._emit()


def _stderr() -> TextIO:
    """``sys.stderr`` when written to (pytest's capture swaps it)."""
    return sys.stderr
