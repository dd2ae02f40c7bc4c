"""The LiteLLM guardrail never breaks the call it guards (round four): a repair per request
far past the host's default executor, a streamed call that carries no ``id``, a lone
surrogate in a call's arguments, Anthropic answers of the wrong shape. Through LiteLLM's own
SDK (``litellm.acompletion``, whole and streamed, against a scripted OpenAI-compatible server
on 127.0.0.1) and the hooks as its proxy calls them; bounded in count and time."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the cost map
litellm = pytest.importorskip("litellm")

sys.path.insert(0, str(Path(__file__).parent))
from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from scripted_routes import WEATHER_MESSAGES, WEATHER_TOOLS, _chunk  # noqa: E402

from callscope.integrations.litellm_guardrail import (  # noqa: E402
    CallscopeBlocked,
    CallscopeGuardrail,
)

TOOLS, MESSAGES = WEATHER_TOOLS, WEATHER_MESSAGES


def _call(arguments: str, call_id: str | None = "c1") -> dict:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return {"id": call_id, **call} if call_id else call


def _mock(arguments: str) -> object:
    message = {"role": "assistant", "content": None, "tool_calls": [_call(arguments)]}
    return litellm.ModelResponse(
        choices=[{"index": 0, "finish_reason": "tool_calls", "message": message}]
    )


def _data(server: FakeServer) -> dict:
    return {
        "model": "openai/scripted",
        "messages": MESSAGES,
        "tools": TOOLS,
        "api_base": f"{server.url}/v1",
        "api_key": "x",
        "num_retries": 0,
    }


def test_repairs_past_the_hosts_default_executor_all_finish() -> None:
    """Five concurrent repairs on a host whose default executor has two workers. A repair
    waits on its re-ask, and litellm runs part of every ``acompletion`` on that executor: with
    the repairs on it too, the first two took both workers and every re-ask waited for one
    forever (at CPUs + 4 concurrent repairs with the default size; the proxy's other requests
    with them). Repairs now run on callscope's own threads: all five come back repaired."""

    async def one(g: CallscopeGuardrail, data: dict) -> object:
        first = await litellm.acompletion(**data, mock_response=_mock('{"city": "London"}'))
        return await g.async_post_call_success_hook(data, None, first)

    async def go(server: FakeServer) -> list[object]:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=2))
        g = CallscopeGuardrail(callscope_mode="repair", guardrail_name="callscope", attempts=2)
        calls = [one(g, _data(server)) for _ in range(5)]
        return await asyncio.wait_for(asyncio.gather(*calls), timeout=60)

    with FakeServer() as server:
        server.push(*[Step(body=openai_reply(None, [_call('{"city": "Paris"}')]))] * 5)
        outs = asyncio.run(go(server))
        reasked = len(server.requests)
    assert reasked == 5  # one re-ask each, every one answered
    for out in outs:
        assert out.callscope["repair"]["repaired"]
        arguments = out.choices[0].message.tool_calls[0].function.arguments
        assert json.loads(arguments) == {"city": "Paris"}


def _stream(*tool_call_pieces: dict) -> str:
    chunks = [_chunk({"role": "assistant", "content": None})]
    chunks += [_chunk({"tool_calls": [piece]}) for piece in tool_call_pieces]
    return "".join(chunks) + _chunk({}, "tool_calls") + "data: [DONE]\n\n"


def test_a_streamed_call_without_an_id_is_checked_and_blocked() -> None:
    """A stream whose call carries no ``id`` (index, name and arguments only), its name and
    arguments in pieces: the ``openai`` SDK assembles it for its user, and so does the guard
    now. Before, LiteLLM's ``stream_chunk_builder`` dropped the call, the verdict said no
    call was made, and block mode streamed London for Paris through."""
    pieces = (
        {"index": 0, "function": {"name": "get_", "arguments": '{"city": '}},
        {"index": 0, "function": {"name": "weather", "arguments": '"London"}'}},
    )
    sse = {"Content-Type": "text/event-stream"}

    async def go(server: FakeServer) -> tuple[object, object]:
        data = _data(server)
        blocked = None
        try:
            response = await litellm.acompletion(**data, stream=True)
            g = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
            await g.async_post_call_success_hook(data, None, response)
        except CallscopeBlocked as err:
            blocked = err
        response = await litellm.acompletion(**data, stream=True)
        g = CallscopeGuardrail(guardrail_name="callscope")
        annotated = await g.async_post_call_success_hook(data, None, response)
        return blocked, annotated.callscope

    with FakeServer() as server:
        server.push(*[Step(body=_stream(*pieces), headers=sse)] * 2)
        blocked, note = asyncio.run(go(server))
    assert isinstance(blocked, CallscopeBlocked)
    assert "The values for city have no grounding" in blocked.detail["correction"]
    (call,) = note["verdict"]["calls"]
    assert (call["name"], call["arguments"], call["stage"]) == (
        "get_weather",
        {"city": "London"},
        3,
    )


def test_a_lone_surrogate_in_arguments_leaves_an_answer_the_host_can_send() -> None:
    """``{"city": "\\ud800"}`` is valid JSON, and the host sends such an answer as it came.
    The verdict put the decoded lone surrogate into the answer's ``callscope`` field (and
    block mode's 400 body), which no UTF-8 text can carry: LiteLLM's proxy answered 500. The
    note carries U+FFFD in its place; block's error body encodes."""
    arguments = '{"city": "\\ud800"}'

    async def go() -> tuple[object, CallscopeBlocked]:
        data = {"model": "gpt-4o", "messages": MESSAGES, "tools": TOOLS}
        first = await litellm.acompletion(**data, mock_response=_mock(arguments))
        annotated = await CallscopeGuardrail(
            guardrail_name="callscope"
        ).async_post_call_success_hook(data, None, first)
        first = await litellm.acompletion(**data, mock_response=_mock(arguments))
        with pytest.raises(CallscopeBlocked) as raised:
            await CallscopeGuardrail(
                callscope_mode="block", guardrail_name="callscope"
            ).async_post_call_success_hook(data, None, first)
        return annotated, raised.value

    annotated, blocked = asyncio.run(go())
    body = annotated.model_dump_json().encode("utf-8")  # what the proxy writes
    assert json.loads(body)["callscope"]["verdict"]["calls"][0]["arguments"] == {"city": "\ufffd"}
    assert annotated.choices[0].message.tool_calls[0].function.arguments == arguments  # as sent
    json.dumps(blocked.detail, ensure_ascii=False).encode("utf-8")
    assert "\ud800" not in blocked.message


ANTHROPIC_TEXT_NULL = [
    b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m1", '
    b'"type": "message", "role": "assistant", "content": [], "model": "a"}}\n\n',
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": null}}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
    b'"delta": {"type": "text_delta", "text": "Sunny"}}\n\n',
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": [0], '
    b'"delta": {"type": "text_delta", "text": "!"}}\n\n',
    b'event: message_stop\ndata: {"type": "message_stop"}\n\n',
]


@pytest.mark.parametrize("mode", ["annotate", "block"])
def test_anthropic_answers_of_the_wrong_shape_go_through_as_they_came(mode: str) -> None:
    """What LiteLLM's proxy hands the hooks on ``/v1/messages``: a whole answer as a dict
    (here ``"content": 5``) and a stream as its event bytes (a text block whose ``text`` is
    ``null``, a delta whose ``index`` is a list). Each raised ``TypeError`` inside the hook,
    and the proxy answered 500 where it answers 200 without callscope. Now they read as
    answers without a call, and pass as they came."""
    data = {"model": "a", "messages": MESSAGES, "tools": TOOLS}
    whole = {"id": "m1", "type": "message", "role": "assistant", "content": 5, "model": "a"}
    g = CallscopeGuardrail(callscope_mode=mode, guardrail_name="callscope")

    async def chunks():
        for c in ANTHROPIC_TEXT_NULL:
            yield c

    async def go() -> tuple[object, list[bytes]]:
        out = await g.async_post_call_success_hook(data, None, dict(whole))
        streamed = [
            c async for c in g.async_post_call_streaming_iterator_hook(None, chunks(), data)
        ]
        return out, streamed

    out, streamed = asyncio.run(go())
    assert out["content"] == 5 and out["callscope"]["verdict"]["calls"] == []
    assert streamed[0] == ANTHROPIC_TEXT_NULL[0] and len(streamed) == len(ANTHROPIC_TEXT_NULL)
    assert b"Sunny" in b"".join(streamed)


def test_a_check_that_fails_lets_the_answer_through_logged(monkeypatch, caplog) -> None:
    """Whatever goes wrong inside the check (a bug, a reader meeting a shape nobody listed),
    the host's call completes: the answer as it came, ``error`` in its note, the traceback in
    the log. Block mode's refusal is the one exception the host is meant to get."""
    import callscope.integrations.litellm_guardrail as guardrail

    def broken(*_args, **_kwargs):
        raise KeyError("a reader's bug")

    monkeypatch.setattr(guardrail, "check", broken)
    data = {"model": "gpt-4o", "messages": MESSAGES, "tools": TOOLS}

    async def go() -> object:
        first = await litellm.acompletion(**data, mock_response=_mock('{"city": "London"}'))
        g = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        return await g.async_post_call_success_hook(data, None, first)

    with caplog.at_level("ERROR", logger="callscope.integrations.litellm"):
        out = asyncio.run(go())
    assert json.loads(out.choices[0].message.tool_calls[0].function.arguments) == {"city": "London"}
    assert out.callscope == {
        "error": "callscope: the check failed (KeyError); the answer is unchecked"
    }
    assert any("the check failed" in r.getMessage() and r.exc_info for r in caplog.records)
