"""A misbehaving upstream on 127.0.0.1 for the proxy's tests: an asyncio server on its own
thread that reads each request (head and ``Content-Length`` body) itself and answers with
whatever bytes its behaviour writes (a trickle, an early close, a gzip bomb, a forged header),
so that a test can script what no HTTP library would send.

A behaviour is chosen per request by the request's ``model`` (a chat body) or its path, and is
a coroutine ``(upstream, request, writer) -> None``. The upstream keeps every request that
reached it (:attr:`RawUpstream.requests`) and counts the streams whose reader went away
(:attr:`RawUpstream.closed_streams`: a write failed, so upstream would stop generating)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import threading
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
QUERY = [{"role": "user", "content": "What's the weather in Paris?"}]


def completion(city: str = "Paris") -> bytes:
    """A completion with one ``get_weather`` call (Paris passes the guard's check for
    :data:`QUERY`; another city is not grounded in it and fails at stage 3)."""
    call = {
        "id": "c0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "model": "raw",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    ).encode()


def chat(model: str, **extra: Any) -> bytes:
    return json.dumps({"model": model, "messages": QUERY, "tools": TOOLS, **extra}).encode()


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def model(self) -> str:
        try:
            return str(json.loads(self.body).get("model"))
        except (ValueError, AttributeError):
            return ""


Behaviour = Callable[["RawUpstream", Request, asyncio.StreamWriter], Awaitable[None]]


def head(status: str, headers: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def answer(writer: asyncio.StreamWriter, body: bytes, *extra: tuple[str, str]) -> None:
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    writer.write(head("200 OK", [*headers, *extra]) + body)
    await writer.drain()


async def ok(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    if req.method == "GET":
        await answer(w, b'{"object": "list", "data": []}', ("x-callscope-guard", "passed"))
    else:
        await answer(w, completion())


async def endless_stream(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """Server-sent events, one every 50 ms, until the reader goes away."""
    w.write(head("200 OK", [("content-type", "text/event-stream"), ("connection", "close")]))
    event = b'data: {"choices": [{"delta": {"content": "tok"}}]}\n\n'
    try:
        while True:
            w.write(event)
            await w.drain()
            await asyncio.sleep(0.05)
    except (ConnectionError, OSError):
        with up.lock:
            up.closed_streams += 1


def gzip_bomb(decoded_mb: int) -> bytes:
    """``decoded_mb`` MiB of zeros, gzipped (300 MiB: about 300 KB)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    parts = [z.compress(block) for _ in range(decoded_mb)]
    return b"".join(parts) + z.flush()


async def bomb(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    body = up.bomb
    headers = [("content-type", "application/json"), ("content-encoding", "gzip")]
    w.write(head("200 OK", [*headers, ("content-length", str(len(body)))]) + body)
    await w.drain()


async def stream_bomb(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """:func:`bomb` as a gzipped event stream."""
    body = up.bomb
    headers = [("content-type", "text/event-stream"), ("content-encoding", "gzip")]
    w.write(head("200 OK", [*headers, ("content-length", str(len(body)))]) + body)
    await w.drain()


SSE_TEXT = b'data: {"choices": [{"delta": {"content": "Bonjour"}}]}\n\ndata: [DONE]\n\n'


async def gzip_stream(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    body = gzip.compress(SSE_TEXT)
    headers = [("content-type", "text/event-stream"), ("content-encoding", "gzip")]
    w.write(head("200 OK", [*headers, ("content-length", str(len(body)))]) + body)
    await w.drain()


async def trickle(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A whole answer, one byte every 0.5 s (60 bytes: 30 s)."""
    body = completion()[:60]
    w.write(head("200 OK", [("content-type", "application/json"), ("content-length", "60")]))
    with contextlib.suppress(ConnectionError, OSError):
        for i in range(len(body)):
            w.write(body[i : i + 1])
            await w.drain()
            await asyncio.sleep(0.5)


async def forged(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A call that fails the check (Berlin), forged as passed."""
    extra = [("X-Callscope-Guard", "passed"), ("X-Callscope-Guard-Calls", "0")]
    await answer(w, completion("Berlin"), *extra)


async def object_arguments(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A passing call whose ``arguments`` is an object, not the JSON string OpenAI writes."""
    body = json.loads(completion())
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    await answer(w, json.dumps(body).encode())


async def cafe(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    body = completion()
    w.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + "x-note: café €\r\n".encode()
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await w.drain()


async def early_close(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """The request read, nothing answered: the connection closed."""


async def partial(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    w.write(head("200 OK", [("content-type", "application/json"), ("content-length", "100")]))
    w.write(b'{"choices"')
    await w.drain()


async def switching(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    w.write(head("101 Switching Protocols", [("upgrade", "websocket"), ("connection", "upgrade")]))
    await w.drain()


async def status_999(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A status no HTTP server can write back (h11 reads any three digits)."""
    w.write(head("999 Odd", [("content-type", "text/event-stream"), ("connection", "close")]))
    w.write(SSE_TEXT)
    await w.drain()


async def zstd(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """An answer in a content coding nobody asked for (its bytes are never decoded)."""
    body = b"\x28\xb5\x2f\xfd" + bytes(60)  # zstd's magic number, then anything
    headers = [("content-type", "text/event-stream"), ("content-encoding", "zstd")]
    w.write(head("200 OK", [*headers, ("content-length", str(len(body)))]) + body)
    await w.drain()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def cut_mid_event(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A chunked event stream: one whole event and half of the next ``data:`` line, then the
    connection closed before the stream's last chunk (upstream broke off)."""
    w.write(
        head("200 OK", [("content-type", "text/event-stream"), ("transfer-encoding", "chunked")])
    )
    whole = b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n'
    w.write(_chunk(whole + b'data: {"choices": [{"index": 0, "delta": {"con'))
    await w.drain()
    await asyncio.sleep(0.2)


async def flood_stream(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """Events of 64 KiB as fast as the reader takes them, until the reader goes away."""
    w.write(head("200 OK", [("content-type", "text/event-stream"), ("connection", "close")]))
    event = b'data: {"choices": [{"delta": {"content": "' + b"x" * 65536 + b'"}}]}\n\n'
    try:
        while True:
            w.write(event)
            await w.drain()
    except (ConnectionError, OSError):
        with up.lock:
            up.closed_streams += 1


async def held_events(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """One event, then the rest only once the test says its client has read that one (at
    most 10 s): a proxy that reads a stream whole before relaying it is caught waiting."""
    w.write(head("200 OK", [("content-type", "text/event-stream"), ("connection", "close")]))
    w.write(b'event: response.created\ndata: {"type": "response.created"}\n\n')
    await w.drain()
    up.released = await asyncio.get_running_loop().run_in_executor(None, up.release.wait, 10)
    w.write(b'event: response.completed\ndata: {"type": "response.completed"}\n\n')
    await w.drain()


def completion_with(message: dict[str, Any]) -> bytes:
    """A completion whose first choice's message is ``message``."""
    return json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "model": "raw",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    ).encode()


def call_message(name: str, arguments: str) -> dict[str, Any]:
    call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


INJECTED = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "INJECTED-BY-ATTACKER"}}]}
).encode()


async def double(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """Two responses to one request (the second injected); the connection stays open."""
    injected = head(
        "200 OK", [("content-type", "application/json"), ("content-length", str(len(INJECTED)))]
    )
    await answer(w, completion())
    w.write(injected + INJECTED)
    await w.drain()


async def char_length(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A ``Content-Length`` that counts characters, not bytes (``café €``: 3 bytes more)."""
    text = completion().decode().replace('"raw"', '"café €"')
    w.write(
        head("200 OK", [("content-type", "application/json"), ("content-length", str(len(text)))])
    )
    w.write(text.encode())
    await w.drain()


async def created(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """``201 Created`` with a ``delete_account`` call (no such tool)."""
    body = completion_with(call_message("delete_account", "{}"))
    w.write(
        head(
            "201 Created",
            [("content-type", "application/json"), ("content-length", str(len(body)))],
        )
        + body
    )
    await w.drain()


async def legacy(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A legacy ``message.function_call`` naming ``delete_account``."""
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "delete_account", "arguments": "{}"},
    }
    await answer(w, completion_with(message))


async def duplicate_keys(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """Arguments with ``city`` twice, the second spelled ``\\u0063ity`` (Python keeps Paris)."""
    arguments = '{"city": "Berlin", "\\u0063ity": "Paris"}'
    await answer(w, completion_with(call_message("get_weather", arguments)))


async def slow_berlin(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A failing call (Berlin) after 2 s, unless the proxy closes the connection first (then
    :attr:`RawUpstream.closed_streams` counts it and nothing is answered)."""
    try:
        data = await asyncio.wait_for(up.readers[id(w)].read(1), 2.0)
    except TimeoutError:
        await answer(w, completion("Berlin"))
        return
    if data == b"":
        with up.lock:
            up.closed_streams += 1


async def slow_reask(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    """A failing call (Berlin) at once; a re-ask (more than one message) is answered like
    :func:`slow_berlin`."""
    if len(json.loads(req.body).get("messages", [])) > 1:
        await slow_berlin(up, req, w)
    else:
        await answer(w, completion("Berlin"))


def huge_answer(mb: int) -> bytes:
    """An answer of ``mb`` MB that the proxy must read in its check workers: a failing call
    (Berlin: stage 3) beside ``mb`` MB of text (a call that large would be over what
    callscope reads, and passed on unchecked, never re-asked)."""
    message = call_message("get_weather", json.dumps({"city": "Berlin"}))
    message["content"] = "x" * (mb * 1024 * 1024)
    return completion_with(message)


async def huge(up: RawUpstream, req: Request, w: asyncio.StreamWriter) -> None:
    await answer(w, up.huge)


BEHAVIOURS: dict[str, Behaviour] = {
    "double": double,
    "char_length": char_length,
    "created": created,
    "legacy": legacy,
    "duplicate_keys": duplicate_keys,
    "slow_berlin": slow_berlin,
    "slow_reask": slow_reask,
    "huge": huge,
    "endless_stream": endless_stream,
    "bomb": bomb,
    "gzip_stream": gzip_stream,
    "trickle": trickle,
    "forged": forged,
    "cafe": cafe,
    "object_arguments": object_arguments,
    "early_close": early_close,
    "partial": partial,
    "switching": switching,
    "status_999": status_999,
    "zstd": zstd,
    "cut_mid_event": cut_mid_event,
    "flood_stream": flood_stream,
    "held_events": held_events,
    "stream_bomb": stream_bomb,
}


@dataclass
class RawUpstream:
    """Use as a context manager; :attr:`url` is its base URL, with ``/v1``."""

    bomb_mb: int = 0
    requests: list[Request] = field(default_factory=list)
    closed_streams: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0
    huge_mb: int = 0
    readers: dict[int, asyncio.StreamReader] = field(default_factory=dict)
    #: :func:`held_events`: set by the test once its client has read the first event;
    #: ``released``: whether that came before the behaviour's 10 s ran out
    release: threading.Event = field(default_factory=threading.Event)
    released: bool | None = None

    def __post_init__(self) -> None:
        self.bomb = gzip_bomb(self.bomb_mb) if self.bomb_mb else b""
        self.huge = huge_answer(self.huge_mb) if self.huge_mb else b""
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="raw-upstream")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> RawUpstream:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()
        server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.readers[id(writer)] = reader
        try:
            while True:
                req = await _read_request(reader)
                if req is None:
                    return
                with self.lock:
                    self.requests.append(req)
                behaviour = BEHAVIOURS.get(req.model) or BEHAVIOURS.get(
                    req.target.rsplit("/", 1)[-1], ok
                )
                await behaviour(self, req, writer)
                if behaviour not in KEEP_OPEN:
                    return
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            return
        finally:
            self.readers.pop(id(writer), None)
            with contextlib.suppress(Exception):
                writer.close()

    def targets(self) -> list[str]:
        with self.lock:
            return [r.target for r in self.requests]


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = raw.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, target, headers, body)


#: behaviours after which the connection is kept open for the next request
KEEP_OPEN = frozenset({ok, double, char_length, huge})


@contextlib.contextmanager
def raw_upstream(bomb_mb: int = 0, huge_mb: int = 0) -> Iterator[RawUpstream]:
    with RawUpstream(bomb_mb=bomb_mb, huge_mb=huge_mb) as up:
        yield up
