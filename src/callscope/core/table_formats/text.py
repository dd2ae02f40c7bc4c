"""The ``text`` table format (``.txt``): the terminal table of :meth:`Table.to_rich`, as plain
text at its natural width (every column, one line per cell, no colour), for a file or a log.

Also the example of a format added as one file: this module is found and imported by
:mod:`callscope.core.table_formats`, and registering the format is all it does besides
rendering.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.measure import Measurement

from callscope.core.table import Table, fit_terminal
from callscope.core.table_formats import TableFormat, register_table_format

#: wide enough that :func:`~callscope.core.table.fit_terminal` keeps the full layout
_UNBOUNDED = 100_000


def to_text(table: Table) -> str:
    """``table`` as rich draws it in a terminal exactly as wide as the full table, without
    colour and without trailing spaces."""
    _, rich_table = fit_terminal(table, _UNBOUNDED)
    probe = Console(width=_UNBOUNDED, file=io.StringIO())
    width = Measurement.get(probe, probe.options, rich_table).maximum
    buf = io.StringIO()
    Console(file=buf, width=max(width, 1), no_color=True, color_system=None).print(rich_table)
    return "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())


TEXT = register_table_format(TableFormat("text", (".txt",), to_text, written=False))
