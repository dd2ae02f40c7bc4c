"""Table formats and the one writer of table files: format name or file extension -> renderer.

:data:`TABLE_FORMATS` is the registry (:class:`~callscope.core.registry.Registry`) of every
format a :class:`~callscope.core.table.Table` can be written in; :func:`write_table` writes a
table to a path in the format named, or else the one the path's extension selects,
:func:`write_document` a file of text and tables (notes, then a table, then another: the
Markdown files of ``calibrate``), and :func:`write_tables` writes one file per format under a
folder (``<name>.csv``, ``<name>.md``, ...; by default every format :func:`file_formats`
lists, so a new format appears in the commands' output with no other change). Every table
file callscope writes goes through them.

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
new format is in :data:`TABLE_FORMATS`, :func:`write_table` writes ``*.jsonl`` and the commands
that write every file format (``report``'s ``tables/``, a panel's files) write a ``.jsonl``
beside each ``.csv`` with no other change (``written=False`` keeps a format out of those). A format from another distribution is an entry point in the group
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

from callscope.core.paths import write_bytes_safely
from callscope.core.registry import Registry
from callscope.core.table import Table, markdown_escape
from callscope.core.text import escape_controls
from callscope.errors import ConfigError


@dataclass(frozen=True)
class TableFormat:
    """One way to write a table: its ``name``, the file ``extensions`` that select it (with
    the dot, lower case; the first is what :func:`write_tables` names files with) and
    ``render``, the table's whole file text. ``written``: whether the commands that write
    their tables as files write this format too (:func:`file_formats`: the report's
    ``tables/``, a panel's files); the built-in ``html`` (embedded in the page) and ``text``
    (for a terminal log) are not, every other format is unless it says so."""

    name: str
    extensions: tuple[str, ...]
    render: Callable[[Table], str]
    written: bool = True

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
    values too) through :func:`~callscope.core.text.escape_controls`; a carriage return in a
    header or cell (one line of a row) as ``\\x0d`` too."""

    def esc(value: str | None) -> str | None:
        return None if value is None else escape_controls(value)

    def cell(value: str) -> str:
        return escape_controls(value, keep_cr=False)

    return dataclasses.replace(
        table,
        columns=[cell(c) for c in table.columns],
        rows=[[cell(v) for v in row] for row in table.rows],
        title=esc(table.title),
        caption=esc(table.caption),
        note=esc(table.note),
        raw=None if table.raw is None else escaped_table(table.raw),
    )


def file_formats() -> list[str]:
    """The names of the formats a command writes its tables in (each :class:`TableFormat`
    with ``written`` set), Markdown first, then in registration order: ``markdown``,
    ``latex``, ``csv`` and every format registered since."""
    names = [f.name for f in TABLE_FORMATS.values() if f.written]
    return sorted(names, key=lambda n: n != "markdown")


#: one part of a document (:func:`render_document`): text as is, or a table to render
DocumentPart = str | Table


def markdown_text(value: object) -> str:
    """A data value (a model name, a task id, a problem quoting a file) inside the Markdown
    text of a document, written as a Markdown table cell writes it: control characters and
    carriage returns as visible escapes (:func:`~callscope.core.text.escape_controls`), then
    :func:`~callscope.core.table.markdown_escape` (``<script>`` as text, newlines as
    spaces), so the value neither breaks its line nor becomes HTML. The document's own
    Markdown around it (``**bold**``, ``- `` items) is written as it is: ``m<CR><b>`` is
    written ``m\\\\x0d&lt;b&gt;``, read ``m\\x0d<b>``."""
    return markdown_escape(escape_controls(str(value), keep_cr=False))


def render_document(parts: Iterable[DocumentPart], fmt: str) -> str:
    """A document of text and tables in the format ``fmt`` (a name or an extension): each
    :class:`~callscope.core.table.Table` rendered by the format, each string as it is, joined
    with nothing between them (e.g. a note, a table, ``"\\n"``, a second table)."""
    render = table_format(fmt).render
    return "".join(p if isinstance(p, str) else render(p) for p in parts)


def write_document(parts: Iterable[DocumentPart], path: str | Path, fmt: str | None = None) -> Path:
    """Write :func:`render_document` of ``parts`` to ``path`` (UTF-8, ``\\n`` line ends,
    its folder created) in the format ``fmt``, by default the one ``path``'s extension
    selects: the one writer of table files, every control character as its visible escape
    (:func:`~callscope.core.text.escape_controls`: in the tables' cells, so that each format
    quotes the escape's backslash its own way, LaTeX's ``\\textbackslash{}``, and in the
    text, a carriage return as ``\\x0d`` in both: a document's line ends are ``\\n``).
    Markup in a data value inside the text is the caller's to neutralise
    (:func:`markdown_text`). Returns the path."""
    path = Path(path)
    if fmt is None and not path.suffix:
        raise ConfigError(f"{path}: no extension to choose a table format by; name a format")
    # a model name holding ESC]0;...BEL reaches no table file as an escape sequence
    parts = [
        escape_controls(p, keep_cr=False) if isinstance(p, str) else escaped_table(p) for p in parts
    ]
    text = escape_controls(render_document(parts, fmt if fmt is not None else path.suffix))
    # never through a symbolic link (a planted tables/aggregate.csv -> a victim file)
    return write_bytes_safely(path, text.encode("utf-8"))


def write_table(table: Table, path: str | Path, fmt: str | None = None) -> Path:
    """Write ``table`` to ``path`` (UTF-8, its folder created) in the format ``fmt`` (a name
    or an extension), by default the one ``path``'s extension selects. Returns the path."""
    return write_document([table], path, fmt)


def write_tables(
    table: Table,
    out_dir: str | Path,
    formats: Iterable[str] | None = None,
    stem: str | None = None,
    *,
    notes: dict[str, str] | None = None,
) -> list[Path]:
    """Write ``table`` once per format of ``formats`` (names or extensions; default
    :func:`file_formats`) as ``out_dir/<stem><extension>`` (``stem`` default: the table's
    ``name``), each format's first extension; returns the paths in that order. ``notes``:
    text written after the table in the format of that name (e.g. ``{"markdown": ...}``)."""
    stem = stem if stem is not None else table.name
    if not stem:
        raise ValueError("write_tables needs a stem: the table has no name")
    paths = []
    for choice in file_formats() if formats is None else formats:
        fmt = table_format(choice)
        after = (notes or {}).get(fmt.name, "")
        path = Path(out_dir) / f"{stem}{fmt.extensions[0]}"
        paths.append(write_document([table, after], path, fmt.name))
    return paths


for _fmt in (
    TableFormat("markdown", (".md",), Table.to_markdown),
    TableFormat("html", (".html",), Table.to_html, written=False),
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
