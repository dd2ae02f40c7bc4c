"""Calibration is generic: its modules never import a benchmark's own package.

Category order, short names and gold classes come from the benchmark (the protocol's
:class:`~callscope.benchmarks.protocol.CategoryTable`, BFCL's by default) or from the caller;
the τ²-bench modules (``tau2*.py``, which read τ²'s own task files) are the stated exception.
A second benchmark's categories are ordered and named by its own table.
"""

from __future__ import annotations

import ast
from pathlib import Path

from callscope.benchmarks.protocol import (
    category_gold_class,
    category_key,
    get_benchmark,
    short_category,
)
from callscope.calibration.diagnostics import compute_diagnostics
from callscope.calibration.panel import build_panel
from callscope.records import CaseRecord
from callscope.types import ASK, TOOL_CALL

CALIBRATION = Path(__file__).resolve().parents[1] / "src" / "callscope" / "calibration"
#: modules allowed to read one benchmark's own files (τ²-bench's rules and tables)
EXEMPT = ("tau2",)


def benchmark_imports(path: Path) -> list[str]:
    """``module:line imports target`` for every import of a benchmark's own package
    (``callscope.benchmarks.bfcl``, ``callscope.benchmarks.tau2``), and ``module:line names
    benchmarks.bfcl`` for every other line that names BFCL's package (the ``grep`` of issue 27)."""
    text = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.split(".")[:3] in (
                ["callscope", "benchmarks", "bfcl"],
                ["callscope", "benchmarks", "tau2"],
            ):
                found.append(f"{path.name}:{node.lineno} imports {name}")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "benchmarks.bfcl" in line and not line.lstrip().startswith(("from ", "import ")):
            found.append(f"{path.name}:{lineno} names benchmarks.bfcl")
    return found


def test_the_check_sees_a_bfcl_import(tmp_path: Path) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from callscope.benchmarks.bfcl.categories import category_key\n"
        "import callscope.benchmarks.tau2.reader\n"
        "#: see callscope.benchmarks.bfcl.results\n",
        encoding="utf-8",
    )
    assert benchmark_imports(fake) == [
        "fake.py:1 imports callscope.benchmarks.bfcl.categories",
        "fake.py:2 imports callscope.benchmarks.tau2.reader",
        "fake.py:3 names benchmarks.bfcl",
    ]


class Rooms:
    """A benchmark with categories only: no category table of its own."""

    name = "rooms"
    categories = ("kitchen", "attic")


def test_a_benchmark_without_a_table_orders_by_its_categories() -> None:
    rooms = Rooms()
    assert sorted(["zoo", "attic", "kitchen"], key=lambda c: category_key(rooms, c)) == [
        "kitchen",
        "attic",
        "zoo",
    ]
    assert short_category(rooms, "attic") == "attic"
    try:
        category_gold_class(rooms, "attic")
    except ValueError as exc:
        assert "attic" in str(exc)
    else:  # pragma: no cover - the assertion above is the test
        raise AssertionError("a benchmark without a table knows no gold class")
    records = [
        CaseRecord("a1", "attic", ASK, [["Which box?"]], [0], True),
        CaseRecord("k1", "kitchen", TOOL_CALL, [["[boil(water=1)]"]], [0], True),
    ]
    diag = compute_diagnostics(records, benchmark=rooms)  # type: ignore[arg-type]
    assert [r["category"] for r in diag.rows] == ["kitchen", "attic"]
    panel = build_panel({"m": diag}, benchmark=rooms)  # type: ignore[arg-type]
    assert panel.categories == ["kitchen", "attic"]


def test_bfcl_offers_its_table_through_the_protocol() -> None:
    bfcl = get_benchmark("bfcl")
    names = ["multi_turn_long_context", "miss_func", "base", "multi_turn_miss_param"]
    ordered = sorted(names, key=lambda c: category_key(bfcl, c))
    assert [short_category(bfcl, c) for c in ordered] == [
        "base",
        "miss_param",
        "miss_func",
        "long_context",
    ]
    assert category_gold_class(bfcl, "multi_turn_miss_param") == ASK
