"""Where callscope keeps what it makes once and reuses: model files, downloads, answers."""

from __future__ import annotations

import os
from pathlib import Path


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
