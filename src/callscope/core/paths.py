"""Where callscope keeps what it makes once and reuses: model files, downloads, answers."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from callscope.errors import UnsafePath


def cache_root() -> Path:
    """``$CALLSCOPE_CACHE``, else ``~/.cache/callscope``. Subfolders: ``models/`` (joined GGUF
    files), ``datasets/`` (downloads the user asked for), ``pint/`` (pint's parsed unit
    definitions), ``airportsdata/`` (its IATA table as JSON); ``responses.sqlite`` (the
    response cache)."""
    env = os.environ.get("CALLSCOPE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "callscope"


def models_dir() -> Path:
    """Joined model weight files (:mod:`callscope.models.weights`)."""
    return cache_root() / "models"


def datasets_dir() -> Path:
    """Dataset downloads the user asked for (:mod:`callscope.benchmarks.glaive`)."""
    return cache_root() / "datasets"


def responses_path() -> Path:
    """The response cache (:mod:`callscope.models.cache`)."""
    return cache_root() / "responses.sqlite"


def pint_dir() -> Path:
    """pint's parsed unit definitions, kept so that its registry builds in ~0.1 s instead of
    ~1 s (:mod:`callscope.saag.normalise.knowledge.quantities`)."""
    return cache_root() / "pint"


def airports_dir() -> Path:
    """airportsdata's IATA table kept as JSON (the fields callscope reads), so that it loads
    in ~0.01 s instead of ~0.12 s (:mod:`callscope.saag.normalise.knowledge.airports`)."""
    return cache_root() / "airportsdata"


def refuse_symlinks(path: Path) -> None:
    """Raise :class:`~callscope.errors.UnsafePath` when ``path`` or the folder it is written
    in is a symbolic link: a report written into a run directory someone else can write to
    would otherwise overwrite whatever the link points at (issue 47 point 10)."""
    for p in (path, path.parent):
        if p.is_symlink():
            raise UnsafePath(
                f"refusing to write {path}: {p} is a symbolic link (to {os.readlink(p)}); "
                "remove the link and run again"
            )


def write_bytes_safely(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` without ever following a symbolic link: ``path`` and its
    folder must not be links (:func:`refuse_symlinks`), the bytes go to a new temporary file
    beside it (created exclusively, so a link planted under its name is never followed),
    which then replaces ``path`` (a rename replaces a link, never its target). Atomic: a
    failed write leaves the old file and no temporary one. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_symlinks(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
