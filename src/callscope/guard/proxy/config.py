"""How the proxy runs (:class:`ProxyConfig`), the limits it starts from, and its one-line
log on stderr."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.guard.budget import DEFAULT_MEMORY_MB
from callscope.guard.repair import DEFAULT_REPAIR_ATTEMPTS
from callscope.guard.upstream import DEFAULT_LOCAL_MODEL, MAX_REPLY_BYTES, redacted_url

#: requests in flight at once by default (``--max-concurrent``); beyond it a request is
#: answered 503 with an OpenAI-style ``overloaded`` error and counted, never dropped
MAX_CONCURRENT = 2048


#: the slowest a client may take a whole reply, in bytes a second, on average: the reply
#: (head and body) must be taken within ``--body-timeout`` plus one second for each MiB of
#: its body (``--min-read-rate`` in KiB a second, :func:`~callscope.guard.proxy.app.reply_deadline`; 94 s for a 64 MiB reply at the defaults). Before, only
#: each piece had a deadline: a client taking each MiB just inside 30 s held a 64 MiB reply,
#: its memory and its slot about 32 minutes
MIN_READ_RATE = 1024 * 1024


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy runs. ``upstream`` is the base URL the agent would otherwise use (with its
    ``/v1``, e.g. ``http://127.0.0.1:8080/v1``); ``None`` serves the embedded model
    (``local_model``). ``attempts`` re-asks at most, within ``repair_timeout`` seconds after
    the first answer; ``upstream_timeout`` bounds each upstream request as a whole (from
    sending it to the last byte of its answer, a stream included); an upstream answer over
    ``max_reply_bytes`` once decoded is a 502; a request's header
    block must arrive within ``header_timeout`` seconds and its body within ``body_timeout``;
    beyond ``max_concurrent`` requests in flight, a request is answered 503, and so is one
    whose bodies would take the bodies in flight of the whole process past
    ``max_memory_bytes`` (:mod:`callscope.guard.budget`); a client must take a reply within
    ``body_timeout`` plus its size at ``min_read_rate`` bytes a second."""

    upstream: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    run_dir: Path = Path("callscope-proxy")
    attempts: int = DEFAULT_REPAIR_ATTEMPTS
    repair_timeout: float = 30.0
    upstream_timeout: float = 120.0
    max_body_bytes: int = 4 * 1024 * 1024
    grounding: str | None = None
    local_model: str = DEFAULT_LOCAL_MODEL
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_concurrent: int = MAX_CONCURRENT
    max_reply_bytes: int = MAX_REPLY_BYTES
    max_memory_bytes: int = DEFAULT_MEMORY_MB * 1024 * 1024
    min_read_rate: float = MIN_READ_RATE

    def to_meta(self) -> dict[str, Any]:
        return {
            "source": "proxy",
            "upstream": redacted_url(self.upstream) if self.upstream else self.local_model,
            "max_attempts": self.attempts + 1,
            "repair_timeout": self.repair_timeout,
            "grounding": self.grounding,
        }


def log(message: str) -> None:
    print(f"callscope serve: {message}", file=sys.stderr, flush=True)
