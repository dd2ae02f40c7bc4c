"""``callscope serve`` in front of a blocking upstream (the embedded model, run on worker
threads) under a burst of failing calls: every repair waits on its re-asks, and the re-asks
are answered on worker threads too. The server as a library with a scripted blocking
upstream standing in for the model (the weights answer a few requests a minute on this
machine); real ``httpx`` clients; 127.0.0.1 only, bounded in count and time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from rawupstream import chat, completion

from callscope.guard import proxy
from callscope.guard.proxy import GUARD_HEADER
from callscope.guard.upstream import UpstreamReply


class BerlinModel:
    """A blocking upstream that answers every chat with ``city="Berlin"`` (the request asks
    about Paris: stage 3, so every answer is repaired and every re-ask fails again)."""

    def __init__(self) -> None:
        self.asked = 0
        self._lock = threading.Lock()

    def chat(self, body: bytes, headers: Any, timeout: float) -> UpstreamReply:
        time.sleep(0.01)  # a model takes a while: the burst's threads overlap
        with self._lock:
            self.asked += 1
        return UpstreamReply(200, [("content-type", "application/json")], completion("Berlin"))

    def forward(self, method: str, path: str, body: bytes, headers: Any, timeout: float) -> Any:
        return UpstreamReply(404, [], b"")

    def close(self) -> None:
        pass


def test_a_burst_of_repairs_on_a_blocking_upstream_is_answered_in_full(tmp_path: Path) -> None:
    """60 failing calls at once. The repairs ran on anyio's default worker threads (40), the
    threads a blocking upstream answers on: 40 repairs took every one, each waiting on a
    re-ask that waited for a thread, and the server answered nothing more, ever. Repairs
    have threads of their own now: all 60 are answered, each asked twice."""
    model = BerlinModel()
    config = proxy.ProxyConfig(port=0, run_dir=tmp_path / "run", attempts=1, repair_timeout=20)
    with proxy.serving(config, upstream=model) as server:

        def one(_: int) -> httpx.Response:
            return httpx.post(server.url + "/chat/completions", content=chat("m"), timeout=40)

        with ThreadPoolExecutor(60) as pool:
            replies = list(pool.map(one, range(60)))
    assert [(r.status_code, r.headers[GUARD_HEADER]) for r in replies] == [(200, "unrepaired")] * 60
    assert model.asked == 120
