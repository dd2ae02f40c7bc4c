"""The table-format registry and the one writer of table files (core.table_formats), and the
report tables' raw CSV values (report.tables.raw_table)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from callscope.core.table import Table
from callscope.core.table_formats import (
    TABLE_FORMATS,
    TableFormat,
    register_table_format,
    render_table,
    table_format,
    write_table,
    write_tables,
)
from callscope.errors import ConfigError
from callscope.report.tables import raw_table, report_table

ODD = 'a, "quoted"\nline'


def _table(**kw: object) -> Table:
    return Table(
        ["Name", "value [95% CI]"],
        [[ODD, "0.5 [0.1, 0.9]"], ["plain", "[red]x"]],
        title="T",
        caption="What it shows.",
        name="t1",
        **kw,  # type: ignore[arg-type]
    )


def test_built_in_formats_and_their_extensions() -> None:
    assert list(TABLE_FORMATS)[:5] == ["markdown", "html", "latex", "csv", "text"]
    assert {n: TABLE_FORMATS[n].extensions for n in list(TABLE_FORMATS)[:5]} == {
        "markdown": (".md",),
        "html": (".html",),
        "latex": (".tex",),
        "csv": (".csv",),
        "text": (".txt",),
    }
    assert table_format("csv") is table_format(".CSV") is table_format("csv")
    assert table_format("md").name == "markdown"
    # the text format is a module of the package, found by discovery alone
    assert TABLE_FORMATS["text"].render.__module__ == "callscope.core.table_formats.text"


def test_unknown_format_is_a_config_error_listing_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown table format '\.xls'.*csv \(\.csv\)"):
        table_format(".xls")
    with pytest.raises(ConfigError, match="no extension"):
        write_table(_table(), tmp_path / "noext")


@pytest.mark.parametrize(
    ("ext", "method"),
    [(".md", Table.to_markdown), (".html", Table.to_html), (".tex", Table.to_latex)],
)
def test_write_table_by_extension_is_the_tables_rendering(
    tmp_path: Path, ext: str, method: object
) -> None:
    path = write_table(_table(), tmp_path / "sub" / f"t{ext}")
    assert path.read_bytes() == method(_table()).encode("utf-8")  # type: ignore[operator]


def test_csv_quotes_comma_quote_and_newline(tmp_path: Path) -> None:
    path = write_table(_table(), tmp_path / "t.csv")
    text = path.read_text(encoding="utf-8")
    assert text == 'Name,value [95% CI]\n"a, ""quoted""\nline","0.5 [0.1, 0.9]"\nplain,[red]x\n'
    assert list(csv.reader(io.StringIO(text))) == [
        ["Name", "value [95% CI]"],
        [ODD, "0.5 [0.1, 0.9]"],
        ["plain", "[red]x"],
    ]


def test_csv_writes_the_raw_values_when_the_table_has_them(tmp_path: Path) -> None:
    raw = Table(["name", "value", "lo", "hi"], [[ODD, "0.5", "0.1", "0.9"], ["plain", "", "", ""]])
    text = write_table(_table(raw=raw), tmp_path / "t.csv").read_text(encoding="utf-8")
    assert text == raw.to_csv()
    assert text.splitlines()[0] == "name,value,lo,hi"
    # the other formats show the text cells
    assert "0.5 [0.1, 0.9]" in render_table(_table(raw=raw), "markdown")


def test_text_format_is_the_terminal_table_without_colour() -> None:
    text = render_table(_table(row_styles=["red", None]), "text")
    assert "\x1b[" not in text and "[red]x" in text and "value [95% CI]" in text
    assert text.endswith("\n") and not any(line.endswith(" ") for line in text.splitlines())


def test_write_tables_one_file_per_format(tmp_path: Path) -> None:
    paths = write_tables(_table(), tmp_path, ("csv", "md", ".tex"))
    assert [p.name for p in paths] == ["t1.csv", "t1.md", "t1.tex"]
    assert write_tables(_table(), tmp_path, ("txt",), stem="other")[0].name == "other.txt"
    with pytest.raises(ValueError, match="stem"):
        write_tables(Table(["a"], []), tmp_path, ("csv",))


def test_a_new_format_is_one_registration(tmp_path: Path) -> None:
    fmt = TableFormat("tsv", (".tsv",), lambda t: "".join("\t".join(r) + "\n" for r in t.rows))
    try:
        assert register_table_format(fmt) is fmt
        path = write_table(_table(), tmp_path / "t.tsv")
        assert path.read_text(encoding="utf-8").splitlines()[-1] == "plain\t[red]x"
    finally:
        TABLE_FORMATS.unregister("tsv")
    with pytest.raises(ConfigError):
        table_format("tsv")
    with pytest.raises(ConfigError, match="extensions"):
        TableFormat("bad", ("tsv",), str)


def test_raw_table_is_what_pandas_writes() -> None:
    """The report's CSV files keep their bytes: raw_table renders each value as pandas'
    ``to_csv(index=False, float_format="%.6g")`` does."""
    df = pd.DataFrame(
        {
            "model": ["m,1", 'say "x"', None],
            "n": [1, 2, 3],
            "rate": [0.1234567, np.nan, 1234567.891],
            "tiny": [2.5e-7, 1.0, -0.0],
            "ok": [True, False, True],
            "mixed": [0.1234567, "s", np.nan],
            "count": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    expected = df.to_csv(index=False, float_format="%.6g")
    assert raw_table(df).to_csv() == expected
    assert raw_table(pd.DataFrame(columns=["a", "b"])).to_csv() == "a,b\n"
    assert raw_table(pd.DataFrame()).to_csv() == pd.DataFrame().to_csv(index=False)


def test_report_table_formats_display_and_keeps_raw() -> None:
    data = pd.DataFrame({"model": ["m"], "mode": ["direct"], "n": [3], "rate": [1 / 3]})
    display = pd.DataFrame(
        {"model": ["m"], "mode": ["direct"], "n": ["3"], "Rate": ["0.333 [0.061, 0.792]"]}
    )
    t = report_table("x", "X", "caption", data, display)
    assert (t.name, t.align, t.rows) == (
        "x",
        "lllr",
        [["m", "direct", "3", "0.333 [0.061, 0.792]"]],
    )
    assert t.to_csv() == "model,mode,n,rate\nm,direct,3,0.333333\n"
    empty = report_table("e", "E", "c", data.iloc[:0], display.iloc[:0])
    assert empty.to_markdown() == "**E.** c\n\n_(no rows)_\n"
