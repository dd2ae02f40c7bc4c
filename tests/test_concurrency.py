"""The concurrency a user asks for is the concurrency used (or the run says why not)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakeserver import FakeServer, Step, openai_reply

from callscope.models.base import ChatModel, Decoding, RequestContext
from callscope.models.http import MAX_HTTP_CONCURRENCY, pool_limits
from callscope.models.registry import load_model
from callscope.runs.runner import effective_concurrency, in_parallel, run_cases
from callscope.store.run_store import RunStore
from callscope.types import Case, ModelReply

FN = {
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
CALL = [
    {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
]

GOLD = {"name": "get_weather", "arguments": {"city": "Paris"}}


class Gate(ChatModel):
    """Passes every request on only once ``parties`` requests are in flight together (a
    barrier): a run with fewer at once breaks the barrier and its requests fail."""

    def __init__(self, inner: ChatModel, parties: int) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.supports_native_tools = inner.supports_native_tools
        self.max_concurrency = inner.max_concurrency
        self.barrier = threading.Barrier(parties, timeout=20)

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        decoding: Decoding | None = None,
        context: RequestContext | None = None,
    ) -> ModelReply:
        self.barrier.wait()
        return self.inner.chat(messages, tools, decoding, context)


def test_http_backends_take_the_asked_concurrency() -> None:
    for spec in ("openai:m", "ollama:m"):
        model = load_model(spec, base_url="http://127.0.0.1:9")
        assert model.max_concurrency == MAX_HTTP_CONCURRENCY
        assert effective_concurrency(model, 64) == (64, None)
        capped = load_model(spec, base_url="http://127.0.0.1:9", max_concurrency=3)
        assert effective_concurrency(capped, 16) == (
            3,
            f"concurrency 16 lowered to 3: {spec} runs at most 3 requests at once",
        )
        assert effective_concurrency(capped, 2) == (2, None)


def test_pool_keeps_one_idle_connection_per_request_in_flight() -> None:
    limits = pool_limits(64)
    assert (limits.max_connections, limits.max_keepalive_connections) == (64, 64)
    assert pool_limits(0).max_keepalive_connections == 1


class KeepAliveServer(ThreadingHTTPServer):
    """HTTP/1.1 with keep-alive; records each request's client port and counts the
    connections opened and those the client has closed. A request whose last message is
    ``hold`` waits until ``hold`` such requests are in (a barrier)."""

    daemon_threads = True

    def __init__(self, hold: int) -> None:
        self.ports: list[int] = []
        self.opened = 0
        self.closed = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(hold)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.opened += 1

            def finish(self) -> None:
                super().finish()
                with server.lock:
                    server.closed += 1

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with server.lock:
                    server.ports.append(self.client_address[1])
                if body["messages"][-1]["content"] == "hold":
                    server.barrier.wait(timeout=10)
                data = json.dumps(openai_reply("", tool_calls=CALL)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)


def _wait_for(predicate: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_connections_are_as_many_as_requests_at_once_and_are_reused() -> None:
    """4 threads, each a request the server holds until all 4 are in (so 4 at once), then 2
    more: the 12 requests use 4 connections; a later thread reuses one (no 5th); ``close``
    closes all 4."""
    server = KeepAliveServer(hold=4)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    model = load_model("openai:m", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")

    def worker() -> None:
        for content in ("hold", "a", "b"):
            model.chat([{"role": "user", "content": content}])

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(server.ports) == 12
        assert server.opened == 4 and len(set(server.ports)) == 4
        late = threading.Thread(target=lambda: model.chat([{"role": "user", "content": "c"}]))
        late.start()
        late.join()
        assert len(server.ports) == 13 and server.ports[-1] in server.ports[:-1]
        assert server.opened == 4 and server.closed == 0
        model.close()
        assert _wait_for(lambda: server.closed == 4)
    finally:
        server.shutdown()
        server.server_close()


def test_runner_runs_eight_requests_at_once_over_http(tmp_path) -> None:
    n = 8
    with FakeServer() as server:
        server.push(*[Step(body=openai_reply("", tool_calls=CALL)) for _ in range(n)])
        model = Gate(load_model("openai:m", base_url=server.url + "/v1", api_key="k"), n)
        cases = [Case(f"c{i}", "Weather in Paris?", [FN], gold=GOLD) for i in range(n)]
        store = RunStore(tmp_path / "run")
        summary = run_cases(
            model,
            cases,
            store,
            modes=["direct"],
            max_attempts=1,
            concurrency=n,
            show_progress=False,
        )
        store.close()
    assert (summary.concurrency, summary.concurrency_note) == (n, None)
    assert summary.ran == n and not summary.errors  # a broken barrier would be an error
    assert summary.solve_rate == {"direct": 1.0}
    assert len(server.requests) == n


def test_runner_says_why_it_runs_fewer(tmp_path) -> None:
    class One(ChatModel):
        spec = "one:m"
        max_concurrency = 1

        def chat(self, messages, tools=None, decoding=None, context=None) -> ModelReply:
            return ModelReply(
                text="", tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}]
            )

    store = RunStore(tmp_path / "run")
    summary = run_cases(
        One(),
        [Case("c", "Weather in Paris?", [FN])],
        store,
        modes=["direct"],
        concurrency=4,
        show_progress=False,
    )
    store.close()
    assert summary.concurrency == 1
    assert (
        summary.concurrency_note
        == "concurrency 4 lowered to 1: one:m runs at most 1 request at once"
    )


def test_in_parallel_serial_order_and_early_stop() -> None:
    assert list(in_parallel(lambda x: x * 2, [3, 1, 2], 1)) == [(3, 6), (1, 2), (2, 4)]
    assert sorted(in_parallel(lambda x: x * 2, range(10), 4)) == [(i, 2 * i) for i in range(10)]
    started: list[int] = []
    lock = threading.Lock()

    def work(x: int) -> int:
        with lock:
            started.append(x)
        return x

    for _ in in_parallel(work, range(100), 2):
        break
    assert len(started) <= 3  # two submitted at first, at most one more before the stop


def test_in_parallel_raises_the_workers_error() -> None:
    def boom(x: int) -> int:
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad"):
        list(in_parallel(boom, [1, 2, 3], 2))
