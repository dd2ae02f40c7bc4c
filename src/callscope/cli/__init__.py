"""The ``callscope`` command line (one module per command group)."""

from callscope.cli.app import app

__all__ = ["app"]
