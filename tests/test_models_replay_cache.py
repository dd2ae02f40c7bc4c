"""Response cache (SQLite) and replay files."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading

import pytest
from fakeserver import FakeServer, Step, openai_reply

from callscope.errors import ModelError
from callscope.models.base import Decoding, RequestContext
from callscope.models.cache import CachedModel, request_key
from callscope.models.http import MAX_HTTP_CONCURRENCY
from callscope.models.registry import load_model
from callscope.models.replay import ReplayModel

MSGS = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


@pytest.fixture
def server():
    with FakeServer() as srv:
        yield srv


def _openai(server, retries=0):
    return load_model(
        "openai:gpt-test",
        base_url=server.url + "/v1",
        api_key="k",
        retries=retries,
        sleep=lambda s: None,
    )


# ----------------------------------------------------------------------------- request_key


def test_request_key_is_sha256_of_canonical_json():
    expected_text = (
        '{"decoding":{"max_tokens":512,"seed":0,"temperature":0.0},'
        '"messages":[{"content":"hi","role":"user"}],"spec":"s","tools":null}'
    )
    expected = hashlib.sha256(expected_text.encode()).hexdigest()
    assert request_key("s", [{"role": "user", "content": "hi"}], None, None) == expected
    # key order inside messages does not matter; Decoding() equals None
    assert request_key("s", [{"content": "hi", "role": "user"}], None, Decoding()) == expected
    assert (
        request_key(
            "s",
            [{"role": "user", "content": "hi"}],
            None,
            {"temperature": 0.0, "seed": 0, "max_tokens": 512},
        )
        == expected
    )


def test_request_key_changes_with_each_part():
    base = request_key("s", MSGS, TOOLS, Decoding())
    assert request_key("t", MSGS, TOOLS, Decoding()) != base
    assert request_key("s", MSGS + MSGS, TOOLS, Decoding()) != base
    assert request_key("s", MSGS, None, Decoding()) != base
    assert request_key("s", MSGS, TOOLS, Decoding(seed=1)) != base


# ----------------------------------------------------------------------------- cache


def test_cache_hit_miss_and_persistence(server, tmp_path):
    db = tmp_path / "cache" / "responses.sqlite"
    server.push(Step(body=openai_reply("first", prompt_tokens=12, completion_tokens=3)))
    model = CachedModel(_openai(server), db)
    # the wrapper passes the backend's own properties through (no HTTP cap by default)
    assert (model.spec, model.supports_native_tools, model.max_concurrency) == (
        "openai:gpt-test",
        True,
        MAX_HTTP_CONCURRENCY,
    )

    a = model.chat(MSGS, TOOLS, Decoding())
    b = model.chat(MSGS, TOOLS, Decoding())
    assert (a.cached, b.cached) == (False, True)
    assert (b.text, b.prompt_tokens, b.completion_tokens) == ("first", 12, 3)
    assert b.latency_s == a.latency_s  # the original latency is kept
    assert len(server.requests) == 1

    server.push(Step(body=openai_reply("warmer")))
    c = model.chat(MSGS, TOOLS, Decoding(temperature=0.7))
    assert (c.cached, c.text) == (False, "warmer")
    assert len(server.requests) == 2
    assert (model.hits, model.misses) == (1, 2)
    model.close()

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2

    # a new process-like instance answers from disk without touching the network
    dead = load_model("openai:gpt-test", base_url="http://127.0.0.1:9/v1", retries=0)
    again = CachedModel(dead, db)
    hit = again.chat(MSGS, TOOLS, Decoding())
    assert (hit.cached, hit.text) == (True, "first")
    with pytest.raises(ModelError):
        again.chat(MSGS, None, Decoding())  # a miss really goes to the (dead) backend


def test_errors_are_not_cached(server, tmp_path):
    server.push(Step(status=500, body="down"), Step(body=openai_reply("up")))
    model = CachedModel(_openai(server, retries=0), tmp_path / "c.sqlite")
    with pytest.raises(ModelError):
        model.chat(MSGS)
    assert model.chat(MSGS).text == "up"
    assert len(server.requests) == 2


def test_cache_is_thread_safe(server, tmp_path):
    model = CachedModel(_openai(server), tmp_path / "c.sqlite")
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(16)]
    results: dict[int, bool] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = model.chat(prompts[i]).cached
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    for _round in range(2):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert all(results[i] is (_round == 1) for i in range(16))
    assert len(server.requests) == 16


def test_context_is_forwarded(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"case_id": "c1", "attempt": 1, "output": "from replay"}) + "\n")
    model = CachedModel(ReplayModel(path), tmp_path / "c.sqlite")
    ctx = RequestContext(case_id="c1", attempt=1, mode="prompt")
    assert model.chat(MSGS, context=ctx).text == "from replay"


class _Counting(ReplayModel):
    """A replay model that records the contexts it is asked with."""

    def __init__(self, path):
        super().__init__(path)
        self.seen: list[RequestContext | None] = []

    def chat(self, messages, tools=None, decoding=None, context=None):
        self.seen.append(context)
        return super().chat(messages, tools, decoding, context)


def test_context_is_not_part_of_the_cache_key(tmp_path):
    """The same request under another context is a hit: the key is (spec, messages, tools,
    decoding) only, so caches written before the context was an argument keep hitting."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"case_id": "c1", "output": "answer"}) + "\n")
    inner = _Counting(path)
    model = CachedModel(inner, tmp_path / "c.sqlite")
    first = model.chat(MSGS, None, Decoding(), RequestContext(case_id="c1", attempt=1))
    again = model.chat(MSGS, None, Decoding(), RequestContext(case_id="c9", attempt=3, turn=2))
    assert (first.cached, again.cached, again.text) == (False, True, "answer")
    assert inner.seen == [RequestContext(case_id="c1", attempt=1)]
    assert (
        request_key(model.spec, MSGS, None, Decoding())
        == hashlib.sha256(
            (
                '{"decoding":{"max_tokens":512,"seed":0,"temperature":0.0},'
                '"messages":[{"content":"Weather in Paris?","role":"user"}],'
                f'"spec":{json.dumps(model.spec)},"tools":null}}'
            ).encode()
        ).hexdigest()
    )
    with sqlite3.connect(str(tmp_path / "c.sqlite")) as conn:
        [(key,)] = conn.execute("SELECT key FROM responses").fetchall()
    assert key == request_key(model.spec, MSGS, None, Decoding())


# ----------------------------------------------------------------------------- replay


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_replay_case_attempt_rows_and_outputs_fallback(tmp_path):
    path = _write(
        tmp_path / "r.jsonl",
        [
            {"case_id": "c1", "attempt": 1, "output": "first try"},
            {
                "case_id": "c1",
                "attempt": 2,
                "output": {
                    "text": "",
                    "tool_calls": [{"name": "f", "arguments": {"x": 1}}],
                    "prompt_tokens": 40,
                },
            },
            {"case_id": "c1", "outputs": ["list 1", "list 2", "list 3"]},
            {"case_id": "c2", "mode": "native", "attempt": 1, "output": "native answer"},
            {"case_id": "c2", "attempt": 1, "output": "any-mode answer"},
        ],
    )
    model = load_model(f"replay:{path}")
    assert model.spec == f"replay:{path}"
    assert model.supports_native_tools is False

    ctx = RequestContext(case_id="c1", mode="prompt", attempt=1)
    assert model.chat(MSGS, context=ctx).text == "first try"
    ctx = RequestContext(case_id="c1", mode="prompt", attempt=2)
    second = model.chat(MSGS, context=ctx)
    assert second.tool_calls == [{"name": "f", "arguments": {"x": 1}}]
    assert second.prompt_tokens == 40
    ctx = RequestContext(case_id="c1", mode="prompt", attempt=3)  # no exact row: outputs[2]
    assert model.chat(MSGS, context=ctx).text == "list 3"

    ctx = RequestContext(case_id="c2", mode="native", attempt=1)
    assert model.chat(MSGS, context=ctx).text == "native answer"
    ctx = RequestContext(case_id="c2", mode="prompt", attempt=1)
    assert model.chat(MSGS, context=ctx).text == "any-mode answer"

    ctx = RequestContext(case_id="c1", mode="prompt", attempt=4)
    with pytest.raises(ModelError) as err:
        model.chat(MSGS, context=ctx)
    assert err.value.kind == "replay_missing"
    assert "case 'c1' attempt 4" in str(err.value)


def test_replay_context_is_per_thread(tmp_path):
    path = _write(tmp_path / "r.jsonl", [{"case_id": f"c{i}", "output": f"a{i}"} for i in range(8)])
    model = ReplayModel(path)
    got: dict[int, str] = {}
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        ctx = RequestContext(case_id=f"c{i}", attempt=1)
        barrier.wait()  # every thread has set its context before any answers
        got[i] = model.chat(MSGS, context=ctx).text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {i: f"a{i}" for i in range(8)}


def test_replay_request_hash_from_cache_export(server, tmp_path):
    server.push(
        Step(
            body=openai_reply(
                None,
                tool_calls=[
                    {
                        "id": "1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
                prompt_tokens=21,
                completion_tokens=8,
            )
        )
    )
    cached = CachedModel(_openai(server), tmp_path / "c.sqlite")
    original = cached.chat(MSGS, TOOLS, Decoding(seed=5))
    export = tmp_path / "export.jsonl"
    assert cached.export_replay(export) == 1
    row = json.loads(export.read_text())
    assert row["request_hash"] == request_key("openai:gpt-test", MSGS, TOOLS, Decoding(seed=5))
    assert row["spec"] == "openai:gpt-test"

    replay = load_model(f"replay:{export}", native_tools=True)
    assert replay.supports_native_tools is True
    again = replay.chat(MSGS, TOOLS, Decoding(seed=5))  # no context: found by hash
    assert (
        again.tool_calls
        == original.tool_calls
        == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    )
    assert (again.prompt_tokens, again.completion_tokens, again.cached) == (21, 8, False)
    with pytest.raises(ModelError) as err:
        replay.chat(MSGS, TOOLS, Decoding(seed=6))
    assert err.value.kind == "replay_missing"


def test_replay_hash_with_source_spec_option(tmp_path):
    key = request_key("ollama:llama3", MSGS, None, Decoding())
    path = _write(tmp_path / "r.jsonl", [{"request_hash": key, "output": "recorded"}])
    assert load_model(f"replay:{path}", source_spec="ollama:llama3").chat(MSGS).text == "recorded"
    with pytest.raises(ModelError):
        load_model(f"replay:{path}").chat(MSGS)  # without the spec the hash cannot match


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"case_id": "c"}\n', "needs 'case_id'"),
        ("[1, 2]\n", "not a JSON object"),
        ("{oops\n", "not JSON"),
        ('{"case_id": "c", "outputs": "x"}\n', "'outputs' must be a list"),
    ],
)
def test_replay_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        ReplayModel(path)


def test_replay_missing_file(tmp_path):
    with pytest.raises(ValueError, match="replay file not found"):
        load_model(f"replay:{tmp_path / 'nope.jsonl'}")
