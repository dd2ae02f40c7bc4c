"""A guard left on keeps bounded memory, and reads numbers in words in linear time, whatever
its peers send: distinct long requests, distinct registries, long runs of number words.

Before: every request-keyed memo of stage 3 (``lru_cache`` of 2,048 requests) kept about
eight characters of derived text per character of each request, the verdict cache (16,384)
held each request's text and registry, and the registry index (4,096) each registry: 60
distinct requests of 1 MB held 457 MiB. text2num's reading of number words took time in the
square of their count (``"one\\n" * 10_000``: 0.14 s; four times as long: 16 times the time).
"""

from __future__ import annotations

import gc
import json
import random
import re
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hostile import random_words

import callscope.saag.normalise.numbers as numbers
from callscope.core.memo import LONG_TEXT, text_cache
from callscope.guard.check import check

text_to_num = pytest.importorskip("text_to_num")


# --------------------------------------------------------------------------- text2num


def test_number_words_are_read_in_pieces_with_the_readings_of_the_whole_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sentences = [
        "Book twenty five seats for the third of May.",
        "We need one hundred and twenty chairs, and a dozen tables!",
        "Is it forty two or forty three?",
        "Pay one point five percent; no more.",
    ]
    rng = random.Random(7)
    text = " ".join(rng.choice(sentences) for _ in range(600)).lower()  # ~27,000 characters
    whole = text_to_num.alpha2digit(text, "en", threshold=0)  # the library on all of it
    seen: list[int] = []
    real = text_to_num.alpha2digit

    def recording(piece: str, *args: Any, **kwargs: Any) -> str:
        seen.append(len(piece))
        return real(piece, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(text_to_num, "alpha2digit", recording)
    numbers._in_digits.cache_clear()
    assert numbers._in_digits(text) == whole
    assert len(seen) >= len(text) // numbers.TEXT2NUM_PIECE
    assert max(seen) <= numbers.TEXT2NUM_PIECE
    assert {25, 120, 42, 43, 1.5}.issubset(numbers.number_evidence(text))


@pytest.mark.parametrize("alphabet", ["ab ", "one two. ", "x", "a, b; c? d! e. "])
def test_pieces_cover_the_text_in_order_within_the_size(alphabet: str) -> None:
    rng = random.Random(alphabet)
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 900)))
        pieces = list(numbers._pieces(text, size=64))
        assert "".join(pieces) == text
        assert all(0 < len(p) <= 64 for p in pieces) or text == ""
        # a cut is after a mark where the second half of the window holds one
        for p in pieces[:-1]:
            if re.search(r"[.?!;,] ", p[32:] + " "):
                assert p[-1] in ".?!;,"


def test_a_long_run_of_number_words_is_read_by_pieces_of_bounded_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    real = text_to_num.alpha2digit
    monkeypatch.setattr(
        text_to_num, "alpha2digit", lambda t, *a, **k: seen.append(len(t)) or real(t, *a, **k)
    )
    numbers._in_digits.cache_clear()
    out = numbers._in_digits("one\n" * 50_000)  # no mark at all: cut at a blank
    assert max(seen) <= numbers.TEXT2NUM_PIECE and sum(seen) == 200_000
    assert set(out.split()) == {"1"}


# --------------------------------------------------------------------------- text_cache


def test_a_text_cache_keeps_short_calls_and_long_ones_within_their_characters() -> None:
    calls: list[str] = []

    @text_cache(4, long_chars=3 * (LONG_TEXT + 1))  # three long texts' worth
    def upper(text: str) -> str:
        calls.append(text)
        return text.upper()

    longs = [str(i) * (LONG_TEXT + 1) for i in range(4)]
    huge = "h" * (10 * LONG_TEXT)  # over the whole budget alone: kept while it is the newest
    for text in ["a", "b", *longs, "a", "b", longs[-1], longs[0], huge, huge, longs[3]]:
        assert upper(text) == text.upper()
    # "a", "b" once each; the fourth long text pushed the first out, which came back; the huge
    # one pushed every other out, and was itself pushed out by the next
    assert calls == ["a", "b", *longs, longs[0], huge, longs[3]]
    upper.cache_clear()  # type: ignore[attr-defined]
    upper("a")
    assert calls[-1] == "a"


# --------------------------------------------------------------------------- the guard


def _retained(requests: Iterator[tuple[Any, Any, Any]], at: tuple[int, ...] = ()) -> list[int]:
    """Bytes still allocated after checking the requests (traced from the second one on),
    after each count of requests in ``at`` and after the last."""
    first = next(requests)
    check(*first)  # imports and tables loaded before tracing
    gc.collect()
    tracemalloc.start()
    sizes = []
    try:
        for i, request in enumerate(requests, 1):
            check(*request)
            if i in at:
                gc.collect()
                sizes.append(tracemalloc.get_traced_memory()[0])
        gc.collect()
        return [*sizes, tracemalloc.get_traced_memory()[0]]
    finally:
        tracemalloc.stop()


def _tool(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }


def _response(city: str = "Paris") -> dict[str, Any]:
    call = {"name": "get_weather", "arguments": json.dumps({"city": city})}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": call}]}


def test_distinct_long_requests_stop_piling_up_in_the_guard() -> None:
    """40 conversations of 100,000 characters, the same tools: past the first few, the memos
    hold no more (their long calls are bounded by characters: ``LONG_CHARS``). Before, each
    request added about 0.2 MiB, 3.9 MiB from the 20th to the 40th, up to 2,048 of them."""
    tools = [_tool("get_weather", "Current weather for a city")]

    def requests() -> Iterator[tuple[Any, Any, Any]]:
        for i in range(41):
            text = random_words(1000 + i, 100_000) + " weather in Paris please"
            yield _response(), tools, [{"role": "user", "content": text}]

    at_20, at_40 = _retained(requests(), at=(20,))
    assert at_40 - at_20 < 0.5 * 2**20
    assert at_40 < 16 * 2**20


def test_registries_too_long_to_keep_leave_nothing_behind_in_the_guard() -> None:
    """12 registries of 300,000 characters (past ``REGISTRY_MAX_CHARS``): the check of each
    runs transient, nothing of them stays (0.3 MiB after; 6.9 MiB before)."""

    def requests() -> Iterator[tuple[Any, Any, Any]]:
        for i in range(13):
            tools = [_tool("get_weather", "x"), _tool(f"pad{i}", random_words(i, 300_000))]
            yield _response(), tools, [{"role": "user", "content": f"Weather in Paris? {i}"}]

    assert _retained(requests())[-1] < 2**20


def test_registries_the_guard_lets_go_are_forgotten_by_the_cascade() -> None:
    """400 distinct registries of 8,000 characters, past the 64 the guard keeps: the cascade
    forgets each one the guard lets go (1.2-1.3 MiB after, for the 64 kept; 5 MiB and growing
    when the cascade's index and verdicts kept them)."""

    def requests() -> Iterator[tuple[Any, Any, Any]]:
        for i in range(401):
            tools = [_tool("get_weather", "x"), _tool(f"pad{i}", random_words(i, 8_000))]
            yield _response(), tools, [{"role": "user", "content": "Weather in Paris?"}]

    assert _retained(requests())[-1] < 2.5 * 2**20


def test_the_verdict_cache_holds_at_most_its_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    from callscope.saag import cascade
    from callscope.types import ToolCall

    monkeypatch.setattr(cascade, "VERDICT_CACHE_CHARS", 2_000)
    cascade._verdicts.clear()
    monkeypatch.setattr(cascade, "_verdict_chars", 0)
    functions = [_tool("get_weather", "x")["function"]]
    for i in range(60):  # 60 requests of 100 characters and more, one call each
        query = f"{i:03d} weather in Paris " + "x" * 80
        cascade.diagnose(ToolCall("get_weather", {"city": "Paris"}), functions, query)
    held = [len(k[2]) + len(k[6]) for k in cascade._verdicts]
    assert sum(held) == cascade._verdict_chars <= 2_000
    assert 10 <= len(held) < 60
    kept = [k[2][:3] for k in cascade._verdicts]
    assert kept[-1] == "059" and "000" not in kept  # the newest kept, the oldest let go


def test_a_registry_let_go_while_its_check_runs_is_forgotten_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard lets a registry go (64 others arrive) while a check of it is still running:
    whatever that check keeps after the cascade forgot the registry is forgotten when the
    check ends, so no memo of the cascade holds the list."""
    import importlib

    guard_check_module = importlib.import_module("callscope.guard.check")  # (the module)
    from callscope.guard.inputs import REGISTRY_CACHE_SIZE, registry_of
    from callscope.saag import registry_index

    tools = [_tool("get_weather", "x"), _tool("pad_race", random_words(77, 2_000))]
    real = guard_check_module._check
    seen: list[Any] = []

    def racing(response: Any, functions: Any, *rest: Any) -> Any:
        real(response, functions, *rest)  # kept: a verdict holds the list
        for i in range(REGISTRY_CACHE_SIZE):  # meanwhile, other requests push it out
            registry_of([_tool("get_weather", "x"), _tool(f"other{i}", "y")])
        seen.append(functions)
        return real(response, functions, *(r + " again" if isinstance(r, str) else r for r in rest))

    monkeypatch.setattr(guard_check_module, "_check", racing)
    question = [{"role": "user", "content": "Weather in Paris? race"}]
    check(_response(), tools, question)
    [functions] = seen
    # the index cache is the one holder of a registry among the cascade's memos (its
    # verdicts key it by its index's token), and it holds this one no more
    assert not any(idx.source is functions for idx in registry_index._index_cache.values())
