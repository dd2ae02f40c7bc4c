"""A persistent response cache in front of any :class:`ChatModel`.

The key is the SHA-256 of the canonical JSON of ``(spec, messages, tools, decoding)``
(:func:`request_key`; the request context is not part of it, so caches written before it was
an argument keep hitting), so a rerun with the same model, prompts and decoding answers from
disk, and changing any of them is a miss. Hits come back with ``cached=True`` and the
latency measured when the answer was first made, and exactly as it was first made: the
reply is stored with its keys in their order (a call's ``{"zeta": 1, "alpha": 2}`` comes back
so, and a resumed conversation is byte-equal to an uninterrupted one; entries written before
this kept sorted keys). Text that is not valid UTF-8 (a lone surrogate) is stored escaped
(:func:`~callscope.core.jsonl.dumps_safe`) and hashed by its ``surrogatepass`` bytes. Errors
are never cached. The store is a SQLite file in WAL mode, safe to share between threads and
processes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from callscope.core.jsonl import dumps_safe
from callscope.models.base import ChatModel, ChatRequest, Decoding
from callscope.types import ModelReply


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: equal data always gives equal text (a value
    plain JSON cannot write is escaped, :func:`~callscope.core.jsonl.dumps_safe`)."""
    return dumps_safe(value, sort_keys=True, separators=(",", ":"))


def request_key(
    spec: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    decoding: Decoding | dict[str, Any] | None,
) -> str:
    """Hex SHA-256 of the canonical request; ``decoding=None`` means ``Decoding()``.

    Replay files keyed by ``request_hash`` use this same function.
    """
    if decoding is None:
        decoding = Decoding()
    dec = decoding.to_dict() if isinstance(decoding, Decoding) else dict(decoding)
    payload = {"spec": spec, "messages": messages, "tools": tools, "decoding": dec}
    text = canonical_json(payload)  # ASCII-escaped when it holds a lone surrogate
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    reply TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class CachedModel(ChatModel):
    """Wraps ``inner``; same ``spec``, native-tools support and concurrency."""

    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.supports_native_tools = inner.supports_native_tools
        self.max_concurrency = inner.max_concurrency
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
        self.hits = 0
        self.misses = 0

    def lookup(self, key: str) -> ModelReply | None:
        with self._lock:
            row = self._conn.execute("SELECT reply FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        reply = ModelReply.from_dict(json.loads(row[0]))
        reply.cached = True
        return reply

    def store(self, key: str, reply: ModelReply) -> None:
        data = reply.to_dict()
        data["cached"] = False
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, spec, reply, created) VALUES (?,?,?,?)",
                (key, self.spec, dumps_safe(data, separators=(",", ":")), time.time()),
            )
            self._conn.commit()

    def answer(self, request: ChatRequest) -> ModelReply:
        """The cached answer of this request, else the inner model's (given ``context``,
        which is not part of the key), stored."""
        messages, tools, decoding, context = request
        key = request_key(self.spec, messages, tools, decoding)
        hit = self.lookup(key)
        if hit is not None:
            with self._lock:
                self.hits += 1
            return self.counted(hit)
        reply = self.inner.chat(messages, tools, decoding, context)
        self.store(key, reply)
        with self._lock:
            self.misses += 1
        return self.counted(reply)

    def export_replay(self, path: str | Path) -> int:
        """Write every cached answer as a ``replay:`` JSONL row
        ``{"request_hash", "spec", "output"}``; returns the row count."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, spec, reply FROM responses ORDER BY created, key"
            ).fetchall()
        with open(path, "w", encoding="utf-8") as fh:
            for key, spec, reply in rows:
                row = {"request_hash": key, "spec": spec, "output": json.loads(reply)}
                fh.write(dumps_safe(row, separators=(",", ":")) + "\n")  # reply's key order kept
        return len(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        self.inner.close()
