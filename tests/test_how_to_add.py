"""The "How to add ..." claims of ``docs/architecture.md`` for a table format and a
results-file benchmark, checked by doing it (issue 41, item 6): in a copy of ``src/`` in a
temporary folder, add a throwaway format / results source exactly as the document says,
count the files touched, and run the result in a fresh interpreter on that copy; and the
same two (plus a results diagnostic) from another installed distribution, through the
entry-point groups the document names.

The claims checked (the document's words): a table format is **1 file** and then appears in
the output of the commands that write every file format (``report``'s ``tables/``); a
results-file benchmark is **1 package + its registration** (two lines of
``benchmarks/results_source.py``: the import and the ``register_results_source`` line), after
which ``calibrate_from_results`` reads, diagnoses and writes it. Expected numbers are worked
out below from the toy files, not read back.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_registry import make_dist

SRC = Path(__file__).resolve().parents[1] / "src"
TIMEOUT = 180

#: the format the document's example adds: every row as tab-separated text cells
TSV_MODULE = '''
"""A throwaway table format: tab-separated values."""

from callscope.core.table_formats import TableFormat, register_table_format

register_table_format(
    TableFormat(
        "tsv",
        (".tsv",),
        lambda t: "".join("\\t".join(map(str, r)) + "\\n" for r in [t.columns, *t.rows]),
    )
)
'''

#: a results-file benchmark: ``<id>\t<category>\t<reply>\t<passed>`` lines, one turn each
TOY_PACKAGE = '''
"""A throwaway results source: one tab-separated line per case."""

from pathlib import Path
from typing import Any

from callscope.benchmarks.protocol import benchmark_or_default, category_gold_class
from callscope.records import CaseRecord


class ToyResults:
    def __init__(self, records: list[CaseRecord], problems: list[str]) -> None:
        self.records, self.problems = records, problems

    def header_acc(self) -> dict[str, tuple[int, int]]:
        return {}

    def found(self) -> str:
        return f"{len(self.records)} toy cases"

    def describe(self) -> dict[str, Any]:
        return {"cases": len(self.records)}


class ToySource:
    name = "toy"
    title = "toy results"
    diagnostic = "cases"

    def detect(self, path: Path) -> bool:
        return path.suffix == ".toy"

    def read(self, path: Path, **options: Any) -> ToyResults:
        bench = benchmark_or_default(None)
        records, problems = [], []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split("\\t")
            if len(parts) != 4:
                problems.append(f"{path}:{n}: not 4 fields")
                continue
            cid, cat, reply, passed = parts
            gold = category_gold_class(bench, cat)
            records.append(CaseRecord(cid, cat, gold, [[reply]], [0], passed == "1"))
        return ToyResults(records, problems)


TOY_RESULTS = ToySource()
'''

#: miss_param (gold ASK): two cases ask, one calls; BFCL passed two of them (the asker and
#: the caller); one malformed line
TOY_FILE = (
    "a1\tmiss_param\tWhich file do you mean? Please give its name.\t1\n"
    "a2\tmiss_param\tWhat is the name of the folder?\t0\n"
    "a3\tmiss_param\t[cd(folder='tmp')]\t1\n"
    "broken line\n"
)


def snapshot(root: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every source file under ``root``."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.py"))
    }


def touched(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files added, changed or removed between two snapshots."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of ``src/`` (the package only, no caches)."""
    dest = tmp_path / "src"
    shutil.copytree(
        SRC / "callscope", dest / "callscope", ignore=shutil.ignore_patterns("__pycache__")
    )
    return dest


def python(code: str, path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a fresh interpreter with ``path`` first on its import path."""
    env = {**os.environ, "PYTHONPATH": str(path), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
        env=env, cwd=cwd, check=False,
    )  # fmt: skip


def cli(path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from callscope.cli.main import main; sys.argv[0] = 'callscope'; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(path), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=TIMEOUT,
        env=env, cwd=cwd, check=False,
    )  # fmt: skip


def test_a_table_format_is_one_file_and_appears_in_the_report_tables(tree: Path) -> None:
    before = snapshot(tree)
    (tree / "callscope" / "core" / "table_formats" / "tsv.py").write_text(TSV_MODULE, "utf-8")
    assert touched(before, snapshot(tree)) == ["callscope/core/table_formats/tsv.py"]

    work = tree.parent
    where = python("import callscope; print(callscope.__file__)", tree, work)
    assert where.stdout.strip() == str(tree / "callscope" / "__init__.py")
    fn = {
        "name": "get_weather",
        "description": "Weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
    (work / "cases.jsonl").write_text(
        json.dumps({"id": "c1", "query": "Weather in Oslo?", "functions": [fn],
                    "gold": {"name": "get_weather", "arguments": {"city": "Oslo"}}}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    (work / "replay.jsonl").write_text(
        json.dumps({"case_id": "c1", "output": "get_weather(city='Oslo')"}) + "\n", "utf-8"
    )
    run = cli(tree, work, "run", "cases.jsonl", "-m", "replay:replay.jsonl", "--modes",
              "direct", "-o", "run", "--quiet", "--no-cache")  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = cli(tree, work, "report", "run")
    assert report.returncode == 0, report.stderr
    tables = work / "run" / "tables"
    md = sorted(p.stem for p in tables.glob("*.md"))
    assert md and sorted(p.stem for p in tables.glob("*.tsv")) == md  # one .tsv per table
    compared = 0
    for stem in md:
        tsv = (tables / f"{stem}.tsv").read_text(encoding="utf-8").splitlines()
        pipes = [t for t in (tables / f"{stem}.md").read_text("utf-8").splitlines() if t[:1] == "|"]
        if not pipes:  # a table without rows says so in a line instead
            continue
        assert tsv[0].split("\t") == [c.strip() for c in pipes[0].strip("|").split("|")]
        assert len(tsv) - 1 == len(pipes) - 2  # the same rows (Markdown: header and rule)
        compared += 1
    assert compared >= 3


def test_a_results_source_is_one_package_and_its_registration(tree: Path) -> None:
    before = snapshot(tree)
    package = tree / "callscope" / "benchmarks" / "toy"
    package.mkdir()
    (package / "__init__.py").write_text(TOY_PACKAGE, encoding="utf-8")
    registry = tree / "callscope" / "benchmarks" / "results_source.py"
    old = registry.read_text(encoding="utf-8")
    new = (
        old.replace(
            "from callscope.benchmarks.tau2.source import TAU2_RESULTS\n",
            "from callscope.benchmarks.tau2.source import TAU2_RESULTS\n"
            "from callscope.benchmarks.toy import TOY_RESULTS\n",
        )
        + "register_results_source(TOY_RESULTS)\n"
    )
    registry.write_text(new, encoding="utf-8")
    assert touched(before, snapshot(tree)) == [
        "callscope/benchmarks/results_source.py",
        "callscope/benchmarks/toy/__init__.py",
    ]
    diff = [d for d in difflib.ndiff(old.splitlines(), new.splitlines()) if d[:2] in ("+ ", "- ")]
    assert diff == [
        "+ from callscope.benchmarks.toy import TOY_RESULTS",
        "+ register_results_source(TOY_RESULTS)",
    ]

    work = tree.parent
    (work / "run.toy").write_text(TOY_FILE, encoding="utf-8")
    done = python(
        textwrap.dedent(
            """
            from callscope.benchmarks.results_source import detect_results_source
            from callscope.runs.from_results import calibrate_from_results
            print(detect_results_source("run.toy").name)
            done = calibrate_from_results("toy", "run.toy", "out")
            print(*[p.name for p in done.written])
            """
        ),
        tree,
        work,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["toy", "calibration-from-toy.json"]
    data = json.loads((work / "out" / "calibration-from-toy.json").read_text(encoding="utf-8"))
    (row,) = data["rows"]
    # gold ASK: a1 and a2 ask (2 of 3), BFCL passed a1 and a3 (2 of 3)
    assert (row["category"], row["gold_class"], row["n"]) == ("miss_param", "ASK", 3)
    assert (row["gar_case_k"], row["acc_k"], row["acc_n"]) == (2, 2, 3)
    assert data["source"]["problems"] == [f"{Path('run.toy')}:4: not 4 fields"]


def test_another_distribution_adds_a_format_a_results_source_and_its_diagnostic(
    tmp_path: Path,
) -> None:
    """The entry-point groups ``callscope.table_formats``, ``callscope.results_sources`` and
    ``callscope.results_diagnostics``: nothing of callscope is edited."""
    plugin = TOY_PACKAGE.replace(
        'diagnostic = "cases"', 'diagnostic = "toycount"'
    ) + textwrap.dedent(
        """
        from callscope.core.table_formats import TableFormat
        from callscope.runs.from_results import ResultsDiagnostic

        TSV = TableFormat("tsv", (".tsv",), lambda t: "\\t".join(t.columns) + "\\n")
        TOYCOUNT = ResultsDiagnostic(
            "toycount",
            "toy-{source}",
            lambda read, source, results, **options: len(read.records),
            lambda read, diag: {"cases": diag, "problems": read.problems},
        )
        """
    )
    make_dist(
        tmp_path / "site",
        "callscope_toy_plugin",
        """
        [callscope.table_formats]
        tsv = toy_plugin:TSV
        [callscope.results_sources]
        toy = toy_plugin:TOY_RESULTS
        [callscope.results_diagnostics]
        toycount = toy_plugin:TOYCOUNT
        """,
        {"toy_plugin": plugin},
    )
    (tmp_path / "run.toy").write_text(TOY_FILE, encoding="utf-8")
    done = python(
        textwrap.dedent(
            """
            from callscope.core.table import Table
            from callscope.core.table_formats import file_formats, write_table
            from callscope.runs.from_results import RESULTS_DIAGNOSTICS, calibrate_from_results
            write_table(Table(["a", "b"], [["1", "2"]]), "t.tsv")
            written = calibrate_from_results("toy", "run.toy", "out").written[0].name
            print(",".join(file_formats()), RESULTS_DIAGNOSTICS.plugins)
            print(written)
            """
        ),
        Path(os.pathsep.join([str(tmp_path / "site"), str(SRC)])),
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    formats, plugins, written = done.stdout.splitlines()[0].split(" ", 1) + [
        done.stdout.splitlines()[1]
    ]
    assert formats == "markdown,latex,csv,tsv"  # the plugin's format is written by default
    assert plugins == "{'toycount': 'toy_plugin:TOYCOUNT'}"
    assert (tmp_path / "t.tsv").read_text(encoding="utf-8") == "a\tb\n"
    assert written == "toy-toy.json"
    data = json.loads((tmp_path / "out" / "toy-toy.json").read_text(encoding="utf-8"))
    assert data == {"cases": 3, "problems": ["run.toy:4: not 4 fields"]}
