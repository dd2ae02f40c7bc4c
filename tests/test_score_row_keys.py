"""The ``score`` row's declared type (:class:`callscope.records.ScoreRow`) names every key its
writers put in a row (issue 41: the writer returns the typed record readers are typed for)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from callscope.records import ScoreRow
from callscope.saag.score import score_row

FN = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CALL = {"name": "get_weather", "arguments": {"city": "Paris"}}
BASE = {"id": "r", "query": "Weather in Paris", "functions": [FN]}


@pytest.mark.parametrize(
    "row",
    [
        {**BASE, "output": json.dumps(CALL)},  # one call, no gold
        {**BASE, "output": json.dumps(CALL), "gold": CALL},  # the paper's one gold call
        {**BASE, "output": json.dumps([CALL, CALL]), "gold": [CALL]},  # an answer, repeated
        {**BASE, "output": "No.", "gold": []},  # an abstention where none is right
        {**BASE, "output": '{"name": "get_weather", "arguments": {"city": '},  # broken
        {**BASE},  # no output: an error row
    ],
)
def test_every_key_of_a_score_row_is_declared(row: dict[str, Any]) -> None:
    out = score_row(row)
    assert set(out) - set(ScoreRow.__annotations__) == set()


def test_the_outcome_keys_of_an_exported_row_are_the_declared_ones() -> None:
    """``Outcome.export_row`` adds only :data:`callscope.records.runs.EXPORT_KEYS` to the final
    row (the report's re-derivation keeps exactly those when it replaces the row)."""
    from callscope.records import Attempt, Outcome
    from callscope.records.runs import EXPORT_KEYS

    row = score_row({**BASE, "output": json.dumps(CALL)})
    attempt = Attempt(1, [], None, [], row, None)
    outcome = Outcome("r", "gated", [attempt], error="boom", error_kind="backend", answer_at=1)
    outcome.stop = "budget"
    exported = outcome.export_row("m", 5)
    assert set(exported) - set(row) == set(EXPORT_KEYS)
