"""Kept prompt prefixes of the embedded model: the KV state of a prefix worth keeping, held in
memory and restored instead of computed again (issue 31).

llama-cpp-python re-uses the KV cache only for the prefix it computed last. This store keeps
more: each entry is a token prefix with the bytes of llama.cpp's per-sequence state after it
(``llama_state_seq_get_data``: the KV cells of the sequence, no logits), and a prompt is
started from the entry sharing the longest prefix with it when that is longer than what the
live context shares. The store only holds bytes; :mod:`callscope.models.local` decides what
to keep and does the copying.

Two kinds of entry, evicted in this order (least recently used first within a kind):

* ``tail``: a context about to be overwritten by a prompt that diverges from it (another
  conversation, another case): kept so that its conversation can go on without recomputing.
* ``anchor``: the first message of a prompt (the system prompt with its registry or function
  documentation), shared by every case and every attempt with the same tools.

The bound is on the bytes of the kept states (``capacity_bytes``); an entry larger than the
whole bound is not kept. :class:`PrefixStats` says what was kept, restored, evicted and the
peak.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from callscope.errors import ConfigError

#: the default bound of the kept states, in MiB: with the 1.5B (28 KiB of KV per token) that is
#: ~36k prompt tokens, eight 4.5k-token BFCL system prompts; with the weights (1.1 GB), the
#: 16k-token live context (0.45 GiB) and the logits buffer it stays under 3 GiB, which fits a
#: 2-core, 8 GiB machine
DEFAULT_PREFIX_CACHE_MB = 1024
#: the environment variable that sets the bound (MiB; 0 turns the store off)
PREFIX_CACHE_ENV = "CALLSCOPE_PREFIX_CACHE_MB"
#: prefixes (and parts of a live context) shorter than this are not kept: recomputing them
#: costs little, and keeping them would churn the store (a state copy costs ~1 ms per 4 MB;
#: 16 prompt tokens take the 0.5B ~0.1 s on 2 cores)
MIN_KEPT_TOKENS = 16

Kind = Literal["anchor", "tail"]
_EVICTION_ORDER: tuple[Kind, ...] = ("tail", "anchor")


def prefix_cache_bytes(mb: int | float | str | None = None) -> int:
    """The bound in bytes: ``mb`` MiB when given, else ``$CALLSCOPE_PREFIX_CACHE_MB``, else
    :data:`DEFAULT_PREFIX_CACHE_MB`; 0 turns kept prefixes off.

    >>> prefix_cache_bytes(2)
    2097152
    >>> prefix_cache_bytes(0)
    0
    """
    raw: Any = mb if mb is not None else os.environ.get(PREFIX_CACHE_ENV)
    if raw is None or raw == "":
        raw = DEFAULT_PREFIX_CACHE_MB
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            f"prefix cache size {raw!r} is not a number of MiB (set {PREFIX_CACHE_ENV} or "
            "prefix_cache_mb to e.g. 1024, or 0 to turn it off)"
        ) from None
    if value < 0:
        raise ConfigError(f"prefix cache size {raw!r} MiB is negative")
    return int(value * 1024 * 1024)


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens two token arrays share.

    >>> common_prefix(np.array([1, 2, 3]), np.array([1, 2, 4, 5]))
    2
    >>> common_prefix(np.array([1, 2]), np.array([1, 2, 3]))
    2
    """
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


@dataclass
class PrefixStats:
    """What the store did. ``saved`` / ``restored``: entries kept and restored;
    ``restored_tokens``: prompt tokens restored instead of computed (before the part the new
    prompt does not share is cut); ``evicted``: entries dropped for the bound, ``refused``:
    entries larger than the whole bound; ``bytes`` / ``peak_bytes``: held now and at most;
    ``capacity_bytes``: the bound; ``save_s`` / ``restore_s``: time spent copying."""

    saved: int = 0
    restored: int = 0
    restored_tokens: int = 0
    evicted: int = 0
    refused: int = 0
    entries: int = 0
    bytes: int = 0
    peak_bytes: int = 0
    capacity_bytes: int = 0
    save_s: float = 0.0
    restore_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for a run's summary."""
        mib = 1024 * 1024
        return (
            f"kept prefixes: {self.restored} restored ({self.restored_tokens:,} tokens), "
            f"{self.saved} saved, {self.evicted} evicted; peak {self.peak_bytes / mib:.0f} MiB "
            f"of {self.capacity_bytes / mib:.0f} MiB"
        )


@dataclass
class _Entry:
    tokens: np.ndarray
    state: bytes
    kind: Kind


class PrefixStates:
    """Token prefix -> state bytes, least recently used evicted first (tails before anchors),
    the bytes held bounded by ``capacity_bytes``.

    >>> store = PrefixStates(capacity_bytes=10)
    >>> store.put([1, 2, 3], b"abcd", "anchor"), store.put([1, 2, 3, 4, 5], b"efgh", "tail")
    (True, True)
    >>> hit = store.best([1, 2, 3, 4, 9])
    >>> (hit[0].tolist(), hit[1], hit[2])
    ([1, 2, 3, 4, 5], b'efgh', 4)
    >>> store.put([7, 8], b"ijklmn", "anchor")  # the tail goes first
    True
    >>> sorted(len(t) for t in store.prefixes()), store.stats.evicted
    ([2, 3], 1)
    """

    def __init__(self, capacity_bytes: int) -> None:
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self.stats = PrefixStats(capacity_bytes=int(capacity_bytes))

    @property
    def capacity_bytes(self) -> int:
        return self.stats.capacity_bytes

    def resize(self, capacity_bytes: int) -> None:
        """Change the bound (evicting what no longer fits); the peak restarts from what is
        held under the new bound."""
        self.stats.capacity_bytes = int(capacity_bytes)
        self._evict(0)
        self.stats.peak_bytes = self.stats.bytes

    def prefixes(self) -> list[tuple[int, ...]]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, tokens: Sequence[int]) -> bool:
        return tuple(int(t) for t in tokens) in self._entries

    def best(self, tokens: Sequence[int] | np.ndarray) -> tuple[np.ndarray, bytes, int] | None:
        """The entry sharing the longest prefix with ``tokens``: ``(its tokens, its state,
        tokens shared)``, marked as used; ``None`` when none shares a token."""
        arr = np.asarray(tokens, dtype=np.int64)
        found: tuple[tuple[int, ...], int] | None = None
        for key, entry in self._entries.items():
            shared = common_prefix(entry.tokens, arr)
            if shared and (found is None or shared > found[1]):
                found = (key, shared)
        if found is None:
            return None
        entry = self._entries[found[0]]
        self._entries.move_to_end(found[0])
        return entry.tokens, entry.state, found[1]

    def put(self, tokens: Sequence[int] | np.ndarray, state: bytes, kind: Kind) -> bool:
        """Keep ``state`` for ``tokens`` (replacing an equal key); ``False`` when it is larger
        than the whole bound (nothing is kept)."""
        size = len(state)
        if size > self.capacity_bytes:
            self.stats.refused += 1
            return False
        arr = np.array(tokens, dtype=np.int64)
        key = tuple(arr.tolist())
        old = self._entries.pop(key, None)
        if old is not None:
            self.stats.bytes -= len(old.state)
            kind = "anchor" if old.kind == "anchor" else kind
        self._evict(size)
        self._entries[key] = _Entry(arr, state, kind)
        self.stats.saved += 1
        self.stats.bytes += size
        self.stats.entries = len(self._entries)
        self.stats.peak_bytes = max(self.stats.peak_bytes, self.stats.bytes)
        return True

    def _evict(self, incoming: int) -> None:
        while self._entries and self.stats.bytes + incoming > self.capacity_bytes:
            victim = next(
                key
                for kind in _EVICTION_ORDER
                for key, entry in self._entries.items()
                if entry.kind == kind
            )
            self.stats.bytes -= len(self._entries.pop(victim).state)
            self.stats.evicted += 1
        self.stats.entries = len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.stats.bytes = 0
        self.stats.entries = 0
