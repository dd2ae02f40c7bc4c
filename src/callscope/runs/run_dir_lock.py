"""The writer lock of a run directory as the calibrate drivers hold it: the one lock of
:mod:`callscope.store.writer_lock` (an exclusive ``flock`` on ``.writer.lock``), taken by the
library call that writes (:func:`~callscope.runs.calibrate.calibrate_model`,
:func:`~callscope.runs.calibrate_panel.calibrate_panel`) and by the ``calibrate`` commands
that call it several times (``panel``, ``experiment``: held from the first write to the
last), so that two processes on one output never both send every request.

Held re-entrantly by the thread that took it: a call that already holds a directory's lock
(the command around the library call, a panel around each model's run) goes on under it;
any other holder, another process or another thread of this one, is
:class:`~callscope.errors.RunDirBusy`, before anything is written or sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from callscope.store.writer_lock import writer_lock

#: the directories whose lock this process holds: (device, inode) -> (thread, depth)
_HELD: dict[tuple[int, int], tuple[int, int]] = {}
_GUARD = threading.Lock()


@contextmanager
def hold_run_dir(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir``'s writer lock for the ``with`` block (the folder made first;
    ``FileExistsError`` when it is a file): taken here, or gone on with when this thread
    already holds it; :class:`~callscope.errors.RunDirBusy` when another process (or
    another thread) does."""
    path = Path(run_dir)
    path.mkdir(parents=True, exist_ok=True)
    st = path.stat()
    key, me = (st.st_dev, st.st_ino), threading.get_ident()
    with _GUARD:
        owner, depth = _HELD.get(key, (None, 0))
        nested = owner == me
        if nested:
            _HELD[key] = (me, depth + 1)
    if nested:
        try:
            yield
        finally:
            with _GUARD:  # one level less, if the hold is still this thread's (an outer
                held = _HELD.get(key)  # hold closed first has given the lock back already)
                if held is not None and held[0] == me:
                    _HELD[key] = (me, held[1] - 1)
        return
    with writer_lock(path):  # RunDirBusy when held elsewhere (another thread included)
        with _GUARD:
            _HELD[key] = (me, 1)
        try:
            yield
        finally:
            with _GUARD:
                _HELD.pop(key, None)


__all__ = ["hold_run_dir"]
