"""The lines of BFCL's single-turn result and score files (:mod:`.single_results` reads whole
models from them).

* :func:`read_rows`: every JSON value of a file, gzip or plain, and, when the file ends
  early (a gzip stream cut off, a read error), why: the lines before the cut are returned
  with it so the caller can say how many were read, never kept silently.
* :func:`read_score_file`: BFCL's header (the first line) and the rejected cases. A score
  file without that header (empty, unreadable, its first line lost) or cut off is
  *unusable*: :attr:`ScoreFile.unusable` says why, and BFCL's verdicts on its category are
  unknown (a missing rejection would otherwise read as an accepted answer).
* :func:`bfcl_index`: the 1-based index BFCL's score lines name a case by, taken from the
  result line's own id (``simple_13`` is 14), so that a reordered result file is still
  paired with its own verdicts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from callscope.core.jsonl import FileTooLarge, loads_bounded, read_lines


def read_rows(path: Path, problems: list[str]) -> tuple[list[tuple[int, Any]], str | None]:
    """``([(line number, JSON value)], cut)`` of every non-blank line of a JSON Lines file,
    gzip or plain, through the one line reader (:func:`callscope.core.jsonl.read_lines`: its
    limits); a malformed line, a line over the line limit and what is past the file limit
    are problems, not errors. ``cut`` is why the file could not be read to its end (``None``
    when it was)."""
    rows: list[tuple[int, Any]] = []
    try:
        for lineno, text in read_lines(path):
            if isinstance(text, FileTooLarge):
                problems.append(str(text))
            elif isinstance(text, ValueError):
                problems.append(f"{path}:{lineno}: {text}, skipped")
            else:
                try:
                    rows.append((lineno, loads_bounded(text)))
                except ValueError as exc:
                    problems.append(f"{path}:{lineno}: not JSON ({exc})")
    except (OSError, EOFError, ValueError) as exc:
        return rows, str(exc)
    return rows, None


def iter_lines(path: Path, problems: list[str]) -> Iterator[tuple[int, Any]]:
    """The rows of :func:`read_rows`; a file that cannot be read to its end is a problem."""
    rows, cut = read_rows(path, problems)
    yield from rows
    if cut is not None:
        problems.append(cut_message(path, len(rows), cut))


def cut_message(path: Path, n_read: int, why: str) -> str:
    """What a file that ends early is said to be: unreadable, or cut off after ``n_read``."""
    if not n_read:
        return f"{path}: cannot be read ({why})"
    return f"{path}: read {n_read} lines, then the file is cut off ({why})"


@dataclass(frozen=True)
class Rejection:
    """One case BFCL rejected: its ``error_type`` and first error message."""

    error_type: str
    error: str


@dataclass
class ScoreFile:
    """A score file: BFCL's header and the rejected cases, by result id (or 1-based index
    when the line names no result id: ``by_index``); ``unusable`` says why the file cannot
    be used (no header, cut off), ``""`` when it can."""

    header: dict[str, Any] | None = None
    by_id: dict[str, Rejection] = field(default_factory=dict)
    by_index: dict[int, Rejection] = field(default_factory=dict)
    unusable: str = ""


def read_score_file(path: Path, problems: list[str]) -> ScoreFile:
    """The header and rejected cases of one score file (module docstring)."""
    out = ScoreFile()
    rows, cut = read_rows(path, problems)
    for n, (lineno, row) in enumerate(rows):
        if not isinstance(row, dict):
            problems.append(f"{path}:{lineno}: not a JSON object")
            continue
        if n == 0 and "accuracy" in row and "valid" not in row:
            out.header = row
            continue
        errors = row.get("error")
        first = errors[0] if isinstance(errors, list) and errors else errors
        rejection = Rejection(str(row.get("error_type", "")), str(first or "")[:500])
        prompt_id = row.get("prompt_id")
        if isinstance(prompt_id, str):
            out.by_id[prompt_id] = rejection
        elif isinstance(row.get("id"), int):
            out.by_index[row["id"]] = rejection
        elif isinstance(row.get("id"), str):
            out.by_id[row["id"]] = rejection
        else:
            problems.append(f"{path}:{lineno}: a rejected case without an id")
    if cut is not None:
        out.unusable = cut_message(path, len(rows), cut)
    elif out.header is None:
        out.unusable = (
            f"{path}: unreadable as a score file: its first line is not BFCL's header "
            f"({'no line could be read' if not rows else 'no accuracy'})"
        )
    return out


def bfcl_index(result_id: str, position: int) -> int:
    """The 1-based index BFCL's score lines give the case of ``result_id``: its number plus
    one (``simple_13`` -> 14); ``position`` (the line's own 1-based place in the file) for an
    id without a plain number (``live_simple_0-0-0``).

    >>> bfcl_index("simple_13", 3), bfcl_index("live_simple_0-0-0", 3)
    (14, 3)
    """
    tail = result_id.rpartition("_")[2]
    return int(tail) + 1 if tail.isdigit() and len(tail) < 10 else position
