"""callscope.core.text: the one quote normalisation, <think> stripper and cue matcher, and
callscope.parse.python_calls: the one reader of Python call syntax. Expected values by hand."""

from __future__ import annotations

import pytest

from callscope.calibration.classify import is_python_call_list
from callscope.core.text import cue_pattern, normalize_quotes, normalize_text, strip_think
from callscope.parse import CallSyntax, parse_python_calls, read_python_calls


def test_quotes_are_normalised_one_character_for_one() -> None:
    text = "\u2018Yes\u2019, \u201cgo\u201d"
    assert normalize_quotes(text) == "'Yes', \"go\""
    assert normalize_text(text) == "'yes', \"go\""
    assert len(normalize_quotes(text)) == len(text)


def test_think_blocks_are_removed_closed_or_not() -> None:
    assert strip_think("a<think>x</think>b") == "a b"
    assert strip_think("a<THINK>x\ny</Think>b", "") == "ab"
    assert strip_think("a <think>never closed") == "a  "


def _hits(cue: str, text: str, whole_word: bool) -> bool:
    pat = cue_pattern(cue, whole_word=whole_word)
    return pat is not None and pat.search(text) is not None


@pytest.mark.parametrize(
    ("cue", "text", "prefix", "whole"),
    [
        ("cannot", "i cannot", True, True),
        ("cannot", "pecannot", False, False),  # not inside a word
        ("no function", "no functions", True, False),  # prefix match only
        ("yes", "yesterday", True, False),
        ("yes", "'yes'", True, True),  # a quoting apostrophe is no part of a word
        ("all right", "y'all right", False, False),  # an in-word apostrophe is
        ("ok", "ok'd", True, True),
        ("?", "today?", True, True),  # no boundary around a non-word character
        ("re:^which\\b", "which one", True, True),
        ("re:^which\\b", "and which", False, False),
    ],
)
def test_the_word_boundary_rule(cue: str, text: str, prefix: bool, whole: bool) -> None:
    assert _hits(cue, text, whole_word=False) is prefix
    assert _hits(cue, text, whole_word=True) is whole


def test_several_cues_longest_first_and_no_cue() -> None:
    pat = cue_pattern(("go", "go ahead", ""), whole_word=True)
    assert pat is not None
    m = pat.search("ok, go ahead")
    assert m is not None and m.group(0) == "go ahead"
    assert cue_pattern((), whole_word=True) is None
    assert cue_pattern("") is None


def test_python_calls_one_reader_two_policies() -> None:
    text = "[sort('a.txt', reverse=True), math.sqrt(x=4)]"
    assert read_python_calls(text) == [
        CallSyntax("sort", ("a.txt",), {"reverse": True}),
        CallSyntax("math.sqrt", (), {"x": 4}),
    ]
    assert is_python_call_list(text)
    with pytest.raises(ValueError, match="positional"):
        parse_python_calls(text)
    # values: as literal_eval gives them for the positional reader, JSON data for the parser
    assert read_python_calls("f(a=(1, 2))") == [CallSyntax("f", (), {"a": (1, 2)})]
    assert parse_python_calls("f(a=(1, 2))")[0].arguments == {"a": [1, 2]}


@pytest.mark.parametrize("text", ["f(x)", "f(*a)", "f(**k)", "(lambda: 1)()", "f()[0]", "[]", ""])
def test_python_calls_reject_non_literals_and_non_calls(text: str) -> None:
    with pytest.raises(ValueError):
        read_python_calls(text)
    assert not is_python_call_list(text)


def test_may_hold_reads_ascii_in_small_letters_and_scans_any_other_text() -> None:
    from callscope.core.text import may_hold

    assert may_hold("Due in MARCH", ("mar",)) and not may_hold("Due in 5 days", ("mar",))
    # re.I reads "ſ" as "s": a text with other characters than ASCII is always scanned
    assert may_hold("ſeptember 5", ("xyz",))
