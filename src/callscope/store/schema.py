"""The run store's tables and columns: the SQL schema of each version, and how a value
becomes a column and back (:mod:`callscope.store.run_store` opens, migrates and writes the
store; see its module doc for the versions and what each guarantees).

Every JSON column is written by :func:`encode` and read by :func:`decode`; a plain text column
by :func:`sql_text` and read by :func:`from_sql`; a long text is stored once, apart
(:func:`split_texts`, :func:`join_texts`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from callscope.core.jsonl import dumps_safe

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cases (
  case_id TEXT PRIMARY KEY, scale INTEGER, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outcomes (
  model TEXT NOT NULL, case_id TEXT NOT NULL, mode TEXT NOT NULL,
  scale INTEGER, n_attempts INTEGER NOT NULL, solved_at INTEGER,
  error TEXT, error_kind TEXT, final TEXT NOT NULL, first TEXT,
  PRIMARY KEY (model, case_id, mode)
);
CREATE TABLE IF NOT EXISTS conversations (
  model TEXT NOT NULL, probe TEXT NOT NULL, case_id TEXT NOT NULL, category TEXT NOT NULL,
  passed INTEGER, error TEXT, trajectory TEXT NOT NULL, verdict TEXT NOT NULL,
  PRIMARY KEY (model, probe, case_id)
);
CREATE TABLE IF NOT EXISTS attempts (
  model TEXT NOT NULL, case_id TEXT NOT NULL, mode TEXT NOT NULL, attempt INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (model, case_id, mode, attempt)
);
"""
#: version 2: an attempt's message history lives in ``histories`` (each distinct history once,
#: keyed by the SHA-256 of its JSON text; one that extends the previous attempt's history holds
#: only the messages it adds, ``parent`` naming that history); the attempt's ``data`` keeps
#: ``"messages": null`` in its place and ``messages_ref`` names the history
SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS histories (
  id TEXT PRIMARY KEY, parent TEXT, data TEXT NOT NULL
);
"""

#: the SAAG stage verdicts of each conversation (see the module doc); ``digest``: the SHA-256
#: of the ``trajectory`` text the verdicts were computed from
SCHEMA_STAGES = """
CREATE TABLE IF NOT EXISTS call_stages (
  model TEXT NOT NULL, probe TEXT NOT NULL, case_id TEXT NOT NULL, digest TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (model, probe, case_id)
);
"""

#: version 3: every text of an attempt or a message history longer than :data:`TEXT_MIN`
#: characters (a model's reply, its echo in the next request) is stored once in ``texts``,
#: keyed by the SHA-256 of its UTF-8 (``surrogatepass``) bytes; the JSON that held it keeps
#: ``null`` in its place and lists ``[path, id]`` pairs under :data:`TEXTS_KEY` (an attempt)
#: or as ``{"m": tail, "$texts": [...]}`` (a history tail, else a plain list)
SCHEMA_V3 = """
CREATE TABLE IF NOT EXISTS texts (id TEXT PRIMARY KEY, data TEXT NOT NULL);
"""
#: texts at least this long are stored once (:data:`SCHEMA_V3`)
TEXT_MIN = 4096
#: the key of an attempt's JSON listing the texts stored apart (never a field of a record)
TEXTS_KEY = "$texts"

STORE_FILE = "store.sqlite"

#: Version of :data:`SCHEMA`, kept in ``PRAGMA user_version``. Raise it (and teach
#: :meth:`callscope.store.run_store.RunStore._open_schema` to upgrade from the old one) whenever the tables change.
#: 0 is an unversioned store: one written before versioning, with version 1's tables.
#: 2: message histories stored once (:data:`SCHEMA_V2`); a version 0 or 1 store is migrated
#: in place when opened (:meth:`callscope.store.run_store.RunStore._migrate_histories`), and reads the same after.
#: The ``call_stages`` table (:data:`SCHEMA_STAGES`) does not raise it: a callscope without it
#: reads and writes such a store correctly (see the module doc).
#: 3: long texts stored once (:data:`SCHEMA_V3`); a version 2 store is stamped 3 when opened
#: (its rows hold no references and read the same); a callscope that knows only version 2
#: refuses a version 3 store instead of reading its texts as ``null``.
SCHEMA_VERSION = 3
#: a history chain longer than this is corrupt (each link is one attempt of one outcome)
MAX_CHAIN = 10_000


def encode(value: Any) -> str:
    """The JSON text a store column holds for ``value`` (a record's dict, a meta value):
    UTF-8 kept as is, anything JSON cannot represent written as its ``str``, a value UTF-8
    JSON cannot hold escaped and flagged (:func:`~callscope.core.jsonl.dumps_safe`)."""
    return dumps_safe(value, default=str)


def sql_text(value: str | None) -> str | bytes | None:
    """A plain text column's value: the string itself, or, when it is not valid UTF-8 (a lone
    surrogate), the BLOB of its ``surrogatepass`` bytes, which :func:`from_sql` reverses."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def from_sql(value: Any) -> Any:
    """The string a :func:`sql_text` cell was made from (other values unchanged)."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def digest(text: str) -> str:
    """The SHA-256 (hex) of a column's text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def decode(text: str | None) -> Any:
    """The value of a JSON column written by :func:`encode`; ``None`` for an empty cell."""
    return json.loads(text) if text else None


def split_texts(value: Any) -> tuple[Any, list[list[Any]], dict[str, str]]:
    """``value`` with every string of at least :data:`TEXT_MIN` characters replaced by
    ``None`` (containers copied where one was replaced, the rest shared), the ``[path, id]``
    of each (``path``: the keys and indexes that lead to it), and ``{id: text}``."""
    refs: list[list[Any]] = []
    texts: dict[str, str] = {}

    def walk(v: Any, path: list[Any]) -> Any:
        if isinstance(v, str):
            if len(v) < TEXT_MIN:
                return v
            ref = digest(v)
            texts[ref] = v
            refs.append([list(path), ref])
            return None
        if isinstance(v, dict):
            out = {k: walk(x, [*path, k]) for k, x in v.items()}
            return out
        if isinstance(v, list):
            return [walk(x, [*path, i]) for i, x in enumerate(v)]
        return v

    return walk(value, []), refs, texts


def join_texts(value: Any, refs: list[list[Any]], text: Any) -> Any:
    """``value`` with each ``[path, id]`` of ``refs`` put back (``text(id)`` its string)."""
    for path, ref in refs:
        if not path:
            return text(ref)
        cur = value
        for key in path[:-1]:
            cur = cur[key]
        cur[path[-1]] = text(ref)
    return value
