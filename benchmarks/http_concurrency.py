"""How close ``--concurrency N`` over HTTP gets to the latency bound.

A local threaded HTTP/1.1 server answers every OpenAI ``/v1/chat/completions`` request
after a fixed delay (100 ms) with a correct tool call; ``run_cases`` runs N direct-mode cases
(one request each, no response cache) through the ``openai:`` backend at each concurrency.
The latency bound is ``cases x delay / concurrency`` (every request in flight all the time);
the script prints the share of it reached (bound / wall time), the concurrency the runner
used and the number of TCP connections the server accepted (1 per worker is full reuse).
The server runs in its own process. When ``cases`` is not a multiple of the concurrency the
last wave runs part-empty, so no client can reach the bound: the "waves" column is the
share of ``ceil(cases / concurrency) x delay`` (at 200 cases and concurrency 64 the bound
itself is at most 78% reachable). The default 640 cases make whole waves at 4, 16 and 64.
Also printed: the client's CPU milliseconds per request (user + system), the cost the GIL
serialises.

Usage: ``python benchmarks/http_concurrency.py [--cases 640] [--delay 0.1] [--levels 4 16 64]``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import Pipe, Process
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from callscope.models.registry import load_model
from callscope.runs.runner import run_cases
from callscope.store.run_store import RunStore
from callscope.types import Case

FUNCTION = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}

REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {
                                "name": "get_weather",
                                "arguments": json.dumps({"city": "Paris"}),
                            },
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }
).encode()


class DelayServer(ThreadingHTTPServer):
    """Answers every POST after ``delay`` seconds; counts accepted TCP connections."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.connections = 0
        self.requests = 0
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self.connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client may reuse the connection
    disable_nagle_algorithm = True  # else headers and body wait ~40 ms for a delayed ACK

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        server: DelayServer = self.server  # type: ignore[assignment]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with server._lock:
            server.requests += 1
        time.sleep(server.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)


def _serve(delay: float, conn: Connection) -> None:
    """The server process: sends its port, serves until told to stop, sends its counts."""
    server = DelayServer(delay)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.daemon = True
    thread.start()
    conn.send(server.server_address[1])
    conn.recv()
    server.shutdown()
    server.server_close()
    conn.send((server.requests, server.connections))


def _cpu_s() -> float:
    """User + system CPU seconds of this process so far (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_level(n_cases: int, delay: float, concurrency: int) -> dict[str, Any]:
    """Run ``n_cases`` direct-mode cases at ``concurrency`` against a fresh server, in its
    own process (so that its work does not compete with the client's for the GIL)."""
    ours, theirs = Pipe()
    proc = Process(target=_serve, args=(delay, theirs), daemon=True)
    proc.start()
    port = ours.recv()
    cases = [
        Case(f"c{i}", f"What is the weather in Paris? ({i})", [FUNCTION]) for i in range(n_cases)
    ]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            model = load_model("openai:bench", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
            store = RunStore(Path(tmp) / "run")
            cpu0 = _cpu_s()
            t0 = time.perf_counter()
            summary = run_cases(
                model,
                cases,
                store,
                modes=["direct"],
                max_attempts=1,
                concurrency=concurrency,
                show_progress=False,
            )
            wall = time.perf_counter() - t0
            cpu = _cpu_s() - cpu0
            store.close()
            model.close()
    finally:
        ours.send("stop")
        requests, connections = ours.recv()
        proc.join(timeout=10)
    bound = n_cases * delay / concurrency
    waves = math.ceil(n_cases / concurrency) * delay
    return {
        "concurrency": concurrency,
        "used": summary.concurrency,
        "note": summary.concurrency_note,
        "wall_s": round(wall, 3),
        "bound_s": round(bound, 3),
        "pct_of_bound": round(100 * bound / wall, 1),
        "pct_of_waves": round(100 * waves / wall, 1),
        "client_cpu_ms_per_request": round(1000 * cpu / n_cases, 2),
        "requests": requests,
        "tcp_connections": connections,
        "errors": dict(summary.errors),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=640)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--levels", type=int, nargs="+", default=[4, 16, 64])
    args = ap.parse_args()
    print(
        f"{'asked':>5} {'used':>4} {'wall s':>7} {'bound s':>7} {'% bound':>7} {'% waves':>7}"
        f" {'CPU ms/req':>10} {'TCP conns':>9}"
    )
    for level in args.levels:
        r = one_level(args.cases, args.delay, level)
        print(
            f"{r['concurrency']:>5} {r['used']:>4} {r['wall_s']:>7.3f} {r['bound_s']:>7.3f} "
            f"{r['pct_of_bound']:>6.1f}% {r['pct_of_waves']:>6.1f}%"
            f" {r['client_cpu_ms_per_request']:>10.2f} {r['tcp_connections']:>9}"
            + (f"  ({r['note']})" if r["note"] else "")
            + (f"  errors {r['errors']}" if r["errors"] else "")
        )


if __name__ == "__main__":
    main()
