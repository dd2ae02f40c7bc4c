"""The proxy's lifecycle: the listening socket, uvicorn serving the app on it, a graceful
stop (SIGINT, SIGTERM: answer what is in flight, then write every decision), and the
upstream a configuration names."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import uvicorn

from callscope.guard.proxy.app import ProxyApp
from callscope.guard.proxy.config import ProxyConfig
from callscope.guard.proxy.protocol import GuardedH11Protocol
from callscope.guard.record import StoreWriter
from callscope.guard.upstream import HTTPUpstream, LocalUpstream

#: the listen backlog: a burst of connections waits in the kernel's queue, not refused
BACKLOG = 2048
#: connections held at once (idle kept-alive ones too); beyond it uvicorn answers 503 itself
MAX_CONNECTIONS = 4096
#: seconds a kept-alive connection may sit idle before the proxy closes it. Well above the
#: idle expiry of the clients agents use (httpx, so the OpenAI SDK: 5 s; aiohttp: 15 s): a
#: client counts idle time from when it has read an answer, the server from when it wrote
#: it, and a client whose event loop is busy reads late (a burst of 1,000 at concurrency
#: 400 stalled httpx's loop 4.4 s). At uvicorn's 5 s the proxy closed connections such a
#: client had just sent a request on: the request never reached the proxy and the client got
#: a reset (``httpx.ReadError``): 4 of 10 first bursts lost one request; at 30 s a client
#: would have to lag 25 s past its own expiry
KEEP_ALIVE_S = 30
#: the thread switch interval while serving (Python's default is 5 ms): after each socket
#: call the event loop waits for the GIL while the store writer's thread or a check runs, and
#: at 5 ms that wait was most of a passing answer's added latency (3 ms per send, profiled)
SWITCH_INTERVAL_S = 0.0002


class _Server(uvicorn.Server):
    """uvicorn's server, ending the proxy's streams when told to stop (a stream would
    otherwise hold the graceful stop until its upstream deadline)."""

    def __init__(self, on_exit: Callable[[], None], config: uvicorn.Config) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)


class ListenError(OSError):
    """The proxy's address cannot be bound (in use, not this machine's)."""


class ProxyServer:
    """The proxy bound to its socket: :meth:`run` serves in the foreground (SIGINT and SIGTERM
    stop it gracefully), :func:`serving` on a thread; :attr:`url` is its base URL."""

    def __init__(self, config: ProxyConfig, upstream: Any, writer: StoreWriter | None) -> None:
        self.config = config
        self.writer = writer
        self.app = ProxyApp(config, upstream, writer)
        self.guard = self.app.guard
        family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
        # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so, and an
        # answer's headers and body are two writes (Nagle plus a delayed ACK cost 40 ms each)
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.socket.bind((config.host, config.port))
            self.socket.listen(BACKLOG)
        except OSError as exc:
            self.socket.close()
            raise ListenError(exc.strerror or str(exc)) from exc
        protocol = type(
            "GuardedH11", (GuardedH11Protocol,), {"header_timeout": config.header_timeout}
        )
        self.server = _Server(
            self.app.stop_streams,
            uvicorn.Config(
                self.app,
                http=protocol,
                loop="asyncio",
                lifespan="on",
                log_config=None,
                log_level="warning",
                access_log=False,
                backlog=BACKLOG,
                limit_concurrency=MAX_CONNECTIONS,
                timeout_keep_alive=KEEP_ALIVE_S,
                timeout_graceful_shutdown=None,
            ),
        )

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def run(self) -> None:
        """Serve until SIGINT or SIGTERM (then: stop accepting, answer what is in flight,
        write every decision). Sets the interpreter's thread switch interval to
        :data:`SWITCH_INTERVAL_S`."""
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.server.run(sockets=[self.socket])

    def serve_forever(self) -> None:
        self.run()

    def shutdown(self) -> None:
        self.app.stop_streams()
        self.server.should_exit = True

    def close(self) -> None:
        """Stop serving, write what is queued, close upstream and the store."""
        self.server.should_exit = True
        with contextlib.suppress(OSError):
            self.socket.close()
        if not self.app._closed:
            self.app._closed = True
            if self.writer is not None:
                self.writer.close()


def make_upstream(config: ProxyConfig) -> Any:
    """:class:`~callscope.guard.upstream.HTTPUpstream` for ``config.upstream``, else the
    embedded model."""
    if config.upstream:
        return HTTPUpstream(config.upstream, max_reply_bytes=config.max_reply_bytes)
    from callscope.models.registry import load_model  # lazy: llama.cpp and the weights

    return LocalUpstream(load_model(config.local_model), config.local_model)


def make_server(config: ProxyConfig, upstream: Any | None = None) -> ProxyServer:
    """A bound, not yet serving proxy (:meth:`ProxyServer.run` on it, or :func:`serving`)."""
    upstream = upstream if upstream is not None else make_upstream(config)
    writer = StoreWriter(config.run_dir, config.to_meta())
    try:
        return ProxyServer(config, upstream, writer)
    except BaseException:
        writer.close()
        raise


@contextlib.contextmanager
def serving(config: ProxyConfig, upstream: Any | None = None) -> Iterator[ProxyServer]:
    """A proxy serving on a background thread for the ``with`` block, then stopped as SIGTERM
    stops it (in-flight requests answered, every decision written)."""
    server = make_server(config, upstream)
    thread = threading.Thread(target=server.run, daemon=True, name="callscope-proxy")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield server
    finally:
        server.shutdown()
        thread.join(timeout=30)
        server.close()
