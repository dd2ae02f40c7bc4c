"""The ``callscope classify`` driver: the action class of every emission of a JSONL file.

Reads ``{"id", "emission"}`` rows (:func:`callscope.benchmarks.emission_rows.read_emission_rows`),
classifies each (:mod:`callscope.calibration.classify`) and writes one result line per row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from callscope.benchmarks.emission_rows import read_emission_rows
from callscope.calibration.classify import DEFAULT, ClassifierConfig, emission_classes, resolve
from callscope.types import ACTION_CLASSES


def classify_jsonl(
    in_path: str | Path, out_path: str | Path, config: ClassifierConfig = DEFAULT
) -> dict[str, Any]:
    """Classify every row of a JSONL file of ``{"id", "emission"}`` into ``out_path``.

    Each output line is ``{"id", "class", "classes", "config"}`` (``classes`` = every class
    that fired, in :data:`ACTION_CLASSES` order), or ``{"id", "line", "error", "config"}`` for
    a malformed input line (not JSON, not an object, no ``emission``, unsupported shape).
    Blank lines are skipped. Returns a summary: ``rows``, ``errors``, ``counts`` per class
    and ``config``.
    """
    counts = {c: 0 for c in ACTION_CLASSES}
    rows = errors = 0
    recorded = config.to_dict()
    source = read_emission_rows(in_path)
    with open(out_path, "w", encoding="utf-8") as dst:
        for row in source:
            rows += 1
            error = row.error
            if error is None:
                try:
                    classes = emission_classes(row.emission, config)
                except TypeError as exc:
                    error = f"unsupported emission: {exc}"
            if error is not None:
                errors += 1
                out = {"id": row.id, "line": row.line, "error": error, "config": recorded}
            else:
                cls = resolve(classes, config)
                counts[cls] += 1
                out = {
                    "id": row.id,
                    "class": cls,
                    "classes": [c for c in ACTION_CLASSES if c in classes],
                    "config": recorded,
                }
            dst.write(json.dumps(out, ensure_ascii=False) + "\n")
    return {"rows": rows, "errors": errors, "counts": counts, "config": config.to_dict()}
