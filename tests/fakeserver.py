"""A real, scriptable HTTP server on 127.0.0.1 for backend tests.

It speaks Ollama's ``POST /api/chat`` and OpenAI's ``POST /v1/chat/completions``. Each
request pops the next scripted :class:`Step` (when the script is empty it answers a plain
text reply in the format of the path it was called on) and is recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    """One scripted answer. ``body``: dict/list -> JSON, str/bytes -> sent raw.
    ``hang`` seconds are waited before answering (the wait ends early when the server
    stops)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0


def ollama_reply(
    content: str = "",
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_eval_count: int = 0,
    eval_count: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "model": "m",
        "message": message,
        "done": True,
        "prompt_eval_count": prompt_eval_count,
        "eval_count": eval_count,
        **extra,
    }


def openai_reply(
    content: str | None = "",
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    **usage_extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            **usage_extra,
        },
    }


class _Server(ThreadingHTTPServer):
    # the standard library listens with a backlog of 5: a test's burst of 16 threads
    # connecting at once overflowed it on a loaded machine (a connection reset)
    request_queue_size = 128
    daemon_threads = True


class FakeServer:
    """Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[Step] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def _next(self) -> Step | None:
        with self._lock:
            return self.script.pop(0) if self.script else None

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                server._record({"path": self.path, "headers": dict(self.headers), "json": body})
                step = server._next() or self._default()
                if step.hang and server._stop.wait(step.hang):
                    return
                payload = step.body
                if isinstance(payload, (dict, list)):
                    data = json.dumps(payload).encode()
                elif isinstance(payload, str):
                    data = payload.encode()
                else:
                    data = payload or b""
                try:
                    self.send_response(step.status)
                    if not any(k.lower() == "content-type" for k in step.headers):
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _default(self) -> Step:
                if self.path.startswith("/api/chat"):
                    return Step(body=ollama_reply("hello"))
                if self.path.endswith("/chat/completions"):
                    return Step(body=openai_reply("hello"))
                return Step(status=404, body={"error": f"no route {self.path}"})

        return Handler
