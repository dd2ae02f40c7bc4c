"""The examples in docstrings run: ``doctest.testmod`` over every module that has them.

The modules are listed here, not collected with pytest's ``--doctest-modules`` over the tree
(that would import every module, optional heavy dependencies included); a test keeps the list
equal to the set of modules whose source holds a ``>>>`` example.
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: every module with doctests: the records, the registry type, the statistics and the metrics
DOCTEST_MODULES = (
    "callscope.records.verdicts",
    "callscope.records.wire",
    "callscope.report.aggregate",
    "callscope.saag.value_rules",
    "callscope.core.registry",
    "callscope.core.stats",
    "callscope.models.prefix_cache",
    "callscope.models.usage",
    "callscope.models.http",
    "callscope.core.jsonl",
    "callscope.core.text",
    "callscope.core.table",
    "callscope.guard.upstream_url",
    "callscope.guard.upstream_answer",
    "callscope.parse.literals",
    "callscope.parse.no_call",
    "callscope.types",
    "callscope.cli.common",
    "callscope.calibration.classify.rules",
    "callscope.report.case_data",
    "callscope.saag.grounding",
    "callscope.saag.intrinsic",
    "callscope.saag.cascade",
    "callscope.saag.registry_index",
    "callscope.saag.extrinsic",
    "callscope.saag.metrics",
    "callscope.saag.stage_mix",
    "callscope.saag.answer",
    "callscope.saag.ask",
    "callscope.guard.inputs",
    "callscope.saag.normalise.descriptions",
    "callscope.benchmarks.bfcl.single",
    "callscope.benchmarks.bfcl.answer_agreement",
    "callscope.benchmarks.bfcl.single_results",
    "callscope.benchmarks.bfcl.single_lines",
    "callscope.parse.bfcl_decode",
    "callscope.benchmarks.sources",
    "callscope.cli.calibrate_legacy",
    "callscope.cli.main",
    "callscope.report.sections",
    "callscope.runs.progress",
    "callscope.integrations.formats",
    "callscope.guard.proxy.request",
    "callscope.guard.proxy.events",
)

_EXAMPLE = re.compile(r"^\s*>>> ", re.M)


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_the_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0, f"{name} has no doctest: take it off DOCTEST_MODULES"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests of {name} failed"


def test_every_module_with_examples_is_listed() -> None:
    found = set()
    for path in (SRC / "callscope").rglob("*.py"):
        if _EXAMPLE.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(SRC).with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert found == set(DOCTEST_MODULES)
