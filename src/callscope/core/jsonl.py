"""JSON Lines helpers shared by the dataset loaders and benchmark builders.

``read_jsonl`` never stops at a bad line: it yields the parse error in place of the row so
callers can count or report malformed rows (bad JSON, bad UTF-8, an integer too long to
read, nesting too deep: each is that line's error, with its number). ``write_jsonl`` writes
atomically (temporary file in the same folder, then ``os.replace``), so a reader never sees a
half-written file.

Writing never fails on a value JSON-in-UTF-8 cannot hold as is (:func:`dumps_safe`, the one
writer of that rule, also used by the run store and the response cache): a lone surrogate
(``"\\ud800"``, which a model or a file can produce) is written as its JSON escape, and an
integer too long for Python's ``int``/``str`` conversion limit as its hexadecimal string;
a dict so written gets the key :data:`ESCAPED_KEY` listing what was escaped
(``["huge_int", "surrogate"]``), so the value is never dropped and never silently changed.
Requests sent to a server are written the same way without the flag (``mark=False``): a
server must get the fields it expects and nothing else.

Reading JSON from outside (a server's reply, a replay file, a results file) goes through
:func:`loads_bounded`, the one reader of that rule: whatever the text, it returns a value
nested at most :data:`MAX_JSON_DEPTH` levels or raises a ``ValueError`` saying why (not
JSON, nested too deeply, an integer over the digit limit), never a ``RecursionError``.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

#: JSON read from outside (:func:`loads_bounded`) nests at most this deep; no reply, replay row
#: or results file callscope reads comes close (a tool call's arguments are capped at 32
#: levels by the parser), and every later step (copying, writing) stays far from Python's
#: recursion limit
MAX_JSON_DEPTH = 100
#: a line of a JSON Lines file at most this long (characters); a longer one is that line's
#: error, read past in pieces (an endless line, ``/dev/zero`` renamed, never fills memory)
MAX_LINE_CHARS = 64 * 1024 * 1024
#: a whole file read at once (:func:`read_bounded`: a traces file) at most this many bytes
MAX_FILE_BYTES = 512 * 1024 * 1024
#: the key a written dict gets when some value in it had to be escaped (:func:`dumps_safe`)
ESCAPED_KEY = "escaped"
#: characters the ``surrogateescape`` decoder makes of bytes that are not UTF-8
_BAD_BYTE = re.compile("[\udc80-\udcff]")


class NotARegularFile(ValueError):
    """A path that is not a regular file (a device such as ``/dev/zero``, a FIFO, a socket):
    it may never end, or block forever, so no reader opens it."""


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for binary reading, only if it is a regular file: a folder raises
    ``IsADirectoryError``, a device, FIFO or socket :class:`NotARegularFile` (opened without
    blocking, so a FIFO with no writer is refused at once, not waited on)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(
                f"{path} is not a regular file (a device, FIFO or socket); save it to a file"
            )
    except BaseException:
        os.close(fd)
        raise
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bounded(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`); a ``ValueError`` when
    it holds more than ``limit`` bytes (read no further than that)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is over {limit} bytes; split it")
    return data


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
    """Yield ``(line_number, row)`` for each non-blank line of a UTF-8 JSON Lines file.

    Line numbers start at 1 and count blank lines too, so they match an editor's view.
    A line that is not valid JSON yields the ``json.JSONDecodeError``; any other bad line (not
    UTF-8, an integer over Python's digit limit, nested too deeply, longer than
    :data:`MAX_LINE_CHARS`, valid JSON but not an object) yields a ``ValueError`` naming the
    line. A UTF-8 byte-order mark is ignored. Only a regular file is read
    (:func:`open_regular`: ``/dev/zero`` or a FIFO is a :class:`NotARegularFile`).
    """
    with open_regular(path) as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape")
        for number, line in enumerate(_bounded_lines(fh), start=1):
            if line is None:
                yield number, ValueError(f"line {number} is over {MAX_LINE_CHARS} characters")
                continue
            text = line.strip()
            if not text:
                continue
            bad = _BAD_BYTE.search(text)
            if bad is not None:
                byte = ord(bad.group()) - 0xDC00
                yield (
                    number,
                    ValueError(
                        f"line {number} is not valid UTF-8 "
                        f"(byte 0x{byte:02x} at column {bad.start() + 1})"
                    ),
                )
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, exc
                continue
            except RecursionError:
                yield number, ValueError(f"line {number} is nested too deeply to read")
                continue
            except ValueError as exc:  # an integer longer than the int/str digit limit
                yield number, ValueError(f"line {number}: {exc}")
                continue
            if isinstance(value, dict):
                yield number, value
            else:
                yield (
                    number,
                    ValueError(f"line {number} holds a JSON {type(value).__name__}, not an object"),
                )


def _bounded_lines(fh: io.TextIOWrapper) -> Iterator[str | None]:
    """Each line of ``fh``, or ``None`` for a line over :data:`MAX_LINE_CHARS` (the rest of
    it read in pieces and dropped: memory stays bounded by the cap)."""
    while True:
        line = fh.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) <= MAX_LINE_CHARS or line.endswith(("\n", "\r")):
            yield line
            continue
        while line and not line.endswith(("\n", "\r")):
            line = fh.readline(1 << 20)
        yield None


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests (a scalar 0, ``[]`` 1, ``[[1]]`` 2), counted iteratively and
    stopping as soon as it passes ``limit`` (the result is then ``limit + 1``).

    >>> json_depth({"a": [1, {"b": 2}]}), json_depth([[[[]]]], limit=2)
    (3, 3)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((x, depth) for x in v if isinstance(x, dict | list))
    return deepest


def loads_bounded(text: str | bytes, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` for JSON from outside; raises ``ValueError`` with a one-line
    reason for text that is not JSON, an integer longer than Python's digit limit, or a
    value nested deeper than ``limit`` (even one too deep for ``json`` itself, which would
    raise ``RecursionError``).

    >>> loads_bounded('{"a": [1]}')
    {'a': [1]}
    >>> loads_bounded("[" * 10_000 + "]" * 10_000)
    Traceback (most recent call last):
    ...
    ValueError: JSON nested deeper than 100 levels
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {limit} levels") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # the int/str digit limit
        raise ValueError(f"JSON holds {exc}".rstrip(".")) from None
    if json_depth(value, limit) > limit:
        raise ValueError(f"JSON nested deeper than {limit} levels")
    return value


def values_bounded(text: str, *, limit: int = MAX_JSON_DEPTH) -> Iterator[Any]:
    """Every top-level JSON value of ``text`` (one document, JSON Lines, or values one after
    another), each read as :func:`loads_bounded` reads one: a ``ValueError`` for text that
    is not JSON or a value nested deeper than ``limit``, never a ``RecursionError``.

    >>> list(values_bounded('{"a": 1}\\n[2] 3'))
    [{'a': 1}, [2], 3]
    """
    decoder = json.JSONDecoder()
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        try:
            value, i = decoder.raw_decode(text, i)
        except RecursionError:
            raise ValueError(f"JSON nested deeper than {limit} levels") from None
        except json.JSONDecodeError:
            raise
        except ValueError as exc:  # the int/str digit limit
            raise ValueError(f"JSON holds {exc}".rstrip(".")) from None
        if json_depth(value, limit) > limit:
            raise ValueError(f"JSON nested deeper than {limit} levels")
        yield value


def _escape_huge_ints(value: Any, found: set[str]) -> Any:
    """Copy of ``value`` with every ``int`` that ``str`` refuses (over the digit limit)
    replaced by its ``hex`` string; adds ``"huge_int"`` to ``found`` when there is one.
    Recursive, like ``json.dumps`` itself."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:
            found.add("huge_int")
            return hex(value)
        return value
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = _escape_huge_ints(k, found) if isinstance(k, int) else k
            out[key] = _escape_huge_ints(v, found)
        return out
    if isinstance(value, list | tuple):
        return [_escape_huge_ints(v, found) for v in value]
    return value


def dumps_safe(
    value: Any,
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
    mark: bool = True,
) -> str:
    """``json.dumps(value, ensure_ascii=False, ...)`` whenever its text is valid UTF-8 (the
    common case, byte for byte), else an escaped but lossless form (module docstring): huge
    integers as ``hex`` strings, then, if the text still is not UTF-8 (lone surrogates), the
    ASCII-escaped JSON. A dict so escaped carries :data:`ESCAPED_KEY` unless ``mark`` is
    false (a request body: the server gets only its own fields).

    >>> dumps_safe({"n": 1 << 20000})[:20]
    '{"n": "0x10000000000'
    >>> dumps_safe({"t": chr(0xDFFF)}), dumps_safe({"t": chr(0xDFFF)}, mark=False)
    ('{"t": "\\\\udfff", "escaped": ["surrogate"]}', '{"t": "\\\\udfff"}')
    """
    kwargs: dict[str, Any] = {"sort_keys": sort_keys, "separators": separators, "default": default}
    found: set[str] = set()
    try:
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    except ValueError as exc:
        if "digit" not in str(exc):  # not the int/str limit (a circular reference...)
            raise
        value = _escape_huge_ints(value, found)
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        found.add("surrogate")
    if not found:
        return text
    if mark and isinstance(value, dict):
        earlier = value.get(ESCAPED_KEY)
        found |= set(earlier) if isinstance(earlier, list) else set()
        value = {**value, ESCAPED_KEY: sorted(found)}
    return json.dumps(value, ensure_ascii="surrogate" in found, **kwargs)


def dumps_row(row: dict[str, Any]) -> str:
    """Serialise one row exactly as ``write_jsonl`` does (key order kept, UTF-8 kept; a value
    UTF-8 JSON cannot hold escaped, :func:`dumps_safe`)."""
    return dumps_safe(row)


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
