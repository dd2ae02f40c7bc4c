"""Words: the case-, punctuation- and quote-insensitive form of a text, stems, compact forms.

Part of the registry grounding's rules (:mod:`callscope.saag.normalise`)."""

from __future__ import annotations

import re
import unicodedata

from callscope.core.memo import text_cache
from callscope.core.text import normalize_quotes

_SEPARATORS = re.compile(r"[\s_\-/\\.,;:!?'\"`()\[\]{}<>|~]+")
#: a line break or tab written as an escape ("sentences\\nhello": text copied out of a JSON
#: string or a log line), and any other backslash (a path: "C:\\new" is no line break)
_ESCAPE = re.compile(r"\\[nrt]")
_OTHER_BACKSLASH = re.compile(r"\\(?![nrt])")
_WS = re.compile(r"\s+")


@text_cache(8192)
def norm_words(text: str) -> str:
    """``text`` lower-cased (NFKC) with quotes, punctuation, ``_``, ``-``, ``/`` and
    whitespace runs each made one space (and ``\\n``, ``\\t``, ``\\r`` too when every
    backslash of the text is such an escape), padded with one space on both sides (so a word-
    boundary search is a plain substring search for ``" " + needle + " "``)."""
    t = unicodedata.normalize("NFKC", normalize_quotes(text))
    if "\\" in t and _OTHER_BACKSLASH.search(t) is None:
        t = _ESCAPE.sub(" ", t)  # every backslash is an escaped line break or tab
    return " " + _SEPARATORS.sub(" ", t.lower()).strip() + " "


@text_cache(8192)
def compact(text: str) -> str:
    """``text`` lower-cased with all whitespace removed and ``**`` written ``^`` (math
    notation: "x ** 2", "x**2" and "x^2" are one form)."""
    t = unicodedata.normalize("NFKC", text).lower()
    return _WS.sub("", t).replace("**", "^")


_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def words_state(value: str, text_words: str) -> bool:
    """``value`` (any string) occurs as whole words in ``text_words`` (a :func:`norm_words`
    result). Scripts written without spaces between words (Chinese, Japanese, Korean) need no
    word boundary. The empty value never does."""
    needle = norm_words(value)
    if needle.strip() == "":
        return False
    if _UNSPACED.search(needle):
        return needle.strip() in text_words
    return needle in text_words


_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@text_cache(8192)
def stem(word: str) -> str:
    """A light stem: one common English suffix removed when four letters remain ("tolls" ->
    "toll", "detailed" -> "detail"); other words unchanged."""
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            return word[: -len(suf)]
    return word


def stems(text_words: str) -> frozenset[str]:
    """The stems of the words of a :func:`norm_words` result."""
    return frozenset(map(stem, text_words.split()))


#: a musical note with a sharp or flat sign ("C#", "Bb"; not "Cb" inside a word)
_NOTE = re.compile(r"(?<![A-Za-z])([A-G])(#|♯|b|♭)(?![A-Za-z#])")
_ACCIDENTALS = {"#": "sharp", "♯": "sharp", "b": "flat", "♭": "flat"}


def spelled_notes(value: str) -> str | None:
    """``value`` with its musical notes spelled out ("C#" -> "C sharp", "Bb major" -> "B flat
    major"), or ``None`` when it holds none."""
    if len(value) > 64:
        return None
    spelled = _NOTE.sub(lambda m: f"{m.group(1)} {_ACCIDENTALS[m.group(2)]}", value)
    return spelled if spelled != value else None
