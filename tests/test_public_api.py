"""The public API of ``import callscope``: a curated ``__all__`` of verbs and types whose names
load lazily (PEP 562), no mutable registry in it, a cheap import, the table of it in
docs/diagnose.md, and that page's "As a library" example running as written."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import callscope

ROOT = Path(__file__).resolve().parents[1]
# the hosts of the integrations (issue 30) too: only their own module imports them
HEAVY = ("pandas", "matplotlib", "llama_cpp", "numpy", "bfcl_eval", "inspect_ai", "agents")


def _modules_after(code: str) -> list[str]:
    """``sys.modules`` of a fresh interpreter after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_every_public_name_resolves() -> None:
    assert len(callscope.__all__) == len(set(callscope.__all__)) >= 20
    for name in callscope.__all__:
        obj = getattr(callscope, name)
        assert obj is getattr(importlib.import_module(callscope._EXPORTS[name]), name)


def test_all_the_export_map_and_the_type_checking_imports_agree() -> None:
    assert list(callscope._EXPORTS) == callscope.__all__
    tree = ast.parse(Path(callscope.__file__).read_text(encoding="utf-8"))
    block = next(
        n
        for n in tree.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    )
    typed = {
        a.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for a in node.names
    }
    assert typed == callscope._EXPORTS


def test_the_api_is_verbs_and_types_without_confusable_or_mutable_names() -> None:
    """No registry or other mutable mapping in the namespace (the grounding modes are a
    function); the lower-level twins of a public verb or type stay in their packages."""
    for name in callscope.__all__:
        assert not isinstance(getattr(callscope, name), Mapping | list | set), name
    for twin in ("GROUNDINGS", "parse_text", "compute_diagnostics", "CaseRecord", "run_loop"):
        assert twin not in callscope.__all__
    assert callscope.grounding_modes() == ("lexical", "registry")
    assert callscope.Diagnosis is importlib.import_module("callscope.records").Diagnosis


def test_the_docs_list_the_public_api() -> None:
    """The table of the public API in docs/diagnose.md (the README's until issue 45) names
    every public name, and no other."""
    text = (ROOT / "docs" / "diagnose.md").read_text(encoding="utf-8")
    start = text.index("`callscope.__all__` is the public API")
    table = text[start : text.index("\n\n", text.index("| for |", start))]
    named = set(re.findall(r"`([A-Za-z_]+)(?:\(\))?`", table)) - {"lexical"}
    assert named == set(callscope.__all__)


def test_version_dir_and_unknown_names() -> None:
    try:
        expected = importlib.metadata.version("callscope")
    except importlib.metadata.PackageNotFoundError:
        expected = "0+unknown"
    assert callscope.__version__ == expected
    assert set(callscope.__all__) <= set(dir(callscope)) and "__version__" in dir(callscope)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        callscope.nope  # noqa: B018


def test_import_callscope_is_cheap() -> None:
    """``import callscope`` loads no submodule and nothing heavy."""
    mods = _modules_after("import callscope")
    assert [m for m in mods if m.startswith("callscope")] == ["callscope"]
    assert [m for m in mods if m.split(".")[0] in HEAVY] == []


def test_light_names_do_not_pull_heavy_dependencies() -> None:
    mods = _modules_after(
        "import callscope\ncallscope.parse_output\ncallscope.diagnose\ncallscope.RunStore"
    )
    assert [m for m in mods if m.split(".")[0] in ("pandas", "matplotlib", "llama_cpp")] == []


def test_the_command_line_loads_no_pandas_matplotlib_or_llama_cpp() -> None:
    """Every command module is imported to build the app; heavy modules are lazy."""
    mods = _modules_after("import callscope.cli")
    assert [m for m in mods if m.split(".")[0] in ("pandas", "matplotlib", "llama_cpp")] == []


def readme_library_example() -> str:
    """The library example of docs/diagnose.md (the README's until issue 45), a script."""
    text = (ROOT / "docs" / "diagnose.md").read_text(encoding="utf-8")
    start = text.index("As a library")
    match = re.search(r"\$ python - <<'PY'\n(.*?)\nPY\n", text[start:], re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_library_example_runs() -> None:
    code = readme_library_example()
    assert "import callscope\n" in code and "from callscope" not in code
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert res.returncode == 0, res.stderr
    first, fix = res.stdout.splitlines()[:2]
    assert first == "2 0.5"  # stage 2 (structure): tip_percentage is missing
    assert "missing" in fix


def test_the_score_command_starts_without_pydantic_httpx_or_the_runner(tmp_path) -> None:
    """``callscope score`` on one row (the console script's entry point, as installed) scores
    it and loads only what scoring needs: not pydantic (typer 0.29 builds pydantic adapters
    for every option, hence the pin below it), not httpx or numpy, not the runner, store or
    report."""
    row = {
        "id": "r1",
        "query": "What is the weather in Paris?",
        "functions": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
        "output": '{"name": "get_weather", "arguments": {}}',
    }
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps(row) + "\n", encoding="utf-8")
    mods = _modules_after(
        "import sys\n"
        f"sys.argv = ['callscope', 'score', {str(src)!r}, '-o', {str(out)!r}]\n"
        "from callscope.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code"
    )
    assert json.loads(out.read_text(encoding="utf-8"))["id"] == "r1"
    tops = {m.split(".")[0] for m in mods}
    assert tops.isdisjoint({"pydantic", "httpx", "openai", *HEAVY})
    assert not [
        m for m in mods if m.startswith(("callscope.runs", "callscope.store", "callscope.report"))
    ]
