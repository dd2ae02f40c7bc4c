"""Reading and writing :class:`~callscope.records.CaseRecord` files: JSON Lines, one record
per line (the input of the action-class diagnostics, :mod:`callscope.calibration.diagnostics`).

A record may omit ``gold_class``: the benchmark's category table supplies it
(:func:`callscope.benchmarks.protocol.category_gold_class`; BFCL by default).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from callscope.benchmarks.protocol import (
    MultiTurnBenchmark,
    benchmark_or_default,
    category_gold_class,
)
from callscope.core.jsonl import dumps_safe, loads_bounded, read_lines
from callscope.records import CaseRecord


def read_case_records(
    path: str | Path, benchmark: MultiTurnBenchmark[Any] | None = None
) -> tuple[list[CaseRecord], list[str]]:
    """Read a JSONL file of :class:`CaseRecord` rows; returns the records and one message per
    malformed line (``path:line: reason``). Blank lines are skipped. A row without
    ``gold_class`` takes its category's from ``benchmark`` (default:
    :data:`~callscope.benchmarks.protocol.DEFAULT_BENCHMARK`)."""
    gold_class_of = partial(category_gold_class, benchmark_or_default(benchmark))
    records: list[CaseRecord] = []
    problems: list[str] = []
    for lineno, line in read_lines(path):  # the one bounded line reader
        if isinstance(line, ValueError):
            problems.append(f"{path}:{lineno}: {line}")
            continue
        try:
            records.append(CaseRecord.from_dict(loads_bounded(line), gold_class_of))
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg})")
        except ValueError as exc:
            problems.append(f"{path}:{lineno}: {exc}")
    return records, problems


def write_case_records(path: str | Path, records: Iterable[CaseRecord]) -> None:
    """Write records as JSONL (the format :func:`read_case_records` reads)."""
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(dumps_safe(rec.to_dict()) + "\n")
