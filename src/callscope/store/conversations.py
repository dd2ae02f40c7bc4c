"""The run store's multi-turn half (:class:`ConversationStore`, a mixin of
:class:`callscope.store.run_store.RunStore`): each conversation's trajectory, the grader's
verdict and the SAAG stage verdicts of its calls (``call_stages``, keyed by the digest of the
trajectory they were computed from)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from callscope.saag.stage_mix import CallStages
from callscope.store.schema import decode, digest, encode, from_sql, sql_text


class ConversationStore:
    """The conversations of a run store (the ``conversations`` and ``call_stages`` tables);
    :class:`~callscope.store.run_store.RunStore` gives the connection, its lock and its
    transactions."""

    _db: sqlite3.Connection
    _lock: threading.RLock
    transaction: Callable[[], AbstractContextManager[None]]

    def conversations_done(self, model: str, probe: str) -> set[str]:
        rows = self._db.execute(
            "SELECT case_id FROM conversations WHERE model=? AND probe=?",
            (sql_text(model), sql_text(probe)),
        )
        return {from_sql(r[0]) for r in rows}

    def conversation_probes(self, model: str) -> set[str]:
        """The probes (``baseline`` included) ``model`` has conversations under."""
        rows = self._db.execute(
            "SELECT DISTINCT probe FROM conversations WHERE model=?", (sql_text(model),)
        )
        return {from_sql(r[0]) for r in rows}

    def save_conversation(
        self,
        model: str,
        probe: str,
        category: str,
        trajectory: dict[str, Any],
        verdict: dict[str, Any],
        stages: CallStages | None = None,
    ) -> None:
        """One multi-turn case: its whole trajectory, the grader's verdict and the SAAG stage
        verdicts of its calls (``stages``; ``None``: not computed), in one transaction."""
        text = encode(trajectory)
        key = (sql_text(model), sql_text(probe), sql_text(trajectory["case_id"]))
        with self.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO conversations(model, probe, case_id, category,"
                " passed, error, trajectory, verdict) VALUES (?,?,?,?,?,?,?,?)",
                (
                    *key,
                    sql_text(category),
                    int(bool(verdict["passed"])),
                    encode(trajectory.get("error")) if trajectory.get("error") else None,
                    text,
                    encode(verdict),
                ),
            )
            self._put_stages(key, text, stages)

    def save_call_stages(self, model: str, probe: str, case_id: str, stages: CallStages) -> None:
        """Store the SAAG stage verdicts of a stored conversation (computed after it was
        recorded: a store from before ``call_stages``, or another grounding mode)."""
        key = (sql_text(model), sql_text(probe), sql_text(case_id))
        with self._lock:
            row = self._db.execute(
                "SELECT trajectory FROM conversations WHERE model=? AND probe=? AND case_id=?",
                key,
            ).fetchone()
            if row is not None:
                self._put_stages(key, row[0], stages)

    def _put_stages(self, key: tuple[Any, ...], text: str, stages: CallStages | None) -> None:
        """Write (or, for ``None``, delete) the stage verdicts of the conversation ``key``
        whose trajectory text is ``text``."""
        if stages is None:
            self._db.execute("DELETE FROM call_stages WHERE model=? AND probe=? AND case_id=?", key)
            return
        self._db.execute(
            "INSERT OR REPLACE INTO call_stages(model, probe, case_id, digest, data)"
            " VALUES (?,?,?,?,?)",
            (*key, digest(text), encode(stages.to_dict())),
        )

    def conversations(
        self, model: str | None = None, probe: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Stored conversations in the order they were saved: ``model``, ``probe``,
        ``case_id``, ``category``, ``passed``, the decoded ``trajectory`` and ``verdict``, and
        ``stages``: their :class:`~callscope.saag.stage_mix.CallStages` when stored for this
        very trajectory, else ``None``."""
        sql = (
            "SELECT c.model, c.probe, c.case_id, c.category, c.passed, c.trajectory, c.verdict,"
            " s.digest, s.data FROM conversations c LEFT JOIN call_stages s"
            " ON s.model = c.model AND s.probe = c.probe AND s.case_id = c.case_id"
        )
        where, args = [], []
        for col, val in (("c.model", model), ("c.probe", probe)):
            if val is not None:
                where.append(f"{col}=?")
                args.append(sql_text(val))
        if where:
            sql += " WHERE " + " AND ".join(where)
        for m, p, cid, cat, passed, traj, verdict, made_from, stages in self._db.execute(
            sql + " ORDER BY c.rowid", args
        ):
            current = stages is not None and made_from == digest(traj)
            yield {
                "model": from_sql(m),
                "probe": from_sql(p),
                "case_id": from_sql(cid),
                "category": from_sql(cat),
                "passed": bool(passed),
                "trajectory": decode(traj),
                "verdict": decode(verdict),
                "stages": CallStages.from_dict(decode(stages)) if current else None,
            }
