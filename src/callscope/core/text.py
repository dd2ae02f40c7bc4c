"""Text normalisation and cue matching shared by the action classifier, the τ²-bench CONFIRM
detector and the τ²-bench scenario reader (:mod:`callscope.calibration`).

* :func:`normalize_quotes` maps curly quotes to ASCII (``’ ‘`` to ``'``, ``“ ”`` to ``"``),
  one character for one; :func:`normalize_text` also lower-cases.
* :func:`strip_think` removes ``<think>...</think>`` reasoning blocks (any case; an unclosed
  block runs to the end of the text).
* :func:`escape_controls` writes control characters and invisible format characters (bidi
  controls, line separators) as visible escapes (every writer's rule for text from outside).
* :func:`cue_pattern` compiles cues (phrases) into one regular expression, searched in
  normalised text. **The word-boundary rule** (word characters: ``a-z``, ``0-9``, ``_``): a
  cue that starts with a letter, digit or ``_`` must not start inside a word, i.e. must not
  follow a word character, nor an apostrophe that follows one (an in-word apostrophe, as in
  ``don't`` or ``y'all``, is part of the word: "all right" does not match in "y'all right";
  a quoting apostrophe is not: "yes" matches in "'yes'"). With ``whole_word=True`` a cue
  that ends with a letter, digit or ``_`` must also not be followed by a word character
  ("yes" does not match in "yesterday"); without it a cue matches as a word prefix ("no
  function" matches in "no functions"). A cue that starts or ends with another character
  (``?``) has no boundary on that side. A cue written ``re:<regex>`` is a regular
  expression, used as written.
* :func:`occurrences` yields every place a string occurs in a text, overlapping ones
  included, in linear time (for the scans that test each occurrence, such as a value at word
  boundaries in a request).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

#: curly quotes to their ASCII forms
CURLY_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
#: a cue with this prefix is a regular expression
REGEX_CUE_PREFIX = "re:"

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_WORD = "a-z0-9_"
_STARTS_WORD = rf"(?<![{_WORD}])(?<![{_WORD}]')"
_ENDS_WORD = rf"(?![{_WORD}])"


def normalize_quotes(text: str) -> str:
    """``text`` with curly quotes replaced by ASCII ones (:data:`CURLY_QUOTES`)."""
    return text.translate(CURLY_QUOTES)


def normalize_text(text: str) -> str:
    """Lower-case ``text`` with curly quotes replaced by ASCII ones."""
    return normalize_quotes(text).lower()


def may_hold(text: str, needles: Iterable[str]) -> bool:
    """Whether a case-insensitive pattern (``re.I``) that matches only where one of the
    lower-case ASCII ``needles`` occurs may match in ``text``: a cheap test before a slow
    scan. An ASCII text must hold a needle in its lower case; any other text may match
    (``re.I`` also reads "ſ" as "s", "K" as "k", "ı" as "i"), and is scanned.

    >>> may_hold("Meet at Noon", ("noon", "midday")), may_hold("Meet at 5", ("noon",))
    (True, False)
    """
    if not text.isascii():
        return True
    low = text.lower()
    return any(n in low for n in needles)


def strip_think(text: str, replacement: str = " ") -> str:
    """``text`` with every ``<think>...</think>`` block replaced by ``replacement``."""
    return _THINK.sub(replacement, text)


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _cue_regex(cue: str, whole_word: bool) -> str:
    if cue.startswith(REGEX_CUE_PREFIX):
        return cue[len(REGEX_CUE_PREFIX) :]
    body = re.escape(cue.lower())
    if _is_word_char(cue[:1]):
        body = _STARTS_WORD + body
    if whole_word and _is_word_char(cue[-1:]):
        body += _ENDS_WORD
    return body


@lru_cache(maxsize=1024)
def _compile(cues: tuple[str, ...], whole_word: bool) -> re.Pattern[str] | None:
    unique = sorted({c for c in cues if c}, key=lambda c: (-len(c), c))
    if not unique:
        return None
    if len(unique) == 1:
        return re.compile(_cue_regex(unique[0], whole_word))
    return re.compile("|".join(f"(?:{_cue_regex(c, whole_word)})" for c in unique))


def cue_pattern(cues: str | Iterable[str], *, whole_word: bool = False) -> re.Pattern[str] | None:
    """One regex that matches any of ``cues`` (a cue, or several) under the module's
    word-boundary rule; at one position longer cues are tried first, so ``match.group(0)`` is
    the longest cue found there. ``None`` when no cue is non-empty. Raises ``re.error`` for a
    bad ``re:`` cue."""
    key = (cues,) if isinstance(cues, str) else tuple(cues)
    return _compile(key, whole_word)


#: :func:`occurrences` finds this many by ``str.find`` from the last one, then scans on
OCCURRENCES_BY_FIND = 64


def occurrences(text: str, needle: str, start: int = 0) -> Iterator[int]:
    """Every position at or after ``start`` where the non-empty ``needle`` occurs in
    ``text``, overlapping occurrences included, in ascending order.

    Linear time in all: ``O(len(text) + len(needle))``, whatever the strings. The first
    :data:`OCCURRENCES_BY_FIND` come from ``str.find`` from the last one (C-level; what a
    value in a request needs). ``str.find`` from each occurrence compares the whole needle
    again, which is quadratic for a periodic needle in a long run of its period (``"x" *
    10**5`` in ``"x" * 10**6`` occurs 900,001 times). So after those first ones, the rest
    come from one Knuth-Morris-Pratt scan of what is left: one Python step per character.

    >>> list(occurrences("abababa", "aba"))
    [0, 2, 4]
    >>> list(occurrences("xxxx", "xx", 1)), list(occurrences("abc", "d"))
    ([1, 2], [])
    """
    if not needle:
        raise ValueError("occurrences of an empty string")
    i = text.find(needle, start)
    for _ in range(OCCURRENCES_BY_FIND):
        if i < 0:
            return
        yield i
        i = text.find(needle, i + 1)
    if i >= 0:
        yield from _kmp(text, needle, i)


def _kmp(text: str, needle: str, start: int) -> Iterator[int]:
    """Every occurrence of ``needle`` in ``text`` from ``start`` on: the Knuth-Morris-Pratt
    scan (each character of ``text`` read once; the needle's failure table built once)."""
    m = len(needle)
    fail = [0] * m  # the longest proper border of each prefix of the needle
    k = 0
    for q in range(1, m):
        while k and needle[q] != needle[k]:
            k = fail[k - 1]
        if needle[q] == needle[k]:
            k += 1
        fail[q] = k
    k = 0
    for q in range(start, len(text)):
        c = text[q]
        while k and c != needle[k]:
            k = fail[k - 1]
        if c == needle[k]:
            k += 1
            if k == m:
                yield q - m + 1
                k = fail[k - 1]


#: the invisible format characters written as their ``\\uXXXX`` escape besides the controls
#: (:func:`escape_controls`): the bidirectional controls (U+061C, U+200E, U+200F,
#: U+202A-U+202E, U+2066-U+2069), which reorder how the text around them is displayed
#: ("Trojan Source", CVE-2021-42574); the line and paragraph separators U+2028 / U+2029,
#: line breaks that a terminal does not show as one; and U+200B (zero width space) and
#: U+FEFF (zero width no-break space, a byte order mark), which make two different ids look
#: the same. U+200C / U+200D (zero width non-joiner / joiner) are kept: they spell emoji
#: sequences and Indic, Persian and Arabic words, so escaping them would garble real text.
FORMAT_ESCAPED: tuple[int, ...] = (
    0x061C,
    0x200B,
    0x200E,
    0x200F,
    *range(0x2028, 0x202F),
    *range(0x2066, 0x206A),
    0xFEFF,
)

#: C0 controls but tab, newline and carriage return, DEL and the C1 controls, each as its
#: ``\xNN`` escape, lone surrogates (no UTF-8 file or terminal can carry one) and the format
#: characters of :data:`FORMAT_ESCAPED` as their ``\uXXXX`` escape (:func:`escape_controls`)
_CONTROL_ESCAPES = (
    {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c not in (9, 10, 13)}
    | {c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
    | {c: f"\\u{c:04x}" for c in FORMAT_ESCAPED}
)


def escape_controls(text: str, *, keep_cr: bool = True) -> str:
    r"""``text`` with every control character (C0 but tab, newline and, unless
    ``keep_cr=False``, carriage return; DEL; C1) written as its visible ``\xNN`` escape, and
    every lone surrogate (UTF-8 cannot encode one) and invisible format character of
    :data:`FORMAT_ESCAPED` (bidirectional controls, line / paragraph separators, zero width
    space and no-break space; not the zero width joiners) as its ``\uXXXX`` escape: the one
    rule of every writer whose output a person reads (the terminal, table files, pages,
    figure labels), so a name from a data file or a model (``ESC]0;pwn BEL``, a right-to-left
    override that shows ``exe.txt`` for ``txt.exe``) never reaches a terminal or a file as an
    escape sequence or reordered text (issue 39 item 12).

    >>> escape_controls("m\x1b]0;pwn\x07 ok\tü\r\n\x9b")
    'm\\x1b]0;pwn\\x07 ok\tü\r\n\\x9b'
    >>> escape_controls("a\rb", keep_cr=False), escape_controls("x\ud800y")
    ('a\\x0db', 'x\\ud800y')
    >>> escape_controls("id\u202eexe.txt\u2066 \u2028"), escape_controls("👩\u200d💻")
    ('id\\u202eexe.txt\\u2066 \\u2028', '👩\u200d💻')
    """
    text = text.translate(_CONTROL_ESCAPES)
    return text if keep_cr else text.replace("\r", "\\x0d")


#: what JSON text keeps raw that a terminal must not get raw: DEL, the C1 controls (``\x9b``
#: starts an escape sequence on many terminals) and the invisible format characters of
#: :data:`FORMAT_ESCAPED` (bidirectional controls: ``\u202e`` shows
#: ``exe.txt`` for ``txt.exe``), each as its JSON ``\uXXXX`` escape (:func:`terminal_json`)
_TERMINAL_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), *FORMAT_ESCAPED)}


def terminal_json(text: str) -> str:
    r"""JSON text (:func:`~callscope.core.jsonl.dumps_row`'s) as it may go to a terminal: the
    characters JSON keeps raw but a terminal acts on (:data:`_TERMINAL_JSON_ESCAPES`) as their
    ``\uXXXX`` escapes.
    The same JSON value: such a character can only stand inside a string, where the escape
    means it (``json.loads`` of both gives equal values).

    >>> terminal_json('{"name": "a\u202eb\x9b"}')
    '{"name": "a\\u202eb\\u009b"}'
    """
    return text.translate(_TERMINAL_JSON_ESCAPES)


#: a UTF-16 surrogate code point: a Python string holds one only alone (a JSON ``"\udfff"``),
#: no UTF-8 text can carry it, and llama.cpp reads UTF-8
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(value: Any) -> Any:
    """``value`` (chat messages, tools: JSON data) with every surrogate in its strings replaced
    by U+FFFD, so the model reads the rest of the text instead of the request failing.

    >>> utf8_safe([{"role": "user", "content": "Paris " + chr(0xDFFF) + "?"}])
    [{'role': 'user', 'content': 'Paris �?'}]
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_safe(v) for v in value]
    return value
