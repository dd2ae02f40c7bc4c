"""The layer rule: data flows one way, so a lower layer never imports a higher one.

Walks every module's imports with ``ast`` (module-level and function-level alike) and checks
them against :data:`LAYERS`; also that the package graph has no cycle and that function-level
imports are only the documented lazy loads of heavy optional dependencies.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "callscope"

#: lowest first; a package may import its own layer and the ones before it
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "types"),
    ("core", "records"),
    ("parse",),
    ("saag",),
    ("models",),
    ("benchmarks",),
    ("store",),
    ("calibration",),
    ("runs",),
    ("guard",),
    ("integrations",),
    ("report",),
    ("cli",),
    ("__init__",),
)
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def package_of(module: str) -> str:
    """``callscope.saag.cascade`` -> ``saag``; ``callscope`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[str, int, bool]]:
    """``(imported callscope module, line, at module level)`` for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # imports under `if TYPE_CHECKING:` count as module level
        if isinstance(node, ast.If | ast.Try):
            top.update(id(n) for n in ast.walk(node))
    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "callscope" or name.startswith("callscope."):
                out.append((name, node.lineno, id(node) in top))
    return out


def all_modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


def violations(modules: list[Path]) -> list[str]:
    bad: list[str] = []
    for path in modules:
        mod = module_name(path)
        own = package_of(mod)
        for target, line, _ in imports_of(path):
            other = package_of(target)
            if other not in RANK:
                bad.append(f"{mod}:{line} imports {target}: package {other!r} has no layer")
            elif own not in RANK:
                bad.append(f"{mod}: package {own!r} has no layer")
            elif RANK[other] > RANK[own]:
                bad.append(f"{mod}:{line} imports {target} (layer {other} is above {own})")
    return bad


def test_every_package_has_a_layer():
    packages = {package_of(module_name(p)) for p in all_modules()}
    assert packages - set(RANK) == set()


def test_lower_layers_never_import_higher_ones():
    assert violations(all_modules()) == []


def test_the_check_fails_on_a_reverse_import(tmp_path):
    """The rule has teeth: a parse module importing the report layer is reported."""
    fake = SRC / "parse" / "_reverse_probe.py"
    fake.write_text("from callscope.report.html import build_report\n", encoding="utf-8")
    try:
        found = violations([fake])
    finally:
        fake.unlink()
    assert found == [
        "callscope.parse._reverse_probe:1 imports callscope.report.html "
        "(layer report is above parse)"
    ]


def test_no_cycles_between_packages():
    edges: dict[str, set[str]] = {}
    for path in all_modules():
        own = package_of(module_name(path))
        for target, _, _ in imports_of(path):
            other = package_of(target)
            if other != own:
                edges.setdefault(own, set()).add(other)
    seen: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(node: str, trail: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if seen.get(nxt) == 1:
                pytest.fail("import cycle between packages: " + " -> ".join([*trail, nxt]))
            if nxt not in seen:
                visit(nxt, [*trail, nxt])
        seen[node] = 2

    for start in sorted(edges):
        if start not in seen:
            visit(start, [start])


def test_function_level_imports_say_why():
    """A function-level import of callscope code is a lazy load of a heavy optional
    dependency (llama.cpp, bfcl-eval, matplotlib, pandas...) and says so on its line or the
    line before: ``# lazy: <reason>``."""
    undocumented: list[str] = []
    for path in all_modules():
        lines = path.read_text(encoding="utf-8").splitlines()
        for target, line, top in imports_of(path):
            if top:
                continue
            context = " ".join(lines[max(0, line - 2) : line])
            if "# lazy:" not in context:
                undocumented.append(f"{module_name(path)}:{line} imports {target}")
    assert undocumented == []
