"""Reading a JSON Lines file of emissions: one ``{"id", "emission"}`` object per line.

The input format of ``callscope classify``. :func:`read_emission_rows` yields one
:class:`EmissionRow` per non-blank line, in file order, with the reason when the line is not
a usable row (not JSON, not an object, no ``emission``); it never raises on a bad line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from callscope.core.jsonl import (
    MAX_LINE_CHARS,
    _bounded_lines,
    check_file_size,
    loads_bounded,
    open_regular,
)


@dataclass(frozen=True)
class EmissionRow:
    """One non-blank line: its 1-based ``line`` number, the row's ``id`` (``None`` when the
    line is not an object), its ``emission``, and ``error`` when the line is not a usable row."""

    line: int
    id: Any
    emission: Any = None
    error: str | None = None


def read_emission_rows(path: str | Path) -> Iterator[EmissionRow]:
    """The rows of the JSONL file ``path``: a regular file
    (:func:`~callscope.core.jsonl.open_regular`) of at most
    :data:`~callscope.core.jsonl.MAX_FILE_BYTES`, read a line of at most
    :data:`~callscope.core.jsonl.MAX_LINE_CHARS` at a time, the bounds of the one JSON Lines
    reader (issue 47 point 12: a 20 GB line was read whole). The file is checked and opened
    before this returns, so a missing or too large file raises here, not at the first row."""
    check_file_size(path)
    raw = open_regular(path)
    return _rows(io.TextIOWrapper(raw, encoding="utf-8"))


def _rows(fh: IO[str]) -> Iterator[EmissionRow]:
    with fh:
        for lineno, line in enumerate(_bounded_lines(fh), start=1):  # type: ignore[arg-type]
            if line is None:
                yield EmissionRow(lineno, None, error=f"line over {MAX_LINE_CHARS} characters")
                continue
            if not line.strip():
                continue
            try:
                row: Any = loads_bounded(line)
            except json.JSONDecodeError as exc:
                yield EmissionRow(lineno, None, error=f"not valid JSON ({exc.msg})")
                continue
            except ValueError as exc:  # nested too deeply, an integer over the digit limit
                yield EmissionRow(lineno, None, error=f"not readable ({exc})")
                continue
            if not isinstance(row, dict):
                yield EmissionRow(lineno, None, error="row is not a JSON object")
            elif "emission" not in row:
                yield EmissionRow(lineno, row.get("id"), error="row has no 'emission'")
            else:
                yield EmissionRow(lineno, row.get("id"), row["emission"])
