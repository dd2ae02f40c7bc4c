"""Guard decisions as run-store records, so ``callscope report`` shows them like a SAAG run.

Each checked response becomes one :class:`~callscope.types.Case` (the user's query and the
request's functions, no gold) and one :class:`~callscope.records.Outcome` in mode
``structured`` whose attempts are the asks of the repair (one attempt when nothing was
re-asked). An attempt stores the turn's answer verdict once (``diagnosis``, version 3:
:func:`callscope.records.answers.verdict_record`) and the turn's ``action`` class in its own
field (:attr:`callscope.records.Attempt.action`), and no row: its ``score`` row
(:func:`callscope.saag.score.turn_row`: the answer's row, ``stage`` the earliest failing stage
over its calls, the top-level metrics those of the call it comes from, ``calls`` each call's
verdict by position, with the turn's ``action`` and ``stages``, each call's stage by position)
is computed when the store is read (:mod:`callscope.store.upgrade`), as the SAAG loop's.
A store written before (a row beside a version-2 verdict) is read as stored.

:class:`StoreWriter` writes them on a background thread, so a proxied request never waits
for SQLite.
"""

from __future__ import annotations

import queue
import sqlite3
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callscope.guard.check import TurnVerdict, message_of
from callscope.guard.repair import RepairResult
from callscope.models.http import evaluated_tokens, int_or_none
from callscope.records import Attempt, Outcome, ScoreRow
from callscope.records.answers import StoredVerdict, verdict_record
from callscope.saag.groundings import get_grounding
from callscope.saag.score import turn_row
from callscope.store.run_store import RunStore
from callscope.types import Case

#: the store mode guard outcomes are kept under (the feedback is the gated correction of
#: :func:`callscope.guard.repair.repair`)
GUARD_MODE = "gated"


def verdict_row(case: Case, verdict: TurnVerdict, grounding: str | None) -> ScoreRow:
    """The ``score`` row of a turn (:func:`~callscope.saag.score.turn_row`: the answer's row,
    :func:`~callscope.saag.score.answer_row`, with ``action`` and ``stages``, each call's
    stage by position): what the store computes again when it reads the turn's stored
    verdict. A turn without a call (a re-asked answer in prose) has ``stage`` ``None``:
    nothing was checked."""
    return turn_row(verdict.answer, case, get_grounding(grounding).name, verdict.action)


def stored_verdict(verdict: TurnVerdict, grounding: str | None) -> StoredVerdict:
    """The verdict an attempt stores for a turn, once (version 3,
    :func:`~callscope.records.answers.verdict_record`); the turn's ``action`` is the
    attempt's own field, so the store keeps no row beside it."""
    return verdict_record(verdict.answer, get_grounding(grounding).name)


def _reply(response: Any) -> dict[str, Any] | None:
    """The stored reply of an upstream answer: its text and calls, and the token counts of
    its OpenAI ``usage`` (``prompt_tokens``, ``completion_tokens``; computed prompt tokens
    when it reports ``prompt_tokens_details.cached_tokens``), so ``callscope report`` counts
    what the model behind the proxy computed (:meth:`RunStore.token_usage`)."""
    try:
        msg = message_of(response)
    except TypeError:
        return None
    content = msg.get("content")
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    prompt = int_or_none(usage.get("prompt_tokens"))
    cached = int_or_none(details.get("cached_tokens")) if isinstance(details, dict) else None
    return {
        "text": content if isinstance(content, str) else "",
        "tool_calls": msg.get("tool_calls"),
        "prompt_tokens": prompt,
        "completion_tokens": int_or_none(usage.get("completion_tokens")),
        "prompt_tokens_evaluated": evaluated_tokens(prompt, cached),
    }


def guard_records(
    case_id: str,
    result: RepairResult,
    grounding: str | None = None,
    meta: dict[str, Any] | None = None,
) -> tuple[Case, Outcome]:
    """The case and outcome a repair is stored as (see the module docstring)."""
    first = result.attempts[0].verdict
    assert first is not None
    case = Case(id=case_id, query=first.query, functions=first.functions, meta=dict(meta or {}))
    attempts = []
    for a in result.attempts:
        if a.verdict is None:
            attempts.append(
                Attempt(
                    attempt=a.attempt,
                    messages=a.messages,
                    reply=None,
                    parsed=[],
                    row=None,
                    diagnosis=None,
                    error=a.error,
                    error_kind="upstream",
                    latency_s=a.latency_s,
                )
            )
            continue
        attempts.append(
            Attempt(
                attempt=a.attempt,
                messages=a.messages,
                reply=_reply(a.response),
                parsed=[c.to_dict() for c in a.verdict.tool_calls],
                row=verdict_row(case, a.verdict, grounding),
                diagnosis=stored_verdict(a.verdict, grounding),
                feedback=a.feedback,
                latency_s=a.latency_s,
                action=a.verdict.action,
            )
        )
    return case, Outcome(case_id=case_id, mode=GUARD_MODE, attempts=attempts)


#: queued writes at most in one commit
BATCH = 256
#: decisions kept in memory for another try while the store cannot be written, at most;
#: past it the oldest is given up, with its request id and decision on stderr
MAX_UNSTORED = 10_000


def _loud(message: str) -> None:
    print(f"callscope serve: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class StoreHealth:
    """Whether the store takes every decision: ``unstored`` decisions are waiting for
    another try (the store failed them), ``lost`` were given up (said on stderr, each),
    ``store_errors`` failed writes so far, ``last_error`` the latest failure."""

    unstored: int
    lost: int
    store_errors: int
    last_error: str | None

    @property
    def ok(self) -> bool:
        return self.unstored == 0 and self.lost == 0


class StoreWriter:
    """Writes guard records to a run store from one background thread.

    :meth:`submit` queues a repair's records, built on the writer thread (off the request's
    path) by :func:`guard_records`; :meth:`count` tallies a decision kind (``passed``,
    ``repaired``, ``unrepaired``, ``unchecked``, ``stream``, ``error``...) kept in the store's
    meta as ``guard:decisions``. The thread writes whatever is queued in one commit (at most
    :data:`BATCH`; each record still atomic on its own), so a burst costs a commit per batch,
    not per decision. :meth:`flush` waits until everything queued is written; :meth:`close`
    flushes and closes the store.

    A decision the store fails to take (a full disk, a file size limit: an ``sqlite3`` or
    ``OSError``) is never lost quietly (issue 47 point 8): the first failure is said on
    stderr, the decision is kept (at most :data:`MAX_UNSTORED`) and tried again with the
    next write, :meth:`health` says how many wait (the proxy's health endpoint and its
    ``X-Callscope-Store`` header), and whatever still waits at :meth:`close` is printed on
    stderr, one line per decision; a decision whose records cannot be built (a value no
    reader foresaw) is not tried again but named on stderr at once."""

    def __init__(self, run_dir: str | Path, config: dict[str, Any] | None = None) -> None:
        self.store = RunStore(run_dir)
        try:
            self.store.lock_writer()  # one writer per run directory
        except BaseException:
            self.store.close()
            raise
        self.config = dict(config or {})
        self.last_error: str | None = None
        self.lost = 0
        self._models: set[str] = set()
        self._counts: Counter[str] = Counter(self.store.get_meta("guard:decisions") or {})
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._unstored: list[tuple[str, Any]] = []
        self._failing = False
        self._thread = threading.Thread(target=self._work, name="callscope-store", daemon=True)
        self._thread.start()

    def submit(
        self,
        model: str,
        case_id: str,
        result: RepairResult,
        grounding: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Queue the records of one repair (:func:`guard_records` of the arguments)."""
        self._queue.put(("outcome", (model, case_id, result, grounding, meta)))

    def count(self, decision: str) -> None:
        self._queue.put(("count", decision))

    @property
    def failing(self) -> bool:
        """Whether decisions wait to be stored or were given up (cheap: every reply asks)."""
        return bool(self._unstored) or self.lost > 0

    def health(self) -> StoreHealth:
        return StoreHealth(
            len(self._unstored), self.lost, self._counts["store_error"], self.last_error
        )

    def flush(self) -> None:
        self._queue.join()

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._thread.join(timeout=10)
        for _, payload in self._unstored:
            self._give_up(payload)
        self._unstored = []
        self.store.close()

    def _give_up(self, payload: Any) -> None:
        self.lost += 1
        _model, case_id, _result, _grounding, meta = payload
        decision = (meta or {}).get("decision", "?")
        _loud(f"decision NOT stored: request {case_id} {decision} ({self.last_error})")

    def _write(self, kind: str, payload: Any) -> None:
        if kind == "count":
            self._counts[payload] += 1
            return
        model, case_id, result, grounding, meta = payload
        case, outcome = guard_records(case_id, result, grounding, meta)
        if model not in self._models:
            self.store.set_meta(f"config:{model}", {**self.config, "model": model})
            self._models.add(model)
        self.store.add_cases([case])
        self.store.save_outcome(model, None, outcome)

    def _failed(self, exc: Exception) -> None:
        self._counts["store_error"] += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        if not self._failing:
            self._failing = True
            _loud(
                f"the run store cannot be written ({self.last_error}): decisions are kept "
                "and tried again; GET /callscope/health says how many wait"
            )

    def _keep(self, item: tuple[str, Any]) -> None:
        self._unstored.append(item)
        if len(self._unstored) > MAX_UNSTORED:
            self._give_up(self._unstored.pop(0)[1])

    def _work(self) -> None:
        while True:
            items = [self._queue.get()]
            while len(items) < BATCH:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            retry, self._unstored = self._unstored, []
            written: list[tuple[str, Any]] = []
            try:
                with self.store.batch():
                    for item in [*retry, *items]:
                        if item is None:
                            continue
                        try:
                            self._write(*item)
                        except (sqlite3.Error, OSError) as exc:  # the store: tried again
                            self._failed(exc)
                            if item[0] == "outcome":
                                self._keep(item)
                        except Exception as exc:  # noqa: BLE001 - one bad record, not the rest
                            self._counts["store_error"] += 1
                            self.last_error = f"{type(exc).__name__}: {exc}"
                            self._give_up(item[1])  # its records cannot be built: said now
                        else:
                            if item[0] == "outcome":
                                written.append(item)
                    self.store.set_meta("guard:decisions", dict(self._counts))
            except Exception as exc:  # noqa: BLE001 - a failed commit must not stop the thread
                self._failed(exc)
                for item in written:  # their savepoints went with the commit
                    self._keep(item)
            else:
                if self._failing and not self._unstored:
                    self._failing = False
                    _loud("the run store is written again: every kept decision is stored")
            finally:
                for _ in items:
                    self._queue.task_done()
            if None in items:
                return
