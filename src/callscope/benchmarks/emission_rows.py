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

from callscope.core.jsonl import check_file_size, loads_bounded, open_regular, read_lines


@dataclass(frozen=True)
class EmissionRow:
    """One non-blank line: its 1-based ``line`` number, the row's ``id`` (``None`` when the
    line is not an object), its ``emission``, and ``error`` when the line is not a usable row."""

    line: int
    id: Any
    emission: Any = None
    error: str | None = None


def read_emission_rows(path: str | Path) -> Iterator[EmissionRow]:
    """The rows of the JSONL file ``path``, read by the one bounded line reader
    (:func:`~callscope.core.jsonl.read_lines`). The file is checked and opened before this
    returns, so a missing file raises here (``FileNotFoundError``), and so does one over
    :data:`~callscope.core.jsonl.MAX_FILE_BYTES` (issue 47: a 20 GB sparse file was read to
    its end), not at the first row."""
    check_file_size(path)
    open_regular(path).close()  # a missing or irregular file raises now
    return _rows(path)


def _rows(path: str | Path) -> Iterator[EmissionRow]:
    for lineno, line in read_lines(path):  # the one bounded line reader
        if isinstance(line, ValueError):
            yield EmissionRow(lineno, None, error=f"not readable ({line})")
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
