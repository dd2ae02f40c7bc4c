"""One writer per run directory (issue 47 point 14): the exclusive ``flock`` on the run
directory's ``.writer.lock`` that ``callscope run`` and ``callscope serve`` take through
:meth:`callscope.store.run_store.RunStore.lock_writer`. Two writers of one run directory would
each send every case and disagree on the counts; readers (``report``) take no lock. The lock
is held as long as its descriptor is open: closing it, or the process ending, releases it."""

from __future__ import annotations

import fcntl
import os
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
            f"{run_dir} is being written by another callscope process (run or serve); wait "
            "for it to finish or pick another -o"
        ) from None
    return fd
