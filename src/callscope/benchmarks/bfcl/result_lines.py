"""The lines of BFCL's multi-turn result and score files (:mod:`.results` reads whole runs).

* :func:`read_jsonl_rows`: the JSON objects of one file, a bad line a problem, not an error.
* :func:`read_score_file`: a score file's header and failed ids. Without a header, the
  failures are read when some failure line is there (the file lost its first line); when
  nothing could be read at all (an empty file, UTF-16, one JSON array) the failures are
  *unknown* (``None``): every case would otherwise count as passed.
* :func:`turn_per_line`: whether a result file holds one turn per line
  (``{"id", "turn", "result": <one turn>}``), a layout BFCL does not write and callscope
  does not read.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from callscope.core.jsonl import FileTooLarge, loads_bounded, read_lines


def read_jsonl_rows(path: Path, problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """The rows of one result or score file, through the one line reader
    (:func:`callscope.core.jsonl.read_lines`); a bad line is a problem, not an error."""
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        lines = list(read_lines(path))
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror or exc})")
        return rows
    for lineno, line in lines:
        if isinstance(line, FileTooLarge):
            problems.append(str(line))
            continue
        if isinstance(line, ValueError):
            problems.append(f"{path}:{lineno}: malformed line skipped ({line})")
            continue
        try:
            row = loads_bounded(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: malformed line skipped (not valid JSON: {exc.msg})")
            continue
        except ValueError as exc:  # nested too deeply, an integer over the digit limit
            problems.append(f"{path}:{lineno}: malformed line skipped ({exc})")
            continue
        if not isinstance(row, dict):
            problems.append(f"{path}:{lineno}: malformed line skipped (not a JSON object)")
            continue
        rows.append((lineno, row))
    return rows


def turns_of(result: Any) -> tuple[list[list[Any]], str | None, int]:
    """Per-turn emissions of a ``result`` value, an error when it is not a list of turns,
    and how many turns were one value (a string) instead of a list of steps: each such turn
    is one emission."""
    if isinstance(result, str):
        return [], result or "empty result", 0
    if not isinstance(result, list):
        return [], f"result is {type(result).__name__}, not a list of turns", 0
    turns = [list(turn) if isinstance(turn, list) else [turn] for turn in result]
    return turns, None, sum(not isinstance(turn, list) for turn in result)


def read_score_file(
    path: Path, problems: list[str], category: str = ""
) -> tuple[dict[str, Any] | None, set[str] | None]:
    """BFCL score file: its header (or ``None``) and the ids of the failed cases; the failed
    ids are ``None`` (Acc unknown) when the file holds neither a header nor a failure line
    that could be read."""
    rows = read_jsonl_rows(path, problems)
    what = f" for {category}" if category else ""
    if not rows:
        problems.append(
            f"{path}: no line could be read (empty, or not JSON Lines in UTF-8): Acc unknown{what}"
        )
        return None, None
    if "accuracy" not in rows[0][1]:
        problems.append(f"{path}: first line is not a header with 'accuracy'")
        header = None
        failures = rows
    else:
        header = rows[0][1]
        failures = rows[1:]
    failed: set[str] = set()
    for lineno, row in failures:
        if not isinstance(row.get("id"), str):
            problems.append(f"{path}:{lineno}: failure line has no string 'id'; ignored")
            continue
        if row.get("valid") is True:
            problems.append(f"{path}:{lineno}: line for {row['id']} is marked valid; ignored")
            continue
        failed.add(row["id"])
    if header is None and not failed:
        problems.append(f"{path}: neither a header nor a failure line: Acc unknown{what}")
        return None, None
    return header, failed


def turn_per_line(rows: list[tuple[int, dict[str, Any]]]) -> bool:
    """Whether ``rows`` hold one turn per line: an integer ``turn`` on the lines and ids
    repeated (BFCL writes one line per case, all its turns in ``result``)."""
    with_turn = [r for _, r in rows if isinstance(r.get("turn"), int)]
    if not with_turn:
        return False
    ids = Counter(str(r.get("id")) for r in with_turn)
    return any(n > 1 for n in ids.values())
