"""A resumed run's cases against the ones its store holds: a run directory keeps each case
as it was first run (:meth:`~callscope.store.run_store.RunStore.add_cases` never overwrites
one), so a cases file edited since (a case id whose query, functions, gold, scale or meta
changed) would be resumed against the old case, its outcomes reported as if of the new
one. :func:`changed_case` finds the first such case; ``run`` and ``experiment`` refuse it
(:func:`callscope.runs.runner.run_cases`). New case ids are not changes: adding cases to
the file and resuming runs them."""

from __future__ import annotations

from collections.abc import Sequence

from callscope.store.run_store import RunStore
from callscope.types import Case

#: the parts of a case compared, in the order a change is reported
CASE_FIELDS: tuple[str, ...] = ("query", "functions", "gold", "scale", "meta")


def changed_case(store: RunStore, cases: Sequence[Case]) -> tuple[str, list[str]] | None:
    """The id of the first of ``cases`` (in their order) that ``store`` holds with other
    content, and the parts that differ (:data:`CASE_FIELDS`); ``None`` when every case the
    store holds is as given. Both sides go through :class:`~callscope.types.Case` and its
    ``to_dict`` and compare as values (key order and ``15`` / ``15.0`` do not count), so a
    case stored by an older callscope compares by what it means."""
    wanted = {c.id for c in cases}
    stored = {c.id: c for c in store.iter_cases() if c.id in wanted}
    for case in cases:
        old = stored.get(case.id)
        if old is None:
            continue
        before, after = old.to_dict(), case.to_dict()
        diffs = [k for k in CASE_FIELDS if before.get(k) != after.get(k)]
        if diffs:
            return case.id, diffs
    return None


def changed_case_message(store: RunStore, case_id: str, diffs: list[str]) -> str:
    """The one line refusing a resumed run whose cases file changed the case ``case_id``."""
    return (
        f"run directory {store.run_dir} holds case {case_id!r} with another "
        f"{', '.join(diffs)}: the cases file changed since the run started, and a resumed "
        "run keeps the cases it started with; restore the case, give the edited case a new "
        "id, or use a new output directory"
    )
