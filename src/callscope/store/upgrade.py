"""The run store's versioned reader (issue 48): what an attempt stored is read as this code
reads it (:meth:`callscope.store.run_store.RunStore.attempts`,
:meth:`~callscope.store.run_store.RunStore.outcomes`, ``read_outcomes``, ``read_attempts``),
as Inspect AI upgrades an old ``EvalLog`` when it reads it, so that no reader (the report
included) scores anything again (issue 36, item 7, moved here from the report by issue 48).

**Verdict version 3** (:func:`~callscope.records.answers.verdict_record`, what the SAAG loop
writes): an attempt stores its verdict once and no ``score`` row; its outcome stores only its
own keys (:data:`~callscope.records.runs.EXPORT_KEYS`) and which attempt answers
(:data:`~callscope.records.runs.ROW_AT`), no ``first`` or ``final`` row. When read, each
attempt's row is computed from its verdict, its parsed calls and its case (:func:`callscope.saag.score.verdict_row`, the one
function from a verdict to a row: no cascade), its ``diagnosis`` is the version-2 view
(:func:`~callscope.records.answers.verdict_to_dict`), and the outcome's ``first`` and
``final`` rows are those of its first and answering attempts (:meth:`Rederiver.outcome_rows`).

The guard's records (:mod:`callscope.guard.record`, ``callscope serve`` and chat logs) store
their verdicts the same way, with the turn's action class in the attempt's own ``action``:
their row is the guard's (:func:`callscope.saag.score.turn_row`: the answer's row with
``action`` and ``stages``; a turn without a checked call only its ``answer``, ``stage``
``None`` and no ``diagnosis``).

**Versions 1 and 2** (a store written before this, the guard's included, whose rows held the
guard's ``action`` and ``stages`` too) stored each attempt's row beside its verdict and
the outcome's ``first`` and ``final`` rows: they are read as stored. Their verdicts lack why
an unreadable call could not be read, ``expect_call`` and the grounding mode, so no row is
computed from them; the row stored beside them is what that code decided.

The one place an old reply is scored again is where the old form truly lacks the
information, the meaning of an answer without a readable call: cascade version 3
(:data:`~callscope.saag.cascade.CASCADE_VERSION`) judges it from its text
(:mod:`callscope.parse.no_call`), so call-shaped garbage that version 2 stored as
``abstained`` (stage 0 on a case whose gold is ``[]``: "passed") is ``broken`` (stage 1), and
prose is an abstention only where it is one; neither stored form says what the text was
like. A run directory records the cascade version of each model's loop outcomes
(``config:<model>``; a configuration without one: version 1; the guard's and chat logs'
records have none and are never re-derived). For a model scored before
:data:`NO_CALL_FROM_TEXT`, every stored attempt whose row holds no readable call is scored
again from its stored reply, as the loop scores it today
(:func:`callscope.saag.score.score_parsed`, the case's own expectation:
:meth:`Rederiver.attempts`);
its row and diagnosis are replaced when the answer, stage or solve differ, and the outcome is
marked ``rederived``. Attempts with readable calls keep their stored diagnoses (the report
never re-runs the cascade on them). The report's first screen says how many answers were
re-derived and names them (:func:`rederived_line`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from callscope.errors import StoreSchemaError
from callscope.parse import parse_output
from callscope.records.answers import is_record, verdict_from_dict, verdict_to_dict
from callscope.records.runs import EXPORT_KEYS, ROW_AT
from callscope.saag.score import score_parsed, turn_row, verdict_row
from callscope.types import Case, ToolCall

if TYPE_CHECKING:
    from callscope.store.run_store import RunStore

#: the first cascade version that judges an answer without a readable call from its text
NO_CALL_FROM_TEXT = 3
#: the fields of a score row that say what an answer without a call is and whether it passed
_VERDICT_KEYS = ("answer", "stage", "solved", "answer_solved", "parse_error")


def _no_readable_call(row: Mapping[str, Any]) -> bool:
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
        if self._cases is None or case_id not in self._cases:  # cases added since: read again
            self._cases = {c.id: c for c in self._store.iter_cases()}
        return self._cases.get(case_id)

    def attempt_view(self, case_id: str, a: MutableMapping[str, Any]) -> None:
        """An attempt dict as stored, read as this code reads it (changed in place): one that
        stored its verdict whole (version 3) gets its ``row`` computed from it
        (:func:`~callscope.saag.score.verdict_row`) and its ``diagnosis`` as the version-2
        view; any other is left as stored."""
        stored = a.get("diagnosis")
        if "row" in a or not is_record(stored):
            return
        case = self._case(case_id)
        if case is None:
            raise StoreSchemaError(f"{self._store.path}: case {case_id!r} of a verdict is missing")
        verdict = verdict_from_dict(stored, [ToolCall(**c) for c in a.get("parsed") or []])
        action = a.get("action")
        if action is None:  # the loop's attempt
            a["row"] = verdict_row(verdict, case, stored["grounding"])
        else:  # a turn the guard checked: its action and stages beside the answer's row
            a["row"] = turn_row(verdict, case, stored["grounding"], action)
        a["diagnosis"] = verdict_to_dict(verdict) if verdict.checked or action is None else None

    @staticmethod
    def outcome_rows(o: MutableMapping[str, Any], attempts: Sequence[Mapping[str, Any]]) -> None:
        """An outcome dict whose rows were not stored (its ``final`` holds
        :data:`~callscope.records.runs.ROW_AT`) gets them from its attempts (read by :meth:`attempt_view`), changed in place:
        ``first`` the first attempt's row, ``final`` the answering attempt's row (``{"id"}``
        when none was scored) with the outcome's own keys, as
        :meth:`~callscope.records.runs.Outcome.export_row` made it."""
        own = o["final"]
        if not isinstance(own, dict) or ROW_AT not in own:
            return
        own = dict(own)
        at = own.pop(ROW_AT)
        rows = {a["attempt"]: a.get("row") for a in attempts}
        row = rows.get(at) if at is not None else None
        o["first"] = dict(attempts[0]["row"]) if attempts and attempts[0].get("row") else None
        o["final"] = {**(row if row is not None else {"id": o["case_id"]}), **own}

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
