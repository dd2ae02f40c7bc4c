"""The run store: one SQLite file (WAL) per run directory holding cases, attempts, outcomes.

An outcome and all of its attempts are written in one transaction, so a run killed at any
moment (SIGINT or SIGKILL) leaves each (model, case, mode) either complete or absent; the
re-run recomputes only the absent ones (and the response cache makes that cheap).

The file's schema version is SQLite's ``PRAGMA user_version`` (:data:`callscope.store.schema.SCHEMA_VERSION`): a new
store is stamped with it; a store from before versioning (``user_version`` 0, today's
tables) is accepted and stamped in place; a store with a higher version, written by a newer
callscope, is refused with :class:`~callscope.errors.StoreSchemaError` before anything is
written to it. Every JSON column is written by :func:`~callscope.store.schema.encode` and read by
:func:`~callscope.store.schema.decode`.

A conversation's SAAG stage verdicts (:class:`~callscope.saag.stage_mix.CallStages`, computed
once when it is recorded) live in the ``call_stages`` table (:data:`callscope.store.schema.SCHEMA_STAGES`), each row
naming the SHA-256 of the trajectory text it was computed from: a table added without raising
the version, because a callscope that does not know it neither reads it nor is misled by it
(a conversation it re-saves no longer matches its digest, and reads as having no verdicts).
A store written before the table reads the same; its verdicts are computed when missing
(:func:`callscope.runs.calibration_store.diagnose_store`) and stored.

Nothing a model or a dataset can produce makes a write fail or is dropped: JSON columns are
written by :func:`callscope.core.jsonl.dumps_safe` (a lone surrogate as its JSON escape, an
integer over Python's digit limit as its ``hex`` string, the record flagged with
``"escaped"``); a plain text column (an id, an error message) that is not valid UTF-8 is
stored as the BLOB of its ``surrogatepass`` bytes (:func:`~callscope.store.schema.sql_text`) and read back as the very
same string (:func:`~callscope.store.schema.from_sql`), so keys stay exact and resuming still finds them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from callscope.core.jsonl import ESCAPED_KEY
from callscope.errors import StoreSchemaError
from callscope.models.usage import TokenUsage
from callscope.records import Outcome
from callscope.records.answers import is_record
from callscope.records.runs import ROW_AT
from callscope.store.conversations import ConversationStore
from callscope.store.schema import (
    MAX_CHAIN,
    SCHEMA,
    SCHEMA_STAGES,
    SCHEMA_V2,
    SCHEMA_V3,
    SCHEMA_VERSION,
    STORE_FILE,
    TEXTS_KEY,
    decode,
    digest,
    encode,
    from_sql,
    join_texts,
    split_texts,
    sql_text,
)
from callscope.store.writer_lock import WRITER_LOCK, lock_run_dir  # noqa: F401 (importable from here)
from callscope.types import Case


class RunStore(ConversationStore):
    """Thread-safe access to a run directory's SQLite store."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / STORE_FILE
        self._lock = threading.RLock()
        self._upgrader: Any = None
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._open_schema()
        except BaseException:
            self._db.close()
            raise

    def _open_schema(self) -> None:
        """Check the file's schema version, then create missing tables and stamp it."""
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"{self.path} has store schema version {version}, newer than the version "
                f"{SCHEMA_VERSION} this callscope reads: upgrade callscope to open it"
            )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._db.executescript(SCHEMA_STAGES)
        if version < SCHEMA_VERSION:  # new, unversioned, version 1 or 2
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(SCHEMA_V2)  # one statement: executescript would commit
                self._db.execute(SCHEMA_V3)
                cols = {r[1] for r in self._db.execute("PRAGMA table_info(attempts)")}
                if "messages_ref" not in cols:
                    self._db.execute("ALTER TABLE attempts ADD COLUMN messages_ref TEXT")
                if version < 2:
                    self._migrate_histories()
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION:d}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        else:
            self._db.executescript(SCHEMA_V2 + SCHEMA_V3)

    def _migrate_histories(self) -> None:
        """Version 1 -> 2, inside the caller's transaction: every attempt's ``messages`` moved
        to ``histories`` (each distinct history once, sharing the previous attempt's prefix);
        the rest of the attempt's JSON, its ``escaped`` flags included, is kept as it was."""
        rows = self._db.execute(
            "SELECT rowid, model, case_id, mode, data FROM attempts"
            " WHERE messages_ref IS NULL ORDER BY model, case_id, mode, attempt"
        ).fetchall()
        previous: tuple[Any, str, list[Any]] | None = None
        for rowid, model, case_id, mode, data in rows:
            d = decode(data)
            messages = d.get("messages") if isinstance(d, dict) else None
            if not isinstance(messages, list):
                continue
            key = (model, case_id, mode)
            prior = previous[1:] if previous is not None and previous[0] == key else None
            ref, _ = self._put_history(messages, prior)  # d keeps its own escaped flags
            d["messages"] = None
            self._db.execute(
                "UPDATE attempts SET data=?, messages_ref=? WHERE rowid=?",
                (encode(d), ref, rowid),
            )
            previous = (key, ref, messages)

    @property
    def schema_version(self) -> int:
        """The schema version stamped in the file (0: not stamped yet)."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def lock_writer(self) -> None:
        """Take the run directory's writer lock, held until :meth:`close`
        (:func:`~callscope.store.writer_lock.lock_run_dir`: ``RunDirBusy`` when taken)."""
        if getattr(self, "_writer_lock", None) is None:
            self._writer_lock: int | None = lock_run_dir(self.run_dir)

    def close(self) -> None:
        with self._lock:
            self._db.close()
            fd = getattr(self, "_writer_lock", None)
            if fd is not None:
                self._writer_lock = None
                os.close(fd)  # closing the descriptor releases the lock

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write: everything inside commits together or not at all. Writers open
        one each; nested inside another (:meth:`batch`) a savepoint, so a failed write undoes
        itself only and the batch goes on."""
        with self._lock:
            if self._db.in_transaction:
                self._db.execute("SAVEPOINT w")
                try:
                    yield
                except BaseException:
                    self._db.execute("ROLLBACK TO w")
                    self._db.execute("RELEASE w")
                    raise
                self._db.execute("RELEASE w")
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Many writes in one commit (a writer thread draining its queue); each write inside
        stays atomic on its own (a savepoint of :meth:`transaction`)."""
        return self.transaction()

    # ---------------------------------------------------------------- meta / config

    def get_meta(self, key: str) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (sql_text(key),)).fetchone()
        return decode(row[0]) if row else None

    def set_meta(self, key: str, value: Any) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                (sql_text(key), encode(value)),
            )

    # ---------------------------------------------------------------- cases

    def add_cases(self, cases: list[Case]) -> None:
        rows = [(sql_text(c.id), c.scale, encode(c.to_dict())) for c in cases]
        with self.transaction():
            self._db.executemany(
                "INSERT OR IGNORE INTO cases(case_id, scale, data) VALUES (?, ?, ?)", rows
            )

    def cases(self) -> list[Case]:
        rows = self._db.execute("SELECT data FROM cases ORDER BY rowid").fetchall()
        return [Case.from_dict(decode(r[0])) for r in rows]

    def iter_cases(self) -> Iterator[Case]:
        """The cases of :meth:`cases`, in the same order, read one row at a time (constant
        memory; read-only: write nothing to the store until the iterator is exhausted)."""
        for (data,) in self._db.execute("SELECT data FROM cases ORDER BY rowid"):
            yield Case.from_dict(decode(data))

    # ---------------------------------------------------------------- outcomes

    def done(self, model: str, *, include_errors: bool = False) -> set[tuple[str, str]]:
        """(case_id, mode) pairs with an outcome for ``model`` (errored ones only if asked)."""
        sql = "SELECT case_id, mode FROM outcomes WHERE model=?"
        if not include_errors:
            sql += " AND error IS NULL"
        return {(from_sql(r[0]), from_sql(r[1])) for r in self._db.execute(sql, (sql_text(model),))}

    def save_outcome(self, model: str, scale: int | None, outcome: Outcome) -> None:
        """Write one outcome and all its attempts atomically (replacing an earlier try)."""
        final, first = outcome.stored_rows(model, scale)  # verdict version 3: no rows
        key = (sql_text(model), sql_text(outcome.case_id), sql_text(outcome.mode))
        with self.transaction():
            self._db.execute("DELETE FROM attempts WHERE model=? AND case_id=? AND mode=?", key)
            self._db.executemany(
                "INSERT INTO attempts(model, case_id, mode, attempt, data, messages_ref)"
                " VALUES (?,?,?,?,?,?)",
                [(*key, a.attempt, *data) for a, data in self._attempt_rows(outcome)],
            )
            self._db.execute(
                "INSERT OR REPLACE INTO outcomes(model, case_id, mode, scale, n_attempts,"
                " solved_at, error, error_kind, final, first) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    *key,
                    scale,
                    len(outcome.attempts),
                    outcome.solved_at,
                    sql_text(outcome.error),
                    sql_text(outcome.error_kind),
                    encode(final),
                    encode(first),
                ),
            )

    # ---------------------------------------------------------------- message histories

    def _put_history(
        self, messages: list[Any], prior: tuple[str, list[Any]] | None
    ) -> tuple[str, list[str]]:
        """Store one message history (once: ``INSERT OR IGNORE`` by content hash) and return
        its id and the ``escaped`` flags its JSON needed. ``prior`` is the previous attempt's
        ``(id, messages)``: when it is a prefix, only the new messages are written."""
        full = encode({"m": messages})
        ref = digest(full)
        # an escaped history carries its flags as the last key (``..., "escaped": [...]}``):
        # decode to read them only when its tail says so, not for every history
        escaped = f'"{ESCAPED_KEY}": [' in full[-64:]
        flags = decode(full).get(ESCAPED_KEY, []) if escaped else []
        parent, tail = None, messages
        if prior is not None and messages[: len(prior[1])] == prior[1]:
            parent, tail = prior[0], messages[len(prior[1]) :]
        if self._db.execute("SELECT 1 FROM histories WHERE id=?", (ref,)).fetchone() is None:
            short, refs, texts = split_texts(tail)
            self._put_texts(texts)
            self._db.execute(
                "INSERT INTO histories(id, parent, data) VALUES (?, ?, ?)",
                (ref, parent, encode({"m": short, TEXTS_KEY: refs} if refs else tail)),
            )
        return ref, flags

    def _put_texts(self, texts: dict[str, str]) -> None:
        """Store each long text once (by content hash)."""
        if texts:
            self._db.executemany(
                "INSERT OR IGNORE INTO texts(id, data) VALUES (?, ?)",
                [(ref, sql_text(t)) for ref, t in texts.items()],
            )

    def _text(self, ref: str) -> str:
        """The long text ``ref`` names."""
        row = self._db.execute("SELECT data FROM texts WHERE id=?", (ref,)).fetchone()
        if row is None:
            raise StoreSchemaError(f"{self.path}: stored text {ref} is missing")
        return from_sql(row[0])

    def _attempt_json(self, d: dict[str, Any]) -> str:
        """An attempt's JSON text, its long texts stored apart (:data:`SCHEMA_V3`)."""
        short, refs, texts = split_texts(d)
        if not refs:
            return encode(d)
        self._put_texts(texts)
        short[TEXTS_KEY] = refs
        return encode(short)

    def _attempt_value(self, data: str) -> dict[str, Any]:
        """An attempt's JSON text decoded, its long texts put back."""
        d = decode(data)
        refs = d.pop(TEXTS_KEY, None) if isinstance(d, dict) else None
        return join_texts(d, refs, self._text) if refs else d

    def _history(self, ref: str) -> list[Any]:
        """The message history ``ref`` names, decoded afresh (its chain of parents joined)."""
        tails: list[list[Any]] = []
        current: str | None = ref
        while current is not None:
            row = self._db.execute(
                "SELECT parent, data FROM histories WHERE id=?", (current,)
            ).fetchone()
            if row is None or len(tails) > MAX_CHAIN:
                raise StoreSchemaError(f"{self.path}: message history {current} is missing")
            tail = decode(row[1])
            if isinstance(tail, dict):  # {"m": tail, "$texts": [...]}: long texts apart
                tail = join_texts(tail["m"], tail[TEXTS_KEY], self._text)
            tails.append(tail)
            current = row[0]
        return [m for tail in reversed(tails) for m in tail]

    def _attempt_rows(self, outcome: Outcome) -> list[tuple[Any, tuple[str, str | None]]]:
        """Each attempt with its ``(data, messages_ref)``: the history stored apart, the
        ``escaped`` flags its JSON needed kept in the attempt's (as one JSON text had them)."""
        out: list[tuple[Any, tuple[str, str | None]]] = []
        prior: tuple[str, list[Any]] | None = None
        for a in outcome.attempts:
            d = a.to_dict()
            if is_record(a.diagnosis):  # the verdict stored whole: its row is computed when read
                del d["row"]
            messages = d.get("messages")
            if not isinstance(messages, list):
                out.append((a, (self._attempt_json(d), None)))
                continue
            ref, flags = self._put_history(messages, prior)
            d["messages"] = None
            if flags:
                d[ESCAPED_KEY] = sorted(flags)
            out.append((a, (self._attempt_json(d), ref)))
            prior = (ref, messages)
        return out

    def outcomes(
        self, model: str | None = None, *, stream: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Outcome rows: ``final`` (export row) and ``first`` (attempt-1 score row) decoded,
        computed from the attempts' verdicts where they were not stored
        (:mod:`callscope.store.upgrade`). ``stream=True`` reads the rows one at a time instead
        of all up front (constant memory; read-only: write nothing to the store until the
        iterator is exhausted).

        In a stable order that does not depend on when each finished (so a resumed or
        concurrent run reads, exports and reports exactly as a serial one): by model, then
        the case's position in :meth:`cases`, then mode (``direct, binary, structured``, others
        by name), then case id."""
        for o, _ in self._outcomes(model, stream):
            yield o

    def _outcomes(
        self, model: str | None, stream: bool
    ) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]] | None]]:
        """:meth:`outcomes`, each with the attempts read to compute its rows (``None``: its
        rows were stored)."""
        sql = (
            "SELECT model, case_id, mode, scale, n_attempts, solved_at, error, error_kind,"
            " final, first FROM outcomes"
        )
        args: tuple[Any, ...] = ()
        if model is not None:
            sql += " WHERE model=?"
            args = (sql_text(model),)
        sql += (
            " ORDER BY model, (SELECT c.rowid FROM cases c WHERE c.case_id = outcomes.case_id),"
            " CASE mode WHEN 'direct' THEN 0 WHEN 'binary' THEN 1 WHEN 'structured' THEN 2"
            " ELSE 3 END, mode, case_id"
        )
        cols = (
            "model",
            "case_id",
            "mode",
            "scale",
            "n_attempts",
            "solved_at",
            "error",
            "error_kind",
            "final",
            "first",
        )
        cursor = self._db.execute(sql, args)
        for r in cursor if stream else cursor.fetchall():
            d = dict(zip(cols, (from_sql(v) for v in r), strict=True))
            d["final"] = decode(d["final"])
            d["first"] = decode(d["first"])
            attempts = None
            if isinstance(d["final"], dict) and ROW_AT in d["final"]:  # rows from the verdicts
                attempts = self.attempts(d["model"], d["case_id"], d["mode"], with_messages=False)
                self._upgrade().outcome_rows(d, attempts)
            yield d, attempts

    # ---------------------------------------------------------------- the versioned reader

    def _upgrade(self) -> Any:
        if self._upgrader is None:
            from callscope.store.upgrade import Rederiver  # lazy: the scorer, for old stores

            self._upgrader = Rederiver(self)
        return self._upgrader

    def read_outcomes(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        """Each outcome (:meth:`outcomes`, streamed) with its attempts (no message histories),
        as this code reads them: a verdict stored by an older cascade whose meaning changed is
        upgraded on the way (:mod:`callscope.store.upgrade`; the outcome is then marked
        ``rederived``). Read-only, like ``stream=True``."""
        upgrade = self._upgrade()
        for o, attempts in self._outcomes(None, True):
            if attempts is None:
                attempts = self.attempts(o["model"], o["case_id"], o["mode"], with_messages=False)
            upgrade.outcome(o, attempts)
            yield o, attempts

    def read_attempts(self, model: str, case_id: str, mode: str) -> list[dict[str, Any]]:
        """The attempts of one outcome (no message histories) as this code reads them
        (:meth:`read_outcomes`)."""
        attempts = self.attempts(model, case_id, mode, with_messages=False)
        self._upgrade().attempts(model, case_id, attempts)
        return attempts

    def scored_with(self, model: str) -> int | None:
        """The cascade version ``model``'s loop outcomes were scored with (``None``: no loop
        configuration, the guard's and chat logs' records)."""
        return self._upgrade().version(model)

    def attempts(
        self, model: str, case_id: str, mode: str, *, with_messages: bool = True
    ) -> list[dict[str, Any]]:
        """The attempts of one outcome in order; ``with_messages=False`` leaves each message
        history unread (``"messages": None``): what aggregation needs, at a fraction of the
        memory."""
        rows = self._db.execute(
            "SELECT data, messages_ref FROM attempts WHERE model=? AND case_id=? AND mode=?"
            " ORDER BY attempt",
            (sql_text(model), sql_text(case_id), sql_text(mode)),
        ).fetchall()
        out = []
        for data, ref in rows:
            d = self._attempt_value(data)
            if ref is not None and with_messages:
                d["messages"] = self._history(ref)
            self._upgrade().attempt_view(case_id, d)  # a verdict stored whole: its row
            out.append(d)
        return out

    def token_usage(self) -> dict[str, TokenUsage]:
        """Per model, the token counts of every stored reply
        (:class:`~callscope.models.usage.TokenUsage`: prompt tokens sent, computed, generated;
        an answer from the response cache at what it cost when it was made, so the counts do
        not depend on how often a run was interrupted): the SAAG loop's attempts (attempt 1,
        shared by the modes, once per case) and the conversations' model emissions (probe
        placeholders left out)."""
        out: dict[str, TokenUsage] = {}
        seen_first: set[tuple[str, str]] = set()
        rows = self._db.execute("SELECT model, case_id, attempt, data FROM attempts ORDER BY rowid")
        for model, case_id, attempt, data in rows:
            model, case_id = from_sql(model), from_sql(case_id)
            if attempt == 1:
                if (model, case_id) in seen_first:
                    continue
                seen_first.add((model, case_id))
            out.setdefault(model, TokenUsage()).add(decode(data).get("reply"), cached_apart=False)
        for model, traj in self._db.execute("SELECT model, trajectory FROM conversations"):
            usage = out.setdefault(from_sql(model), TokenUsage())
            t = decode(traj)
            turns = list(t.get("turns") or []) + [t["partial_turn"]] * bool(t.get("partial_turn"))
            for turn in turns:
                for step in turn.get("steps") or []:
                    if not step.get("placeholder"):
                        usage.add(step, cached_apart=False)
        return out

    def export_jsonl(self, path: str | Path | None = None) -> Path:
        """Final rows (``score`` format + attempts, mode, solved_at) as JSON lines."""
        path = Path(path) if path else self.run_dir / "final.jsonl"
        tmp = path.with_suffix(path.suffix + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for o in self.outcomes():
                fh.write(encode(o["final"]) + "\n")
        tmp.replace(path)
        return path
