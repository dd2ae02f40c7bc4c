"""Ollama and OpenAI-compatible backends against a real local HTTP server."""

from __future__ import annotations

import pytest
from fakeserver import FakeServer, Step, ollama_reply, openai_reply
from ports import server_port

from callscope.errors import ModelError
from callscope.models.base import Decoding
from callscope.models.http import MAX_HTTP_CONCURRENCY
from callscope.models.registry import load_model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


class Sleeps(list):
    """Records the waits the retry loop asks for instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server():
    with FakeServer() as srv:
        yield srv


def _ollama(server, sleeps=None, **kw):
    return load_model(
        "ollama:qwen-test",
        base_url=server.url,
        sleep=Sleeps() if sleeps is None else sleeps,
        backoff_base=0.01,
        **kw,
    )


def _openai(server, sleeps=None, **kw):
    kw.setdefault("api_key", "sk-test")
    return load_model(
        "openai:gpt-test",
        base_url=server.url + "/v1",
        sleep=Sleeps() if sleeps is None else sleeps,
        backoff_base=0.01,
        **kw,
    )


# ----------------------------------------------------------------------------- Ollama


def test_ollama_tool_call_reply_and_request(server):
    server.push(
        Step(
            body=ollama_reply(
                "",
                tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
                prompt_eval_count=31,
                eval_count=7,
            )
        )
    )
    model = _ollama(server)
    reply = model.chat(
        [{"role": "user", "content": "Weather in Paris?"}],
        TOOLS,
        Decoding(temperature=0.0, seed=7, max_tokens=64),
    )
    assert reply.tool_calls == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert reply.text == ""
    assert (reply.prompt_tokens, reply.completion_tokens) == (31, 7)
    assert reply.prompt_tokens_evaluated is None  # no cache count reported
    [req] = server.requests
    assert req["path"] == "/api/chat"
    assert req["json"] == {
        "model": "qwen-test",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": TOOLS,
        "stream": False,
        "options": {"temperature": 0.0, "seed": 7, "num_predict": 64},
    }
    assert model.spec == "ollama:qwen-test"
    assert model.supports_native_tools is True


def test_ollama_maps_openai_style_history(server):
    history = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "name": "get_time", "content": {"h": 12}},
    ]
    model = _ollama(server)
    model.chat(history, None)
    sent = server.requests[0]["json"]
    assert sent["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
        {"role": "tool", "content": '{"h": 12}', "tool_name": "get_time"},
    ]
    assert "tools" not in sent  # prompt mode sends no tools field


def test_ollama_text_reply_with_cached_prompt_count(server):
    server.push(
        Step(
            body=ollama_reply(
                "It is sunny.", prompt_eval_count=50, eval_count=4, prompt_eval_cached_count=40
            )
        )
    )
    reply = _ollama(server).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "It is sunny."
    assert reply.tool_calls is None
    assert (reply.prompt_tokens, reply.prompt_tokens_evaluated) == (50, 10)


def test_ollama_host_without_scheme(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    model = load_model("ollama:m")
    assert model.url == server.url + "/api/chat"
    assert model.chat([{"role": "user", "content": "hi"}]).text == "hello"


def test_ollama_404_model_not_found_is_not_retried(server):
    server.push(Step(status=404, body={"error": "model 'nope' not found"}))
    sleeps = Sleeps()
    with pytest.raises(ModelError) as err:
        _ollama(server, sleeps).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "http_4xx"
    assert "HTTP 404" in str(err.value) and "model 'nope' not found" in str(err.value)
    assert len(server.requests) == 1 and sleeps == []


def test_ollama_reply_without_message_is_malformed(server):
    server.push(Step(body={"done": True}))
    with pytest.raises(ModelError) as err:
        _ollama(server).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "malformed"
    assert "lacks 'message'" in str(err.value)


def test_connection_refused_names_backend_address_and_attempts():
    port = server_port()  # a port nothing listens on, and nothing will meanwhile
    sleeps = Sleeps()
    model = load_model(
        "ollama:m", base_url=f"127.0.0.1:{port}", retries=2, sleep=sleeps, backoff_base=0.5
    )
    with pytest.raises(ModelError) as err:
        model.chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "connection"
    assert str(err.value) == (
        f"ollama backend cannot reach http://127.0.0.1:{port}/api/chat "
        "(connection refused) after 3 attempts"
    )
    assert sleeps == [0.5, 1.0]  # exponential backoff between the 3 attempts


# ----------------------------------------------------------------------------- OpenAI


def test_openai_tool_call_reply_and_request(server):
    server.push(
        Step(
            body=openai_reply(
                None,
                tool_calls=[
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": '},
                    },
                ],
                prompt_tokens=20,
                completion_tokens=9,
            )
        )
    )
    model = _openai(server)
    reply = model.chat(
        [{"role": "user", "content": "Weather?"}],
        TOOLS,
        Decoding(temperature=0.2, seed=3, max_tokens=100),
    )
    assert reply.tool_calls == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": '{"city": '},  # invalid JSON kept as string
    ]
    assert reply.text == ""
    assert (reply.prompt_tokens, reply.completion_tokens) == (20, 9)
    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["json"] == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Weather?"}],
        "temperature": 0.2,
        "seed": 3,
        "max_tokens": 100,
        "tools": TOOLS,
    }
    assert model.max_concurrency == MAX_HTTP_CONCURRENCY  # no cap unless asked for


def test_openai_sends_string_arguments_and_no_auth_without_key(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1/")
    server.push(
        Step(
            body=openai_reply(
                "ok",
                prompt_tokens=30,
                completion_tokens=1,
                prompt_tokens_details={"cached_tokens": 24},
            )
        )
    )
    model = load_model("openai:m", max_concurrency=2)
    reply = model.chat(
        [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1_0", "content": "rain"},
        ]
    )
    assert reply.text == "ok" and reply.prompt_tokens_evaluated == 6
    [req] = server.requests
    assert "Authorization" not in req["headers"]
    assert req["json"]["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
            }
        ],
    }
    assert "tools" not in req["json"]
    assert model.max_concurrency == 2


def test_openai_500_then_success(server):
    server.push(
        Step(status=500, body={"error": {"message": "overloaded"}}), Step(body=openai_reply("fine"))
    )
    sleeps = Sleeps()
    reply = _openai(server, sleeps, retries=2).chat([{"role": "user", "content": "hi"}])
    assert reply.text == "fine"
    assert len(server.requests) == 2
    assert sleeps == [0.01]


def test_openai_persistent_500_gives_up(server):
    server.push(*[Step(status=500, body={"error": {"message": "boom"}})] * 3)
    sleeps = Sleeps()
    with pytest.raises(ModelError) as err:
        _openai(server, sleeps, retries=2).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "http_5xx"
    assert str(err.value) == (
        f"openai backend got HTTP 500 from {server.url}/v1/chat/completions: boom after 3 attempts"
    )
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.02]


def test_openai_429_honours_retry_after_up_to_cap(server):
    server.push(
        Step(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "3"}),
        Step(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "100"}),
        Step(body=openai_reply("done")),
    )
    sleeps = Sleeps()
    reply = _openai(server, sleeps, retries=3, retry_after_cap=5).chat(
        [{"role": "user", "content": "hi"}]
    )
    assert reply.text == "done"
    assert sleeps == [3.0, 5.0]


def test_openai_429_exhausted_is_rate_limited(server):
    server.push(Step(status=429, body="too many"))
    with pytest.raises(ModelError) as err:
        _openai(server, retries=0).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "rate_limited"
    assert "after 1 attempt" in str(err.value)


def test_hang_longer_than_timeout(server):
    server.push(Step(hang=30), Step(hang=30))
    sleeps = Sleeps()
    with pytest.raises(ModelError) as err:
        _openai(server, sleeps, retries=1, timeout=0.3).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "timeout"
    assert "openai backend timed out after 0.3 s" in str(err.value)
    assert "after 2 attempts" in str(err.value)
    assert len(server.requests) == 2


def test_malformed_json_body_is_not_retried(server):
    server.push(Step(body="{not json"))
    with pytest.raises(ModelError) as err:
        _openai(server, retries=3).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "malformed"
    assert "not JSON" in str(err.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({"id": "x"}, "'choices.0.message'"),
        ({"choices": []}, "'choices.0.message'"),
        (
            {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
            "'tool_calls.0.function.name'",
        ),
    ],
)
def test_openai_200_with_missing_fields(server, body, missing):
    server.push(Step(body=body))
    with pytest.raises(ModelError) as err:
        _openai(server).chat([{"role": "user", "content": "x"}])
    assert err.value.kind == "malformed"
    assert missing in str(err.value)


# ----------------------------------------------------------------------------- registry


def test_unknown_backend_lists_valid_forms():
    with pytest.raises(ValueError) as err:
        load_model("hf:some/model")
    for form in ("local:qwen2.5-coder-0.5b", "gguf:", "ollama:", "openai:", "replay:"):
        assert form in str(err.value)
    with pytest.raises(ValueError, match="no backend prefix"):
        load_model("gpt-4o")
    with pytest.raises(ValueError, match="needs a model name"):
        load_model("ollama:")


# ------------------------------------------------------------------ context-window overflow

#: what servers answer (HTTP 400) when a prompt does not fit: the error bodies as OpenAI,
#: vLLM, llama.cpp's server and llama-cpp-python's server send them
OVERFLOW_BODIES = [
    {
        "error": {
            "message": "This model's maximum context length is 16385 tokens. However, your"
            " messages resulted in 20012 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested"
        " 5120 tokens (4096 in the messages, 1024 in the completion).",
        "type": "BadRequestError",
        "code": 400,
    },
    {
        "error": {
            "code": 400,
            "message": "request (4476 tokens) exceeds the available context size (4096 tokens)",
            "type": "exceed_context_size_error",
        }
    },
    {"error": {"message": "Requested tokens (9000) exceed context window of 8192", "code": 400}},
    {"error": {"message": "prompt rejected", "code": "context_length_exceeded"}},
]

#: other 4xx answers, some naming the context or a limit, none an overflow
OTHER_4XX_BODIES = [
    {"error": "model 'nope' not found"},
    {"error": {"message": "Incorrect API key provided: sk-test.", "code": "invalid_api_key"}},
    {"error": {"message": "Unrecognized request argument supplied: context_window"}},
    {"error": {"message": "max_tokens is too large: 5000. This model supports at most 4096"}},
    {"error": {"message": "'messages' is a required property", "type": "invalid_request_error"}},
    {"detail": "Not Found"},
]


@pytest.mark.parametrize("body", OVERFLOW_BODIES)
def test_a_4xx_saying_the_prompt_is_too_long_is_a_context_length_error(server, body):
    server.push(Step(status=400, body=body))
    sleeps = Sleeps()
    with pytest.raises(ModelError) as err:
        _openai(server, sleeps).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "context_length"
    assert "HTTP 400" in str(err.value)
    assert len(server.requests) == 1 and sleeps == []  # not retried: it cannot succeed


@pytest.mark.parametrize("body", OTHER_4XX_BODIES)
def test_other_4xx_answers_stay_http_4xx(server, body):
    server.push(Step(status=400, body=body))
    with pytest.raises(ModelError) as err:
        _openai(server).chat([{"role": "user", "content": "hi"}])
    assert err.value.kind == "http_4xx"
