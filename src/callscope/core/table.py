"""One table type for every table callscope writes, and the cell formats tables share.

A :class:`Table` is text cells under column headers, with an optional ``title``, ``caption``
(what the table shows and how it was computed), ``note`` (a remark after the table, e.g. the
interval method) and ``name`` (the file stem / anchor). The SAAG report tables
(:mod:`callscope.report.tables`), the GAR / Acc diagnostics
(:mod:`callscope.calibration.diagnostics`, :mod:`callscope.calibration.tau2`), the paired
probe comparison (:mod:`callscope.calibration.paired`) and the SAAG stage mix
(:mod:`callscope.runs.calibrate`) each build one and render it here:

* :meth:`Table.to_markdown`: GitHub pipe table. With a ``title``, a first paragraph
  ``**<title>.** <caption>``; with ``empty`` set and no rows, that line instead of the
  header; the ``note`` as a paragraph after the table. Headers and cells are escaped by
  :func:`markdown_escape`.
* :meth:`Table.to_html`: an escaped ``<table>`` in a ``table-wrap`` div, the title (bold) and
  caption in ``<caption>``; ``(no rows)`` spanning the columns when there are no rows.
* :meth:`Table.to_latex`: a booktabs ``table`` environment (``\\toprule`` / ``\\midrule`` /
  ``\\bottomrule``) with ``\\caption`` and ``\\label{tab:<name>}``; cells escaped by
  :func:`latex_escape`.
* :meth:`Table.to_csv`: the text cells as CSV (the report writes its raw numbers separately).
* :meth:`Table.to_rich`: a :class:`rich.table.Table` for the terminal (``row_styles`` colour
  rows, e.g. bound violations in red).
* :meth:`Table.cells`: ``{"columns", "rows", "notes"}``, the form the HTML report embeds as
  JSON (the inverse of reading back the Markdown with
  :func:`callscope.report.conversations.markdown_table`).

``align`` has one letter per column, ``l`` or ``r``; it sets the LaTeX column spec and the
rich justification (Markdown and HTML leave alignment to the stylesheet).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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


def markdown_escape(text: Any) -> str:
    """A Markdown table cell: ``\\`` and ``|`` backslash-escaped, newlines as spaces."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


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
    header when there are no rows (``None``: the header alone)."""

    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    title: str | None = None
    caption: str | None = None
    note: str | None = None
    name: str | None = None
    align: str | None = None
    row_styles: Sequence[str | None] | None = None
    empty: str | None = None

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
            head = f"**{self.title}.**"
            lines += [head if self.caption is None else f"{head} {self.caption}", ""]
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
        ``cls``. The caption is the bold title, then the caption and the note."""
        head = "".join(f"<th>{_esc(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_esc(v)}</td>" for v in row) + "</tr>" for row in self.rows
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
        """The header and the text cells as CSV (``\\n`` line ends)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.columns)
        writer.writerows(self.rows)
        return buf.getvalue()

    def to_rich(self) -> RichTable:
        """A :class:`rich.table.Table` with the title, ``align`` as justification and
        ``row_styles``; the caption and note (if any) as its caption."""
        caption = " ".join(t for t in (self.caption, self.note) if t) or None
        table = RichTable(title=self.title, caption=caption)
        for col, a in zip(self.columns, self.align or "", strict=True):
            table.add_column(col, justify="right" if a == "r" else "left")
        styles = self.row_styles or [None] * len(self.rows)
        for row, style in zip(self.rows, styles, strict=True):
            table.add_row(*row, style=style)
        return table

    def cells(self) -> dict[str, Any]:
        """``{"columns", "rows", "notes"}`` as JSON-ready lists (the note, if any, as the one
        entry of ``notes``)."""
        return {
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "notes": [self.note] if self.note else [],
        }
