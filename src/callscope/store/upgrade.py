"""The run store's versioned reader (issue 48): stored verdicts whose meaning changed are
upgraded when the store is read (:meth:`callscope.store.run_store.RunStore.read_outcomes`,
:meth:`~callscope.store.run_store.RunStore.read_attempts`), as Inspect AI upgrades an old
``EvalLog`` when it reads it, so that no reader (the report included) scores anything again
(issue 36, item 7, moved here from the report by issue 48).

Cascade version 3 (:data:`~callscope.saag.cascade.CASCADE_VERSION`) changed what an answer
without a readable call *is*: it is judged from its text (:mod:`callscope.parse.no_call`),
so call-shaped garbage that version 2 stored as ``abstained`` (stage 0 on a case whose gold
is ``[]``: "passed") is ``broken`` (stage 1), and prose is an abstention only where it is
one. A run directory records the cascade version of each model's loop outcomes
(``config:<model>``; a configuration without one: version 1; the guard's and chat logs'
records have none and are never re-derived). For a model scored before
:data:`NO_CALL_FROM_TEXT`, every stored attempt whose row holds no readable call is scored
again from its stored reply, as the loop scores it today
(:func:`callscope.saag.score.score_parsed`, the case's own expectation); its row and
diagnosis are replaced when the answer, stage or solve differ, and the outcome is marked
``rederived``. Attempts with readable calls keep their stored diagnoses (the report never
re-runs the cascade on them). The report's first screen says how many answers were
re-derived and names them (:func:`rederived_line`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from callscope.parse import parse_output
from callscope.records.answers import verdict_to_dict
from callscope.records.runs import EXPORT_KEYS
from callscope.saag.score import score_parsed
from callscope.types import Case

if TYPE_CHECKING:
    from callscope.store.run_store import RunStore

#: the first cascade version that judges an answer without a readable call from its text
NO_CALL_FROM_TEXT = 3
#: the fields of a score row that say what an answer without a call is and whether it passed
_VERDICT_KEYS = ("answer", "stage", "solved", "answer_solved", "parse_error")


def _no_readable_call(row: dict[str, Any]) -> bool:
    """A score row of an answer without a readable call (stored by any version)."""
    calls = row.get("calls")
    if calls is None:  # a row made before answers were the unit: one call or none
        return row.get("parse_error") is not None
    return not any(c.get("name") is not None for c in calls)


class Rederiver:
    """Re-derives the attempts of one open store (module doc); reads each model's recorded
    cascade version once, and the store's cases only when some model needs them."""

    def __init__(self, store: RunStore) -> None:
        self._store = store
        self._versions: dict[str, int | None] = {}
        self._groundings: dict[str, str | None] = {}
        self._cases: dict[str, Case] | None = None

    def version(self, model: str) -> int | None:
        """The cascade version ``model``'s loop outcomes were scored with (1: a configuration
        recorded before versions were); ``None`` when the store holds no loop configuration
        for it (the guard's and chat logs' records, scored by their own rule: never
        re-derived)."""
        if model not in self._versions:
            config = self._store.get_meta(f"config:{model}")
            version = None
            if isinstance(config, dict):
                cascade = config.get("cascade", 1)
                version = cascade if isinstance(cascade, int) else 1
                grounding = config.get("grounding")
                self._groundings[model] = grounding if isinstance(grounding, str) else None
            self._versions[model] = version
        return self._versions[model]

    def _case(self, case_id: str) -> Case | None:
        if self._cases is None:
            self._cases = {c.id: c for c in self._store.iter_cases()}
        return self._cases.get(case_id)

    def attempts(self, model: str, case_id: str, attempts: Sequence[dict[str, Any]]) -> list[int]:
        """Re-derive ``attempts`` (the store's attempt dicts of one outcome, changed in
        place) when ``model`` was scored before :data:`NO_CALL_FROM_TEXT`; the numbers of the
        attempts whose verdict changed."""
        version = self.version(model)
        if version is None or version >= NO_CALL_FROM_TEXT:
            return []
        case = self._case(case_id)
        if case is None:
            return []
        changed = []
        for a in attempts:
            row, reply = a.get("row"), a.get("reply")
            if not isinstance(row, dict) or not isinstance(reply, dict):
                continue
            if not _no_readable_call(row):
                continue
            parsed = parse_output(reply)
            verdict, new = score_parsed(
                parsed, case, self._groundings.get(model),
                expect_call=case.expects_call is not False,
            )  # fmt: skip
            if all(new.get(k) == row.get(k) for k in _VERDICT_KEYS):
                continue
            a["row"] = new
            a["diagnosis"] = verdict_to_dict(verdict)
            a["parsed"] = [c.to_dict() for c in parsed.calls]
            changed.append(int(a["attempt"]))
        return changed

    def outcome(self, o: dict[str, Any], attempts: Sequence[dict[str, Any]]) -> bool:
        """Re-derive an outcome dict of :meth:`RunStore.outcomes` with its ``attempts``: its
        ``first`` and ``final`` rows and ``solved_at`` follow the re-derived attempts, and
        ``rederived`` is set. True when something changed."""
        changed = self.attempts(str(o["model"]), str(o["case_id"]), attempts)
        if not changed:
            return False
        rows = {int(a["attempt"]): a["row"] for a in attempts if a.get("row") is not None}
        final = o.get("final") or {}
        at = final.get("answer_at") or max(rows)
        if 1 in changed:
            o["first"] = rows[1]
        if at in changed:
            o["final"] = {**rows[at], **{k: final[k] for k in EXPORT_KEYS if k in final}}
        solved_at = next((n for n in sorted(rows) if rows[n].get("solved")), None)
        o["solved_at"] = o["final"]["solved_at"] = solved_at
        o["rederived"] = True
        return True
