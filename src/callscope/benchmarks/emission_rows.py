"""Reading a JSON Lines file of emissions: one ``{"id", "emission"}`` object per line.

The input format of ``callscope classify``. :func:`read_emission_rows` yields one
:class:`EmissionRow` per non-blank line, in file order, with the reason when the line is not
a usable row (not JSON, not an object, no ``emission``); it never raises on a bad line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.core.jsonl import check_file_size, read_jsonl


@dataclass(frozen=True)
class EmissionRow:
    """One non-blank line: its 1-based ``line`` number, the row's ``id`` (``None`` when the
    line is not an object), its ``emission``, and ``error`` when the line is not a usable row."""

    line: int
    id: Any
    emission: Any = None
    error: str | None = None


def read_emission_rows(path: str | Path) -> Iterator[EmissionRow]:
    """The rows of the JSONL file ``path``, by the one bounded reader
    (:func:`~callscope.core.jsonl.read_jsonl`: a regular file, each line at most
    :data:`~callscope.core.jsonl.MAX_LINE_CHARS`), the file at most
    :data:`~callscope.core.jsonl.MAX_FILE_BYTES` (issue 47 point 12: a 20 GB line was read
    whole). The file is checked before this returns, so a missing or too large file raises
    here, not at the first row."""
    check_file_size(path)
    return _rows(read_jsonl(path))


def _rows(source: Iterator[tuple[int, dict[str, Any] | Exception]]) -> Iterator[EmissionRow]:
    for lineno, row in source:
        if isinstance(row, json.JSONDecodeError):
            yield EmissionRow(lineno, None, error=f"not valid JSON ({row.msg})")
        elif isinstance(row, Exception):  # too long, not UTF-8, too deep, not an object
            yield EmissionRow(lineno, None, error=f"not readable ({row})")
        elif "emission" not in row:
            yield EmissionRow(lineno, row.get("id"), error="row has no 'emission'")
        else:
            yield EmissionRow(lineno, row.get("id"), row["emission"])
