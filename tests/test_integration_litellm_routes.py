"""Issue 46 item 3: the LiteLLM guardrail on every route of a real LiteLLM proxy, streamed and
not, in annotate, repair and block.

`litellm --config config.yaml` on 127.0.0.1 holds the guardrail three times
(``callscope-annotate``, ``-block``, ``-repair``; each request names one in its body); the
upstream is a scripted model (:mod:`scripted_routes`) answering ``get_weather`` in the format
of the path LiteLLM calls. Clients: the real ``openai`` client on ``/v1/chat/completions`` and
``/v1/responses``, ``httpx`` on ``/v1/messages`` (Anthropic's format; the ``anthropic`` package
is not a test dependency). The user asks about Paris: ``city="Paris"`` is stated (passes),
``city="Berlin"`` names another city (stage 3, hard: the gate acts on it).

Before issue 46 a streamed ``/v1/messages`` was HTTP 500 ("Error building chunks") and a
streamed ``/v1/responses`` ended in ``response.failed`` even for a passing call; whole ones
were not checked (block returned Berlin with 200). Run under litellm 1.108.x and 1.110.x
(``.ci/run``: the second environment, ``/tmp/venv-litellm108``).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.timeout(600)]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm.proxy.proxy_server")
httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).parent))
from ports import server_port  # noqa: E402
from scripted_routes import RouteModel  # noqa: E402

KEY = "sk-" + "7d1e4b0a9c35f862" * 3
QUESTION = "What is the weather in Paris?"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DESCRIPTION = "The weather in a city"
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": SCHEMA},
    }
]
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "description": DESCRIPTION, "parameters": SCHEMA}
]
ANTHROPIC_TOOLS = [{"name": "get_weather", "description": DESCRIPTION, "input_schema": SCHEMA}]
HARD = "The values for city have no grounding in the user's request"

ROUTES = ("chat", "messages", "responses")


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
        "router_settings:\n"
        "  disable_cooldowns: true\n"
        "general_settings:\n"
        "  master_key: os.environ/LITELLM_MASTER_KEY\n"
        "guardrails:\n" + guardrails
    )


@contextlib.contextmanager
def running_proxy(tmp: Path) -> Iterator[tuple[RouteModel, str]]:
    """The scripted upstream and ``litellm --config`` in front of it on 127.0.0.1: ``(the
    upstream, the proxy's base URL)`` (also what ``benchmarks/hosts_matrix.py`` measures)."""
    with RouteModel() as upstream:
        port = server_port()
        cfg = tmp / "config.yaml"
        cfg.write_text(_config(upstream.url))
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MASTER_KEY": KEY}
        log = tmp / "proxy.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "litellm.proxy.proxy_cli", "--config", str(cfg)]
            + ["--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        try:
            deadline = time.monotonic() + 300
            while True:
                assert proc.poll() is None, log.read_text()[-3000:]
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health/liveliness").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(1)
            yield upstream, f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=60)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    with running_proxy(tmp_path_factory.mktemp("routes")) as running:
        yield running


@dataclass
class Seen:
    """What a client saw: the HTTP status, the ``city`` of the call it got (``None``: no
    call), the ``callscope`` annotation, the error text and the error's ``callscope`` body."""

    status: int
    city: str | None = None
    callscope: dict[str, Any] | None = None
    error: str = ""
    blocked: dict[str, Any] | None = None


def _city(arguments: str | dict | None) -> str | None:
    if arguments is None:
        return None
    value = json.loads(arguments) if isinstance(arguments, str) else arguments
    return value.get("city")


def _error(err: Exception) -> Seen:
    body = getattr(err, "body", None)
    fields = body.get("provider_specific_fields") if isinstance(body, dict) else None
    return Seen(
        getattr(err, "status_code", 0),
        error=str(err),
        blocked=(fields or {}).get("callscope"),
    )


def _chat(base: str, guard: str, stream: bool) -> Seen:
    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=120)
    kwargs = {
        "model": "scripted",
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": CHAT_TOOLS,
        "extra_body": {"guardrails": [guard]},
    }
    try:
        if not stream:
            r = client.chat.completions.create(**kwargs)
            call = r.choices[0].message.tool_calls[0].function.arguments
            return Seen(200, _city(call), (r.model_extra or {}).get("callscope"))
        args, note = "", None
        for c in client.chat.completions.create(stream=True, **kwargs):
            note = (c.model_extra or {}).get("callscope") or note
            for choice in c.choices:
                for tc in choice.delta.tool_calls or ():
                    args += tc.function.arguments or ""
        return Seen(200, _city(args or None), note)
    except openai.APIStatusError as err:
        return _error(err)


def _responses(base: str, guard: str, stream: bool) -> Seen:
    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=120)
    kwargs = {
        "model": "scripted",
        "input": QUESTION,
        "tools": RESPONSES_TOOLS,
        "extra_body": {"guardrails": [guard]},
    }
    try:
        if not stream:
            r = client.responses.create(**kwargs)
            calls = [o for o in r.output if o.type == "function_call"]
            return Seen(
                200,
                _city(calls[0].arguments) if calls else None,
                (r.model_extra or {}).get("callscope"),
            )
        final = None
        for event in client.responses.create(stream=True, **kwargs):
            if event.type == "response.failed":
                return Seen(200, error=event.response.error.message)
            if event.type == "response.completed":
                final = event.response
        assert final is not None
        calls = [o for o in final.output if o.type == "function_call"]
        return Seen(
            200,
            _city(calls[0].arguments) if calls else None,
            (final.model_extra or {}).get("callscope"),
        )
    except openai.APIStatusError as err:
        return _error(err)


def _sse(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.split("\n\n"):
        lines = block.strip().splitlines()
        event = next((x[6:].strip() for x in lines if x.startswith("event:")), "")
        data = [x[5:].strip() for x in lines if x.startswith("data:")]
        if data:
            out.append((event, json.loads("\n".join(data))))
    return out


def _messages(base: str, guard: str, stream: bool) -> Seen:
    body = {
        "model": "scripted",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": ANTHROPIC_TOOLS,
        "stream": stream,
        "guardrails": [guard],
    }
    r = httpx.post(f"{base}/v1/messages", json=body, headers={"x-api-key": KEY}, timeout=120)
    if r.status_code != 200:
        error = r.json()["error"]
        fields = error.get("provider_specific_fields") or {}
        return Seen(r.status_code, error=error["message"], blocked=fields.get("callscope"))
    if not stream:
        data = r.json()
        uses = [b for b in data["content"] if b["type"] == "tool_use"]
        return Seen(200, uses[0]["input"]["city"] if uses else None, data.get("callscope"))
    args, note = "", None
    for event, data in _sse(r.text):
        if event == "content_block_delta" and data["delta"].get("type") == "input_json_delta":
            args += data["delta"]["partial_json"]
        if event == "message_delta":
            note = data.get("callscope") or note
    return Seen(200, _city(args or None), note)


ASK = {"chat": _chat, "responses": _responses, "messages": _messages}


def _ask(proxy, route: str, mode: str, stream: bool, *cities: str) -> Seen:
    upstream, base = proxy
    upstream.cities.clear()
    upstream.push(*cities)
    return ASK[route](base, f"callscope-{mode}", stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_annotate_passes_the_answer_with_the_verdict(proxy, route, stream) -> None:
    seen = _ask(proxy, route, "annotate", stream, "Berlin")
    assert (seen.status, seen.city, seen.error) == (200, "Berlin", "")
    verdict = seen.callscope["verdict"]
    assert (verdict["passed"], verdict["stage"]) == (False, 3)
    assert verdict["calls"][0]["diagnosis"]["hard"] == ["city"]
    seen = _ask(proxy, route, "annotate", stream, "Paris")
    assert (seen.status, seen.city) == (200, "Paris")
    assert seen.callscope["verdict"]["passed"] is True


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_block_refuses_the_invented_city_and_passes_the_stated_one(proxy, route, stream) -> None:
    seen = _ask(proxy, route, "block", stream, "Berlin")
    assert seen.city is None
    assert "callscope: tool call failed" in seen.error and HARD in seen.error
    if route == "responses" and stream:
        assert seen.status == 200  # the proxy's stream error: a response.failed event
    else:
        assert seen.status == 400
    if not stream:  # a whole response's 400 carries the correction and the verdict
        assert HARD in seen.blocked["correction"]
        assert seen.blocked["verdict"]["calls"][0]["diagnosis"]["hard"] == ["city"]
    seen = _ask(proxy, route, "block", stream, "Paris")
    assert (seen.status, seen.city, seen.error) == (200, "Paris", "")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ROUTES)
def test_repair_reasks_and_returns_the_repaired_call_in_the_routes_format(
    proxy, route, stream
) -> None:
    upstream, _ = proxy
    n = len(upstream.requests)
    seen = _ask(proxy, route, "repair", stream, "Berlin", "Paris")
    assert (seen.status, seen.city, seen.error) == (200, "Paris", "")
    note = seen.callscope
    assert note["repair"]["repaired"] and note["verdict"]["passed"]
    reask = upstream.requests[n + 1]
    assert reask["path"].endswith("/chat/completions") and not reask["json"].get("stream")
    assert HARD in reask["json"]["messages"][-1]["content"]
    assert reask["json"]["messages"][0] == {"role": "user", "content": QUESTION}


def test_tool_results_of_each_format_are_evidence() -> None:
    """A conversation in each route's own format: the earlier tool result ("Paris", from
    ``get_home``) grounds ``city="Paris"``; "Berlin" stays hard. Read by the guardrail
    itself (its ``check_response``), no proxy needed."""
    from callscope.integrations.litellm_guardrail import CallscopeGuardrail

    g = CallscopeGuardrail(guardrail_name="callscope")
    home = "What is the weather at home?"
    anthropic = {
        "tools": ANTHROPIC_TOOLS,
        "system": "You are helpful. The user lives in Berlin.",  # not evidence
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": home}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "get_home", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Paris"}],
            },
        ],
    }
    responses = {
        "tools": RESPONSES_TOOLS,
        "instructions": "The user lives in Berlin.",  # not evidence
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": home}]},
            {"type": "function_call", "call_id": "t1", "name": "get_home", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "t1", "output": "Paris"},
        ],
    }

    def anthropic_answer(city: str) -> dict:
        use = {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {"city": city}}
        return {"id": "m", "type": "message", "role": "assistant", "content": [use]}

    def responses_answer(city: str) -> dict:
        call = {
            "type": "function_call",
            "call_id": "t2",
            "name": "get_weather",
            "arguments": json.dumps({"city": city}),
        }
        return {"id": "r", "object": "response", "output": [call]}

    for data, answer in ((anthropic, anthropic_answer), (responses, responses_answer)):
        ok = g.check_response(data, answer("Paris"))
        bad = g.check_response(data, answer("Berlin"))
        assert [c.name for c in ok.calls] == ["get_weather"] and ok.passed
        assert (bad.stage, bad.calls[0].diagnosis.hard) == (3, ["city"])
