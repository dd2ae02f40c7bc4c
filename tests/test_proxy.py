"""The repair proxy driven by the real ``openai`` client against a local fake upstream.

The fake upstream answers by the request's ``model`` (the scenario) and by whether the
conversation already holds a correction (a re-ask): ``good`` calls pass untouched; a wrong
name, a missing argument and an invented value are fixed on the re-ask; ``never`` gets
worse-better-worse so that keep-best has to pick attempt 3; ``error`` answers 429; ``slow``
answers only once the test is over (``FakeUpstream.release``), so it is past any upstream
timeout however loaded the machine is. Every other wait is generous: no test here depends
on how fast a busy machine answers (issue 45).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

openai = pytest.importorskip("openai")

from proxyserve import callscope_serve  # noqa: E402

from callscope.guard.proxy import EXTRA_FIELD, GUARD_HEADER  # noqa: E402
from callscope.store.run_store import RunStore  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]
CITY = re.compile(r"weather in ([A-Z][a-z]+)")


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": args}


def _answer(request: dict[str, Any]) -> dict[str, Any] | str:
    """The fake model: a call (name + arguments) or text, by scenario and re-ask count."""
    messages = request["messages"]
    city = CITY.search(messages[1]["content"]).group(1)
    good = _call("get_weather", {"city": city, "unit": "celsius"})
    reasks = sum(1 for m in messages if m["role"] == "assistant")
    scenario = request["model"]
    if scenario == "text":
        return "Which city do you mean?"
    if scenario == "never":  # stage 1, then 2, then 3, then 1 again: attempt 3 is the best
        return [
            _call("get_wether", {"city": city}),
            _call("get_weather", {"unit": "celsius"}),
            _call("get_weather", {"city": "Atlantis", "unit": "celsius"}),
            _call("weather", {"city": city}),
        ][min(reasks, 3)]
    if scenario == "good" or reasks:
        return good
    return {
        "wrong_name": _call("get_wether", {"city": city, "unit": "celsius"}),
        "missing": _call("get_weather", {"unit": "celsius"}),
        "invented": _call("get_weather", {"city": "Atlantis", "unit": "celsius"}),
    }[scenario]


def _completion(answer: dict[str, Any] | str, n: int) -> dict[str, Any]:
    if isinstance(answer, str):
        message: dict[str, Any] = {"role": "assistant", "content": answer}
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {
                        "name": answer["name"],
                        "arguments": json.dumps(answer["arguments"]),
                    },
                }
            ],
        }
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class FakeUpstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        #: set when the test is over: what ``slow`` waits for
        self.release = threading.Event()
        super().__init__(("127.0.0.1", 0), _FakeHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def of(self, scenario: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["model"] == scenario]


class _FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeUpstream

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Fake", "yes")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/v1/models":
            data = {
                "object": "list",
                "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "test"}],
            }
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "no such path"}}')

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = json.loads(body)
        with self.server.lock:
            self.server.requests.append(request)
            n = len(self.server.requests)
        if request["model"] == "error":
            self._send(
                429, b'{"error": {"message": "slow down", "type": "rate_limit", "code": "x"}}'
            )
            return
        if request["model"] == "slow":
            self.server.release.wait(60)
        if request.get("stream"):
            chunks = [
                {
                    "id": "s1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "fake",
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": part},
                            "finish_reason": None,
                        }
                    ],
                }
                for part in ("Hel", "lo")
            ]
            sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self._send(200, sse.encode(), "text/event-stream")
            return
        self._send(200, json.dumps(_completion(_answer(request), n)).encode())


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstream()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(upstream: FakeUpstream, tmp_path: Path) -> Iterator[Any]:
    """``callscope serve`` as a user starts it (issue 29: the real server stack), with a 64 KiB
    body limit; ``proxy.stop()`` ends it, its store complete. Its upstream timeout (30 s) is
    far past what a loaded machine takes to answer 16 requests at once: a test of the
    timeout itself starts its own proxy (:func:`test_an_upstream_timeout_is_a_504`)."""
    options = ("--upstream-timeout", "30", "--max-body-mb", "0.0625")
    with callscope_serve(upstream.url, tmp_path / "run", *options) as served:
        yield served


def _client(proxy: Any) -> Any:
    return openai.OpenAI(base_url=proxy.url, api_key="test-key", max_retries=0, timeout=10)


def _ask(client: Any, scenario: str, city: str = "Paris") -> Any:
    return client.chat.completions.with_raw_response.create(
        model=scenario,
        messages=[
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": f"What's the weather in {city} in celsius?"},
        ],
        tools=TOOLS,
    )


def _call_of(completion: Any) -> tuple[str, dict[str, Any]]:
    tc = completion.choices[0].message.tool_calls[0]
    return tc.function.name, json.loads(tc.function.arguments)


def test_a_good_call_passes_untouched(proxy: Any, upstream: FakeUpstream) -> None:
    raw = _ask(_client(proxy), "good")
    (request,) = upstream.of("good")
    # byte for byte what the fake upstream sent for that request
    assert raw.http_response.content == json.dumps(_completion(_answer(request), 1)).encode()
    assert raw.headers[GUARD_HEADER] == "passed"
    assert raw.headers["X-Fake"] == "yes"  # upstream's own headers come through
    assert EXTRA_FIELD not in json.loads(raw.http_response.content)
    assert _call_of(raw.parse()) == ("get_weather", {"city": "Paris", "unit": "celsius"})
    assert request["messages"][1]["content"] == "What's the weather in Paris in celsius?"


@pytest.mark.parametrize(
    ("scenario", "said"),
    [
        ("wrong_name", 'Function name "get_wether" not found in registry'),
        ("missing", "Key parameters of the agent from the registry are missing"),
        ("invented", "The values for city have no grounding in the user's request"),
    ],
)
def test_a_failing_call_is_repaired(
    proxy: Any, upstream: FakeUpstream, scenario: str, said: str
) -> None:
    raw = _ask(_client(proxy), scenario)
    completion = raw.parse()
    assert raw.headers[GUARD_HEADER] == "repaired"
    assert _call_of(completion) == ("get_weather", {"city": "Paris", "unit": "celsius"})
    extra = completion.model_extra[EXTRA_FIELD]
    assert (extra["guard"], extra["attempts"], extra["best_attempt"], extra["stage"]) == (
        "repaired",
        2,
        2,
        0,
    )
    first, second = upstream.of(scenario)
    assert len(first["messages"]) == 2
    # the re-ask: the original turns, the model's call as JSON text, then the correction
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2]["role"] == "assistant"
    assert json.loads(second["messages"][2]["content"])["name"] in ("get_wether", "get_weather")
    assert second["messages"][3]["role"] == "user"
    assert said in second["messages"][3]["content"]
    assert second["tools"] == TOOLS


def test_an_upstream_that_never_fixes_it_gets_the_best_marked(
    proxy: Any, upstream: FakeUpstream
) -> None:
    raw = _ask(_client(proxy), "never")
    completion = raw.parse()
    extra = completion.model_extra[EXTRA_FIELD]
    assert raw.headers[GUARD_HEADER] == "unrepaired"
    assert len(upstream.of("never")) == 4  # the first ask and the default 3 re-asks
    # attempts reached stage 1, 2, 3, 1: the third (deepest) is what the agent gets
    assert (extra["guard"], extra["attempts"], extra["best_attempt"], extra["stage"]) == (
        "unrepaired",
        4,
        3,
        3,
    )
    assert _call_of(completion) == ("get_weather", {"city": "Atlantis", "unit": "celsius"})
    assert extra["reasons"] == ["hard: city='Atlantis' has no grounding in the user's text"]


def test_upstream_errors_pass_through_as_given(proxy: Any, upstream: FakeUpstream) -> None:
    with pytest.raises(openai.RateLimitError) as err:
        _ask(_client(proxy), "error")
    assert err.value.status_code == 429
    assert err.value.body == {"message": "slow down", "type": "rate_limit", "code": "x"}
    assert len(upstream.of("error")) == 1


def test_an_upstream_timeout_is_a_504(upstream: FakeUpstream, tmp_path: Path) -> None:
    # ``slow`` answers only after the test: the 1 s timeout is reached however loaded
    with (
        callscope_serve(upstream.url, tmp_path / "run", "--upstream-timeout", "1") as served,
        pytest.raises(openai.APIStatusError) as err,
    ):
        _ask(_client(served), "slow")
    assert err.value.status_code == 504
    assert err.value.body["type"] == "upstream_timeout"


def test_text_streaming_and_other_endpoints_pass_through(
    proxy: Any, upstream: FakeUpstream
) -> None:
    client = _client(proxy)
    raw = _ask(client, "text")
    assert raw.headers[GUARD_HEADER] == "unchecked"
    assert raw.parse().choices[0].message.content == "Which city do you mean?"
    stream = client.chat.completions.create(
        model="good",
        messages=[{"role": "user", "content": "What's the weather in Oslo?"}],
        tools=TOOLS,
        stream=True,
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream) == "Hello"
    assert [m.id for m in client.models.list()] == ["fake-model"]
    missing = httpx.get(proxy.url + "/nowhere")
    assert (missing.status_code, missing.json()) == (404, {"error": {"message": "no such path"}})


def test_oversized_and_malformed_requests_are_refused(proxy: Any) -> None:
    big = httpx.post(proxy.url + "/chat/completions", content=b"x" * (64 * 1024 + 1))
    assert big.status_code == 413
    bad = httpx.post(proxy.url + "/chat/completions", content=b"[1, 2]")
    assert (bad.status_code, bad.json()["error"]["message"]) == (
        400,
        "request body must be a JSON object",
    )


def test_concurrent_requests_each_get_their_own_answer(proxy: Any, upstream: FakeUpstream) -> None:
    cities = ["Paris", "Oslo", "Lima", "Rome", "Cairo", "Quito", "Dakar", "Hanoi"]
    jobs = [(s, c) for c in cities for s in ("good", "missing")]
    client = _client(proxy)
    with ThreadPoolExecutor(8) as pool:
        raws = list(pool.map(lambda job: _ask(client, *job), jobs))
    for (scenario, city), raw in zip(jobs, raws, strict=True):
        assert _call_of(raw.parse()) == ("get_weather", {"city": city, "unit": "celsius"})
        assert raw.headers[GUARD_HEADER] == ("passed" if scenario == "good" else "repaired")
    assert len(upstream.of("good")) == 8
    assert len(upstream.of("missing")) == 16


def test_every_decision_is_in_the_run_store(proxy: Any, tmp_path: Path) -> None:
    client = _client(proxy)
    for scenario in ("good", "missing", "never", "text"):
        _ask(client, scenario)
    proxy.stop()  # the server writes every decision as it stops
    store = RunStore(tmp_path / "run")
    try:
        outcomes = {o["model"]: o for o in store.outcomes()}
        assert sorted(outcomes) == ["good", "missing", "never"]  # text was not a tool call
        assert {m: o["n_attempts"] for m, o in outcomes.items()} == {
            "good": 1,
            "missing": 2,
            "never": 4,
        }
        attempts = store.attempts("missing", outcomes["missing"]["case_id"], "gated")
        assert [a["row"]["stage"] for a in attempts] == [2, 0]
        assert attempts[0]["row"]["missing"] == ["city"]
        assert attempts[0]["feedback"].startswith("Key parameters")
        never = store.attempts("never", outcomes["never"]["case_id"], "gated")
        assert [a["row"]["stage"] for a in never] == [1, 2, 3, 1]
        assert store.get_meta("guard:decisions") == {
            "passed": 1,
            "repaired": 1,
            "unrepaired": 1,
            "unchecked": 1,
        }
        case = {c.id: c for c in store.cases()}[outcomes["missing"]["case_id"]]
        assert case.query == "What's the weather in Paris in celsius?"
        assert [f["name"] for f in case.functions] == ["get_weather"]
    finally:
        store.close()


def test_callscope_report_reads_the_proxy_store(proxy: Any, tmp_path: Path) -> None:
    from callscope.report.load import load_outcomes

    client = _client(proxy)
    _ask(client, "good")
    _ask(client, "invented")
    proxy.stop()  # the server writes every decision as it stops
    rows = load_outcomes(tmp_path / "run")
    assert sorted((o["model"], o["n_attempts"], o["first_diagnosis"]["stage"]) for o in rows) == [
        ("good", 1, 0),
        ("invented", 2, 3),
    ]
