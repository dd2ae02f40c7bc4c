"""A port for a server that a test starts in another process (``litellm``'s proxy, say), chosen
so that nothing takes it between the choice and the server's bind.

Binding port 0, reading the port and closing the socket leaves a window (a server's start,
up to tens of seconds for LiteLLM's proxy) in which the kernel may give the same port to
anyone who asks it for one: another test worker's server binding port 0, or any outgoing
connection's local end. Ports below the kernel's ephemeral range are never given out that
way, so :func:`server_port` picks one there, in a slice of its own for each pytest-xdist
worker, and checks that it binds. A server that can pick its own port is better still:
``callscope serve --port 0`` says the one it took (``proxyserve.callscope_serve``).
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

#: the lowest port handed out; ports under it are left to the machine's own services
FLOOR = 10_000
#: the kernel's ephemeral range starts here when it cannot be read (Linux's default)
EPHEMERAL_LOW = 32_768


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_LOW


def _slice() -> range:
    """This worker's ports: below the ephemeral range, one slice per xdist worker."""
    low = _ephemeral_low()
    if low - FLOOR < 1_000:  # an ephemeral range reaching down this far: no room below it
        return range(low, 65_536)
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    width = (low - FLOOR) // workers
    start = FLOOR + (worker % workers) * width
    return range(start, start + width)


def server_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that binds now and that no other worker's :func:`server_port` and
    no kernel port choice will hand out."""
    ports = _slice()
    first = random.randrange(len(ports))
    for i in range(len(ports)):
        port = ports[(first + i) % len(ports)]
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports}")
