"""The cascade's verdicts are versioned (``callscope.saag.cascade.CASCADE_VERSION``): a run
directory records the version its outcomes were scored with and is not resumed by another
(tests/test_loop.py). This test pins each version to a digest of what the cascade says on real
BFCL calls, so a change that moves any verdict fails here until the version is raised."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from callscope.saag.audit import audit, gold_calls
from callscope.saag.cascade import CASCADE_VERSION, diagnose

#: CASCADE_VERSION -> the digest of :func:`verdicts` (first 120 BFCL S=5 cases, seed 0)
DIGESTS = {
    2: "c035fe5b90e524bc2add64c57cdd240381e0b6eadcbc185e3a6870a5b42453dd",
    3: "86b0fb8df8c4a5e32ba32043ce8a878a266660ae382699397ebe839d4661d90d",
    4: "bd12f2f3cc750d231d2ae168fcaacb7d09b5d86d00daef9e7c5b6a9fdd2db06c",
    5: "405da257954ba739cc2f07d114aa82cf760534e63c0ac3440ffc8f6772cbefb4",
    # 6 moved verdicts only for schemas that say additionalProperties, which BFCL's never do
    6: "405da257954ba739cc2f07d114aa82cf760534e63c0ac3440ffc8f6772cbefb4",
    # 7 moved verdicts only for calls of more than 32 unknown argument names and specs that
    # repeat a required name, which BFCL's never have
    7: "405da257954ba739cc2f07d114aa82cf760534e63c0ac3440ffc8f6772cbefb4",
}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def verdicts(cases: list[Any]) -> list[Any]:
    """In both grounding modes: every diagnosis (stage, metrics, flagged arguments, reasons)
    of each case's gold call, full and minimal, and the audit's verdict on every call made
    wrong on purpose."""
    out: list[Any] = []
    for mode in ("lexical", "registry"):
        for case in cases:
            for call in gold_calls(case) or ():
                d = diagnose(call, case.functions, case.query, grounding=mode)
                out.append([mode, case.id, _rounded(d.to_dict())])
        out += [
            [mode, r.case_id, r.kind, r.stage, r.flagged] for r in audit(cases, grounding=mode).rows
        ]
    return out


def test_the_cascade_version_names_its_verdicts() -> None:
    pytest.importorskip("bfcl_eval")
    from callscope.benchmarks.sources import build_benchmark

    cases = build_benchmark("bfcl", scales=[5], n=120, seed=0).cases
    digest = hashlib.sha256(json.dumps(verdicts(cases), sort_keys=True).encode()).hexdigest()
    assert DIGESTS.get(CASCADE_VERSION) == digest, (
        f"the cascade's verdicts changed (digest {digest}): if that is intended, raise "
        "CASCADE_VERSION in callscope/saag/cascade.py, say there what changed, and add "
        "the new version's digest to DIGESTS"
    )
