"""The parse memo (``callscope.parse.text.PARSE_MEMO_SIZE``): a text that comes again is
answered from what it gave before, as a copy of its own, within its bounds; a text seen once
leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from callscope.parse import parse_output
from callscope.parse import text as parse_text_module
from callscope.types import ParseResult, ToolCall

ANSWER = '{"name": "book", "arguments": {"city": "Oslo", "nights": [2, 3], "room": {"beds": 1}}}'
EXPECTED = ParseResult(
    calls=(ToolCall("book", {"city": "Oslo", "nights": [2, 3], "room": {"beds": 1}}),),
    form="json",
)


@pytest.fixture(autouse=True)
def empty_memo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from an empty memo and leaves the process's own alone."""
    monkeypatch.setattr(parse_text_module, "_parsed", {})
    monkeypatch.setattr(parse_text_module, "_sighted", set())
    monkeypatch.setattr(parse_text_module, "_parsed_chars", 0)
    yield


def test_an_answer_parsed_again_is_the_same_answer_in_objects_of_its_own() -> None:
    """A caller that changes the arguments of one parse (a repair filling a value, a loop
    dropping one) changes no later parse of the same text, nested values included."""
    first, second, third = (parse_output(ANSWER) for _ in range(3))
    assert first == second == third == EXPECTED
    assert len(parse_text_module._parsed) == 1  # kept on its second sight
    third.calls[0].arguments["city"] = "Bergen"
    third.calls[0].arguments["nights"].append(9)
    third.calls[0].arguments["room"]["beds"] = 4
    fourth = parse_output(ANSWER)
    assert fourth == EXPECTED
    assert fourth.calls[0] is not third.calls[0]


def test_a_text_seen_once_keeps_nothing() -> None:
    """A results file read once (every answer a new text) leaves the memo empty."""
    for i in range(50):
        assert parse_output(f"[f(a={i})]").calls == (ToolCall("f", {"a": i}),)
    assert parse_text_module._parsed == {}


def test_the_memo_keeps_at_most_its_size_oldest_out_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parse_text_module, "PARSE_MEMO_SIZE", 3)
    texts = [f"[f(a={i})]" for i in range(5)]
    for text in texts:
        parse_output(text)
        parse_output(text)
    assert list(parse_text_module._parsed) == texts[2:]
    for i, text in enumerate(texts):  # answered right, kept or not
        assert parse_output(text).calls == (ToolCall("f", {"a": i}),)


def test_the_memo_keeps_at_most_its_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded in characters too: texts of 10 characters under a budget of 25 keep two."""
    monkeypatch.setattr(parse_text_module, "_PARSE_MEMO_CHARS", 25)
    texts = [f"[f(a={i})]  " for i in range(4)]
    assert {len(t) for t in texts} == {10}
    for text in texts:
        parse_output(text)
        parse_output(text)
    assert list(parse_text_module._parsed) == texts[2:]
    assert parse_text_module._parsed_chars == 20


def test_a_long_text_and_a_memo_of_size_0_keep_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    long_answer = '{"name": "f", "arguments": {"q": "' + "x" * 3000 + '"}}'
    for _ in range(3):
        assert parse_output(long_answer).calls == (ToolCall("f", {"q": "x" * 3000}),)
    monkeypatch.setattr(parse_text_module, "PARSE_MEMO_SIZE", 0)
    for _ in range(3):
        assert parse_output(ANSWER) == EXPECTED
    assert parse_text_module._parsed == {}


def test_an_answer_without_calls_comes_again_with_its_reason() -> None:
    for _ in range(3):
        result = parse_output('{"name": "f", "arguments": {"a": 1}')
        assert result.calls == ()
        assert result.error is not None and "cut off" in result.error
