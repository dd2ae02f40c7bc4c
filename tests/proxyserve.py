"""``callscope serve`` started as a user starts it (the console script's ``main`` in a
subprocess), for the proxy's tests: :func:`callscope_serve` yields a :class:`Served` with its
base URL; the block's end stops it with a signal (SIGINT, as Ctrl-C) and waits, so the run
store is complete when the block has ended."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    url: str  # the base URL, with /v1
    port: int
    proc: subprocess.Popen[str]
    stdout: str = ""  # what it printed, once stopped

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        """Send ``sig``, wait for the exit; the exit code and stderr (stdout in
        :attr:`stdout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        self.stdout += out or ""
        return self.proc.returncode, err


@contextlib.contextmanager
def callscope_serve(
    upstream_url: str, out: Path, *options: str, wrap: list[str] | None = None
) -> Iterator[Served]:
    """``wrap``: a command the server runs under (``["prlimit", "--fsize=..."]``)."""
    port = free_port()
    cmd = [
        *(wrap or []),
        sys.executable,
        "-c",
        "from callscope.cli.main import main; main()",
        "serve",
    ]
    cmd += ["--upstream", upstream_url, "--port", str(port), "--out", str(out), *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    served = Served(f"http://127.0.0.1:{port}/v1", port, proc)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"callscope serve did not start: {proc.communicate()}")
            time.sleep(0.05)
        yield served
    finally:
        served.stop()


def raw_exchange(port: int, data: bytes, wait: float = 10.0, half_close: bool = False) -> bytes:
    """Send ``data`` on a fresh connection (half-closed after it when told: the server then
    sees the client's end of input), read until the server closes (at most ``wait``
    seconds). A request that is to be answered asks ``Connection: close`` instead: uvicorn
    closes a connection on its client's end of input."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        if half_close:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_WR)
        return read_all(s, wait)


def read_all(s: socket.socket, wait: float) -> bytes:
    """Everything the server sends until it closes the connection (or ``wait`` runs out)."""
    s.settimeout(wait)
    chunks = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def get_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.TransportError:
        return False
