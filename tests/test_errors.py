"""The error hierarchy of :mod:`callscope.errors`: one base class, the builtin bases kept,
every kind documented in errors.py's docstring and raised somewhere in the package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import callscope.errors as errors_mod
from callscope.benchmarks.bfcl.package import BfclUnavailableError
from callscope.benchmarks.glaive import GlaiveCallError, GlaiveSchemaError, GlaiveSourceError
from callscope.benchmarks.tau2.reader import Tau2FormatError
from callscope.errors import (
    CallscopeError,
    DataFormatError,
    ModelError,
    StoreSchemaError,
)
from callscope.models.weights import WeightsError

SRC = Path(errors_mod.__file__).resolve().parent


def _base_names(node: ast.ClassDef) -> list[str]:
    return [
        b.id if isinstance(b, ast.Name) else b.attr
        for b in node.bases
        if isinstance(b, ast.Name | ast.Attribute)
    ]


def _classes() -> dict[str, tuple[list[str], Path]]:
    """Every class defined in the package: name -> (base names, file)."""
    out: dict[str, tuple[list[str], Path]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out[node.name] = (_base_names(node), path)
    return out


def _callscope_errors() -> dict[str, Path]:
    """Names of every class in src/ that derives (by name, transitively) from CallscopeError."""
    classes = _classes()
    found = {"CallscopeError": SRC / "errors.py"}
    grew = True
    while grew:
        grew = False
        for name, (bases, path) in classes.items():
            if name not in found and any(b in found for b in bases):
                found[name] = path
                grew = True
    return found


def _raised_names() -> set[str]:
    """Names used in ``raise X(...)`` / ``raise X`` anywhere in src/."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name):
                    names.add(exc.id)
                elif isinstance(exc, ast.Attribute):
                    names.add(exc.attr)
    return names


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (ModelError, RuntimeError),
        (WeightsError, RuntimeError),
        (DataFormatError, ValueError),
        (StoreSchemaError, ValueError),
        (GlaiveSourceError, ValueError),
        (GlaiveSchemaError, ValueError),
        (GlaiveCallError, ValueError),
        (Tau2FormatError, ValueError),
        (BfclUnavailableError, ImportError),
    ],
)
def test_every_kind_is_a_callscope_error_and_keeps_its_builtin_base(cls, builtin) -> None:
    assert issubclass(cls, CallscopeError) and issubclass(cls, builtin)


def test_format_errors_are_data_format_errors() -> None:
    for cls in (
        StoreSchemaError,
        GlaiveSourceError,
        GlaiveSchemaError,
        GlaiveCallError,
        Tau2FormatError,
    ):
        assert issubclass(cls, DataFormatError)
    assert issubclass(WeightsError, ModelError)


def test_model_error_keeps_its_kind() -> None:
    err = ModelError("down", kind="connection")
    assert err.kind == "connection" and str(err) == "down"
    assert ModelError("x").kind == "error"
    assert WeightsError("gone").kind == "weights"
    with pytest.raises(RuntimeError):
        raise ModelError("still a RuntimeError")


def test_bfcl_unavailable_is_still_an_import_error() -> None:
    err = BfclUnavailableError("pip install bfcl-eval")
    assert err.msg == "pip install bfcl-eval"
    with pytest.raises(ImportError):
        raise err


def test_every_callscope_error_in_src_is_documented_in_errors_py() -> None:
    doc = errors_mod.__doc__ or ""
    undocumented = sorted(n for n in _callscope_errors() if f"``{n}``" not in doc)
    assert undocumented == []


def test_the_docstring_documents_only_real_classes() -> None:
    """Each kind listed in the docstring (a line ````Name```` (````Base````; ...) exists."""
    doc = errors_mod.__doc__ or ""
    listed = set(re.findall(r"(?m)^``(\w+)`` \(``", doc))
    assert listed == set(_callscope_errors())


def test_every_class_in_errors_py_is_raised_in_src() -> None:
    """A class of errors.py is raised by name, or through one of its subclasses."""
    found = _callscope_errors()
    classes = _classes()
    raised = _raised_names()

    def raised_via(name: str) -> bool:
        if name in raised:
            return True
        subs = [n for n in found if name in classes.get(n, ([], None))[0]]
        return any(raised_via(s) for s in subs)

    tree = ast.parse((SRC / "errors.py").read_text(encoding="utf-8"))
    own = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert own and [n for n in own if not raised_via(n)] == []
