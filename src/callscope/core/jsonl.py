"""JSON Lines helpers shared by the dataset loaders and benchmark builders.

``read_jsonl`` never stops at a bad line: it yields the parse error in place of the row so
callers can count or report malformed rows. ``write_jsonl`` writes atomically (temporary
file in the same folder, then ``os.replace``), so a reader never sees a half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
    """Yield ``(line_number, row)`` for each non-blank line of a UTF-8 JSON Lines file.

    Line numbers start at 1 and count blank lines too, so they match an editor's view.
    A line that is not valid JSON yields the ``json.JSONDecodeError``; a line that is valid
    JSON but not an object yields a ``ValueError``. A UTF-8 byte-order mark is ignored.
    """
    with open(path, encoding="utf-8-sig") as fh:
        for number, line in enumerate(fh, start=1):
            text = line.strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, exc
                continue
            except RecursionError:
                yield number, ValueError(f"line {number} is nested too deeply to read")
                continue
            if isinstance(value, dict):
                yield number, value
            else:
                yield (
                    number,
                    ValueError(f"line {number} holds a JSON {type(value).__name__}, not an object"),
                )


def dumps_row(row: dict[str, Any]) -> str:
    """Serialise one row exactly as ``write_jsonl`` does (key order kept, UTF-8 kept)."""
    return json.dumps(row, sort_keys=False, ensure_ascii=False)


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write ``rows`` one JSON object per line (``\\n`` endings) and return how many.

    Keys keep their insertion order and non-ASCII text is written as is, so the same rows
    give byte-identical files. The parent folder is created if needed. The file appears
    atomically: rows go to a temporary file next to ``path`` that then replaces it; on any
    error the temporary file is removed and ``path`` is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(dumps_row(row))
                fh.write("\n")
                count += 1
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp makes the file private (0600); give it the usual mode of a data file.
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return count


def copy_json(value: Any) -> Any:
    """Copy of JSON-like data (dicts and lists rebuilt, scalars shared); much faster than
    ``copy.deepcopy`` on the many small specs a benchmark holds."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value
