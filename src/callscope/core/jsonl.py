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

Reading JSON from outside (a server's reply, a replay file, a results file, a case or
emission row, a trace, a chat log, model text) goes through :func:`loads_bounded` (a whole
text) or :func:`raw_decode_bounded` (one value from a position, trailing text allowed), the
one reader of that rule: whatever the text, it returns a value nested at most
:data:`MAX_JSON_DEPTH` levels or raises a ``ValueError`` saying why (not JSON, nested too
deeply, an integer over the digit limit), never a ``RecursionError``. This module is the
only place that catches ``RecursionError`` from :mod:`json`; :func:`read_jsonl` reads every
line through it. The parser's JSON readers (:mod:`callscope.parse.literals`) are this reader
with a decoder that refuses ``NaN`` / ``Infinity``; a call's arguments are then held to the
tighter argument rule (``parse.literals.MAX_ARGUMENT_DEPTH``, a rule on values, not a
second reader limit).
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

#: JSON read from outside (:func:`loads_bounded`) nests at most this deep; no reply, replay row
#: or results file callscope reads comes close (a tool call's arguments are capped at 32
#: levels by the parser), and every later step (copying, writing) stays far from Python's
#: recursion limit
MAX_JSON_DEPTH = 100
#: THE INPUT LIMITS, in one place (issue 48): every file callscope reads from outside goes
#: through :func:`read_lines` (line by line: JSON Lines, BFCL's result and score files, gzip
#: or plain, replay files, case records, emission rows) or :func:`read_bounded` /
#: :func:`read_text_bounded` (whole: a traces file, a τ² results file, a Glaive JSON list).
#: A line at most this long (characters); a longer one is that line's error
#: (:class:`LineTooLong`), read past in pieces (an endless line, ``/dev/zero`` renamed,
#: never fills memory)
MAX_LINE_CHARS = 64 * 1024 * 1024
#: a file at most this many bytes (characters, for one read line by line: the text a gzip
#: file holds counts, not its compressed size); past it a whole read is refused and a read
#: line by line ends with :class:`FileTooLarge`
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


def read_bounded(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`); a ``ValueError`` when
    it holds more than ``limit`` bytes (default :data:`MAX_FILE_BYTES`; read no further)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path} is over {limit} bytes; split it")
    return data


def check_file_size(path: str | Path, limit: int = MAX_FILE_BYTES) -> None:
    """:func:`read_bounded`'s ``ValueError`` for a file over ``limit`` bytes, before a line is
    read (issue 47: a 20 GB sparse file was read to its end, line by line)."""
    if os.stat(path).st_size > limit:
        raise ValueError(f"{path} is over {limit} bytes; split it")


def read_text_bounded(path: str | Path, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The text of the regular file ``path``, read whole at most :data:`MAX_FILE_BYTES`
    (:func:`read_bounded`); a ``UnicodeDecodeError`` when it is not ``encoding`` (unless
    ``errors`` says otherwise)."""
    return read_bounded(path).decode(encoding, errors)


class LineTooLong(ValueError):
    """A line over :data:`MAX_LINE_CHARS` (its number in ``line``)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line} is over {MAX_LINE_CHARS} characters")
        self.line = line


class NotUtf8(ValueError):
    """A line whose bytes are not UTF-8 (its number in ``line``, the byte and column)."""

    def __init__(self, line: int, byte: int, column: int) -> None:
        super().__init__(f"line {line} is not valid UTF-8 (byte 0x{byte:02x} at column {column})")
        self.line = line


class FileTooLarge(ValueError):
    """A file read line by line past :data:`MAX_FILE_BYTES`: the rest is not read."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(f"{path}: over {MAX_FILE_BYTES} bytes; the rest is not read")


def read_lines(path: str | Path) -> Iterator[tuple[int, str | ValueError]]:
    """The one line reader of outside input: ``(line number, text)`` for each non-blank line
    of the regular file ``path`` (:func:`open_regular`; gzip when its name ends ``.gz``),
    UTF-8 with a byte-order mark ignored, the text stripped; in place of a line that cannot
    be used, its error: :class:`LineTooLong` (over :data:`MAX_LINE_CHARS`, read past in
    pieces), :class:`NotUtf8`. Past :data:`MAX_FILE_BYTES` it yields ``(number,``
    :class:`FileTooLarge` ``)`` and stops. Line numbers start at 1 and count blank lines, as
    an editor does. Memory: one line. Each reader decodes the text itself
    (:func:`loads_bounded`) and words its own errors with the line number."""
    with open_regular(path) as raw:
        binary: BinaryIO = raw
        if str(path).endswith(".gz"):
            binary = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
        fh = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape")
        read = 0
        for number, line in enumerate(_bounded_lines(fh), start=1):
            read += MAX_LINE_CHARS if line is None else len(line)
            if read > MAX_FILE_BYTES:
                yield number, FileTooLarge(path)
                return
            if line is None:
                yield number, LineTooLong(number)
                continue
            text = line.strip()
            if not text:
                continue
            bad = _BAD_BYTE.search(text)
            if bad is not None:
                yield number, NotUtf8(number, ord(bad.group()) - 0xDC00, bad.start() + 1)
                continue
            yield number, text


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
    """Yield ``(line_number, row)`` for each non-blank line of a UTF-8 JSON Lines file.

    Line numbers start at 1 and count blank lines too, so they match an editor's view.
    A line that is not valid JSON yields the ``json.JSONDecodeError``; any other bad line (not
    UTF-8, an integer over Python's digit limit, nested too deeply, longer than
    :data:`MAX_LINE_CHARS`, valid JSON but not an object) yields a ``ValueError`` naming the
    line. A UTF-8 byte-order mark is ignored. Only a regular file is read
    (:func:`open_regular`: ``/dev/zero`` or a FIFO is a :class:`NotARegularFile`).
    """
    for number, text in read_lines(path):
        if isinstance(text, ValueError):  # too long, not UTF-8, the file too large
            yield number, text
            continue
        try:
            value = loads_bounded(text)
        except json.JSONDecodeError as exc:
            yield number, exc
            continue
        except TooDeep:
            yield (
                number,
                ValueError(
                    f"line {number} is nested too deeply to read (over {MAX_JSON_DEPTH} levels)"
                ),
            )
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
    """How deep ``value`` nests (a scalar 0, ``[]`` 1, ``[[1]]`` 2), counted level by level
    (no recursion) and stopping as soon as it passes ``limit`` (the result is then
    ``limit + 1``).

    >>> json_depth({"a": [1, {"b": 2}]}), json_depth([[[[]]]], limit=2)
    (3, 3)
    """
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return limit + 1
        below: list[Any] = []
        for v in level:
            below += [
                x for x in (v.values() if isinstance(v, dict) else v) if isinstance(x, _CONTAINERS)
            ]
        level = below
    return depth


#: the values :func:`json_depth` looks into
_CONTAINERS = (dict, list)


class JsonLimitError(ValueError):
    """JSON text the reader refuses although it may be valid: ``line`` is the line (1-based,
    of the text read) where the refused value starts, when it could be found."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class TooDeep(JsonLimitError):
    """JSON nested deeper than the reader's limit (:data:`MAX_JSON_DEPTH`): the one error
    :func:`loads_bounded` and :func:`raw_decode_bounded` raise in place of ``RecursionError``."""


class HugeInt(JsonLimitError):
    """A JSON integer longer than Python's int/str digit limit (4,300 digits by default)."""


#: what the locator reads outside strings: a string (skipped whole), a bracket, a digit run
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*+"|[\[\]{}]|\d++')


def _locate(text: str, start: int, limit: int) -> int | None:
    """The line (1-based) of the first place from ``start`` where ``text`` nests deeper than
    ``limit`` or holds an integer over the digit limit; ``None`` when there is none. One
    linear scan (strings skipped by one possessive pattern), run only when a read failed."""
    digits = sys.get_int_max_str_digits() or None
    depth = 0
    for m in _TOKENS.finditer(text, start):
        c = m.group()[0]
        if c in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, m.start()) + 1
        elif c in "]}":
            depth -= 1
            if depth <= 0 and m.start() > start:
                return None
        elif c != '"' and digits is not None and m.end() - m.start() > digits:
            return text.count("\n", 0, m.start()) + 1
    return None


#: the decoder :func:`loads_bounded` and :func:`raw_decode_bounded` use unless given another
_DECODER = json.JSONDecoder()


def raw_decode_bounded(
    text: str,
    start: int = 0,
    *,
    limit: int = MAX_JSON_DEPTH,
    decoder: json.JSONDecoder = _DECODER,
) -> tuple[Any, int]:
    """The JSON value that starts at ``text[start]`` and the index after it (trailing text
    allowed: ``JSONDecoder.raw_decode`` from a position), read by ``decoder`` (e.g. one that
    refuses ``NaN``, or ``strict=False``). Raises ``json.JSONDecodeError`` for text that is
    not JSON there, and a ``ValueError`` with a one-line reason for a value nested deeper
    than ``limit`` (even one too deep for :mod:`json` itself) or an integer over Python's
    digit limit; never a ``RecursionError``.

    >>> raw_decode_bounded('x {"a": 1} y', 2)
    ({'a': 1}, 10)
    >>> raw_decode_bounded("[" * 10_000 + "]" * 10_000)
    Traceback (most recent call last):
    ...
    callscope.core.jsonl.TooDeep: JSON nested deeper than 100 levels
    """
    try:
        value, end = decoder.scan_once(text, start)
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    except (RecursionError, ValueError) as exc:
        raise _reason(exc, limit, text, start) from None
    return _checked(value, limit, text, start), end


def loads_bounded(
    text: str | bytes,
    *,
    limit: int = MAX_JSON_DEPTH,
    decoder: json.JSONDecoder | None = None,
) -> Any:
    """``json.loads(text)`` for JSON from outside; raises ``ValueError`` with a one-line
    reason for text that is not JSON (``json.JSONDecodeError``), an integer longer than
    Python's digit limit, or a value nested deeper than ``limit`` (even one too deep for
    ``json`` itself, which would raise ``RecursionError``). ``decoder``: see
    :func:`raw_decode_bounded` (a ``str`` only).

    >>> loads_bounded('{"a": [1]}')
    {'a': [1]}
    >>> loads_bounded("[" * 10_000 + "]" * 10_000)
    Traceback (most recent call last):
    ...
    callscope.core.jsonl.TooDeep: JSON nested deeper than 100 levels
    """
    try:
        value = json.loads(text) if decoder is None else decoder.decode(str(text))
    except (RecursionError, ValueError) as exc:
        raise _reason(exc, limit, text, 0) from None
    return _checked(value, limit, text, 0)


def _reason(
    exc: RecursionError | ValueError, limit: int, text: str | bytes, start: int
) -> ValueError:
    """The one-line error of a failed decode: :class:`TooDeep` for a ``RecursionError``,
    :class:`HugeInt` for the digit limit (each with its line), else ``exc`` itself (not
    JSON, a refused constant)."""
    if isinstance(exc, RecursionError):
        return TooDeep(f"JSON nested deeper than {limit} levels", _line(text, start, limit))
    if "digit" in str(exc) and not isinstance(exc, json.JSONDecodeError):
        return HugeInt(str(exc), _line(text, start, limit))
    return exc


def _checked(value: Any, limit: int, text: str | bytes, start: int) -> Any:
    """``value`` when it nests at most ``limit`` deep, else the :class:`TooDeep` saying so.
    A text with at most ``limit`` opening brackets cannot nest deeper: no walk then."""
    if not isinstance(value, _CONTAINERS):
        return value
    if start == 0 and isinstance(text, str) and text.count("[") + text.count("{") <= limit:
        return value  # a whole text (a line, a reply) with few brackets: the common case
    if json_depth(value, limit) > limit:
        raise TooDeep(f"JSON nested deeper than {limit} levels", _line(text, start, limit))
    return value


def _line(text: str | bytes, start: int, limit: int) -> int | None:
    """:func:`_locate` of ``text`` (bytes decoded as UTF-8, undecodable bytes replaced)."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    return _locate(text, start, limit)


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
