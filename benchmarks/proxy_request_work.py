"""The proxy's own work per request, without sockets (issue 47: what the round-three bounds
add). Run: ``PYTHONPATH=src python benchmarks/proxy_request_work.py`` (and again with another
tree's ``src`` to compare).

The ASGI application (:class:`callscope.guard.proxy.ProxyApp`) is called directly, in one
event loop, with an in-memory upstream that answers a passing ``get_weather`` call at once:
every request goes through the request checks, the body read, the upstream call, the check
and the reply, with no network and no store (so what is timed is the proxy's Python work).
It prints the median and the 90th percentile per request over several rounds, and the
machine's load (``uptime``). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from typing import Any

from callscope.guard.proxy import ProxyApp, ProxyConfig
from callscope.guard.upstream import UpstreamReply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
REQUEST = json.dumps(
    {
        "model": "bench",
        "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
        "tools": TOOLS,
    }
).encode()
CALL = {
    "id": "c0",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
ANSWER = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [CALL]},
                "finish_reason": "tool_calls",
            }
        ],
    }
).encode()


class MemoryUpstream:
    """Answers every chat request with :data:`ANSWER`, at once."""

    async def chat(self, body: bytes, headers: Any, timeout: float) -> UpstreamReply:
        return UpstreamReply(200, [("content-type", "application/json")], ANSWER)

    async def forward(self, *args: Any) -> UpstreamReply:
        return UpstreamReply(200, [("content-type", "application/json")], b"{}")

    async def aclose(self) -> None:
        return None


async def one(app: ProxyApp) -> int:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "headers": [
            (b"host", b"x"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(REQUEST)).encode()),
        ],
    }
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": REQUEST, "more_body": False}]
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await never.wait()  # the client stays: its disconnect never comes
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return int(sent[0]["status"])


async def rounds(n: int, k: int) -> list[float]:
    app = ProxyApp(ProxyConfig(upstream="http://127.0.0.1:9/v1"), MemoryUpstream(), None)
    for _ in range(200):  # warm up
        assert await one(app) == 200
    per_request = []
    for _ in range(k):
        t0 = time.perf_counter()
        for _ in range(n):
            await one(app)
        per_request.append((time.perf_counter() - t0) / n * 1e6)
    return per_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    us = asyncio.run(rounds(args.requests, args.rounds))
    print(f"load: {os.getloadavg()}")
    print(
        f"proxy work per passing request: median {statistics.median(us):.1f} us, "
        f"best {min(us):.1f} us, worst {max(us):.1f} us over {args.rounds} rounds of "
        f"{args.requests}"
    )


if __name__ == "__main__":
    main()
