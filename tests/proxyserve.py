"""``callscope serve`` started as a user starts it (the console script's ``main`` in a
subprocess), for the proxy's tests: :func:`callscope_serve` yields a :class:`Served` with its
base URL; the block's end stops it with a signal (SIGINT, as Ctrl-C) and waits, so the run
store is complete when the block has ended."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

#: the banner ``callscope serve`` prints on stderr once its socket listens
BANNER = re.compile(r"callscope guard on http://127\.0\.0\.1:(\d+)/v1")
#: a terminal's colour codes, which the banner carries where the environment asks for colour
#: (``FORCE_COLOR``)
COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Served:
    url: str  # the base URL, with /v1
    port: int
    proc: subprocess.Popen[str]
    readers: list[threading.Thread]  # drain stdout and stderr while it serves
    out: list[str]  # what it printed, line by line
    err: list[str]  # what it said on stderr, line by line

    @property
    def stdout(self) -> str:
        """What it printed so far (all of it once stopped)."""
        return "".join(self.out)

    @property
    def stderr(self) -> str:
        """What it said on stderr so far (all of it once stopped)."""
        return "".join(self.err)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
        """Send ``sig``, wait for the exit; the exit code and stderr (stdout in
        :attr:`stdout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for reader in self.readers:
            reader.join()
        return self.proc.returncode, self.stderr


def _banner_port(lines: list[str]) -> int | None:
    """The port the banner among ``lines`` names (colour codes ignored), or ``None``."""
    for line in lines:
        found = BANNER.search(COLOUR.sub("", line))
        if found is not None:
            return int(found.group(1))
    return None


def _drain(stream: IO[str], into: list[str], said: threading.Event | None = None) -> None:
    """Keep what ``stream`` says in ``into`` (a pipe nobody reads fills, and the server
    would block writing to it). ``said`` is set at the banner or at the end of the stream
    (the server exited)."""
    for line in stream:
        into.append(line)
        if said is not None and not said.is_set() and _banner_port([line]) is not None:
            said.set()
    if said is not None:
        said.set()


@contextlib.contextmanager
def callscope_serve(
    upstream_url: str, out: Path, *options: str, wrap: list[str] | None = None
) -> Iterator[Served]:
    """``wrap``: a command the server runs under (``["prlimit", "--fsize=..."]``). The server
    binds a port of its own choosing (``--port 0``) and says which in its banner: a port
    picked here and bound there could be taken meanwhile (by another test worker's server)."""
    cmd = [
        *(wrap or []),
        sys.executable,
        "-c",
        "from callscope.cli.main import main; main()",
        "serve",
    ]
    cmd += ["--upstream", upstream_url, "--port", "0", "--out", str(out), *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    outs: list[str] = []
    errs: list[str] = []
    said = threading.Event()
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, outs)),
        threading.Thread(target=_drain, args=(proc.stderr, errs, said)),
    ]
    for reader in readers:
        reader.daemon = True
        reader.start()
    port = _banner_port(errs) if said.wait(60) else None
    if port is None:
        proc.kill()
        proc.wait()
        for reader in readers:
            reader.join(10)
        raise AssertionError(f"callscope serve did not start: {''.join(errs)}")
    served = Served(f"http://127.0.0.1:{port}/v1", port, proc, readers, outs, errs)
    try:
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
