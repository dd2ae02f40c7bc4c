"""Table formats and the one writer of table files: format name or file extension -> renderer.

:data:`TABLE_FORMATS` is the registry (:class:`~callscope.core.registry.Registry`) of every
format a :class:`~callscope.core.table.Table` can be written in; :func:`write_table` writes a
table to a path in the format named, or else the one the path's extension selects, and
:func:`write_tables` writes one file per format under a folder (``<name>.csv``, ``<name>.md``,
...). Every table file callscope writes goes through them.

The built-in formats render with the :class:`~callscope.core.table.Table` methods:

========== ================= ===========================================
name       extensions        rendering
========== ================= ===========================================
markdown   ``.md``           :meth:`Table.to_markdown` (GitHub pipe table)
html       ``.html``         :meth:`Table.to_html` (an escaped ``<table>``)
latex      ``.tex``          :meth:`Table.to_latex` (booktabs)
csv        ``.csv``          :meth:`Table.to_csv` (``raw`` values when present)
text       ``.txt``          :mod:`callscope.core.table_formats.text` (the terminal table)
========== ================= ===========================================

Adding a format is one file: a module in this package that builds a :class:`TableFormat` and
registers it, for example ``callscope/core/table_formats/jsonl.py``::

    import json

    from callscope.core.table_formats import TableFormat, register_table_format

    register_table_format(
        TableFormat(
            "jsonl", (".jsonl",), lambda t: "".join(json.dumps(r) + "\\n" for r in t.rows)
        )
    )

Every module of this package is imported when the package is (see :func:`_discover`), so the
new format is in :data:`TABLE_FORMATS` and :func:`write_table` writes ``*.jsonl`` with no other
change. A format from another distribution is an entry point in the group
``callscope.table_formats`` whose object is a :class:`TableFormat` (registered under its own
``name``), loaded the first time the registry is looked at.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.core.registry import Registry
from callscope.core.table import Table
from callscope.core.text import escape_controls
from callscope.errors import ConfigError


@dataclass(frozen=True)
class TableFormat:
    """One way to write a table: its ``name``, the file ``extensions`` that select it (with
    the dot, lower case; the first is what :func:`write_tables` names files with) and
    ``render``, the table's whole file text."""

    name: str
    extensions: tuple[str, ...]
    render: Callable[[Table], str]

    def __post_init__(self) -> None:
        if not self.extensions or any(
            not e.startswith(".") or e != e.lower() for e in self.extensions
        ):
            raise ConfigError(
                f"table format {self.name!r}: extensions are lower-case and start with '.', "
                f"not {self.extensions!r}"
            )


def _register_plugin(registry: Registry[TableFormat], name: str, obj: Any) -> None:
    """An entry point's object: a :class:`TableFormat`, registered under its own name."""
    if not isinstance(obj, TableFormat):
        raise ConfigError(f"entry point {name!r} is not a TableFormat")
    registry.register(obj.name, obj)


#: format name -> :class:`TableFormat`, in registration order
TABLE_FORMATS: Registry[TableFormat] = Registry(
    "table format", entry_point_group="callscope.table_formats", on_plugin=_register_plugin
)


def register_table_format(fmt: TableFormat) -> TableFormat:
    """Add ``fmt`` to :data:`TABLE_FORMATS` under its name (replacing a format of the same
    name). An extension that several formats list selects the one registered last. Returns
    ``fmt``."""
    return TABLE_FORMATS.register(fmt.name, fmt)


def table_format(choice: str) -> TableFormat:
    """The format called ``choice`` (``"markdown"``), or selected by the extension ``choice``
    (``".md"`` or ``"md"``, any case); :class:`~callscope.errors.ConfigError` naming every
    format and its extensions otherwise."""
    if choice in TABLE_FORMATS:
        return TABLE_FORMATS[choice]
    ext = choice.lower() if choice.startswith(".") else f".{choice.lower()}"
    for fmt in reversed(list(TABLE_FORMATS.values())):
        if ext in fmt.extensions:
            return fmt
    known = "; ".join(f"{f.name} ({', '.join(f.extensions)})" for f in TABLE_FORMATS.values())
    raise ConfigError(f"unknown table format {choice!r}; choose one of: {known}")


def render_table(table: Table, fmt: str) -> str:
    """``table`` rendered in the format named or selected by extension ``fmt``."""
    return table_format(fmt).render(table)


def escaped_table(table: Table) -> Table:
    """``table`` with every text it shows (headers, cells, title, caption, note; its ``raw``
    values too) through :func:`~callscope.core.text.escape_controls`."""

    def esc(value: str | None) -> str | None:
        return None if value is None else escape_controls(value)

    return dataclasses.replace(
        table,
        columns=[escape_controls(c) for c in table.columns],
        rows=[[escape_controls(v) for v in row] for row in table.rows],
        title=esc(table.title),
        caption=esc(table.caption),
        note=esc(table.note),
        raw=None if table.raw is None else escaped_table(table.raw),
    )


def write_table(table: Table, path: str | Path, fmt: str | None = None) -> Path:
    """Write ``table`` to ``path`` (UTF-8, its folder created) in the format ``fmt`` (a name
    or an extension), by default the one ``path``'s extension selects, every control
    character as its visible escape (:func:`~callscope.core.text.escape_controls`). Returns
    the path."""
    path = Path(path)
    if fmt is None and not path.suffix:
        raise ConfigError(f"{path}: no extension to choose a table format by; name a format")
    # control characters (a model name holding ESC]0;...BEL) as visible escapes: in the cells,
    # so that each format quotes the escape's backslash its own way (LaTeX), and in the text
    text = render_table(escaped_table(table), fmt if fmt is not None else path.suffix)
    text = escape_controls(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_tables(
    table: Table, out_dir: str | Path, formats: Iterable[str], stem: str | None = None
) -> list[Path]:
    """Write ``table`` once per format of ``formats`` (names or extensions) as
    ``out_dir/<stem><extension>`` (``stem`` default: the table's ``name``), each format's
    first extension; returns the paths in that order."""
    stem = stem if stem is not None else table.name
    if not stem:
        raise ValueError("write_tables needs a stem: the table has no name")
    paths = []
    for choice in formats:
        fmt = table_format(choice)
        paths.append(write_table(table, Path(out_dir) / f"{stem}{fmt.extensions[0]}", fmt.name))
    return paths


for _fmt in (
    TableFormat("markdown", (".md",), Table.to_markdown),
    TableFormat("html", (".html",), Table.to_html),
    TableFormat("latex", (".tex",), Table.to_latex),
    TableFormat("csv", (".csv",), Table.to_csv),
):
    register_table_format(_fmt)


def _discover() -> None:
    """Import every module of this package: each registers its format (the one-file way to
    add one; see the module docstring)."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
