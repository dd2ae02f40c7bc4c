"""The code base stays ruff-clean (the project's lint settings live in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean() -> None:
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (it is in the test extra)")
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_no_eval_or_exec_in_the_package() -> None:
    """Model text is data: nothing in callscope evaluates strings."""
    offenders = []
    for path in (ROOT / "src" / "callscope").rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            for word in ("eval(", "exec("):
                i = code.find(word)
                called = i >= 0 and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] in "_."))
                if called and not code[:i].rstrip().endswith("def"):  # a method named eval is fine
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []


def test_ruff_format_is_applied() -> None:
    """One formatter (ruff format, settings in pyproject.toml); no hand-aligned exceptions."""
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (it is in the test extra)")
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr


#: the longest a module of the package may be (issue 48: a module past it holds more than one
#: concept; split it by concept, not by line count)
MAX_MODULE_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "src").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"
