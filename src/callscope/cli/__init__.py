"""The ``callscope`` command line (one module per command group; the registry of commands and
the console script are in :mod:`callscope.cli.main`)."""

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    """``app``, the whole typer app, built when first used so that ``import callscope.cli``
    stays cheap."""
    if name == "app":
        import importlib

        return importlib.import_module("callscope.cli.main").app
    raise AttributeError(name)
