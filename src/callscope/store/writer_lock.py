"""One writer per run directory (issue 47 point 14): the exclusive ``flock`` on the run
directory's ``.writer.lock`` that every command writing a run directory takes: ``callscope
run``, ``experiment`` (and ``demo``) and ``serve`` through
:meth:`callscope.store.run_store.RunStore.lock_writer`, ``calibrate run``, ``panel`` and
``experiment`` through :func:`writer_lock` for the whole command. Two writers of one run directory would
each send every case and disagree on the counts; readers (``report``) take no lock. The lock
is held as long as its descriptor is open: closing it, or the process ending, releases it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from callscope.errors import RunDirBusy

#: the file whose exclusive lock marks a run directory's one writer
WRITER_LOCK = ".writer.lock"


def lock_run_dir(run_dir: Path) -> int:
    """The descriptor holding ``run_dir``'s writer lock, or
    :class:`~callscope.errors.RunDirBusy` when another process holds it (never through a
    symbolic link at the lock file)."""
    fd = os.open(
        run_dir / WRITER_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunDirBusy(
            f"{run_dir} is being written by another callscope process (run, experiment, "
            "calibrate or serve); wait for it to finish or pick another -o"
        ) from None
    return fd


@contextmanager
def writer_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir``'s writer lock for the ``with`` block, the folder made first
    (``RunDirBusy`` when another process holds it; ``FileExistsError`` when ``run_dir`` is a
    file). For a command that opens and closes the store several times while it writes
    (``calibrate``): one descriptor holds the lock across all of them."""
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    fd = lock_run_dir(path)
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
