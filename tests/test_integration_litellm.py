"""The LiteLLM guardrail through LiteLLM's own SDK: real ``litellm.acompletion`` responses
with ``mock_response`` tool calls, checked by the guardrail's post-call hook in each mode;
the verdict equals ``callscope.guard_check`` on the same messages."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from ports import server_port

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the cost map
litellm = pytest.importorskip("litellm")
import callscope  # noqa: E402
from callscope.integrations.litellm_guardrail import (  # noqa: E402
    CallscopeBlocked,
    CallscopeGuardrail,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _mock(city: str) -> object:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return litellm.ModelResponse(
        choices=[
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ]
    )


async def _completion(city: str) -> object:
    return await litellm.acompletion(
        model="gpt-4o", messages=MESSAGES, tools=TOOLS, mock_response=_mock(city)
    )


def _data() -> dict:
    return {"model": "gpt-4o", "messages": MESSAGES, "tools": TOOLS}


def test_annotate_equals_guard_check() -> None:
    async def go() -> None:
        g = CallscopeGuardrail(guardrail_name="callscope", event_hook="post_call")
        for city, stage in (("Paris", 0), ("London", 3)):
            resp = await _completion(city)
            out = await g.async_post_call_success_hook(_data(), None, resp)
            want = callscope.guard_check(resp.model_dump(), TOOLS, MESSAGES)
            got = out.callscope["verdict"]
            assert [(c["name"], c["stage"], c["reasons"]) for c in got["calls"]] == [
                (c.name, c.stage, list(c.reasons)) for c in want.calls
            ]
            assert got["calls"][0]["stage"] == stage

    asyncio.run(go())


def test_block_refuses_a_failing_call() -> None:
    async def go() -> None:
        g = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        ok = await g.async_post_call_success_hook(_data(), None, await _completion("Paris"))
        assert ok.callscope["verdict"]["passed"]
        bad = await _completion("London")
        # the SDK gets callscope's own error (issue 40 item 5: not fastapi's HTTPException,
        # which the integrations extra always installs); the proxy answers its status_code
        with pytest.raises(CallscopeBlocked) as e:
            await g.async_post_call_success_hook(_data(), None, bad)
        assert type(e.value) is CallscopeBlocked and e.value.status_code == 400
        assert "The values for city have no grounding" in str(e.value)
        assert e.value.detail["verdict"]["calls"][0]["diagnosis"]["hard"] == ["city"]

    asyncio.run(go())


def test_block_lets_an_answer_written_as_data_through() -> None:
    """A text answer with no call ("42", a JSON list, a JSON object with no call key) is an
    answer, not a broken call: block passes it unchanged (it refused them with a 400)."""

    async def go() -> None:
        g = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        for text in ("42", "[2, 3, 5, 7]", '{"answer": 42}'):
            resp = await litellm.acompletion(
                model="gpt-4o", messages=MESSAGES, tools=TOOLS, mock_response=text
            )
            out = await g.async_post_call_success_hook(_data(), None, resp)
            assert out.choices[0].message.content == text
            assert out.callscope["verdict"]["passed"] is True
            assert out.callscope["verdict"]["answer"] == "abstained"

    asyncio.run(go())


def test_repair_reasks_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[dict]] = []

    async def go() -> None:
        g = CallscopeGuardrail(callscope_mode="repair", guardrail_name="callscope")

        async def reask(data: dict, in_proxy: bool = False) -> object:  # mock: Paris
            asked.append(data["messages"])
            return await litellm.acompletion(
                model=data["model"],
                messages=data["messages"],
                tools=data["tools"],
                mock_response=_mock("Paris"),
            )

        monkeypatch.setattr(g, "_reask", reask)
        out = await g.async_post_call_success_hook(_data(), None, await _completion("London"))
        assert out.callscope["repair"]["repaired"]
        assert json.loads(out.choices[0].message.tool_calls[0].function.arguments) == {
            "city": "Paris"
        }

    asyncio.run(go())
    assert (
        len(asked) == 1
        and asked[0][-1]["role"] == "user"
        and "no grounding" in asked[0][-1]["content"]
    )


def _server_call(city: str) -> dict:
    return {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }


def test_sdk_repair_reasks_with_the_callers_own_credentials(monkeypatch, caplog) -> None:
    """Issue 40 item 4: from the SDK, ``repair`` re-asks with the caller's ``api_base`` and
    ``api_key`` (a scripted OpenAI-compatible server that checks the key); a re-ask that
    fails is named in the annotation and logged, never passed off as a repair."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from fakeserver import FakeServer, Step, openai_reply

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(var, raising=False)

    async def go(server: FakeServer) -> tuple[object, object]:
        data = {
            "model": "openai/scripted",
            "messages": MESSAGES,
            "tools": TOOLS,
            "api_base": f"{server.url}/v1",
            "api_key": "sk-the-callers-own",
            "num_retries": 0,
        }
        g = CallscopeGuardrail(callscope_mode="repair", guardrail_name="callscope")
        first = await litellm.acompletion(**data)
        repaired = await g.async_post_call_success_hook(data, None, first)
        first = await litellm.acompletion(**data)
        failed = await g.async_post_call_success_hook(data, None, first)
        return repaired, failed

    with FakeServer() as server:
        server.push(
            Step(body=openai_reply(None, [_server_call("London")])),
            Step(body=openai_reply(None, [_server_call("Paris")])),
            Step(body=openai_reply(None, [_server_call("London")])),
            Step(status=401, body={"error": {"message": "bad key", "type": "auth"}}),
        )
        with caplog.at_level("WARNING", logger="callscope.integrations.litellm"):
            repaired, failed = asyncio.run(go(server))
        keys = [
            next((v for k, v in r["headers"].items() if k.lower() == "authorization"), None)
            for r in server.requests
        ]
    assert keys == ["Bearer sk-the-callers-own"] * 4
    assert json.loads(repaired.choices[0].message.tool_calls[0].function.arguments) == {
        "city": "Paris"
    }
    assert repaired.callscope["repair"]["repaired"] and "error" not in repaired.callscope
    # the failed re-ask: the first answer comes back, and says so
    note = failed.callscope
    assert (note["repair"]["stopped"], note["verdict"]["passed"]) == ("error", False)
    assert note["error"].startswith("callscope: the re-ask failed:")
    assert any("the re-ask failed" in r.getMessage() for r in caplog.records)


#: the proxy refuses to start without a strong master key
KEY = "sk-" + "5f0c3a9e7b21d48c" * 3


@pytest.mark.timeout(360)
def test_proxy_server_with_the_guardrail_in_its_config(tmp_path) -> None:
    """`litellm --config config.yaml` on 127.0.0.1 with the guardrail, upstream a scripted
    OpenAI-compatible server, driven by the real `openai` client: annotate passes the
    verdict in the body; block answers 400 on a failing call; repair re-asks through the
    proxy's own router (the model name of config.yaml) and returns the repaired answer."""
    pytest.importorskip("litellm.proxy.proxy_server")  # the proxy's dependencies
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx
    import openai

    sys.path.insert(0, str(Path(__file__).parent))
    from fakeserver import FakeServer, Step, openai_reply

    def call(city: str) -> dict:
        args = json.dumps({"city": city})
        return {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": args},
        }

    with FakeServer() as upstream:
        procs, ports = [], {}
        try:
            for mode in ("annotate", "block", "repair"):
                port = ports[mode] = server_port()
                cfg = tmp_path / f"{mode}.yaml"
                cfg.write_text(
                    "model_list:\n"
                    "  - model_name: scripted\n"
                    "    litellm_params:\n"
                    "      model: openai/scripted\n"
                    f"      api_base: {upstream.url}/v1\n"
                    "      api_key: x\n"
                    "guardrails:\n"
                    "  - guardrail_name: callscope\n"
                    "    litellm_params:\n"
                    "      guardrail: callscope.integrations.litellm_guardrail.CallscopeGuardrail\n"
                    "      mode: post_call\n"
                    "      default_on: true\n"
                    f"      callscope_mode: {mode}\n"
                )
                env = {
                    **os.environ,
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "LITELLM_MASTER_KEY": KEY,
                }
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "litellm.proxy.proxy_cli",
                            "--config",
                            str(cfg),
                            "--host",
                            "127.0.0.1",
                            "--port",
                            str(port),
                        ],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=(tmp_path / f"{mode}.log").open("w"),
                    )
                )
            deadline = time.monotonic() + 200
            for (mode, port), proc in zip(ports.items(), procs, strict=True):
                while True:
                    assert proc.poll() is None, (tmp_path / f"{mode}.log").read_text()[-3000:]
                    try:
                        if (
                            httpx.get(f"http://127.0.0.1:{port}/health/liveliness").status_code
                            == 200
                        ):
                            break
                    except httpx.HTTPError:
                        pass
                    assert time.monotonic() < deadline, (tmp_path / f"{mode}.log").read_text()[
                        -3000:
                    ]
                    time.sleep(1)
            upstream.push(Step(body=openai_reply(None, [call("London")])))
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{ports['annotate']}", api_key=KEY, max_retries=0
            )
            r = client.chat.completions.create(model="scripted", messages=MESSAGES, tools=TOOLS)
            verdict = r.model_extra["callscope"]["verdict"]
            want = callscope.guard_check(r.model_dump(), TOOLS, MESSAGES)
            assert [(c["name"], c["stage"], c["reasons"]) for c in verdict["calls"]] == [
                (c.name, c.stage, list(c.reasons)) for c in want.calls
            ]
            assert verdict["calls"][0]["stage"] == 3
            upstream.push(Step(body=openai_reply(None, [call("London")])))
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{ports['block']}", api_key=KEY, max_retries=0
            )
            with pytest.raises(openai.BadRequestError) as e:
                client.chat.completions.create(model="scripted", messages=MESSAGES, tools=TOOLS)
            assert "callscope" in str(e.value)
            # repair: London fails stage 3; the re-ask (through the router) answers Paris
            upstream.push(Step(body=openai_reply(None, [call("London")])))
            upstream.push(Step(body=openai_reply(None, [call("Paris")])))
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{ports['repair']}", api_key=KEY, max_retries=0
            )
            r = client.chat.completions.create(model="scripted", messages=MESSAGES, tools=TOOLS)
            args = json.loads(r.choices[0].message.tool_calls[0].function.arguments)
            assert args == {"city": "Paris"}
            repaired = r.model_extra["callscope"]
            assert repaired["repair"]["repaired"] and repaired["verdict"]["passed"]
            reask = upstream.requests[-1]["json"]["messages"]
            assert reask[-1]["role"] == "user" and "no grounding" in reask[-1]["content"]
        finally:
            for p in procs:
                p.terminate()
                p.wait(timeout=30)


def test_a_long_conversation_is_checked_off_litellms_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request of 200,000 characters is checked on a worker thread, so LiteLLM's event
    loop serves other requests meanwhile (stage 3 reads the whole conversation); so is a
    short request (3,000 characters) answered with 300 calls (each value is looked for in
    the request: 1,000 calls against 64,000 characters held the loop 3.6 s); a short one
    with one call on the loop, as before. The verdict is the same either way: that of
    ``callscope.guard_check``."""
    import threading

    import callscope.integrations.litellm_guardrail as guardrail
    from callscope.guard.inputs import INLINE_CHECK_CHARS

    where: list[str] = []
    real = guardrail.check

    def recording(*args: object, **kwargs: object) -> object:
        where.append(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(guardrail, "check", recording)
    long_messages = [{"role": "user", "content": "The weather in Paris? " * 9_100}]
    short_messages = [{"role": "user", "content": "The weather in Paris? " * 136}]
    assert len(long_messages[0]["content"]) > INLINE_CHECK_CHARS
    assert len(short_messages[0]["content"]) < INLINE_CHECK_CHARS
    many = _mock("London")
    many.choices[0].message.tool_calls = many.choices[0].message.tool_calls * 300

    async def go() -> None:
        g = CallscopeGuardrail(guardrail_name="callscope", event_hook="post_call")
        for messages, answer in ((MESSAGES, _mock("London")), (long_messages, _mock("London")),
                                 (short_messages, many)):  # fmt: skip
            resp = await litellm.acompletion(
                model="gpt-4o", messages=messages, tools=TOOLS, mock_response=answer
            )
            data = {"model": "gpt-4o", "messages": messages, "tools": TOOLS}
            out = await g.async_post_call_success_hook(data, None, resp)
            want = callscope.guard_check(resp.model_dump(), TOOLS, messages)
            got = out.callscope["verdict"]["calls"]
            assert [c["diagnosis"]["hard"] for c in got] == [["city"]] * len(got)
            assert [c.diagnosis.hard for c in want.calls] == [["city"]] * len(got)
            assert len(got) == len(answer.choices[0].message.tool_calls)

    asyncio.run(go())
    assert where[0] == threading.main_thread().name  # the short request: on the loop
    assert where[1] != threading.main_thread().name  # the long one: off it
    assert where[2] != threading.main_thread().name  # 300 calls: off it too


@pytest.mark.parametrize(
    ("params", "fault"),
    [
        ({"callscope_mod": "block"}, "unknown callscope option(s) callscope_mod"),
        ({"grounding": "bogus"}, "unknown grounding 'bogus'"),
        ({"attempts": -1}, "attempts must be 0 to 20, not -1"),
        ({"gated": "nope"}, "gated must be true or false, not 'nope'"),
        ({"mode": "pre_call"}, "is not in the supported event hooks"),
        ({"callscope_mode": "repair", "run_in_parallel": True}, "run_in_parallel"),
    ],
)
def test_a_mistake_in_the_guardrails_config_is_refused_where_litellm_loads_it(
    params: dict, fault: str, caplog: pytest.LogCaptureFixture, tmp_path
) -> None:
    """LiteLLM's own loader of ``config.yaml``'s ``guardrails:`` (what ``litellm --config``
    runs at its start) refuses a guardrail whose callscope options are wrong, naming the
    fault; each was accepted before and let answers through unchecked (a misspelt
    ``callscope_mode`` left annotate on, ``gated: nope`` read as true, an unknown grounding
    failed every request's check, ``mode: pre_call`` never checked an answer, a parallel
    repair is discarded by LiteLLM). The right options load."""
    from litellm.proxy.guardrails.init_guardrails import init_guardrails_v2

    def load(extra: dict) -> list:
        litellm_params = {
            "guardrail": "callscope.integrations.litellm_guardrail.CallscopeGuardrail",
            "mode": "post_call",
            **extra,
        }
        before = list(litellm.callbacks)
        config = str(tmp_path / "config.yaml")  # (where a class path is looked up from)
        init_guardrails_v2([{"guardrail_name": "cs", "litellm_params": litellm_params}], config)
        added = [c for c in litellm.callbacks if isinstance(c, CallscopeGuardrail)]
        added = [c for c in added if c not in before]
        litellm.callbacks[:] = before
        return added

    with caplog.at_level("ERROR"):
        assert load(params) == []
    assert fault in caplog.text
    [good] = load({"callscope_mode": "block", "gated": "false", "attempts": 2})
    assert (good.callscope_mode, good.settings, good.attempts) == ("block", None, 2)


def _two_choices(first: str, second: str) -> dict:
    def choice(i: int, city: str) -> dict:
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}  # fmt: skip
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"index": i, "finish_reason": "tool_calls", "message": message}

    return {"id": "n2", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [choice(0, first), choice(1, second)]}  # fmt: skip


def _sse_two_choices(first: str, second: str) -> str:
    """The same answer as a stream, each choice's call in its own chunks (index 0, then 1)."""
    out = ""
    for i, city in enumerate((first, second)):
        call = {"index": 0, "id": f"c{i}", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}  # fmt: skip
        delta = {"role": "assistant", "content": None, "tool_calls": [call]}
        chunk = {"id": "n2", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": i, "delta": delta, "finish_reason": "tool_calls"}]}  # fmt: skip
        out += f"data: {json.dumps(chunk)}\n\n"
    return out + "data: [DONE]\n\n"


def test_every_choice_of_an_answer_with_several_is_checked() -> None:
    """An answer with two choices (``n=2``), Paris then Berlin: the second is checked too.
    annotate puts its verdict in ``callscope["choices"]``; block and repair refuse the answer
    (a re-ask gives one answer: repairing would drop the other choice), whole and streamed
    through the SDK. Only the first choice was checked before: block passed Berlin, and
    repair of a failing first choice dropped the second."""
    from fakeserver import FakeServer, Step

    async def go() -> None:
        for mode in ("block", "repair"):
            g = CallscopeGuardrail(callscope_mode=mode, guardrail_name="callscope")
            whole = litellm.ModelResponse(**_two_choices("Paris", "Berlin"))
            with pytest.raises(CallscopeBlocked) as e:
                await g.async_post_call_success_hook(_data(), None, whole)
            assert e.value.detail["verdict"]["calls"][0]["arguments"] == {"city": "Berlin"}
            with FakeServer() as srv:
                srv.push(Step(body=_sse_two_choices("Paris", "Berlin"),
                              headers={"Content-Type": "text/event-stream"}))  # fmt: skip
                stream = await litellm.acompletion(
                    model="openai/m", messages=MESSAGES, tools=TOOLS, stream=True,
                    api_base=srv.url + "/v1", api_key="x",
                )  # fmt: skip
                with pytest.raises(CallscopeBlocked):
                    await g.async_post_call_success_hook(_data(), None, stream)
        g = CallscopeGuardrail(guardrail_name="callscope")  # annotate
        out = await g.async_post_call_success_hook(
            _data(), None, litellm.ModelResponse(**_two_choices("Paris", "Berlin"))
        )
        assert out.callscope["verdict"]["passed"] is True
        [second] = out.callscope["choices"]
        assert (second["passed"], second["calls"][0]["diagnosis"]["hard"]) == (False, ["city"])
        passing = CallscopeGuardrail(callscope_mode="block", guardrail_name="callscope")
        ok = await passing.async_post_call_success_hook(
            _data(), None, litellm.ModelResponse(**_two_choices("Paris", "Paris"))
        )
        assert [c.message.tool_calls[0].function.arguments for c in ok.choices] == [
            json.dumps({"city": "Paris"})
        ] * 2

    asyncio.run(go())
