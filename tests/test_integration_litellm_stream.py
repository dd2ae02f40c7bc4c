"""Issue 40 item 1: the LiteLLM guardrail on ``stream: true`` through a real LiteLLM proxy.

`litellm --config config.yaml` on 127.0.0.1, upstream a scripted OpenAI-compatible server that
streams its answer as server-sent events (the tool call's arguments in pieces, as OpenAI
sends them), driven by the real `openai` client with ``stream=True``. One proxy holds the
guardrail three times (``callscope-annotate``, ``-block``, ``-repair``, none on by default);
each request names the one it wants (``guardrails`` in the body). Before issue 40 a stream
bypassed the guardrail: the failing call reached the client with HTTP 200.

The stages are the cascade's rules (SAAG paper, section 2.3): the user asks about Paris;
``city="Paris"`` is stated (passes), ``city="London"`` names another city (stage 3, a hard
drift: the gate acts on it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the cost map
pytest.importorskip("litellm.proxy.proxy_server")  # the proxy's dependencies
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parent))
from fakeserver import FakeServer, Step, openai_reply  # noqa: E402
from ports import server_port  # noqa: E402

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
#: the proxy refuses to start without a strong master key
KEY = "sk-" + "7d1e4b0a9c35f862" * 3


def _chunk(delta: dict, finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-s1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def sse_call(city: str) -> Step:
    """A streamed answer holding one ``get_weather`` call, its arguments in two pieces."""
    args = json.dumps({"city": city})
    cut = len(args) // 2
    first = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    body = (
        _chunk({"role": "assistant", "content": None, "tool_calls": [first]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[:cut]}}]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[cut:]}}]})
        + _chunk({}, "tool_calls")
        + "data: [DONE]\n\n"
    )
    return Step(body=body, headers={"Content-Type": "text/event-stream"})


def json_call(city: str) -> Step:
    call = {
        "id": "c2",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    return Step(body=openai_reply(None, [call]))


def _config(upstream: str) -> str:
    guardrails = "".join(
        f"  - guardrail_name: callscope-{mode}\n"
        "    litellm_params:\n"
        "      guardrail: callscope.integrations.litellm_guardrail.CallscopeGuardrail\n"
        "      mode: post_call\n"
        "      default_on: false\n"
        f"      callscope_mode: {mode}\n"
        for mode in ("annotate", "block", "repair")
    )
    return (
        "model_list:\n"
        "  - model_name: scripted\n"
        "    litellm_params:\n"
        "      model: openai/scripted\n"
        f"      api_base: {upstream}/v1\n"
        "      api_key: x\n"
        "general_settings:\n"
        "  master_key: os.environ/LITELLM_MASTER_KEY\n"
        "guardrails:\n" + guardrails
    )


def _stream(client, guardrail: str) -> list:
    stream = client.chat.completions.create(
        model="scripted",
        messages=MESSAGES,
        tools=TOOLS,
        stream=True,
        extra_body={"guardrails": [guardrail]},
    )
    return list(stream)


def _call_of(chunks: list) -> tuple[str | None, str]:
    """The tool call a client assembles from its chunks: (name, arguments text)."""
    name, args = None, ""
    for c in chunks:
        for choice in c.choices:
            for tc in choice.delta.tool_calls or ():
                name = tc.function.name or name
                args += tc.function.arguments or ""
    return name, args


@pytest.mark.timeout(360)
def test_stream_true_is_guarded_in_every_mode(tmp_path: Path) -> None:
    with FakeServer() as upstream:
        port = server_port()
        cfg = tmp_path / "config.yaml"
        cfg.write_text(_config(upstream.url))
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": KEY}
        log = tmp_path / "proxy.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "litellm.proxy.proxy_cli", "--config", str(cfg)]
            + ["--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        try:
            deadline = time.monotonic() + 200
            while True:
                assert proc.poll() is None, log.read_text()[-3000:]
                try:
                    url = f"http://127.0.0.1:{port}/health/liveliness"
                    if httpx.get(url).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(1)
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}", api_key=KEY, max_retries=0)

            # block: the failing call never reaches the client, not one chunk of it
            upstream.push(sse_call("London"))
            with pytest.raises(openai.BadRequestError) as err:
                _stream(client, "callscope-block")
            assert err.value.status_code == 400
            assert "callscope: tool call failed" in str(err.value)
            assert "The values for city have no grounding" in str(err.value)

            # block, a passing call: streamed through, every piece of the arguments
            upstream.push(sse_call("Paris"))
            chunks = _stream(client, "callscope-block")
            assert _call_of(chunks) == ("get_weather", json.dumps({"city": "Paris"}))

            # annotate: the stream as it came, the verdict on its last chunk
            upstream.push(sse_call("London"))
            chunks = _stream(client, "callscope-annotate")
            assert _call_of(chunks) == ("get_weather", json.dumps({"city": "London"}))
            notes = [c.model_extra.get("callscope") for c in chunks if c.model_extra]
            verdict = [n for n in notes if n][-1]["verdict"]
            assert (verdict["passed"], verdict["stage"]) == (False, 3)
            assert verdict["calls"][0]["diagnosis"]["hard"] == ["city"]

            # repair: London fails; the re-ask (one whole answer, through the router) says
            # Paris, and the client gets the repaired call as a stream
            upstream.push(sse_call("London"), json_call("Paris"))
            chunks = _stream(client, "callscope-repair")
            assert _call_of(chunks) == ("get_weather", json.dumps({"city": "Paris"}))
            notes = [c.model_extra.get("callscope") for c in chunks if c.model_extra]
            note = [n for n in notes if n][-1]
            assert note["repair"]["repaired"] and note["verdict"]["passed"]
            reask = upstream.requests[-1]["json"]
            assert not reask.get("stream")
            assert reask["messages"][-1]["role"] == "user"
            assert "no grounding" in reask["messages"][-1]["content"]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
