"""A scripted OpenAI-compatible upstream on 127.0.0.1 that answers one ``get_weather`` call per
request in the format of the path it is called on: ``/v1/chat/completions`` (JSON, or
server-sent chunks with the arguments in two pieces) and ``/v1/responses`` (a Responses
object, or its event stream: created, item added, two argument deltas, done, completed).
LiteLLM's proxy sends a ``/v1/messages`` request for an ``openai/`` model to ``/v1/responses``
(litellm 1.108 and 1.110), and a re-ask through its router to ``/v1/chat/completions``.

``push(city, ...)`` scripts the cities of the next requests; with none left it answers
``default``. Every request is recorded (path, JSON body) in ``requests``."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from fakeserver import FakeServer  # noqa: E402

#: the request the scripted upstream answers: a ``get_weather(city)`` tool and a user asking
#: for Paris (OpenAI chat form)
WEATHER_TOOLS = [
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
WEATHER_MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _chunk(delta: dict, finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-s1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def chat_body(args: dict[str, Any], stream: bool) -> Any:
    text = json.dumps(args)
    if not stream:
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": text},
        }
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    cut = len(text) // 2
    first = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    return (
        _chunk({"role": "assistant", "content": None, "tool_calls": [first]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[:cut]}}]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[cut:]}}]})
        + _chunk({}, "tool_calls")
        + "data: [DONE]\n\n"
    )


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def responses_body(args: dict[str, Any], stream: bool) -> Any:
    text = json.dumps(args)
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": text,
        "status": "completed",
    }
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "scripted",
        "output": [item],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
    }
    if not stream:
        return resp
    cut = len(text) // 2
    pending = {**resp, "status": "in_progress", "output": [], "usage": None}
    events = [
        ("response.created", {"response": pending}),
        ("response.output_item.added", {"output_index": 0, "item": {**item, "arguments": ""}}),
        (
            "response.function_call_arguments.delta",
            {"item_id": "fc_1", "output_index": 0, "delta": text[:cut]},
        ),
        (
            "response.function_call_arguments.delta",
            {"item_id": "fc_1", "output_index": 0, "delta": text[cut:]},
        ),
        (
            "response.function_call_arguments.done",
            {"item_id": "fc_1", "output_index": 0, "arguments": text, "name": "get_weather"},
        ),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": resp}),
    ]
    return "".join(
        _sse(name, {"type": name, "sequence_number": i, **data})
        for i, (name, data) in enumerate(events)
    )


class RouteModel(FakeServer):
    """The scripted upstream (module docstring)."""

    def __init__(self, default: str = "Paris", key: str = "city") -> None:
        super().__init__()
        self.default = default
        self.key = key
        self.cities: list[str] = []
        self._cities_lock = threading.Lock()

    def push(self, *cities: str) -> None:  # type: ignore[override]
        with self._cities_lock:
            self.cities.extend(cities)

    def _city(self) -> str:
        with self._cities_lock:
            return self.cities.pop(0) if self.cities else self.default

    def _handler_class(self):
        base = super()._handler_class()
        server = self

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._record({"path": self.path, "json": body})
                stream = bool(body.get("stream"))
                args = {server.key: server._city()}
                if self.path.endswith("/responses"):
                    payload = responses_body(args, stream)
                else:
                    payload = chat_body(args, stream)
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(200)
                kind = "text/event-stream" if stream else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

        return Handler
